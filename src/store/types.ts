/**
 * The vector-store interface. Two implementations: the embedded pure-TypeScript store (default) and
 * QdrantStore. Both take the same Qdrant filter JSON (./filter.ts) and the same point ids.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { RepoPayload } from "../dataset/record.js";
import type { Condition, Filter } from "./filter.js";

/** Point ids are UUIDs derived from the repository key (see pointIdFor), valid for Qdrant as-is. */
export type PointId = string;

export interface Point {
  readonly id: PointId;
  readonly vector: Float32Array;
  readonly payload: RepoPayload;
}

export interface ScoredPoint {
  readonly id: PointId;
  /** Dense: cosine similarity in [-1, 1]. Lexical: BM25 score ≥ 0. */
  readonly score: number;
  readonly payload: RepoPayload;
  /** The point's row in the index version that answered; set with `columns` (embedded store only). */
  readonly row?: number;
  /** That version's rank columns. Hits carrying the same object share one row space. */
  readonly columns?: RankColumns;
}

/**
 * Compact per-row copies of the payload fields ranking reads (stars, language, category) for one
 * index version. With them the core joins lexical and dense hits by row and ranks its ~250
 * candidates without reading their payload objects: the first read of each is a cache miss, and
 * those misses were most of fusion's time. Codes are the version's own; compare them, nothing else.
 */
export interface RankColumns {
  /** The row's stars; 0 when null or not positive. */
  stars(row: number): number;
  /** The code of the row's `languageLc`, or -1 when it is null. */
  language(row: number): number;
  /** The code of a `languageLc` value, or -2 when no row holds it (so it matches no row). */
  languageCode(languageLc: string): number;
  /** The code of the row's category, or -1 when it is null. */
  category(row: number): number;
  /** The code of a category value, or -2 when no row holds it. */
  categoryCode(category: string): number;
}

export interface DenseQuery {
  readonly vector: Float32Array;
  readonly filter?: Filter | undefined;
  readonly limit: number;
  /** HNSW beam width; defaults to the store's configured efSearch. */
  readonly ef?: number | undefined;
  /** Force an exact scan (for recall measurement and debugging). */
  readonly exact?: boolean | undefined;
}

export interface LexicalQuery {
  readonly text: string;
  readonly filter?: Filter | undefined;
  readonly limit: number;
  /**
   * Also the best `limit` matches among repositories with at least `minStars` stars (under the same
   * filter), appended after the `limit` best that are not among them. Their scores are at most the
   * last of those, so the list stays best first. Keeps famous projects whose text matches only a
   * little ("relational database" → mysql-server) in the ranker's pool.
   */
  readonly popular?: { readonly minStars: number; readonly limit: number } | undefined;
}

/** `filter` and `condition` both: the filter nested under a must with the condition. */
export function withCondition(filter: Filter | undefined, condition: Condition): Filter {
  return filter === undefined ? { must: [condition] } : { must: [condition, filter] };
}

/** Validates LexicalQuery.popular (a ValidationError naming the problem). */
export function checkPopular(p: NonNullable<LexicalQuery["popular"]>): { readonly minStars: number; readonly limit: number } {
  if (!Number.isInteger(p.limit) || p.limit < 0)
    throw new ReposearchError(ErrorCode.ValidationError, `popular.limit must be a non-negative integer (got ${p.limit})`);
  if (!Number.isFinite(p.minStars) || p.minStars < 0)
    throw new ReposearchError(ErrorCode.ValidationError, `popular.minStars must be a number ≥ 0 (got ${p.minStars})`);
  return p;
}

/**
 * The `limit` rows with the highest value among `rows` (ties: the lower row first), best first; rows
 * whose value is null are left out. One pass with a bounded buffer, for stores that hold payloads in
 * memory (ScrollQuery.orderBy).
 */
export function topRowsBy(rows: Iterable<number>, valueOf: (row: number) => number | null, limit: number): number[] {
  if (limit <= 0) return [];
  const top: { row: number; stars: number }[] = [];
  let floor = -Infinity;
  for (const row of rows) {
    const stars = valueOf(row);
    if (stars === null || (top.length >= limit && stars <= floor)) continue;
    top.push({ row, stars });
    if (top.length >= limit * 2) {
      top.sort((a, b) => b.stars - a.stars || a.row - b.row);
      top.length = limit;
      floor = top[limit - 1]!.stars;
    }
  }
  top.sort((a, b) => b.stars - a.stars || a.row - b.row);
  return top.slice(0, limit).map((t) => t.row);
}

/** The lexical hits and the popular ones not among them, in that order (see LexicalQuery.popular). */
export function appendPopular<T extends { readonly id: PointId }>(hits: readonly T[], popular: readonly T[]): T[] {
  const seen = new Set(hits.map((h) => h.id));
  return [...hits, ...popular.filter((h) => !seen.has(h.id))];
}

/** Points by a filter rather than by similarity: a lookup by name, or the most-starred under a filter. */
export interface ScrollQuery {
  readonly filter?: Filter | undefined;
  readonly limit: number;
  /** Also return each point's stored dense vector (null where the store holds none: the lexical bootstrap). */
  readonly withVectors?: boolean | undefined;
  /** "stars": most stars first, rows without a star count left out (Qdrant's order_by); absent: no particular order. */
  readonly orderBy?: "stars" | undefined;
}

/** A point as stored: its payload and, when asked for, its vector. */
export interface StoredPoint {
  readonly id: PointId;
  readonly payload: RepoPayload;
  readonly vector: Float32Array | null;
}

/** Ranking features for chosen candidates: how the query's words and vector match each of them. */
export interface ExplainQuery {
  readonly text: string;
  /** The query's vector, or null when the search is lexical-only. */
  readonly vector: Float32Array | null;
  readonly ids: readonly PointId[];
  /** The points' payloads when the caller holds them (parallel to ids): a remote store then reads none. */
  readonly payloads?: readonly RepoPayload[];
}

export interface Explanation {
  /** ids × LEXICAL_FIELDS (src/store/embedded/lexical.ts), row-major: each field's own BM25 score. */
  readonly fields: Float32Array;
  /** Per id: the idf-weighted share of the query's terms found in any field, in [0, 1]. */
  readonly coverage: Float32Array;
  /** The query's distinct analysed terms with their idf. */
  readonly terms: readonly { readonly term: string; readonly idf: number }[];
  /** ids × terms, row-major: 1 where the term occurs in any field of the id's document, else 0. */
  readonly found: Uint8Array;
  /** Per id: cosine of the query vector and the point's; null without a query vector. */
  readonly dense: Float32Array | null;
}

export interface StoreInfo {
  /** Published version label (e.g. "v000003"), or null when nothing is published yet. */
  readonly version: string | null;
  readonly count: number;
  readonly dims: number;
  readonly embedderId: string | null;
  /** When the served version was published (ISO 8601), or null. */
  readonly publishedAt: string | null;
}

export interface CommitResult {
  readonly version: string | null;
  readonly upserted: number;
  readonly deleted: number;
  /** False when there was nothing to publish. */
  readonly published: boolean;
}

/**
 * A writer stages upserts and deletes durably (each call is a checkpoint) and publishes them
 * atomically with commit(). A writer killed before commit resumes from its checkpoints when a
 * writer with the same id is opened again.
 */
export interface StoreWriter {
  /** Content hash of every point visible to this writer (published plus staged), by point id. */
  hashes(): Promise<Map<PointId, string>>;
  upsert(points: readonly Point[]): Promise<void>;
  delete(ids: readonly PointId[]): Promise<void>;
  /** Publishes staged work atomically as a new version. Long for big changes (graph build); reports stages. */
  commit(opts?: { onProgress?: (stage: string, done: number, total: number) => void }): Promise<CommitResult>;
  /** Drops staged work without publishing. */
  abort(): Promise<void>;
}

export interface VectorStore {
  /**
   * True when the index lives in this machine's DATA_DIR (the embedded store): `reposearch start` can
   * then build it in-process and serve a lexical-only bootstrap meanwhile. A remote store is filled by
   * the indexer wherever it runs.
   */
  readonly local: boolean;
  /**
   * Follows newly published index versions, checking every `intervalMs`. A store that reads its version
   * on every call (Qdrant) has nothing to follow. Never throws from its timer; stops at close().
   */
  watch(intervalMs: number): void;
  info(): Promise<StoreInfo>;
  denseSearch(q: DenseQuery): Promise<ScoredPoint[]>;
  lexicalSearch(q: LexicalQuery): Promise<ScoredPoint[]>;
  count(filter?: Filter): Promise<number>;
  retrieve(ids: readonly PointId[]): Promise<(RepoPayload | null)[]>;
  /** At most `limit` points that pass the filter, in the query's order (ScrollQuery). */
  scroll(q: ScrollQuery): Promise<StoredPoint[]>;
  /** Features of the given points for the learned ranker; ids the store does not hold score 0. */
  explain(q: ExplainQuery): Promise<Explanation>;
  openWriter(opts: { writerId: string; dims: number; embedderId: string }): Promise<StoreWriter>;
  close(): Promise<void>;
}
