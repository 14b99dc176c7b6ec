/**
 * Hierarchical Navigable Small World graph (Malkov & Yashunin, 2016) over rows of a row-major,
 * L2-normalised Float32Array; similarity is the dot product (cosine), higher is better.
 *
 * Storage is flat typed arrays: layer 0 has a fixed stride of m0 = 2·m links per node; nodes with a
 * level ≥ 1 (about 1/m of them) own `level` consecutive "slots" of m links in the upper arrays.
 * Construction (batched, optionally on worker threads, deterministic) lives in engine-hnsw-build.ts.
 */
import { availableParallelism } from "node:os";
import type { Bitset } from "./bitset.js";
import { MaxHeap, MinHeap } from "./engine-heap.js";
import { batchEnd, createBuildState, InsertPlanner, MAX_LEVEL, SEQUENTIAL_PREFIX } from "./engine-hnsw-build.js";
import { PlanPool } from "./engine-hnsw-pool.js";
import { dot, dotF32I8, quantizeQuery, type Int8Rows } from "./engine-vec.js";
import { queryCodeMax, type Int8Scanner } from "./int8-kernel.js";
import { bestFirst, type Hit } from "./types.js";

export interface HnswParams {
  /** Links per node on upper layers (layer 0 keeps 2·m). */
  readonly m: number;
  readonly efConstruction: number;
  /** Seed for level assignment, so builds are reproducible. */
  readonly seed?: number;
  /**
   * Precision of the similarities used while building (searches always use float32). "int8"
   * (default) builds on per-row quantised copies: less memory traffic and integer math.
   */
  readonly buildPrecision?: "int8" | "float32";
  /**
   * Threads that plan inserts (the calling thread included). Default: up to 4 of the available
   * cores for graphs of PARALLEL_MIN_ROWS rows or more, else 1. The graph is identical for any value.
   */
  readonly threads?: number;
  /**
   * Score int8 builds with the WebAssembly SIMD kernel where the runtime has it (default true). The graph
   * is the same either way; false keeps the JavaScript loop (tests compare the two).
   */
  readonly simd?: boolean;
}

/** Below this many rows worker threads are not worth their start-up by default. */
export const PARALLEL_MIN_ROWS = 20_000;

/**
 * A two-hop expansion gathers up to this many allowed rows per visited node. Measured on the full index
 * (M = 24): 48 keeps recall@10 ≥ 0.999 at 7–13% selectivity; 96 (2 × m0) costs 50% more for nothing.
 */
const GATHER_CAP = 48;

/** How a walk scores rows: float32 rows, int8 rows (codes, scales) or the SIMD kernel over them. */
interface WalkScoring {
  readonly vectors: Float32Array;
  readonly dims: number;
  readonly query: Float32Array;
  readonly codes: Int8Array | null;
  readonly scales: Float32Array | null;
  readonly scanner: Int8Scanner | null;
  /** Scale of the query code loaded into the scanner. */
  readonly qScale: number;
}

const MAGIC = [0x52, 0x53, 0x48, 0x4e, 0x53, 0x57, 0x0d, 0x0a]; // "RSHNSW\r\n"
const FORMAT_VERSION = 1;
const HEADER_BYTES = 48;
const PROGRESS_EVERY = 2048;

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface GraphArrays {
  count: number;
  dims: number;
  m: number;
  efConstruction: number;
  entryPoint: number;
  maxLevel: number;
  levels: Uint8Array;
  counts0: Uint16Array;
  links0: Int32Array;
  /** First upper slot of each node (its level-1 list), or -1 for level-0-only nodes. */
  upperBase: Int32Array;
  upperCounts: Uint16Array;
  upperLinks: Int32Array;
}

/** The graph only; vectors live in the segment (row-major Float32Array, L2-normalised, dot = cosine). */
export class HnswGraph {
  readonly count: number;
  readonly dims: number;
  readonly m: number;
  readonly m0: number;
  readonly efConstruction: number;
  readonly entryPoint: number;
  readonly maxLevel: number;
  private readonly levels: Uint8Array;
  private readonly counts0: Uint16Array;
  private readonly links0: Int32Array;
  private readonly upperBase: Int32Array;
  private readonly upperCounts: Uint16Array;
  private readonly upperLinks: Int32Array;
  // Search scratch, reused across calls (searches are synchronous, so never interleaved).
  private visited: Uint32Array | null = null;
  private epoch = 0;
  private readonly cand = new MaxHeap(256);
  private readonly res = new MinHeap(256);
  private gatherScratch: Int32Array | null = null;
  private batchScores = new Float64Array(64);
  private queryCode: Int16Array | null = null;

  private constructor(g: GraphArrays) {
    this.count = g.count;
    this.dims = g.dims;
    this.m = g.m;
    this.m0 = 2 * g.m;
    this.efConstruction = g.efConstruction;
    this.entryPoint = g.entryPoint;
    this.maxLevel = g.maxLevel;
    this.levels = g.levels;
    this.counts0 = g.counts0;
    this.links0 = g.links0;
    this.upperBase = g.upperBase;
    this.upperCounts = g.upperCounts;
    this.upperLinks = g.upperLinks;
  }

  static build(vectors: Float32Array, dims: number, count: number, params: HnswParams, onProgress?: (done: number, total: number) => void): HnswGraph {
    validateBuild(vectors, dims, count, params);
    const threads = params.threads ?? (count >= PARALLEL_MIN_ROWS ? Math.min(4, availableParallelism()) : 1);
    let parallel = threads > 1 && count > SEQUENTIAL_PREFIX;
    const state = createBuildState(vectors, dims, count, {
      m: params.m,
      efConstruction: params.efConstruction,
      seed: params.seed ?? 0x5eed,
      precision: params.buildPrecision ?? "int8",
      shared: parallel,
      simd: params.simd ?? true,
    });
    const planner = new InsertPlanner(state);
    let pool: PlanPool | null = null;
    let entryPoint = -1;
    let maxLevel = 0;
    let reported = 0;
    try {
      for (let start = 0; start < count;) {
        const end = batchEnd(start, count);
        if (parallel && pool === null && end - start > 1) {
          pool = PlanPool.start(state, threads);
          parallel = pool !== null;
        }
        if (pool !== null) pool.planBatch(start, end, entryPoint, maxLevel, planner);
        else for (let q = start; q < end; q++) planner.plan(q, q - start, entryPoint, maxLevel);
        for (let q = start; q < end; q++) {
          planner.apply(q, q - start);
          const level = state.levels[q]!;
          if (entryPoint < 0 || level > maxLevel) {
            entryPoint = q;
            maxLevel = level;
          }
        }
        start = end;
        if (onProgress !== undefined && (start - reported >= PROGRESS_EVERY || start === count)) {
          reported = start;
          onProgress(start, count);
        }
      }
    } finally {
      pool?.close();
    }
    return new HnswGraph({
      count,
      dims,
      m: params.m,
      efConstruction: state.efC,
      entryPoint,
      maxLevel,
      levels: state.levels,
      counts0: state.counts0,
      links0: state.links0,
      upperBase: state.upperBase,
      upperCounts: state.upperCounts,
      upperLinks: state.upperLinks,
    });
  }

  /** Level of a node (0 for most). */
  levelOf(row: number): number {
    return this.levels[row]!;
  }

  /** Neighbours of a node on a layer (a copy; for tests and diagnostics). */
  neighbors(row: number, level: number): number[] {
    if (level === 0) return Array.from(this.links0.subarray(row * this.m0, row * this.m0 + this.counts0[row]!));
    if (level > this.levels[row]!) return [];
    const slot = this.upperBase[row]! + level - 1;
    return Array.from(this.upperLinks.subarray(slot * this.m, slot * this.m + this.upperCounts[slot]!));
  }

  /** Top-k rows by dot product among rows allowed by `allow` (null = all), best first. */
  /**
   * Top k by dot product. With `twoHop` (ACORN-1 style, for mid-selectivity filters) the walk
   * evaluates only allowed rows: a disallowed neighbour is not scored but its own neighbours are
   * looked through, so the walk moves on the subgraph the filter induces instead of paying a
   * distance for every disallowed node it passes.
   */
  search(
    vectors: Float32Array,
    dims: number,
    query: Float32Array,
    k: number,
    ef: number,
    allow: Bitset | null,
    twoHop = false,
    rows8: Int8Rows | null = null,
  ): Hit[] {
    if (dims !== this.dims) throw new RangeError(`HnswGraph.search: graph has ${this.dims} dims, got ${dims}`);
    if (query.length !== dims) throw new RangeError(`HnswGraph.search: query has ${query.length} dims, expected ${dims}`);
    if (vectors.length < this.count * dims) throw new RangeError("HnswGraph.search: vectors shorter than the graph");
    if (allow !== null && allow.size !== this.count) throw new RangeError(`HnswGraph.search: allow has size ${allow.size}, graph ${this.count}`);
    // An empty allow-set would otherwise walk the whole graph looking for an allowed row.
    if (this.count === 0 || k <= 0 || (allow !== null && allow.isEmpty())) return [];
    const beam = Math.max(ef | 0, k);

    // Greedy descent through the upper layers ignores the filter: they only pick a good start.
    let cur = this.entryPoint;
    let curSim = dot(query, 0, vectors, cur * dims, dims);
    for (let l = this.maxLevel; l >= 1; l--) {
      let changed = true;
      while (changed) {
        changed = false;
        const slot = this.upperBase[cur]! + l - 1;
        const base = slot * this.m;
        const n = this.upperCounts[slot]!;
        for (let j = 0; j < n; j++) {
          const e = this.upperLinks[base + j]!;
          const s = dot(query, 0, vectors, e * dims, dims);
          if (s > curSim) {
            curSim = s;
            cur = e;
            changed = true;
          }
        }
      }
    }

    // Beam search on layer 0. Every node may be walked through, but only allowed rows enter the
    // result set; the walk stops once `beam` allowed rows are held and the frontier is worse.
    const visited = this.nextVisitEpoch();
    const epoch = this.epoch;
    const words = allow === null ? null : allow.words;
    const cand = this.cand;
    const res = this.res;
    cand.clear();
    res.clear();
    visited[cur] = epoch;
    cand.push(cur, curSim);
    if (words === null || (words[cur >>> 5]! & (1 << (cur & 31))) !== 0) res.push(cur, curSim);
    // Walk scores may come from int8 rows (a quarter of the memory traffic: the walk is bound by
    // cache misses); the beam is then re-scored in float32 so returned scores and order are exact.
    // With the SIMD kernel, a node's neighbours are scored in one call (int16 query code × int8 rows).
    const scanner = rows8?.scanner ?? null;
    let qScale = 0;
    if (scanner !== null) {
      if (this.queryCode === null || this.queryCode.length < dims) this.queryCode = new Int16Array(dims);
      qScale = quantizeQuery(query, dims, this.queryCode, queryCodeMax(dims)).scale;
      scanner.load(this.queryCode);
    }
    const scoring: WalkScoring = { vectors, dims, query, codes: rows8?.codes ?? null, scales: rows8?.scales ?? null, scanner, qScale };
    if (twoHop && words !== null) this.walkTwoHop(scoring, beam, words, visited, epoch);
    else this.walkOneHop(scoring, beam, words, visited, epoch);
    return this.drainResults(vectors, dims, query, k, rows8 !== null);
  }

  /** The k best of the result heap, best first; re-scored in float32 when the walk used int8 scores. */
  private drainResults(vectors: Float32Array, dims: number, query: Float32Array, k: number, rescore: boolean): Hit[] {
    const res = this.res;
    if (!rescore) {
      while (res.size > k) res.pop();
      const hits: Hit[] = new Array(res.size);
      for (let i = res.size - 1; i >= 0; i--) {
        hits[i] = { idx: res.topId(), score: res.topScore() };
        res.pop();
      }
      return hits;
    }
    const all: Hit[] = [];
    while (res.size > 0) {
      const idx = res.topId();
      res.pop();
      all.push({ idx, score: dot(query, 0, vectors, idx * dims, dims) });
    }
    all.sort(bestFirst);
    return all.slice(0, k);
  }

  /**
   * Scores rows[0..n) into batchScores: in the SIMD kernel (int16 query code × int8 rows), on int8
   * rows in JavaScript, or in float32.
   */
  private scoreBatch(w: WalkScoring, rows: Int32Array, n: number): Float64Array {
    if (this.batchScores.length < n) this.batchScores = new Float64Array(Math.max(n, 2 * this.batchScores.length));
    const out = this.batchScores;
    const { scanner, scales, codes, vectors, dims, query } = w;
    if (scanner !== null) {
      scanner.dots(n);
      const dots = scanner.out;
      for (let i = 0; i < n; i++) out[i] = dots[i]! * scales![rows[i]!]! * w.qScale;
    } else if (codes !== null) {
      for (let i = 0; i < n; i++) out[i] = dotF32I8(query, codes, rows[i]! * dims, dims) * scales![rows[i]!]!;
    } else {
      for (let i = 0; i < n; i++) out[i] = dot(query, 0, vectors, rows[i]! * dims, dims);
    }
    return out;
  }

  /** Where a walk gathers the rows it scores next: the kernel's row buffer, so a batch needs no copy. */
  private gatherBuffer(w: WalkScoring): Int32Array {
    if (w.scanner !== null) return w.scanner.rows;
    return (this.gatherScratch ??= new Int32Array(Math.max(GATHER_CAP, this.m0)));
  }

  /** Layer-0 beam search that scores every node it passes; only allowed rows enter the results. */
  private walkOneHop(w: WalkScoring, beam: number, words: Uint32Array | null, visited: Uint32Array, epoch: number): void {
    const cand = this.cand;
    const res = this.res;
    const links0 = this.links0;
    const counts0 = this.counts0;
    const m0 = this.m0;
    const rows = this.gatherBuffer(w);
    while (cand.size > 0) {
      const cs = cand.topScore();
      if (res.size >= beam && cs < res.topScore()) break;
      const c = cand.topId();
      cand.pop();
      let n = 0;
      const base = c * m0;
      const end = base + counts0[c]!;
      for (let j = base; j < end; j++) {
        const e = links0[j]!;
        if (visited[e] === epoch) continue;
        visited[e] = epoch;
        rows[n++] = e;
      }
      if (n === 0) continue;
      const scores = this.scoreBatch(w, rows, n);
      for (let i = 0; i < n; i++) {
        const e = rows[i]!;
        const s = scores[i]!;
        if (res.size < beam || s > res.topScore()) {
          cand.push(e, s);
          if (words === null || (words[e >>> 5]! & (1 << (e & 31))) !== 0) {
            res.push(e, s);
            if (res.size > beam) res.pop();
          }
        }
      }
    }
  }

  /** Layer-0 beam search over allowed rows only; the beam is seeded by search() (cand/res hold the entry). */
  private walkTwoHop(w: WalkScoring, beam: number, words: Uint32Array, visited: Uint32Array, epoch: number): void {
    const cand = this.cand;
    const res = this.res;
    const links0 = this.links0;
    const counts0 = this.counts0;
    const m0 = this.m0;
    const rows = this.gatherBuffer(w);
    // Disallowed transit nodes are never marked visited: another path may need to pass through them.
    const cap = Math.min(GATHER_CAP, rows.length);
    while (cand.size > 0) {
      const cs = cand.topScore();
      if (res.size >= beam && cs < res.topScore()) break;
      const c = cand.topId();
      cand.pop();
      // Gather up to GATHER_CAP allowed, unvisited rows: 1-hop first, then through disallowed neighbours.
      let n = 0;
      const base = c * m0;
      const end = base + counts0[c]!;
      for (let j = base; j < end && n < cap; j++) {
        const e = links0[j]!;
        if ((words[e >>> 5]! & (1 << (e & 31))) === 0 || visited[e] === epoch) continue;
        visited[e] = epoch;
        rows[n++] = e;
      }
      for (let j = base; j < end && n < cap; j++) {
        const e = links0[j]!;
        if ((words[e >>> 5]! & (1 << (e & 31))) !== 0) continue;
        const b2 = e * m0;
        const e2end = b2 + counts0[e]!;
        for (let i = b2; i < e2end && n < cap; i++) {
          const f = links0[i]!;
          if ((words[f >>> 5]! & (1 << (f & 31))) === 0 || visited[f] === epoch) continue;
          visited[f] = epoch;
          rows[n++] = f;
        }
      }
      if (n === 0) continue;
      const scores = this.scoreBatch(w, rows, n);
      for (let i = 0; i < n; i++) {
        const e = rows[i]!;
        const s = scores[i]!;
        if (res.size < beam || s > res.topScore()) {
          cand.push(e, s);
          res.push(e, s);
          if (res.size > beam) res.pop();
        }
      }
    }
  }

  serialize(): Uint8Array {
    requireLittleEndian();
    const sections: ArrayBufferView[] = [this.levels, this.counts0, this.links0, this.upperBase, this.upperCounts, this.upperLinks];
    let total = HEADER_BYTES;
    for (const s of sections) total += align4(s.byteLength);
    const out = new Uint8Array(total);
    const dv = new DataView(out.buffer);
    out.set(MAGIC, 0);
    const header = [FORMAT_VERSION, this.count, this.dims, this.m, this.efConstruction, this.entryPoint, this.maxLevel, this.upperCounts.length];
    header.forEach((v, i) => dv.setInt32(8 + 4 * i, v, true));
    let off = HEADER_BYTES;
    for (const s of sections) {
      out.set(new Uint8Array(s.buffer, s.byteOffset, s.byteLength), off);
      off += align4(s.byteLength);
    }
    return out;
  }

  static deserialize(bytes: Uint8Array): HnswGraph {
    requireLittleEndian();
    const fail = (why: string): never => {
      throw new Error(`HnswGraph.deserialize: ${why}`);
    };
    if (bytes.byteLength < HEADER_BYTES) fail("truncated header");
    for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) fail("bad magic (not an HNSW graph file)");
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const h = (i: number): number => dv.getInt32(8 + 4 * i, true);
    const version = h(0);
    if (version !== FORMAT_VERSION) fail(`unsupported format version ${version} (expected ${FORMAT_VERSION})`);
    const [count, dims, m, efConstruction, entryPoint, maxLevel, slots] = [h(1), h(2), h(3), h(4), h(5), h(6), h(7)];
    if (count < 0 || dims < 1 || m < 2 || m > 32767 || slots < 0 || maxLevel < 0 || maxLevel > MAX_LEVEL) fail("corrupt header");
    if (count === 0 ? entryPoint !== -1 : entryPoint < 0 || entryPoint >= count) fail("corrupt entry point");
    const m0 = 2 * m;
    const sizes = [count, count * 2, count * m0 * 4, count * 4, slots * 2, slots * m * 4];
    let expected = HEADER_BYTES;
    for (const s of sizes) expected += align4(s);
    if (bytes.byteLength !== expected) fail(`size ${bytes.byteLength} bytes, expected ${expected}`);
    let off = bytes.byteOffset + HEADER_BYTES;
    const take = <T>(n: number, bytesPer: number, make: (buf: ArrayBuffer, byteOffset: number, length: number) => T): T => {
      // Views when aligned (the usual case: a file read into its own buffer); copies otherwise.
      let arr: T;
      if (off % bytesPer === 0) arr = make(bytes.buffer as ArrayBuffer, off, n);
      else arr = make(bytes.slice(off - bytes.byteOffset, off - bytes.byteOffset + n * bytesPer).buffer as ArrayBuffer, 0, n);
      off += align4(n * bytesPer);
      return arr;
    };
    const g: GraphArrays = {
      count,
      dims,
      m,
      efConstruction,
      entryPoint,
      maxLevel,
      levels: take(count, 1, (b, o, n) => new Uint8Array(b, o, n)),
      counts0: take(count, 2, (b, o, n) => new Uint16Array(b, o, n)),
      links0: take(count * m0, 4, (b, o, n) => new Int32Array(b, o, n)),
      upperBase: take(count, 4, (b, o, n) => new Int32Array(b, o, n)),
      upperCounts: take(slots, 2, (b, o, n) => new Uint16Array(b, o, n)),
      upperLinks: take(slots * m, 4, (b, o, n) => new Int32Array(b, o, n)),
    };
    const problem = checkStructure(g);
    if (problem !== null) fail(problem);
    return new HnswGraph(g);
  }

  private nextVisitEpoch(): Uint32Array {
    if (this.visited === null) this.visited = new Uint32Array(this.count);
    if (this.epoch === 0xffffffff) {
      this.visited.fill(0);
      this.epoch = 0;
    }
    this.epoch++;
    return this.visited;
  }
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

function requireLittleEndian(): void {
  if (!littleEndian) throw new Error("HnswGraph serialization needs a little-endian host");
}

function validateBuild(vectors: Float32Array, dims: number, count: number, p: HnswParams): void {
  const problems: string[] = [];
  if (!Number.isInteger(dims) || dims < 1) problems.push(`dims must be a positive integer, got ${dims}`);
  if (!Number.isInteger(count) || count < 0) problems.push(`count must be a non-negative integer, got ${count}`);
  if (!Number.isInteger(p.m) || p.m < 2 || p.m > 1024) problems.push(`m must be an integer in [2, 1024], got ${p.m}`);
  if (!Number.isInteger(p.efConstruction) || p.efConstruction < 1) problems.push(`efConstruction must be a positive integer, got ${p.efConstruction}`);
  if (p.seed !== undefined && !Number.isInteger(p.seed)) problems.push(`seed must be an integer, got ${p.seed}`);
  if (p.threads !== undefined && (!Number.isInteger(p.threads) || p.threads < 1 || p.threads > 64)) {
    problems.push(`threads must be an integer in [1, 64], got ${p.threads}`);
  }
  if (p.buildPrecision !== undefined && p.buildPrecision !== "int8" && p.buildPrecision !== "float32") {
    problems.push(`buildPrecision must be "int8" or "float32", got ${String(p.buildPrecision)}`);
  }
  if (problems.length === 0 && vectors.length < count * dims) problems.push(`vectors hold ${vectors.length} floats, need ${count}×${dims}`);
  if (problems.length > 0) throw new RangeError(`HnswGraph.build: ${problems.join("; ")}`);
}

/** Checks a loaded graph so corrupt files fail at load, not as wrong answers later. */
function checkStructure(g: GraphArrays): string | null {
  const m0 = 2 * g.m;
  let slots = 0;
  for (let i = 0; i < g.count; i++) {
    const lv = g.levels[i]!;
    if (lv > g.maxLevel) return `node ${i} level ${lv} above max level ${g.maxLevel}`;
    if (lv === 0 ? g.upperBase[i] !== -1 : g.upperBase[i] !== slots) return `node ${i} has a bad upper-layer offset`;
    slots += lv;
    const n = g.counts0[i]!;
    if (n > m0) return `node ${i} has ${n} links on layer 0 (max ${m0})`;
    const bad = badLink(g.links0, i * m0, n, i, g.count);
    if (bad !== null) return `node ${i}: ${bad}`;
    for (let l = 1; l <= lv; l++) {
      const slot = g.upperBase[i]! + l - 1;
      const un = g.upperCounts[slot]!;
      if (un > g.m) return `node ${i} has ${un} links on layer ${l} (max ${g.m})`;
      const ubad = badLink(g.upperLinks, slot * g.m, un, i, g.count);
      if (ubad !== null) return `node ${i} layer ${l}: ${ubad}`;
    }
  }
  if (slots !== g.upperCounts.length) return "upper-layer slot count mismatch";
  if (g.count > 0 && g.levels[g.entryPoint] !== g.maxLevel) return "entry point is not on the top layer";
  return null;
}

function badLink(links: Int32Array, base: number, n: number, self: number, count: number): string | null {
  for (let j = base; j < base + n; j++) {
    const e = links[j]!;
    if (e < 0 || e >= count) return `link target ${e} out of range`;
    if (e === self) return "self link";
  }
  return null;
}
