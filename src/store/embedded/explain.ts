/**
 * VectorStore.explain over one in-memory index: per-field BM25 and coverage from the lexical index,
 * and exact cosines from the stored vectors (L2-normalised, so a dot product). Rows the index does not
 * hold (−1) score 0 everywhere.
 */
import type { Explanation, ExplainQuery } from "../types.js";
import { dot } from "./engine-vec.js";
import { LEXICAL_FIELDS, type LexicalIndex } from "./lexical.js";

export interface ExplainSource {
  readonly lexical: LexicalIndex | null;
  /** count × dims, row-major, L2-normalised; null for a lexical-only index. */
  readonly vectors: Float32Array | null;
  readonly dims: number;
  rowOf(id: string): number | undefined;
}

export function explainRows(src: ExplainSource, q: ExplainQuery): Explanation {
  const F = LEXICAL_FIELDS.length;
  const n = q.ids.length;
  const rows = q.ids.map((id) => src.rowOf(id) ?? -1);
  const held = rows.flatMap((r, i) => (r >= 0 ? [i] : []));
  const fields = new Float32Array(n * F);
  const coverage = new Float32Array(n);
  let terms: Explanation["terms"] = [];
  let found = new Uint8Array(0);
  if (src.lexical) {
    const ex = src.lexical.explain(
      q.text,
      held.map((i) => rows[i]!),
    );
    const T = ex.terms.length;
    found = new Uint8Array(n * T);
    held.forEach((i, k) => {
      fields.set(ex.fields.subarray(k * F, (k + 1) * F), i * F);
      coverage[i] = ex.coverage[k]!;
      found.set(ex.found.subarray(k * T, (k + 1) * T), i * T);
    });
    terms = ex.terms;
  }
  let dense: Float32Array | null = null;
  if (q.vector !== null && src.vectors !== null && q.vector.length === src.dims) {
    dense = new Float32Array(n);
    for (const i of held) dense[i] = dot(q.vector, 0, src.vectors, rows[i]! * src.dims, src.dims);
  }
  return { fields, coverage, terms, found, dense };
}
