/**
 * Exact dense ranking over an in-memory matrix of unit vectors, for evaluating embedders on the full
 * corpus without building an index (204k × 128 dot products per query is ~26M multiply-adds).
 */

export interface TopK {
  /** Row indices, best first (ties: lower index first). */
  readonly rows: Int32Array;
  readonly scores: Float32Array;
}

/** The k rows of `docs` (count × dims, row-major) with the highest dot product with `q`. */
export function topKDot(docs: Float32Array, dims: number, q: Float32Array, k: number): TopK {
  const count = Math.floor(docs.length / dims);
  k = Math.min(k, count);
  // Ascending by score, so slot 0 holds the current k-th best.
  const rows = new Int32Array(k).fill(-1);
  const scores = new Float32Array(k).fill(-Infinity);
  let min = -Infinity;
  for (let i = 0; i < count; i++) {
    const o = i * dims;
    let s = 0;
    for (let j = 0; j < dims; j++) s += docs[o + j]! * q[j]!;
    if (s <= min) continue;
    // Insertion into the sorted buffer: slide lower scores down, dropping slot 0.
    let p = 0;
    while (p + 1 < k && scores[p + 1]! < s) {
      scores[p] = scores[p + 1]!;
      rows[p] = rows[p + 1]!;
      p++;
    }
    scores[p] = s;
    rows[p] = i;
    min = scores[0]!;
  }
  const n = rows.filter((r) => r >= 0).length;
  const outRows = new Int32Array(n);
  const outScores = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    outRows[i] = rows[k - 1 - i]!;
    outScores[i] = scores[k - 1 - i]!;
  }
  return { rows: outRows, scores: outScores };
}
