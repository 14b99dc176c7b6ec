/**
 * The sparse index behind store serve's sparse queries. The embedded store keeps no sparse vectors: the
 * lexical vector of a point is derived from its payload (src/store/qdrant/sparse.ts), so this index is
 * built from a published version's payloads on first use and scores as Qdrant's idf modifier does.
 */
import type { RepoPayload } from "../../../dataset/record.js";
import { lexicalDocVector, sparseIdf, type SparseVector } from "../../qdrant/sparse.js";
import type { Bitset } from "../bitset.js";
import { lexicalDocOf } from "../lexical.js";

/** Inverted lists of the derived lexical vectors of one published version, built on first use. */
export class SparseIndex {
  private constructor(
    private readonly count: number,
    private readonly postings: Map<number, { rows: Uint32Array; weights: Float32Array }>,
  ) {}

  static build(payloads: readonly RepoPayload[]): SparseIndex {
    const rows = new Map<number, number[]>();
    const weights = new Map<number, number[]>();
    payloads.forEach((p, row) => {
      const v = lexicalDocVector(lexicalDocOf(p));
      for (let i = 0; i < v.indices.length; i++) {
        const t = v.indices[i]!;
        let r = rows.get(t);
        if (!r) {
          rows.set(t, (r = []));
          weights.set(t, []);
        }
        r.push(row);
        weights.get(t)!.push(v.values[i]!);
      }
    });
    const postings = new Map<number, { rows: Uint32Array; weights: Float32Array }>();
    for (const [t, r] of rows) postings.set(t, { rows: Uint32Array.from(r), weights: Float32Array.from(weights.get(t)!) });
    return new SparseIndex(payloads.length, postings);
  }

  /** The k best rows among `allow` (null: all) by Σ q_i · idf_i · d_i, ties by row. */
  search(q: SparseVector, allow: Bitset | null, k: number): { row: number; score: number }[] {
    const acc = new Map<number, number>();
    for (let i = 0; i < q.indices.length; i++) {
      const p = this.postings.get(q.indices[i]!);
      if (!p) continue;
      const w = q.values[i]! * sparseIdf(this.count, p.rows.length);
      for (let j = 0; j < p.rows.length; j++) {
        const row = p.rows[j]!;
        if (allow !== null && !allow.has(row)) continue;
        acc.set(row, (acc.get(row) ?? 0) + w * p.weights[j]!);
      }
    }
    return [...acc]
      .map(([row, score]) => ({ row, score }))
      .sort((a, b) => b.score - a.score || a.row - b.row)
      .slice(0, k);
  }
}
