/**
 * Seeded synthetic vectors for tests and measurements: L2-normalised points around random cluster
 * centres (two levels: topics and sub-topics), so nearest neighbours are structured like text
 * embeddings rather than uniform noise.
 */

import { seededRandom } from "../../src/common/random.js";

export { seededRandom };

/** Standard normal samples (Box–Muller) from a uniform source. */
export function gaussian(rand: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const u = 1 - rand();
    const v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

export interface ClusteredOptions {
  /** Top-level clusters. */
  readonly clusters: number;
  /** Sub-clusters per cluster. */
  readonly subclusters?: number;
  /** Norm of a sub-cluster's offset from its cluster centre (centres have norm 1). */
  readonly subSpread?: number;
  /** Norm of a point's isotropic offset from its sub-cluster centre. */
  readonly noise?: number;
  readonly seed?: number;
}

function normalizeRow(v: Float32Array, off: number, dims: number): void {
  let s = 0;
  for (let i = 0; i < dims; i++) s += v[off + i]! * v[off + i]!;
  const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < dims; i++) v[off + i]! *= inv;
}

/** `count` rows of `dims` floats, row-major and L2-normalised. */
export function clusteredVectors(count: number, dims: number, opts: ClusteredOptions): Float32Array {
  const g = gaussian(seededRandom(opts.seed ?? 1));
  const subs = opts.subclusters ?? 8;
  const subSpread = opts.subSpread ?? 0.6;
  const noise = opts.noise ?? 0.5;
  const scale = 1 / Math.sqrt(dims);
  const centres = new Float32Array(opts.clusters * subs * dims);
  for (let c = 0; c < opts.clusters; c++) {
    const top = new Float32Array(dims);
    for (let i = 0; i < dims; i++) top[i] = g();
    normalizeRow(top, 0, dims);
    for (let s = 0; s < subs; s++) {
      const off = (c * subs + s) * dims;
      for (let i = 0; i < dims; i++) centres[off + i] = top[i]! + subSpread * scale * g();
    }
  }
  const out = new Float32Array(count * dims);
  const rand = seededRandom((opts.seed ?? 1) ^ 0x9e3779b9);
  const nCentres = opts.clusters * subs;
  for (let r = 0; r < count; r++) {
    const c = Math.floor(rand() * nCentres) * dims;
    const off = r * dims;
    for (let i = 0; i < dims; i++) out[off + i] = centres[c + i]! + noise * scale * g();
    normalizeRow(out, off, dims);
  }
  return out;
}
