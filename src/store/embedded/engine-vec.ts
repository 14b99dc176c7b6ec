import type { Int8Scanner } from "./int8-kernel.js";

/**
 * Vector kernels. Vectors are float32 rows of one big row-major Float32Array; rows are addressed by
 * element offset (row * dims) so no subarray views are allocated in hot loops.
 */

/**
 * Dot product of a[ao .. ao+dims) and b[bo .. bo+dims). Four independent accumulators let the CPU
 * overlap the multiply-adds instead of waiting on one dependency chain (about 2x faster in V8).
 */
export function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, dims: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const end = ao + dims - (dims & 3);
  let i = ao;
  let j = bo;
  for (; i < end; i += 4, j += 4) {
    s0 += a[i]! * b[j]!;
    s1 += a[i + 1]! * b[j + 1]!;
    s2 += a[i + 2]! * b[j + 2]!;
    s3 += a[i + 3]! * b[j + 3]!;
  }
  const stop = ao + dims;
  for (; i < stop; i++, j++) s0 += a[i]! * b[j]!;
  return s0 + s1 + (s2 + s3);
}

/** Dot product of a float32 vector with an int8 row (unscaled): a quarter of the row bytes of dot(). */
export function dotF32I8(a: Float32Array, b: Int8Array, bo: number, dims: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const end = dims - (dims & 3);
  let i = 0;
  let j = bo;
  for (; i < end; i += 4, j += 4) {
    s0 += a[i]! * b[j]!;
    s1 += a[i + 1]! * b[j + 1]!;
    s2 += a[i + 2]! * b[j + 2]!;
    s3 += a[i + 3]! * b[j + 3]!;
  }
  for (; i < dims; i++, j++) s0 += a[i]! * b[j]!;
  return s0 + s1 + (s2 + s3);
}

/** Rows quantised to int8 with one scale per row: x ≈ code × scale. */
export interface Int8Rows {
  readonly codes: Int8Array;
  readonly scales: Float32Array;
  /** The WebAssembly SIMD kernel whose memory holds `codes`, where the runtime has one (int8-kernel.ts). */
  readonly scanner?: Int8Scanner | null;
}

/** A query quantised like the rows: code ≈ query / scale. */
export interface QueryCode {
  readonly scale: number;
  /** ‖query‖₂ and ‖query − scale·code‖₂, for error bounds. */
  readonly norm: number;
  readonly err: number;
}

/**
 * Writes the symmetric integer code of `query` (scale = max |x| / maxCode) into `code`: int8 like the
 * rows by default; the SIMD kernel takes int16 codes, whose finer scale leaves the rows' codes as the
 * only rounding of a walk's scores.
 */
export function quantizeQuery(query: Float32Array, dims: number, code: Int8Array | Int16Array, maxCode = 127): QueryCode {
  let max = 0;
  let norm2 = 0;
  for (let i = 0; i < dims; i++) {
    const a = query[i]!;
    norm2 += a * a;
    const abs = a < 0 ? -a : a;
    if (abs > max) max = abs;
  }
  const scale = max / maxCode;
  let err2 = 0;
  for (let i = 0; i < dims; i++) {
    const c = max === 0 ? 0 : Math.round(query[i]! / scale);
    code[i] = c;
    const e = query[i]! - c * scale;
    err2 += e * e;
  }
  return { scale, norm: Math.sqrt(norm2), err: Math.sqrt(err2) };
}

/** Int8 rows plus what it takes to bound the quantisation error of a dot product exactly. */
export interface BoundedInt8Rows extends Int8Rows {
  /** ‖x − scale·code‖₂ per row, rounded up. */
  readonly residuals: Float32Array;
  /** ‖scale·code‖₂ per row, rounded up. */
  readonly norms: Float32Array;
}

/**
 * Symmetric per-row int8 quantisation (scale = max |x| / 127). A quarter of the memory traffic of
 * float32 and integer arithmetic; the dot-product error is ~1e-3 for normalised 256-d rows.
 */
export function quantizeInt8(vectors: Float32Array, dims: number, count: number, into?: Int8Array): Int8Rows {
  if (into !== undefined && into.length !== count * dims) throw new RangeError(`quantizeInt8: destination has ${into.length} codes, need ${count * dims}`);
  const codes = into ?? new Int8Array(count * dims);
  const scales = new Float32Array(count);
  for (let r = 0; r < count; r++) {
    const off = r * dims;
    let max = 0;
    // Math.abs and roundHalfUp instead of a sign test and Math.round: embedding components change sign
    // at random, and the mispredicted branches made this loop most of an index load's quantisation.
    for (let i = 0; i < dims; i++) {
      const abs = Math.abs(vectors[off + i]!);
      if (abs > max) max = abs;
    }
    if (max === 0) continue;
    const inv = 127 / max;
    for (let i = 0; i < dims; i++) codes[off + i] = roundHalfUp(vectors[off + i]! * inv);
    scales[r] = max / 127;
  }
  return { codes, scales };
}

/**
 * Math.round (halves toward +∞) for finite x, without its sign-dependent branch. floor(x + 0.5) differs
 * from it only where the addition rounds up (0.49999999999999994 + 0.5 is 1); then c − 0.5 (exact for the
 * small integers used here) exceeds x, and the comparison undoes it.
 */
export function roundHalfUp(x: number): number {
  const c = Math.floor(x + 0.5);
  return c - 0.5 > x ? c - 1 : c;
}

/** quantizeInt8 plus per-row residual and code norms, for exact error bounds. `into`: where the codes go (zeroed, count × dims). */
export function quantizeInt8Bounded(vectors: Float32Array, dims: number, count: number, into?: Int8Array): BoundedInt8Rows {
  const { codes, scales } = quantizeInt8(vectors, dims, count, into);
  const residuals = new Float32Array(count);
  const norms = new Float32Array(count);
  for (let r = 0; r < count; r++) {
    const off = r * dims;
    const sc = scales[r]!;
    let res = 0;
    let nrm = 0;
    for (let i = 0; i < dims; i++) {
      const d = sc * codes[off + i]!;
      const e = vectors[off + i]! - d;
      res += e * e;
      nrm += d * d;
    }
    residuals[r] = roundUp(Math.sqrt(res));
    norms[r] = roundUp(Math.sqrt(nrm));
  }
  return { codes, scales, residuals, norms };
}

/**
 * The given rows of already quantised rows, renumbered 0..rows.length-1. Quantisation is per row, so
 * this equals quantizeInt8Bounded over the gathered float32 rows, at the cost of a copy.
 * `into`: where the codes go (rows.length × dims).
 */
export function gatherInt8Rows(src: BoundedInt8Rows, dims: number, rows: Int32Array, into?: Int8Array): BoundedInt8Rows {
  const n = rows.length;
  if (into !== undefined && into.length !== n * dims) throw new RangeError(`gatherInt8Rows: destination has ${into.length} codes, need ${n * dims}`);
  const codes = into ?? new Int8Array(n * dims);
  const scales = new Float32Array(n);
  const residuals = new Float32Array(n);
  const norms = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    codes.set(src.codes.subarray(r * dims, (r + 1) * dims), i * dims);
    scales[i] = src.scales[r]!;
    residuals[i] = src.residuals[r]!;
    norms[i] = src.norms[r]!;
  }
  return { codes, scales, residuals, norms };
}

/** The smallest float32 ≥ x (a stored bound must never shrink). */
function roundUp(x: number): number {
  const f = Math.fround(x);
  return f >= x ? f : Math.fround(f + Math.max(Number.EPSILON, Math.abs(f) * 2 ** -23));
}

/** Integer dot product of two int8 rows (exact in int32: |sum| ≤ dims · 127²). */
export function dotInt8(a: Int8Array, ao: number, b: Int8Array, bo: number, dims: number): number {
  let s0 = 0;
  let s1 = 0;
  const end = ao + dims - (dims & 3);
  let i = ao;
  let j = bo;
  for (; i < end; i += 4, j += 4) {
    s0 = (s0 + a[i]! * b[j]! + a[i + 2]! * b[j + 2]!) | 0;
    s1 = (s1 + a[i + 1]! * b[j + 1]! + a[i + 3]! * b[j + 3]!) | 0;
  }
  const stop = ao + dims;
  for (; i < stop; i++, j++) s0 = (s0 + a[i]! * b[j]!) | 0;
  return (s0 + s1) | 0;
}
