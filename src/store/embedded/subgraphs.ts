/**
 * Payload subgraphs: one HNSW graph per frequent value of a keyword field (category, language), over
 * that value's rows only, the way Qdrant adds payload-aware links per indexed keyword value.
 *
 * Why: a filtered walk of the main graph fails when the filter is correlated with the embedding. The
 * classifier files repositories partly by their vectors and a trained model clusters languages, so a
 * category or a language is a region of the space; for a query outside that region, the allowed rows
 * nearest to it are scattered outliers that a walk under the filter cannot reach (measured on the full
 * index with the trained model: recall@10 0.82 for `category in [ai-ml, agent]`, with 24 of 300 queries
 * finding none of the true top 10, and a wider beam barely helps). Searching the value's own graph
 * instead is an unfiltered walk over a well-connected graph of ~10–30k rows.
 *
 * On disk: `subgraphs.bin` (docs/index-format.md), the graphs and their row lists; vectors are gathered
 * from the segment's own at load time.
 */
import type { RepoPayload } from "../../dataset/record.js";
import { Bitset } from "./bitset.js";
import { prepareDense, prepareDenseRows, type DenseData, type SubgraphData, type SubgraphField } from "./dense.js";

export type { SubgraphField };
import { HnswGraph, type HnswParams } from "./hnsw.js";

/** Keyword fields that get subgraphs: those whose filters are correlated with the embedding. */
export const SUBGRAPH_FIELDS = ["category", "languageLc"] as const;
/** Values with fewer rows get no graph: a filter on them alone is scanned exactly anyway. */
export const SUBGRAPH_MIN_ROWS = 2000;

export interface SubgraphOptions {
  readonly fields: readonly string[];
  readonly minRows: number;
}
export const DEFAULT_SUBGRAPH_OPTIONS: SubgraphOptions = Object.freeze({ fields: SUBGRAPH_FIELDS, minRows: SUBGRAPH_MIN_ROWS });

/** As stored: a value's rows (ascending, segment row numbers) and the graph over them (local numbering). */
export interface Subgraph {
  readonly field: string;
  readonly value: string;
  readonly rows: Int32Array;
  readonly graph: HnswGraph;
}

/** The rows of every value of `field` with at least `minRows` rows, by value (sorted by value). */
export function valueRows(payloads: readonly RepoPayload[], field: string, minRows: number): [string, Int32Array][] {
  const byValue = new Map<string, number[]>();
  for (let r = 0; r < payloads.length; r++) {
    const v = (payloads[r] as unknown as Record<string, unknown>)[field];
    if (typeof v !== "string") continue;
    let list = byValue.get(v);
    if (!list) byValue.set(v, (list = []));
    list.push(r);
  }
  return [...byValue.entries()]
    .filter(([, rows]) => rows.length >= minRows)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([v, rows]) => [v, Int32Array.from(rows)]);
}

/** Copies the given rows' vectors into a new row-major array (the subgraph's own numbering). */
export function gatherRows(vectors: Float32Array, dims: number, rows: Int32Array): Float32Array {
  const out = new Float32Array(rows.length * dims);
  for (let i = 0; i < rows.length; i++) out.set(vectors.subarray(rows[i]! * dims, (rows[i]! + 1) * dims), i * dims);
  return out;
}

export function buildSubgraphs(
  payloads: readonly RepoPayload[],
  vectors: Float32Array,
  dims: number,
  params: HnswParams,
  opts: SubgraphOptions = DEFAULT_SUBGRAPH_OPTIONS,
  onProgress: (done: number, total: number) => void = () => {},
): Subgraph[] {
  const todo: { field: string; value: string; rows: Int32Array }[] = [];
  for (const field of opts.fields) for (const [value, rows] of valueRows(payloads, field, opts.minRows)) todo.push({ field, value, rows });
  const total = todo.reduce((s, t) => s + t.rows.length, 0);
  let done = 0;
  onProgress(0, total);
  return todo.map((t) => {
    const graph = HnswGraph.build(gatherRows(vectors, dims, t.rows), dims, t.rows.length, params);
    done += t.rows.length;
    onProgress(done, total);
    return { ...t, graph };
  });
}

const MAGIC = new TextEncoder().encode("RSSUBG01");
const FORMAT_VERSION = 1;

/**
 * Layout (little-endian, every section 4-byte aligned): magic "RSSUBG01", u32 version, u32 n; then n
 * entries of u32 fieldBytes, u32 valueBytes, u32 rowCount, u32 graphBytes, field (UTF-8), value (UTF-8),
 * rows (i32 × rowCount), graph (HnswGraph.serialize()).
 */
export function serializeSubgraphs(subs: readonly Subgraph[]): Uint8Array {
  const enc = new TextEncoder();
  const parts = subs.map((s) => ({ field: enc.encode(s.field), value: enc.encode(s.value), rows: s.rows, graph: s.graph.serialize() }));
  let total = MAGIC.length + 8;
  for (const p of parts) total += 16 + align4(p.field.length) + align4(p.value.length) + p.rows.byteLength + align4(p.graph.byteLength);
  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  out.set(MAGIC, 0);
  let off = MAGIC.length;
  dv.setUint32(off, FORMAT_VERSION, true);
  dv.setUint32(off + 4, parts.length, true);
  off += 8;
  for (const p of parts) {
    [p.field.length, p.value.length, p.rows.length, p.graph.byteLength].forEach((v, i) => dv.setUint32(off + 4 * i, v, true));
    off += 16;
    out.set(p.field, off);
    off += align4(p.field.length);
    out.set(p.value, off);
    off += align4(p.value.length);
    out.set(new Uint8Array(p.rows.buffer, p.rows.byteOffset, p.rows.byteLength), off);
    off += p.rows.byteLength;
    out.set(p.graph, off);
    off += align4(p.graph.byteLength);
  }
  return out;
}

/** Parses subgraphs.bin and checks it against the segment (row bounds, order, graph sizes). Throws Error. */
export function deserializeSubgraphs(bytes: Uint8Array, segmentCount: number, dims: number): Subgraph[] {
  const fail = (why: string): never => {
    throw new Error(`subgraphs: ${why}`);
  };
  if (bytes.byteLength < MAGIC.length + 8) fail("truncated header");
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) fail("bad magic");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dv.getUint32(MAGIC.length, true) !== FORMAT_VERSION) fail(`unsupported version ${dv.getUint32(MAGIC.length, true)}`);
  const n = dv.getUint32(MAGIC.length + 4, true);
  const dec = new TextDecoder("utf-8", { fatal: true });
  let off = MAGIC.length + 8;
  const out: Subgraph[] = [];
  for (let s = 0; s < n; s++) {
    if (off + 16 > bytes.byteLength) fail(`entry ${s}: truncated`);
    const [fieldBytes, valueBytes, rowCount, graphBytes] = [0, 1, 2, 3].map((i) => dv.getUint32(off + 4 * i, true)) as [number, number, number, number];
    off += 16;
    const end = off + align4(fieldBytes) + align4(valueBytes) + rowCount * 4 + align4(graphBytes);
    if (end > bytes.byteLength) fail(`entry ${s}: truncated`);
    const field = dec.decode(bytes.subarray(off, off + fieldBytes));
    off += align4(fieldBytes);
    const value = dec.decode(bytes.subarray(off, off + valueBytes));
    off += align4(valueBytes);
    // Copy: the file buffer's offset need not be 4-aligned for an Int32Array view.
    const rows = new Int32Array(rowCount);
    new Uint8Array(rows.buffer).set(bytes.subarray(off, off + rowCount * 4));
    off += rowCount * 4;
    const graph = HnswGraph.deserialize(bytes.subarray(off, off + graphBytes));
    off += align4(graphBytes);
    for (let i = 0; i < rowCount; i++) {
      if (rows[i]! < 0 || rows[i]! >= segmentCount || (i > 0 && rows[i]! <= rows[i - 1]!)) fail(`${field}=${value}: rows out of range or order`);
    }
    if (graph.count !== rowCount || graph.dims !== dims) fail(`${field}=${value}: graph has ${graph.count} × ${graph.dims}, expected ${rowCount} × ${dims}`);
    out.push({ field, value, rows, graph });
  }
  if (off !== bytes.byteLength) fail("trailing bytes");
  return out;
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

/**
 * Gathers each subgraph's vectors (dims × 4 bytes per row) and row bitsets, and quantises them for
 * int8 walks and scans like the segment's own (prepareDense), copying the codes from `parent` (the
 * segment's dense data, already prepared) when given.
 */
export function materializeSubgraphs(subs: readonly Subgraph[], vectors: Float32Array, dims: number, count: number, parent?: DenseData): SubgraphField[] {
  const fields = new Map<string, SubgraphData[]>();
  for (const s of subs) {
    const data: DenseData = { vectors: gatherRows(vectors, dims, s.rows), dims, count: s.rows.length, graph: s.graph };
    if (parent) prepareDenseRows(data, parent, s.rows);
    else prepareDense(data);
    const list = fields.get(s.field) ?? [];
    list.push({ field: s.field, value: s.value, rows: s.rows, rowSet: Bitset.fromIndices(count, s.rows), data });
    fields.set(s.field, list);
  }
  return [...fields.entries()].map(([field, list]) => {
    const union = new Bitset(count);
    for (const d of list) union.or(d.rowSet);
    return { field, union, subs: list };
  });
}
