/**
 * Binary heaps of (row, score) in typed arrays: no per-element objects in the search loops.
 */

/**
 * Min-heap on score; among equal scores the higher row is "smaller", so as a bounded top-k the
 * root is always the entry to evict first and ties resolve to the lower row (deterministic).
 */
import type { Hit } from "./types.js";

export class MinHeap {
  ids: Int32Array;
  scores: Float64Array;
  size = 0;

  constructor(capacity: number) {
    const c = Math.max(4, capacity | 0);
    this.ids = new Int32Array(c);
    this.scores = new Float64Array(c);
  }

  clear(): void {
    this.size = 0;
  }

  topScore(): number {
    return this.scores[0]!;
  }

  topId(): number {
    return this.ids[0]!;
  }

  push(id: number, score: number): void {
    if (this.size === this.ids.length) this.grow();
    const ids = this.ids;
    const sc = this.scores;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const ps = sc[p]!;
      if (ps < score || (ps === score && ids[p]! > id)) break;
      ids[i] = ids[p]!;
      sc[i] = ps;
      i = p;
    }
    ids[i] = id;
    sc[i] = score;
  }

  /** Removes the root; read it first with topId()/topScore(). */
  pop(): void {
    const n = --this.size;
    if (n <= 0) return;
    this.siftDown(this.ids[n]!, this.scores[n]!);
  }

  /** Replaces the root with (id, score): one sift instead of pop() then push(). */
  replaceTop(id: number, score: number): void {
    this.siftDown(id, score);
  }

  /** Bounded insert for a top-k of capacity k: keeps the k best seen. */
  offer(id: number, score: number, k: number): void {
    if (this.size < k) this.push(id, score);
    else if (score > this.scores[0]! || (score === this.scores[0]! && id < this.ids[0]!)) this.replaceTop(id, score);
  }

  /** Places (id, score) at the root's slot and sifts it down over the first `size` entries. */
  private siftDown(id: number, score: number): void {
    const n = this.size;
    const ids = this.ids;
    const sc = this.scores;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      const r = c + 1;
      if (r < n && (sc[r]! < sc[c]! || (sc[r] === sc[c] && ids[r]! > ids[c]!))) c = r;
      const cs = sc[c]!;
      if (score < cs || (score === cs && id >= ids[c]!)) break;
      ids[i] = ids[c]!;
      sc[i] = cs;
      i = c;
    }
    ids[i] = id;
    sc[i] = score;
  }

  /** Empties the heap into parallel arrays, best (highest score) first; returns the count. */
  drainDescending(outIds: Int32Array, outScores: Float64Array | Float32Array): number {
    const n = this.size;
    for (let i = n - 1; i >= 0; i--) {
      outIds[i] = this.ids[0]!;
      outScores[i] = this.scores[0]!;
      this.pop();
    }
    return n;
  }

  /** Empties the heap into hits, best (highest score) first. */
  drainHits(): Hit[] {
    const hits: Hit[] = new Array(this.size);
    for (let i = this.size - 1; i >= 0; i--) {
      hits[i] = { idx: this.ids[0]!, score: this.scores[0]! };
      this.pop();
    }
    return hits;
  }

  private grow(): void {
    const ids = new Int32Array(this.ids.length * 2);
    ids.set(this.ids);
    const scores = new Float64Array(this.scores.length * 2);
    scores.set(this.scores);
    this.ids = ids;
    this.scores = scores;
  }
}

/** Max-heap on score (the candidate frontier of a graph walk). */
export class MaxHeap {
  private readonly h: MinHeap;

  constructor(capacity: number) {
    this.h = new MinHeap(capacity);
  }

  get size(): number {
    return this.h.size;
  }

  clear(): void {
    this.h.clear();
  }

  push(id: number, score: number): void {
    this.h.push(id, -score);
  }

  topId(): number {
    return this.h.topId();
  }

  topScore(): number {
    return -this.h.topScore();
  }

  pop(): void {
    this.h.pop();
  }
}
