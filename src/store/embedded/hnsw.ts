// STUB: replaced by the store-engine work. Signatures are the contract.
import type { Bitset } from "./bitset.js";
import type { Hit } from "./types.js";

export interface HnswParams {
  /** Links per node on upper layers (layer 0 keeps 2·m). */
  readonly m: number;
  readonly efConstruction: number;
  /** Seed for level assignment, so builds are reproducible. */
  readonly seed?: number;
}

/** The graph only; vectors live in the segment (row-major Float32Array, L2-normalised, dot = cosine). */
export class HnswGraph {
  static build(vectors: Float32Array, dims: number, count: number, params: HnswParams, onProgress?: (done: number, total: number) => void): HnswGraph { throw new Error("not implemented"); }
  /** Top-k rows by dot product among rows allowed by `allow` (null = all), best first. */
  search(vectors: Float32Array, dims: number, query: Float32Array, k: number, ef: number, allow: Bitset | null): Hit[] { throw new Error("not implemented"); }
  serialize(): Uint8Array { throw new Error("not implemented"); }
  static deserialize(bytes: Uint8Array): HnswGraph { throw new Error("not implemented"); }
}
