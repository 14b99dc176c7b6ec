/** A candidate inside one segment: its row index and score (higher is better). */
export interface Hit {
  idx: number;
  score: number;
}
