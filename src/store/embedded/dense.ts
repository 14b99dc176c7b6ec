/**
 * Dense search planner for one segment: an exact scan when asked, when there is no graph, or when
 * the filter leaves few rows; the per-value subgraphs of a keyword field when the filter's rows lie
 * within them (subgraphs.ts); filtered HNSW otherwise, with a beam fitted to the filter's selectivity.
 *
 * The filtered walk passes through every node but keeps only allowed rows, so it evaluates about
 * 11 × ef / selectivity vectors (measured on 204k × 256, m = 16), each a random access costing
 * ~1.8× a row of a sequential scan; the planner scans the allowed rows whenever that is cheaper.
 *
 * Scans of a filter's rows are memory-bound (rows are scattered). Once prepareDense() has quantised a
 * segment, such scans read int8 codes with an exact per-row error bound and re-score in float32 only
 * the rows whose bound can still reach the top k: same results as the float32 scan, about half the cost.
 * Where WebAssembly SIMD is available (int8-kernel.ts) the int8 pass costs about a sixth of a float32
 * row, and exact scans replace two-hop walks and subgraph walks up to a few tens of thousands of rows.
 */
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { Bitset } from "./bitset.js";
import { MinHeap } from "./engine-heap.js";
import { dot, dotInt8, gatherInt8Rows, quantizeInt8Bounded, quantizeQuery, type BoundedInt8Rows } from "./engine-vec.js";
import { Int8Scanner, queryCodeMax } from "./int8-kernel.js";
import type { HnswGraph } from "./hnsw.js";
import { bestFirst, type Hit } from "./types.js";

export interface DenseData {
  readonly vectors: Float32Array;
  readonly dims: number;
  readonly count: number;
  readonly graph: HnswGraph | null;
  /** Per-value graphs of keyword fields (subgraphs.ts); searched instead of a filtered walk when they cover the filter. */
  readonly subgraphs?: readonly SubgraphField[];
}
export interface DenseSearchOptions {
  readonly k: number;
  readonly ef: number;
  /**
   * Allowed subsets with at most this many rows are scanned exactly; larger ones walk the graph,
   * unless scanning them is estimated to evaluate fewer vectors than the walk.
   */
  readonly fullScanThreshold: number;
  readonly exact?: boolean;
}

/** Cost of a filtered walk, in scanned rows, per unit of ef / selectivity (11 evaluations × 1.8). */
export const WALK_COST = 20;
/** Below this selectivity a filtered walk needs a proportionally wider beam to keep recall@10 ≥ 0.99. */
export const BOOST_BELOW_SELECTIVITY = 0.1;
/** Upper bound on the widened beam. */
export const MAX_FILTERED_EF = 1024;
/** Cost of a row in a bounded int8 scan relative to a float32 row (measured). */
export const QUANTIZED_SCAN_COST = 0.5;
/**
 * The same with the SIMD kernel (int8-kernel.ts): measured on the full index (204k × 128), 20–34 ns
 * a row against 127 ns for a float32 row.
 */
export const SIMD_SCAN_COST = 0.2;
/**
 * Cost of a two-hop walk, in float32 rows per unit of beam: measured on the full index at 7–19%
 * selectivity, 2.0–2.5 ms at a beam of 100 (about 180 rows per unit; rounded down, towards walks).
 */
export const TWO_HOP_WALK_COST = 150;
/** Filtered scans smaller than this stay in float32 (the int8 pass would not pay for itself). */
export const QUANTIZED_SCAN_MIN_ROWS = 2048;
/** With the SIMD kernel the int8 pass pays for itself from far fewer rows. */
export const SIMD_SCAN_MIN_ROWS = 512;

/** Quantised copies per segment vector array (with their SIMD scanner, if any); weak, so they go with their segment. */
const quantized = new WeakMap<Float32Array, BoundedInt8Rows>();

/**
 * Quantises a segment's vectors for bounded int8 scans (~1 s and dims + 20 bytes per row for
 * 204k × 256), into the SIMD kernel's memory when it is available. Call once when a segment is
 * loaded; until then scans use float32. Idempotent. `simd: false` keeps scans in JavaScript (tests).
 */
export function prepareDense(data: DenseData, opts: { readonly simd?: boolean } = {}): void {
  if (quantized.has(data.vectors)) return;
  const scanner = opts.simd === false ? null : Int8Scanner.create(data.count, data.dims);
  quantized.set(data.vectors, { ...quantizeInt8Bounded(data.vectors, data.dims, data.count, scanner?.codes), scanner });
}

/**
 * prepareDense for `data` holding the given rows of `parent` (a payload subgraph): when the parent is
 * prepared, its codes and bounds are copied rather than recomputed (quantisation is per row, so they
 * are the same). The category and language subgraphs hold most rows twice over, and recomputing
 * their codes was most of the int8 preparation at load (docs/performance.md).
 */
export function prepareDenseRows(data: DenseData, parent: DenseData, rows: Int32Array, opts: { readonly simd?: boolean } = {}): void {
  if (quantized.has(data.vectors)) return;
  const src = quantized.get(parent.vectors);
  if (src === undefined || parent.dims !== data.dims || rows.length !== data.count) return prepareDense(data, opts);
  const scanner = opts.simd === false ? null : Int8Scanner.create(data.count, data.dims);
  quantized.set(data.vectors, { ...gatherInt8Rows(src, data.dims, rows, scanner?.codes), scanner });
}

/** The int8 rows a scan of `rows` allowed rows should read first, or undefined for a plain float32 scan. */
function scanCodes(data: DenseData, rows: number): BoundedInt8Rows | undefined {
  const q8 = quantized.get(data.vectors);
  if (q8 === undefined) return undefined;
  return rows >= (q8.scanner != null ? SIMD_SCAN_MIN_ROWS : QUANTIZED_SCAN_MIN_ROWS) ? q8 : undefined;
}

/** Whether int8 scans of this segment run in the SIMD kernel. */
export function usesSimdScans(data: DenseData): boolean {
  return quantized.get(data.vectors)?.scanner != null;
}

/** Whether prepareDense() has run for this segment's vectors. */
export function isDensePrepared(data: DenseData): boolean {
  return quantized.has(data.vectors);
}

export type DensePlan =
  | { readonly kind: "empty" }
  | { readonly kind: "exact"; readonly rows: number }
  | { readonly kind: "hnsw"; readonly ef: number; readonly selectivity: number; readonly twoHop: boolean }
  | { readonly kind: "hnsw-postfilter"; readonly k: number; readonly ef: number; readonly selectivity: number };

/**
 * The beam for a filtered walk. The walk already explores ~1/selectivity more nodes to fill its
 * beam with allowed rows, which keeps recall down to ~10% selectivity; below that, uncorrelated
 * filters leave the true neighbours sparse and the beam grows by BOOST_BELOW_SELECTIVITY / selectivity.
 */
/** Filters that exclude at most this many rows widen the beam by the excluded count instead. */
export const SMALL_EXCLUSION = 256;

/**
 * Below this selectivity the walk scores allowed rows only and moves through disallowed ones by
 * their links (ACORN-1 style, HnswGraph.search twoHop). Measured on 204k rows: a 1-hop walk at
 * 7–20% selectivity scores ~10× more vectors than it keeps and took p99 5–20 ms; the two-hop walk
 * with a 2× beam (of the reduced base, FILTERED_EF_FACTOR) holds recall@10 ≥ 0.99 at p99 ≤ 5 ms
 * (2.5× gained 0.0002 recall for 25% more time). Above 20% the 1-hop walk is as fast.
 */
export const TWO_HOP_BELOW_SELECTIVITY = 0.2;
export const TWO_HOP_EF_FACTOR = 2;
/** Post-filtered searches widen the beam by this many per requested row (recall of ranks k..k+excluded). */
export const POSTFILTER_EF_PER_ROW = 4;
/**
 * Walks under filters keeping less than SCALED_EF_BELOW_SELECTIVITY of the rows start from this share
 * of efSearch. The walk explores ~1/selectivity more nodes than it keeps, so a smaller beam already
 * reaches the unfiltered recall: measured on the full index (M 24, efConstruction 200), forks ≥ 100
 * (13%) and pushedAt within 12 months (7%) keep recall@10 ≥ 0.999 at a base of 77, at 60% of the cost
 * of 128. Above that selectivity the walk behaves like an unfiltered one and needs the whole beam.
 */
export const FILTERED_EF_FACTOR = 0.5;
export const SCALED_EF_BELOW_SELECTIVITY = 0.5;

export function filteredEf(base: number, selectivity: number): number {
  const boost = Math.max(1, BOOST_BELOW_SELECTIVITY / Math.max(selectivity, 1e-9));
  return Math.min(Math.max(base, MAX_FILTERED_EF), Math.ceil(base * boost));
}

/** Which path a query takes. `allowCount` is the number of allowed rows (null = no filter). */
export function planDense(data: DenseData, allowCount: number | null, opts: DenseSearchOptions): DensePlan {
  const rows = allowCount ?? data.count;
  if (rows === 0 || opts.k <= 0) return { kind: "empty" };
  if (opts.exact === true || data.graph === null) return { kind: "exact", rows };
  const base = Math.max(opts.ef, opts.k);
  if (allowCount === null) return { kind: "hnsw", ef: base, selectivity: 1, twoHop: false };
  if (allowCount <= opts.fullScanThreshold) return { kind: "exact", rows };
  const selectivity = rows / data.count;
  // A handful of excluded rows may be exactly the nearest ones (an agent excluding what it has already
  // seen). A filtered walk then circles among them; an unfiltered search for k + excluded rows, with the
  // excluded ones dropped afterwards, finds the true top k of the rest.
  const excluded = data.count - rows;
  if (excluded <= SMALL_EXCLUSION)
    return { kind: "hnsw-postfilter", k: opts.k + excluded, ef: Math.min(MAX_FILTERED_EF, base + POSTFILTER_EF_PER_ROW * (opts.k + excluded)), selectivity };
  const twoHop = selectivity < TWO_HOP_BELOW_SELECTIVITY;
  const walkBase = selectivity < SCALED_EF_BELOW_SELECTIVITY ? Math.max(opts.k, Math.round(base * FILTERED_EF_FACTOR)) : base;
  const ef = twoHop ? Math.min(MAX_FILTERED_EF, Math.ceil(walkBase * TWO_HOP_EF_FACTOR)) : filteredEf(walkBase, selectivity);
  const prepared = scanCodes(data, rows);
  const simd = prepared?.scanner != null;
  // A JavaScript int8 scan was measured slower than the two-hop walk it would replace; the SIMD
  // scan is exact and, up to ~75k rows of the full index, cheaper.
  if (twoHop) return simd && rows * SIMD_SCAN_COST <= TWO_HOP_WALK_COST * ef ? { kind: "exact", rows } : { kind: "hnsw", ef, selectivity, twoHop };
  const rowCost = prepared === undefined ? 1 : simd ? SIMD_SCAN_COST : QUANTIZED_SCAN_COST;
  if (rows * rowCost <= (WALK_COST * ef) / selectivity) return { kind: "exact", rows };
  return { kind: "hnsw", ef, selectivity, twoHop };
}

/** The planner: exact scan over a selective filter, filtered HNSW otherwise. Best first. */
export function denseSearch(data: DenseData, query: Float32Array, allow: Bitset | null, opts: DenseSearchOptions): Hit[] {
  validate(data, query, allow, opts.k);
  if (!Number.isInteger(opts.ef) || opts.ef < 1) throw new RangeError(`denseSearch: ef must be a positive integer, got ${opts.ef}`);
  if (!Number.isInteger(opts.fullScanThreshold) || opts.fullScanThreshold < 0) {
    throw new RangeError(`denseSearch: fullScanThreshold must be a non-negative integer, got ${opts.fullScanThreshold}`);
  }
  const plan = planDense(data, allow === null ? null : allow.count(), opts);
  // A filter within the subgraphs of one field is searched there: their rows are contiguous, so even
  // where the planner chose a scan, scanning a subgraph's rows reads memory in order instead of
  // gathering rows scattered over the segment (measured: about half the time, cache-cold).
  const coverable = plan.kind === "hnsw" || (plan.kind === "exact" && opts.exact !== true && plan.rows > opts.fullScanThreshold);
  if (coverable && allow !== null && data.subgraphs !== undefined && data.subgraphs.length > 0) {
    const cover = coverOf(data, allow);
    if (cover !== null) return searchCover(data, cover, query, allow, opts);
  }
  switch (plan.kind) {
    case "empty":
      return [];
    case "exact": {
      const q8 = allow !== null ? scanCodes(data, plan.rows) : undefined;
      return q8 === undefined ? exactSearch(data, query, opts.k, allow) : boundedScan(data, q8, query, opts.k, allow!);
    }
    case "hnsw":
      return data.graph!.search(data.vectors, data.dims, query, opts.k, plan.ef, allow, plan.twoHop, quantized.get(data.vectors) ?? null);
    case "hnsw-postfilter":
      return data
        .graph!.search(data.vectors, data.dims, query, plan.k, plan.ef, null, false, quantized.get(data.vectors) ?? null)
        .filter((h) => allow!.has(h.idx))
        .slice(0, opts.k);
  }
}

export function exactSearch(data: DenseData, query: Float32Array, k: number, allow: Bitset | null): Hit[] {
  validate(data, query, allow, k);
  if (k <= 0 || data.count === 0) return [];
  const { vectors, dims, count } = data;
  const heap = new MinHeap(k + 1);
  if (allow === null) {
    for (let r = 0; r < count; r++) heap.offer(r, dot(query, 0, vectors, r * dims, dims), k);
  } else {
    // Walk the set bits word by word: cost is proportional to the allowed rows, not the segment.
    const words = allow.words;
    for (let wi = 0; wi < words.length; wi++) {
      let w = words[wi]!;
      const rowBase = wi << 5;
      while (w !== 0) {
        const low = w & -w;
        const r = rowBase + 31 - Math.clz32(low);
        w ^= low;
        heap.offer(r, dot(query, 0, vectors, r * dims, dims), k);
      }
    }
  }
  return heap.drainHits();
}

function validate(data: DenseData, query: Float32Array, allow: Bitset | null, k: number): void {
  if (query.length !== data.dims) {
    throw new ReposearchError(ErrorCode.ValidationError, `query vector has ${query.length} dimensions, the index has ${data.dims}`, {
      details: [{ path: "vector", rule: "dims", message: `expected ${data.dims} dimensions` }],
    });
  }
  if (!Number.isInteger(k) || k < 0) throw new RangeError(`dense search: k must be a non-negative integer, got ${k}`);
  if (allow !== null && allow.size !== data.count) throw new RangeError(`dense search: allow has size ${allow.size}, segment has ${data.count} rows`);
  if (data.vectors.length < data.count * data.dims) throw new RangeError("dense search: vectors shorter than count × dims");
}

// Scratch for boundedScan, grown on demand and reused (searches are synchronous).
let scratchRows = new Int32Array(1024);
let scratchUpper = new Float64Array(1024);
let scratchCode = new Int8Array(256);
let scratchCode16 = new Int16Array(256);

/**
 * Exact top-k over the allowed rows, first on int8 codes. For each row the int8 score a and a
 * bound β with |x·q − a| ≤ β: β = ‖x − x̂‖·‖q‖ + ‖x̂‖·‖q − q̂‖ (x̂, q̂ the dequantised row and query).
 * The k-th largest lower bound a − β is ≤ the true k-th score, so every row of the true top k has
 * an upper bound a + β at or above it; only those rows are re-scored in float32.
 */
export function boundedScan(data: DenseData, q8: BoundedInt8Rows, query: Float32Array, k: number, allow: Bitset): Hit[] {
  validate(data, query, allow, k);
  const { vectors, dims } = data;
  if (k <= 0) return [];
  const scanner = q8.scanner ?? null;
  // Quantise the query: int8 like the rows for the JavaScript loop, int16 for the SIMD kernel
  // (tighter bounds, so fewer rows are re-scored).
  if (scratchCode.length < dims) scratchCode = new Int8Array(dims);
  if (scratchCode16.length < dims) scratchCode16 = new Int16Array(dims);
  const qc = scratchCode;
  const code = scanner === null ? quantizeQuery(query, dims, qc) : quantizeQuery(query, dims, scratchCode16, queryCodeMax(dims));
  const qScale = code.scale;
  // Slack covers float rounding of the bounds and of the float32 re-score itself.
  const qNorm = code.norm * (1 + 1e-6);
  const qErr = code.err * (1 + 1e-6) + 1e-6;
  const { codes, scales, residuals, norms } = q8;
  const lower = new MinHeap(k + 1);
  // The allowed rows, listed first: into the kernel's buffer, which then takes all their integer
  // dot products in one call, or into scratch for the JavaScript loop.
  let rows: Int32Array;
  let n: number;
  if (scanner !== null) {
    rows = scanner.rows;
    n = allow.writeRows(rows);
    scanner.load(scratchCode16);
    scanner.dots(n);
  } else {
    const count = allow.count();
    if (scratchRows.length < count) growScratch(count);
    rows = scratchRows;
    n = allow.writeRows(rows);
  }
  if (scratchUpper.length < n) growScratch(n);
  const out = scanner?.out ?? null;
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const a = (out !== null ? out[i]! : dotInt8(qc, 0, codes, r * dims, dims)) * scales[r]! * qScale;
    const beta = residuals[r]! * qNorm + norms[r]! * qErr + 1e-6;
    lower.offer(r, a - beta, k);
    scratchRows[i] = r;
    scratchUpper[i] = a + beta;
  }
  if (n === 0) return [];
  const threshold = lower.size < k ? -Infinity : lower.topScore();
  const heap = new MinHeap(k + 1);
  for (let i = 0; i < n; i++) {
    if (scratchUpper[i]! < threshold) continue;
    const r = scratchRows[i]!;
    heap.offer(r, dot(query, 0, vectors, r * dims, dims), k);
  }
  return heap.drainHits();
}

function growScratch(atLeast: number): void {
  const size = Math.max(atLeast, scratchRows.length * 2);
  const rows = new Int32Array(size);
  rows.set(scratchRows);
  const upper = new Float64Array(size);
  upper.set(scratchUpper);
  scratchRows = rows;
  scratchUpper = upper;
}

/**
 * Subgraphs may replace a filtered walk when the allowed rows lie (all but at most this many) within
 * the subgraphs of one field; the rest are scanned exactly.
 */
export const COVER_MAX_REMAINDER = 2048;
/** ... and when those subgraphs hold at most this fraction of the segment (else the main walk is cheaper). */
export const COVER_MAX_FRACTION = 0.5;
/**
 * Subgraph walks use a wider beam than the main graph's: they are cheap (10–30k rows), and the densest
 * regions (ai-ml, agent: hundreds of near-identical MCP-server descriptions) need it. Measured on the
 * full index: explicit category lists reach recall@10 0.998 at p99 4.1 ms with 1.6 (2: 0.999, 4.8 ms).
 */
export const COVER_EF_FACTOR = 1.6;

/**
 * With SIMD scans, a cover's subgraph is scanned exactly up to this many allowed rows rather than
 * walked: measured on the full index with per-query categories, exact scans of the subgraphs took
 * 0.44–0.53 ms a query (mostly 'library', 20k rows) against 0.74–0.86 ms for their walks.
 */
export const COVER_SCAN_MAX_ROWS = 32_768;

interface CoverPart {
  readonly sub: SubgraphData;
  readonly allowed: number;
  /** The filter in the subgraph's own rows (null: all of them), computed on first use and kept with the cover. */
  local?: Bitset | null;
}

interface Cover {
  readonly parts: readonly CoverPart[];
  /** Allowed rows outside the field's subgraphs (scanned exactly), or null when there are none. */
  readonly remainder: Bitset | null;
}

// Per allow bitset (the payload index hands out the same object for a repeated filter).
const covers = new WeakMap<Bitset, { readonly data: DenseData; readonly cover: Cover | null }>();

/** The cheapest field whose subgraphs cover `allow`, or null. */
export function coverOf(data: DenseData, allow: Bitset): Cover | null {
  const cached = covers.get(allow);
  if (cached !== undefined && cached.data === data) return cached.cover;
  const total = allow.count();
  let best: Cover | null = null;
  let bestCost = Infinity;
  for (const f of data.subgraphs ?? []) {
    const inside = allow.andCount(f.union);
    if (total - inside > COVER_MAX_REMAINDER) continue;
    const parts: CoverPart[] = [];
    let cost = 0;
    for (const sub of f.subs) {
      const allowed = allow.andCount(sub.rowSet);
      if (allowed === 0) continue;
      parts.push({ sub, allowed });
      cost += sub.data.count;
    }
    cost += total - inside;
    if (cost > COVER_MAX_FRACTION * data.count || cost >= bestCost) continue;
    bestCost = cost;
    best = { parts, remainder: total === inside ? null : allow.clone().andNot(f.union) };
  }
  covers.set(allow, { data, cover: best });
  return best;
}

/** Top k over the cover: each subgraph under the filter restricted to it, plus an exact scan of the remainder. */
function searchCover(data: DenseData, cover: Cover, query: Float32Array, allow: Bitset, opts: DenseSearchOptions): Hit[] {
  const hits: Hit[] = [];
  const subOpts = { ...opts, ef: Math.round(opts.ef * COVER_EF_FACTOR) };
  for (const part of cover.parts) {
    const { sub, allowed } = part;
    if (part.local === undefined) {
      let local: Bitset | null = null;
      if (allowed < sub.data.count) {
        local = new Bitset(sub.data.count);
        const rows = sub.rows;
        for (let i = 0; i < rows.length; i++) if (allow.has(rows[i]!)) local.set(i);
      }
      part.local = local;
    }
    // Scans read the int8 codes only under a filter: an unfiltered exact search is the float32 loop.
    const scan = allowed <= COVER_SCAN_MAX_ROWS && usesSimdScans(sub.data);
    const local = scan ? (part.local ?? Bitset.full(sub.data.count)) : part.local;
    for (const h of denseSearch(sub.data, query, local, scan ? { ...subOpts, exact: true } : subOpts)) hits.push({ idx: sub.rows[h.idx]!, score: h.score });
  }
  if (cover.remainder !== null) {
    const q8 = scanCodes(data, cover.remainder.count());
    hits.push(...(q8 === undefined ? exactSearch(data, query, opts.k, cover.remainder) : boundedScan(data, q8, query, opts.k, cover.remainder)));
  }
  hits.sort(bestFirst);
  return hits.slice(0, opts.k);
}

/** One subgraph as the dense planner searches it: its own vectors (DenseData) and its rows as a bitset. */
export interface SubgraphData {
  readonly field: string;
  readonly value: string;
  /** Segment rows of the subgraph's local rows. */
  readonly rows: Int32Array;
  readonly rowSet: Bitset;
  readonly data: DenseData;
}

/** The subgraphs of one field, and the union of their rows. */
export interface SubgraphField {
  readonly field: string;
  readonly union: Bitset;
  readonly subs: readonly SubgraphData[];
}
