/**
 * The lexical side of QdrantStore: BM25F as Qdrant sparse vectors, with the embedded store's analyzer.
 *
 * The embedded index scores
 *   score(q,d) = Σ_{t ∈ q} qtf(t) · idf(t) · impact(t,d),   impact = tf~·(k1+1)/(k1+tf~),
 *   tf~(t,d)   = Σ_f w_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d) / avg_f)
 * (see ../embedded/lexical.ts). `impact` depends on the document only, so it is the document's sparse
 * vector value for term t; the query vector holds qtf; and Qdrant's `modifier: "idf"` multiplies in
 * idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)) at query time, from its own live statistics. A Qdrant
 * sparse dot product is then the same BM25F score. The one difference: avg_f is a fixed constant here
 * (measured on the dataset), because a point's vector is written once and cannot follow the corpus.
 *
 * Term ids are fnv1a32 of the analysed term: stable on every machine with no shared vocabulary. Two terms
 * with one hash share a dimension (a collision among ~1M distinct terms is rare and only merges df).
 */
import { fnv1a32 } from "../../common/hash.js";
import {
  bm25Idf,
  DEFAULT_LEXICAL_PARAMS,
  fieldTermScore,
  fieldTokens,
  LEXICAL_FIELDS,
  LEXICAL_FORMAT_VERSION,
  queryTermWeights,
  type LexicalDoc,
  type LexicalField,
  type LexicalParams,
} from "../bm25f.js";
import type { Explanation } from "../types.js";

export interface SparseVector {
  /** Unique u32 term ids, ascending. */
  readonly indices: number[];
  readonly values: number[];
}

export interface SparseLexicalParams extends LexicalParams {
  /** Average tokens per non-empty field: the length norm's reference, fixed at write time. */
  readonly avgLength: Readonly<Record<LexicalField, number>>;
}

/**
 * Measured over the first 30,000 repositories of the shared dataset (non-empty fields only, as the
 * embedded index averages them); `anchor` over the full dataset's 9,425 non-empty anchor fields
 * (ANCHORS_VERSION 3, terms repeated by count, with PACKAGES_VERSION 3's Debian descriptions), since
 * that text only exists relative to the whole corpus. Mirrors' and undescribed projects' description
 * fields taking their package description (../bm25f.ts, lexicalDocOf) moved the description average over
 * the same repositories by 0.04 (11.672 → 11.712 recomputed on today's payloads): left as measured.
 * Changing these changes every stored vector: bump SPARSE_LEXICAL_FORMAT.
 */
export const DEFAULT_AVG_LENGTH: Readonly<Record<LexicalField, number>> = Object.freeze({
  owner: 1.79,
  repo: 2.43,
  description: 11.64,
  topics: 15.11,
  readme: 92.61,
  anchor: 23.8,
});

export const DEFAULT_SPARSE_LEXICAL_PARAMS: SparseLexicalParams = Object.freeze({
  ...DEFAULT_LEXICAL_PARAMS,
  avgLength: DEFAULT_AVG_LENGTH,
});

/**
 * Identifies how stored sparse vectors were made (analyzer format, hashing, parameters). QdrantStore
 * records it in the collection's meta point; a collection written with another format is re-upserted.
 */
export const SPARSE_LEXICAL_FORMAT = `reposearch-bm25f-fnv1a32/5+analyzer${LEXICAL_FORMAT_VERSION}`;

/** Raw term frequencies are saturated like the embedded index's Uint8 postings, so both agree. */
const MAX_TF = 255;
const MAX_LEN = 0xffff;

/** Analysed tokens of one field: the embedded index's own tokenisation (name split into owner and repo). */
export { fieldTokens };

/** A document's sparse vector: one BM25F impact per distinct term. Empty when the document has no terms. */
export function lexicalDocVector(doc: LexicalDoc, params: SparseLexicalParams = DEFAULT_SPARSE_LEXICAL_PARAMS): SparseVector {
  const tfTilde = new Map<number, number>();
  for (const field of LEXICAL_FIELDS) {
    const { weight, b } = params.fields[field];
    const tokens = fieldTokens(doc, field);
    if (tokens.length === 0 || weight === 0) continue;
    const len = Math.min(tokens.length, MAX_LEN);
    const scale = weight / (1 - b + (b * len) / params.avgLength[field]);
    const tf = new Map<string, number>();
    for (const t of tokens) tf.set(t, Math.min(MAX_TF, (tf.get(t) ?? 0) + 1));
    for (const [term, n] of tf) {
      const id = fnv1a32(term);
      tfTilde.set(id, (tfTilde.get(id) ?? 0) + n * scale);
    }
  }
  const k1 = params.k1;
  const entries = [...tfTilde].filter(([, x]) => x > 0).sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([id]) => id), values: entries.map(([, x]) => (x * (k1 + 1)) / (k1 + x)) };
}

/** A query's sparse vector: each analysed term's query weight (../bm25f.ts queryTermWeights; Qdrant multiplies in the idf). */
export function lexicalQueryVector(text: string): SparseVector {
  const qtf = new Map<number, number>();
  for (const [t, w] of queryTermWeights(text)) {
    const id = fnv1a32(t);
    qtf.set(id, (qtf.get(id) ?? 0) + w);
  }
  const entries = [...qtf].sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([id]) => id), values: entries.map(([, n]) => n) };
}

/** Every distinct analysed term of a document, over all fields: the `lexTerms` payload field (df by count). */
export function lexicalTerms(doc: LexicalDoc): string[] {
  return [...new Set(LEXICAL_FIELDS.flatMap((f) => fieldTokens(doc, f)))];
}

/**
 * VectorStore.explain's lexical part from documents' own text (the Qdrant store has no postings to
 * read): per-field BM25 as the embedded index scores it, with each term's document frequency given
 * (Qdrant counts it over the `lexTerms` payload field) and the fixed average lengths the sparse
 * vectors use. A null document (not found) scores 0.
 */
export function explainDocs(
  text: string,
  docs: readonly (LexicalDoc | null)[],
  docFreq: ReadonlyMap<string, number>,
  pointCount: number,
  params: SparseLexicalParams = DEFAULT_SPARSE_LEXICAL_PARAMS,
): Pick<Explanation, "fields" | "coverage" | "terms" | "found"> {
  const F = LEXICAL_FIELDS.length;
  const qtf = queryTermWeights(text);
  const terms = [...qtf.keys()].map((term) => ({ term, idf: sparseIdf(pointCount, docFreq.get(term) ?? 0) }));
  const idfSum = terms.reduce((s, t) => s + t.idf, 0);
  const fields = new Float32Array(docs.length * F);
  const coverage = new Float32Array(docs.length);
  const T = terms.length;
  const foundRows = new Uint8Array(docs.length * T);
  docs.forEach((doc, i) => {
    if (doc === null) return;
    const found = new Set<string>();
    LEXICAL_FIELDS.forEach((field, f) => {
      const tokens = fieldTokens(doc, field);
      if (tokens.length === 0) return;
      const tf = new Map<string, number>();
      for (const t of tokens) if (qtf.has(t)) tf.set(t, Math.min(MAX_TF, (tf.get(t) ?? 0) + 1));
      const len = Math.min(tokens.length, MAX_LEN);
      for (const { term, idf } of terms) {
        const n = tf.get(term);
        if (n === undefined) continue;
        found.add(term);
        fields[i * F + f]! += fieldTermScore(idf, qtf.get(term)!, n, len, params.avgLength[field], params.fields[field].b, params.k1);
      }
    });
    terms.forEach((t, j) => {
      if (!found.has(t.term)) return;
      foundRows[i * T + j] = 1;
      if (idfSum > 0) coverage[i]! += t.idf / idfSum;
    });
  });
  return { fields, coverage, terms, found: foundRows };
}

/** Qdrant's idf modifier (the same formula as the embedded index). */
export function sparseIdf(pointCount: number, docFreq: number): number {
  return bm25Idf(pointCount, docFreq);
}

/** Checks a sparse vector's shape as Qdrant does (equal lengths, unique u32 indices, finite values). */
export function sparseVectorProblem(v: unknown): string | null {
  if (typeof v !== "object" || v === null) return "a sparse vector must be an object {indices, values}";
  const { indices, values } = v as { indices?: unknown; values?: unknown };
  if (!Array.isArray(indices) || !Array.isArray(values)) return "a sparse vector needs arrays `indices` and `values`";
  if (indices.length !== values.length) return `sparse vector has ${indices.length} indices but ${values.length} values`;
  const seen = new Set<number>();
  for (const i of indices) {
    if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i > 0xffffffff) return `sparse index ${JSON.stringify(i)} is not a u32`;
    if (seen.has(i)) return `sparse index ${i} is repeated`;
    seen.add(i);
  }
  for (const x of values) if (typeof x !== "number" || !Number.isFinite(x)) return `sparse value ${JSON.stringify(x)} is not a finite number`;
  return null;
}
