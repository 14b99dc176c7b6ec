/**
 * HNSW construction, split so it can use several threads and stay deterministic.
 *
 * Rows are inserted in batches. Planning an insert (greedy descent, beam search with
 * efConstruction, heuristic neighbour selection: ~85% of the distance computations) only reads the
 * graph, so all plans of a batch run against the graph as it was before the batch, on any number
 * of threads. Applying plans (the node's own links, back links, incremental pruning of full
 * lists) then runs on one thread in row order. The batch schedule depends only on the row count, so the graph
 * is the same whatever the thread count. Batches stay small relative to the graph (≤ 1/32 of it,
 * after a sequential start), so a node rarely misses a neighbour inserted in its own batch.
 *
 * All state lives in typed arrays that can sit on SharedArrayBuffers for worker threads.
 */
import { seededRandom } from "../../common/random.js";
import { MaxHeap, MinHeap } from "./engine-heap.js";
import { dot, dotInt8, quantizeInt8 } from "./engine-vec.js";
import { Int8Scanner } from "./int8-kernel.js";

export const MAX_LEVEL = 30;
/** Per-node plan storage covers every possible level. */
const LEVEL_SLOTS = MAX_LEVEL + 1;
/** Rows inserted one at a time before batching starts. */
export const SEQUENTIAL_PREFIX = 1024;
export const MAX_BATCH = 512;

/** End (exclusive) of the batch starting at row `start`: a pure function of the row count. */
export function batchEnd(start: number, count: number): number {
  const size = start < SEQUENTIAL_PREFIX ? 1 : Math.min(MAX_BATCH, start >>> 5);
  return Math.min(count, start + size);
}

export interface BuildOptions {
  readonly m: number;
  readonly efConstruction: number;
  readonly seed: number;
  readonly precision: "int8" | "float32";
  /** Allocate on SharedArrayBuffers so worker threads can read and plan. */
  readonly shared: boolean;
  /** Int8 similarities through the WebAssembly SIMD kernel where the runtime has it (default true). */
  readonly simd?: boolean;
}

/** Everything a build reads and writes. Plain data: it is posted to workers as is. */
export interface BuildState {
  readonly count: number;
  readonly dims: number;
  readonly m: number;
  readonly efC: number;
  /** Float32 rows (float32 precision) or null. */
  readonly vectors: Float32Array | null;
  /** Int8 rows and per-row scales (int8 precision) or null. */
  readonly codes: Int8Array | null;
  readonly scales: Float32Array | null;
  /** Whether planners score int8 rows with the SIMD kernel (same integer sums, so the same graph). */
  readonly simd: boolean;
  readonly levels: Uint8Array;
  /** First upper-layer slot of each node (its level-1 list), -1 for level-0-only nodes. */
  readonly upperBase: Int32Array;
  readonly counts0: Uint16Array;
  readonly links0: Int32Array;
  /** Similarity of each link to its owner, so lists stay sorted and pruning needs no re-scoring. */
  readonly sims0: Float32Array;
  readonly upperCounts: Uint16Array;
  readonly upperLinks: Int32Array;
  readonly upperSims: Float32Array;
  /** Plans of the current batch: per batch slot and level, up to m selected neighbours. */
  readonly planCounts: Int32Array;
  readonly planIds: Int32Array;
  readonly planSims: Float32Array;
}

export function createBuildState(vectors: Float32Array, dims: number, count: number, o: BuildOptions): BuildState {
  type Ctor<T> = new (buf: ArrayBuffer | SharedArrayBuffer) => T;
  const alloc = <T>(C: Ctor<T> & { BYTES_PER_ELEMENT: number }, n: number): T =>
    new C(o.shared ? new SharedArrayBuffer(n * C.BYTES_PER_ELEMENT) : new ArrayBuffer(n * C.BYTES_PER_ELEMENT));
  const m = o.m;
  const m0 = 2 * m;
  // Levels up front (mL = 1/ln m), so upper-layer storage is allocated exactly once.
  const rng = seededRandom(o.seed);
  const mL = 1 / Math.log(m);
  const levels = alloc(Uint8Array, count);
  const upperBase = alloc(Int32Array, count).fill(-1);
  let slots = 0;
  for (let i = 0; i < count; i++) {
    const lv = Math.min(MAX_LEVEL, Math.floor(-Math.log(1 - rng()) * mL));
    levels[i] = lv;
    if (lv > 0) {
      upperBase[i] = slots;
      slots += lv;
    }
  }
  let rows: Float32Array | null = null;
  let codes: Int8Array | null = null;
  let scales: Float32Array | null = null;
  if (o.precision === "float32") {
    rows = vectors.subarray(0, count * dims);
    if (o.shared && !(rows.buffer instanceof SharedArrayBuffer)) {
      const copy = alloc(Float32Array, count * dims);
      copy.set(rows);
      rows = copy;
    }
  } else {
    const q = quantizeInt8(vectors, dims, count);
    codes = o.shared ? alloc(Int8Array, count * dims) : q.codes;
    if (codes !== q.codes) codes.set(q.codes);
    scales = o.shared ? alloc(Float32Array, count) : q.scales;
    if (scales !== q.scales) scales.set(q.scales);
  }
  const batch = Math.min(MAX_BATCH, Math.max(1, count));
  return {
    count,
    dims,
    m,
    efC: Math.max(o.efConstruction, m),
    vectors: rows,
    codes,
    scales,
    simd: o.simd ?? true,
    levels,
    upperBase,
    counts0: alloc(Uint16Array, count),
    links0: alloc(Int32Array, count * m0).fill(-1),
    sims0: alloc(Float32Array, count * m0),
    upperCounts: alloc(Uint16Array, slots),
    upperLinks: alloc(Int32Array, slots * m).fill(-1),
    upperSims: alloc(Float32Array, slots * m),
    planCounts: alloc(Int32Array, batch * LEVEL_SLOTS),
    planIds: alloc(Int32Array, batch * LEVEL_SLOTS * m),
    planSims: alloc(Float32Array, batch * LEVEL_SLOTS * m),
  };
}

/**
 * Plans inserts (read-only on the graph; one per thread) and, on the coordinating thread,
 * applies them. Scratch buffers are per instance, so one instance serves one thread.
 */
export class InsertPlanner {
  private readonly s: BuildState;
  private readonly m: number;
  private readonly m0: number;
  private readonly dims: number;
  private readonly visited: Uint32Array;
  private epoch = 0;
  private readonly cand: MaxHeap;
  private readonly res: MinHeap;
  private readonly foundIds: Int32Array;
  private readonly foundSims: Float32Array;
  private readonly keptIds: Int32Array;
  private readonly keptSims: Float32Array;
  /**
   * The SIMD kernel over a copy of the int8 rows, or null (float32 builds, no WebAssembly SIMD). Its
   * integer dot products equal dotInt8's, and every similarity is scaled in the same order, so the
   * graph is the same bit for bit; a build spends most of its time in these dot products, which the
   * kernel computes several times faster than the JavaScript loop.
   */
  private readonly scanner: Int8Scanner | null;
  /** The row whose code the scanner holds as its query (-1: none). */
  private loaded = -1;

  constructor(state: BuildState) {
    this.s = state;
    this.m = state.m;
    this.m0 = 2 * state.m;
    this.dims = state.dims;
    this.visited = new Uint32Array(state.count);
    this.cand = new MaxHeap(state.efC * 4);
    this.res = new MinHeap(state.efC + 2);
    this.foundIds = new Int32Array(state.efC + 1);
    this.foundSims = new Float32Array(state.efC + 1);
    this.keptIds = new Int32Array(this.m0 + 1);
    this.keptSims = new Float32Array(this.m0 + 1);
    this.scanner = state.codes !== null && state.simd ? Int8Scanner.create(state.count, state.dims) : null;
    this.scanner?.codes.set(state.codes!.subarray(0, state.count * state.dims));
  }

  /** Scores the scanner's rows[0, n) against row q: out[i] = the integer dot product (scale it as sim() does). */
  private dotsWith(q: number, n: number): Int32Array {
    const sc = this.scanner!;
    if (this.loaded !== q) {
      sc.loadRow(q);
      this.loaded = q;
    }
    sc.dots(n);
    return sc.out;
  }

  /** dotsWith over ids[from, from + n), copied into the kernel's row list. */
  private dotsOfList(q: number, ids: Int32Array, from: number, n: number): Int32Array {
    const rows = this.scanner!.rows;
    for (let j = 0; j < n; j++) rows[j] = ids[from + j]!;
    return this.dotsWith(q, n);
  }

  /** Similarity of two rows at build precision. */
  private sim(a: number, b: number): number {
    const dims = this.dims;
    const codes = this.s.codes;
    if (codes !== null) return dotInt8(codes, a * dims, codes, b * dims, dims) * this.s.scales![a]! * this.s.scales![b]!;
    const v = this.s.vectors!;
    return dot(v, a * dims, v, b * dims, dims);
  }

  /**
   * Plans the insert of row q into batch slot `slot` against the graph with the given entry point:
   * for each of q's levels present in the graph, the neighbours q should link to, best first.
   */
  plan(q: number, slot: number, entryPoint: number, maxLevel: number): void {
    const s = this.s;
    const level = s.levels[q]!;
    const countsBase = slot * LEVEL_SLOTS;
    for (let l = 0; l < LEVEL_SLOTS; l++) s.planCounts[countsBase + l] = 0;
    if (entryPoint < 0) return;
    let cur = entryPoint;
    let curSim = this.sim(q, cur);
    for (let l = maxLevel; l > level; l--) {
      // Greedy: move to the best neighbour until none improves.
      let changed = true;
      while (changed) {
        changed = false;
        const ls = s.upperBase[cur]! + l - 1;
        const base = ls * this.m;
        const n = s.upperCounts[ls]!;
        // With the kernel, the list's similarities to q in one call; sim(a, b) is dot × scale(a) × scale(b).
        const dots = this.scanner !== null ? this.dotsOfList(q, s.upperLinks, base, n) : null;
        for (let j = 0; j < n; j++) {
          const e = s.upperLinks[base + j]!;
          const sim = dots !== null ? dots[j]! * s.scales![q]! * s.scales![e]! : this.sim(q, e);
          if (sim > curSim) {
            curSim = sim;
            cur = e;
            changed = true;
          }
        }
      }
    }
    for (let l = Math.min(level, maxLevel); l >= 0; l--) {
      const found = this.searchLayer(q, cur, curSim, l);
      const out = (countsBase + l) * this.m;
      s.planCounts[countsBase + l] = this.selectNeighbors(this.foundIds, this.foundSims, found, this.m, s.planIds, s.planSims, out);
      cur = this.foundIds[0]!;
      curSim = this.foundSims[0]!;
    }
  }

  /** Applies the plan in `slot` for row q: q's own links, then the back links (single-threaded). */
  apply(q: number, slot: number): void {
    const s = this.s;
    const countsBase = slot * LEVEL_SLOTS;
    const top = Math.min(s.levels[q]!, MAX_LEVEL);
    for (let l = top; l >= 0; l--) {
      const n = s.planCounts[countsBase + l]!;
      if (n === 0) continue;
      const from = (countsBase + l) * this.m;
      const cap = l === 0 ? this.m0 : this.m;
      const ls = l === 0 ? q : s.upperBase[q]! + l - 1;
      const links = l === 0 ? s.links0 : s.upperLinks;
      const sims = l === 0 ? s.sims0 : s.upperSims;
      for (let j = 0; j < n; j++) {
        links[ls * cap + j] = s.planIds[from + j]!;
        sims[ls * cap + j] = s.planSims[from + j]!;
      }
      if (l === 0) s.counts0[q] = n;
      else s.upperCounts[ls] = n;
      for (let j = 0; j < n; j++) this.addLink(s.planIds[from + j]!, q, s.planSims[from + j]!, l);
    }
  }

  /** Beam search for the efConstruction nearest on one layer; results land in found*, best first. */
  private searchLayer(q: number, ep: number, epSim: number, level: number): number {
    const s = this.s;
    const ef = s.efC;
    const visited = this.visited;
    if (++this.epoch === 0xffffffff) {
      visited.fill(0);
      this.epoch = 1;
    }
    const epoch = this.epoch;
    const cand = this.cand;
    const res = this.res;
    const sc = this.scanner;
    cand.clear();
    res.clear();
    visited[ep] = epoch;
    cand.push(ep, epSim);
    res.push(ep, epSim);
    const links = level === 0 ? s.links0 : s.upperLinks;
    const counts = level === 0 ? s.counts0 : s.upperCounts;
    const cap = level === 0 ? this.m0 : this.m;
    while (cand.size > 0) {
      if (res.size >= ef && cand.topScore() < res.topScore()) break;
      const c = cand.topId();
      cand.pop();
      const ls = level === 0 ? c : s.upperBase[c]! + level - 1;
      const base = ls * cap;
      const end = base + counts[ls]!;
      if (sc !== null) {
        // Same order and same similarities as the loop below, scored in one kernel call.
        const rows = sc.rows;
        let k = 0;
        for (let j = base; j < end; j++) {
          const e = links[j]!;
          if (visited[e] === epoch) continue;
          visited[e] = epoch;
          rows[k++] = e;
        }
        if (k === 0) continue;
        const out = this.dotsWith(q, k);
        const scales = s.scales!;
        const sq = scales[q]!;
        for (let i = 0; i < k; i++) {
          const e = rows[i]!;
          const sim = out[i]! * sq * scales[e]!;
          if (res.size < ef || sim > res.topScore()) {
            cand.push(e, sim);
            res.push(e, sim);
            if (res.size > ef) res.pop();
          }
        }
        continue;
      }
      for (let j = base; j < end; j++) {
        const e = links[j]!;
        if (visited[e] === epoch) continue;
        visited[e] = epoch;
        const sim = this.sim(q, e);
        if (res.size < ef || sim > res.topScore()) {
          cand.push(e, sim);
          res.push(e, sim);
          if (res.size > ef) res.pop();
        }
      }
    }
    return res.drainDescending(this.foundIds, this.foundSims);
  }

  /**
   * The paper's heuristic (Algorithm 4): walk candidates best first and keep one only if it is
   * closer to the base than to every neighbour kept so far, which spreads links across directions.
   * Fewer candidates than the budget are all kept, as hnswlib does. Writes out[at ..]; returns the count.
   */
  private selectNeighbors(ids: Int32Array, sims: Float32Array, n: number, budget: number, outIds: Int32Array, outSims: Float32Array, at: number): number {
    if (n <= budget) {
      for (let i = 0; i < n; i++) {
        outIds[at + i] = ids[i]!;
        outSims[at + i] = sims[i]!;
      }
      return n;
    }
    let kept = 0;
    for (let i = 0; i < n && kept < budget; i++) {
      const c = ids[i]!;
      const cs = sims[i]!;
      let good = true;
      const dots = this.scanner !== null && kept > 0 ? this.dotsOfList(c, outIds, at, kept) : null;
      for (let r = 0; r < kept; r++) {
        const o = outIds[at + r]!;
        if ((dots !== null ? dots[r]! * this.s.scales![c]! * this.s.scales![o]! : this.sim(c, o)) > cs) {
          good = false;
          break;
        }
      }
      if (good) {
        outIds[at + kept] = c;
        outSims[at + kept] = cs;
        kept++;
      }
    }
    if (kept < budget) {
      // keepPrunedConnections (the paper's Algorithm 4 option): in a tight cluster of near-duplicates the
      // heuristic keeps only a few links per node, and a query landing in the cluster cannot enumerate
      // it; filling the budget with the best pruned candidates keeps such regions walkable.
      for (let i = 0; i < n && kept < budget; i++) {
        const c = ids[i]!;
        let already = false;
        for (let r = 0; r < kept; r++)
          if (outIds[at + r] === c) {
            already = true;
            break;
          }
        if (already) continue;
        outIds[at + kept] = c;
        outSims[at + kept] = sims[i]!;
        kept++;
      }
      sortDescending(outIds, outSims, at, kept);
    }
    return kept;
  }

  /**
   * Adds the back link e → q, keeping e's list sorted by similarity. A full list is pruned with the
   * heuristic incrementally: its entries already passed the heuristic against one another, so q is
   * checked against the entries ranked above it, and the entries below q only against q — at most
   * `cap` similarity evaluations instead of re-running the heuristic over the whole list.
   */
  private addLink(e: number, q: number, sim: number, level: number): void {
    const s = this.s;
    const cap = level === 0 ? this.m0 : this.m;
    const links = level === 0 ? s.links0 : s.upperLinks;
    const sims = level === 0 ? s.sims0 : s.upperSims;
    const counts = level === 0 ? s.counts0 : s.upperCounts;
    const ls = level === 0 ? e : s.upperBase[e]! + level - 1;
    const base = ls * cap;
    const n = counts[ls]!;
    let pos = n;
    while (pos > 0 && sims[base + pos - 1]! < sim) pos--;
    if (n < cap) {
      for (let j = n; j > pos; j--) {
        links[base + j] = links[base + j - 1]!;
        sims[base + j] = sims[base + j - 1]!;
      }
      links[base + pos] = q;
      sims[base + pos] = sim;
      counts[ls] = n + 1;
      return;
    }
    if (pos === n) return; // below every kept link: the budget is already spent on better ones
    // With the kernel, the list's similarities to q in one call; sim(a, b) is dot × scale(a) × scale(b).
    const dots = this.scanner !== null ? this.dotsOfList(q, links, base, n) : null;
    const scales = this.s.scales;
    for (let j = 0; j < pos; j++) {
      const l = links[base + j]!;
      if ((dots !== null ? dots[j]! * scales![q]! * scales![l]! : this.sim(q, l)) > sim) return; // q is covered by a closer link
    }
    // q is kept at pos; entries after it survive unless q covers them, until the budget is full.
    const ids = this.keptIds;
    const ss = this.keptSims;
    let kept = 0;
    for (let j = pos; j < n && pos + 1 + kept < cap; j++) {
      const c = links[base + j]!;
      const cs = sims[base + j]!;
      if ((dots !== null ? dots[j]! * scales![c]! * scales![q]! : this.sim(c, q)) > cs) continue;
      ids[kept] = c;
      ss[kept] = cs;
      kept++;
    }
    links[base + pos] = q;
    sims[base + pos] = sim;
    for (let j = 0; j < kept; j++) {
      links[base + pos + 1 + j] = ids[j]!;
      sims[base + pos + 1 + j] = ss[j]!;
    }
    const total = pos + 1 + kept;
    for (let j = total; j < n; j++) links[base + j] = -1;
    counts[ls] = total;
  }
}

/** Insertion sort of a short (≤ m) link list by similarity, best first. */
function sortDescending(ids: Int32Array, sims: Float32Array, at: number, n: number): void {
  for (let i = at + 1; i < at + n; i++) {
    const id = ids[i]!;
    const sim = sims[i]!;
    let j = i - 1;
    while (j >= at && sims[j]! < sim) {
      ids[j + 1] = ids[j]!;
      sims[j + 1] = sims[j]!;
      j--;
    }
    ids[j + 1] = id;
    sims[j + 1] = sim;
  }
}
