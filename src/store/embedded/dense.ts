// STUB: replaced by the store-engine work. Signatures are the contract.
import type { Bitset } from "./bitset.js";
import type { HnswGraph } from "./hnsw.js";
import type { Hit } from "./types.js";

export interface DenseData {
  readonly vectors: Float32Array;
  readonly dims: number;
  readonly count: number;
  readonly graph: HnswGraph | null;
}
export interface DenseSearchOptions {
  readonly k: number;
  readonly ef: number;
  /** Allowed subsets with at most this many rows are scanned exactly; larger ones walk the graph. */
  readonly fullScanThreshold: number;
  readonly exact?: boolean;
}
/** The planner: exact scan over a selective filter, filtered HNSW otherwise. Best first. */
export function denseSearch(data: DenseData, query: Float32Array, allow: Bitset | null, opts: DenseSearchOptions): Hit[] { throw new Error("not implemented"); }
export function exactSearch(data: DenseData, query: Float32Array, k: number, allow: Bitset | null): Hit[] { throw new Error("not implemented"); }
