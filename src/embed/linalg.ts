/** The little dense linear algebra the static-model distillation needs (PCA of a few hundred dims). */

/**
 * Eigen-decomposition of a symmetric n×n matrix (row-major): Householder tridiagonalisation followed by
 * the implicit QL algorithm (EISPACK tred2/tql2, as in JAMA). About 10× less work than Jacobi rotations
 * for the 512×512 covariance of the static-model distillation.
 * Returns eigenvalues ascending and eigenvectors as the columns of `vectors` (row-major n×n).
 *
 * V is kept column-major while it works (`at(i, j)` is V[i][j]): the O(n³) inner loops walk a column of
 * V, which is then contiguous. The arithmetic is JAMA's, in its order, so the results are bit for bit
 * those of the row-major loops, about 4× sooner at n = 512.
 */
export function symmetricEigen(a: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  // a is symmetric, so its row-major copy is also V's column-major start.
  const V = Float64Array.from(a);
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  const at = (i: number, j: number) => j * n + i;
  // tred2
  for (let j = 0; j < n; j++) d[j] = V[at(n - 1, j)]!;
  for (let i = n - 1; i > 0; i--) {
    let scale = 0;
    let h = 0;
    for (let k = 0; k < i; k++) scale += Math.abs(d[k]!);
    if (scale === 0) {
      e[i] = d[i - 1]!;
      for (let j = 0; j < i; j++) {
        d[j] = V[at(i - 1, j)]!;
        V[at(i, j)] = 0;
        V[at(j, i)] = 0;
      }
    } else {
      for (let k = 0; k < i; k++) {
        d[k]! /= scale;
        h += d[k]! * d[k]!;
      }
      let f = d[i - 1]!;
      let g = Math.sqrt(h);
      if (f > 0) g = -g;
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (let j = 0; j < i; j++) e[j] = 0;
      for (let j = 0; j < i; j++) {
        f = d[j]!;
        V[at(j, i)] = f;
        g = e[j]! + V[at(j, j)]! * f;
        for (let k = j + 1; k <= i - 1; k++) {
          g += V[at(k, j)]! * d[k]!;
          e[k]! += V[at(k, j)]! * f;
        }
        e[j] = g;
      }
      f = 0;
      for (let j = 0; j < i; j++) {
        e[j]! /= h;
        f += e[j]! * d[j]!;
      }
      const hh = f / (h + h);
      for (let j = 0; j < i; j++) e[j]! -= hh * d[j]!;
      for (let j = 0; j < i; j++) {
        f = d[j]!;
        g = e[j]!;
        for (let k = j; k <= i - 1; k++) V[at(k, j)]! -= f * e[k]! + g * d[k]!;
        d[j] = V[at(i - 1, j)]!;
        V[at(i, j)] = 0;
      }
    }
    d[i] = h;
  }
  for (let i = 0; i < n - 1; i++) {
    V[at(n - 1, i)] = V[at(i, i)]!;
    V[at(i, i)] = 1;
    const h = d[i + 1]!;
    if (h !== 0) {
      for (let k = 0; k <= i; k++) d[k] = V[at(k, i + 1)]! / h;
      for (let j = 0; j <= i; j++) {
        let g = 0;
        for (let k = 0; k <= i; k++) g += V[at(k, i + 1)]! * V[at(k, j)]!;
        for (let k = 0; k <= i; k++) V[at(k, j)]! -= g * d[k]!;
      }
    }
    for (let k = 0; k <= i; k++) V[at(k, i + 1)] = 0;
  }
  for (let j = 0; j < n; j++) {
    d[j] = V[at(n - 1, j)]!;
    V[at(n - 1, j)] = 0;
  }
  V[at(n - 1, n - 1)] = 1;
  e[0] = 0;
  // tql2
  for (let i = 1; i < n; i++) e[i - 1] = e[i]!;
  e[n - 1] = 0;
  let f = 0;
  let tst1 = 0;
  const eps = 2 ** -52;
  for (let l = 0; l < n; l++) {
    tst1 = Math.max(tst1, Math.abs(d[l]!) + Math.abs(e[l]!));
    let m = l;
    while (m < n) {
      if (Math.abs(e[m]!) <= eps * tst1) break;
      m++;
    }
    if (m > l) {
      do {
        let g = d[l]!;
        let p = (d[l + 1]! - g) / (2 * e[l]!);
        let r = Math.hypot(p, 1);
        if (p < 0) r = -r;
        d[l] = e[l]! / (p + r);
        d[l + 1] = e[l]! * (p + r);
        const dl1 = d[l + 1]!;
        let h = g - d[l]!;
        for (let i = l + 2; i < n; i++) d[i]! -= h;
        f += h;
        p = d[m]!;
        let c = 1;
        let c2 = c;
        let c3 = c;
        const el1 = e[l + 1]!;
        let s = 0;
        let s2 = 0;
        for (let i = m - 1; i >= l; i--) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e[i]!;
          h = c * p;
          r = Math.hypot(p, e[i]!);
          e[i + 1] = s * r;
          s = e[i]! / r;
          c = p / r;
          p = c * d[i]! - s * g;
          d[i + 1] = h + s * (c * g + s * d[i]!);
          for (let k = 0; k < n; k++) {
            h = V[at(k, i + 1)]!;
            V[at(k, i + 1)] = s * V[at(k, i)]! + c * h;
            V[at(k, i)] = c * V[at(k, i)]! - s * h;
          }
        }
        p = (-s * s2 * c3 * el1 * e[l]!) / dl1;
        e[l] = s * p;
        d[l] = c * p;
      } while (Math.abs(e[l]!) > eps * tst1);
    }
    d[l] = d[l]! + f;
    e[l] = 0;
  }
  // Column-major V, read row-major, holds the eigenvectors as rows: transpose it for the callers.
  const vectors = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) vectors[i * n + j] = V[at(i, j)]!;
  return { values: d, vectors };
}

export interface Pca {
  readonly mean: Float64Array;
  /** dims rows × inDims, each a unit principal axis, by decreasing variance. */
  readonly components: Float64Array;
  readonly dims: number;
  readonly inDims: number;
  readonly explained: number;
}

/** cov's upper triangle += x xᵀ for the row of `x` at `o`. */
function addRow(cov: Float64Array, x: Float64Array, o: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const xi = x[o + i]!;
    const base = i * n;
    for (let j = i; j < n; j++) cov[base + j]! += xi * x[o + j]!;
  }
}

/** cov's upper triangle += the four rows of `x`, one after another for each entry. */
function addBlockOfFour(cov: Float64Array, x: Float64Array, n: number): void {
  const o1 = n;
  const o2 = 2 * n;
  const o3 = 3 * n;
  for (let i = 0; i < n; i++) {
    const a0 = x[i]!;
    const a1 = x[o1 + i]!;
    const a2 = x[o2 + i]!;
    const a3 = x[o3 + i]!;
    const base = i * n;
    for (let j = i; j < n; j++) {
      let c = cov[base + j]!;
      c += a0 * x[j]!;
      c += a1 * x[o1 + j]!;
      c += a2 * x[o2 + j]!;
      c += a3 * x[o3 + j]!;
      cov[base + j] = c;
    }
  }
}

/**
 * PCA of `rows` (count × inDims, row-major), fitted on at most `sampleRows` evenly spaced rows. At 512
 * dims to 128, 2,000 rows (a small build's vocabulary) take 0.9 s and 20,000 (a full build's sample)
 * 2.4 s, whole process; 3.0 and 6.5 s before the blocked covariance and the column-major eigensolver.
 */
export function fitPca(rows: Float32Array, count: number, inDims: number, dims: number, sampleRows = 20_000): Pca {
  const step = Math.max(1, Math.floor(count / sampleRows));
  const mean = new Float64Array(inDims);
  let used = 0;
  for (let r = 0; r < count; r += step, used++) for (let j = 0; j < inDims; j++) mean[j]! += rows[r * inDims + j]!;
  for (let j = 0; j < inDims; j++) mean[j]! /= used;
  const cov = new Float64Array(inDims * inDims);
  // The upper triangle is 1 MB at 512 dims: adding one row at a time streams all of it per row, so rows
  // come in blocks of four, each entry adding them in row order (the same sums, to the bit, as one at a
  // time; about twice as fast).
  const x = new Float64Array(4 * inDims);
  let filled = 0;
  const flush = () => {
    if (filled === 4) addBlockOfFour(cov, x, inDims);
    else for (let t = 0; t < filled; t++) addRow(cov, x, t * inDims, inDims);
    filled = 0;
  };
  for (let r = 0; r < count; r += step) {
    const o = filled * inDims;
    for (let j = 0; j < inDims; j++) x[o + j] = rows[r * inDims + j]! - mean[j]!;
    if (++filled === 4) flush();
  }
  flush();
  for (let i = 0; i < inDims; i++) for (let j = i; j < inDims; j++) cov[j * inDims + i] = cov[i * inDims + j]! /= used;
  const { values, vectors } = symmetricEigen(cov, inDims);
  const order = [...values.keys()].sort((a, b) => values[b]! - values[a]!);
  const components = new Float64Array(dims * inDims);
  let total = 0;
  let kept = 0;
  for (let i = 0; i < inDims; i++) total += Math.max(0, values[i]!);
  for (let c = 0; c < dims; c++) {
    const col = order[c]!;
    kept += Math.max(0, values[col]!);
    for (let j = 0; j < inDims; j++) components[c * inDims + j] = vectors[j * inDims + col]!;
  }
  return { mean, components, dims, inDims, explained: total > 0 ? kept / total : 1 };
}

/**
 * Projects one row (inDims) onto the PCA axes into `out` (dims). The row is centred once, and four axes
 * share each read of it; every axis still sums in input order, so the values are those of the plain
 * loop, bit for bit (a full build projects 60,000 rows: about 3× sooner).
 */
export function pcaProject(p: Pca, row: Float32Array | Float64Array, rowOffset: number, out: Float32Array, outOffset: number): void {
  const { inDims, dims, mean, components } = p;
  const x = centred.length >= inDims ? centred : (centred = new Float64Array(inDims));
  for (let j = 0; j < inDims; j++) x[j] = row[rowOffset + j]! - mean[j]!;
  let c = 0;
  for (; c + 4 <= dims; c += 4) {
    const b0 = c * inDims;
    const b1 = b0 + inDims;
    const b2 = b1 + inDims;
    const b3 = b2 + inDims;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    for (let j = 0; j < inDims; j++) {
      const v = x[j]!;
      s0 += v * components[b0 + j]!;
      s1 += v * components[b1 + j]!;
      s2 += v * components[b2 + j]!;
      s3 += v * components[b3 + j]!;
    }
    out[outOffset + c] = s0;
    out[outOffset + c + 1] = s1;
    out[outOffset + c + 2] = s2;
    out[outOffset + c + 3] = s3;
  }
  for (; c < dims; c++) {
    let s = 0;
    const base = c * inDims;
    for (let j = 0; j < inDims; j++) s += x[j]! * components[base + j]!;
    out[outOffset + c] = s;
  }
}

/** pcaProject's centred row, reused across calls (single-threaded: one call at a time). */
let centred = new Float64Array(0);
