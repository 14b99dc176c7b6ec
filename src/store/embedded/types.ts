/** A candidate inside one segment: its row index and score (higher is better). */
export interface Hit {
  idx: number;
  score: number;
}

/**
 * Best first, ties by lower row (stable results). Returns only -1/0/1: a comparator returning
 * `b.score - a.score` hands sort() a fresh heap number per comparison (scores are not small integers).
 */
export function bestFirst(a: Hit, b: Hit): number {
  return a.score > b.score ? -1 : a.score < b.score ? 1 : a.idx - b.idx;
}
