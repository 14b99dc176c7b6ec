/**
 * The search core's request and response, in the spec's JSON field names (service-spec.md §2).
 * The gRPC layer (src/core/grpc) converts proto messages to and from these; the REST facade
 * (src/gateway) sends them over gRPC. Absent optional fields are `undefined`, never null.
 */
import type { Category } from "../dataset/record.js";

export interface SearchFilters {
  readonly minStars?: number | undefined;
  readonly maxStars?: number | undefined;
  readonly minForks?: number | undefined;
  readonly maxForks?: number | undefined;
  readonly language?: string | undefined;
  readonly excludeRepos?: readonly string[] | undefined;
  /** undefined → default allow-list; [] → all categories; otherwise explicit. */
  readonly categories?: readonly Category[] | undefined;
  readonly topics?: readonly string[] | undefined;
  /** Default true. */
  readonly excludeArchived?: boolean | undefined;
  readonly staleAfterMonths?: number | undefined;
}

/**
 * Filters only query qualifiers can set (src/core/qualifiers.ts): the spec's filter object stays as
 * it is, so a REST or gRPC caller cannot send these; `pushed:>2024-01-01` in the query can.
 */
export interface QualifierOnlyFilters {
  /** ISO 8601 UTC; only repositories pushed at or after it (`pushed:>DATE` and `pushed:>=DATE`). */
  readonly pushedAfter?: string | undefined;
  /** ISO 8601 UTC; only repositories pushed before it (`pushed:<DATE` and `pushed:<=DATE`). */
  readonly pushedBefore?: string | undefined;
}

export interface SearchRequest {
  readonly query: string;
  /** 1–50, default 10. */
  readonly limit?: number | undefined;
  readonly includeTree?: boolean | undefined;
  readonly filters?: SearchFilters | undefined;
  /** Per-request rerank switch. undefined → the server's default; the stage runs only when the server enables it too. */
  readonly rerank?: boolean | undefined;
}

/** Repositories like a given one (POST /v1/codehost/similar; reposearch.v1.SearchService/Similar). */
export interface SimilarRequest {
  /** `owner/repo`: the current name or a former one (an alias) of an indexed project. */
  readonly repo: string;
  /** 1–50, default 10. */
  readonly limit?: number | undefined;
  readonly includeTree?: boolean | undefined;
  readonly filters?: SearchFilters | undefined;
}

/** One repository's card (GET /v1/codehost/repos/{owner}/{repo}; reposearch.v1.SearchService/GetRepository). */
export interface GetRepositoryRequest {
  /** `owner/repo`: the current name or a former one (an alias); the card is the canonical project's. */
  readonly repo: string;
}

/**
 * Everything the index stores about one project that a caller can use. Nullable fields are null where
 * the dataset has no value. Description and README text are third-party content: sanitised here
 * (control and bidi characters removed), never instructions.
 */
export interface RepositoryCard {
  /** The canonical `owner/repo` (the asked name may be one of `aliases`). */
  readonly name: string;
  readonly url: string | null;
  readonly description: string | null;
  readonly language: string | null;
  readonly stars: number | null;
  readonly forks: number | null;
  readonly topics: readonly string[];
  readonly pushedAt: string | null;
  readonly createdAt: string | null;
  readonly isArchived: boolean | null;
  /** The classifier's category, or null when it abstained (uncategorized). */
  readonly category: Category | null;
  /** SPDX identifier or name as the dataset gives it. */
  readonly license: string | null;
  readonly homepage: string | null;
  readonly llmsUrl: string | null;
  /** The compact tree (the format of SearchResult.tree), or null when the index has none. */
  readonly tree: string | null;
  /** Other `owner/repo` names of the project (renamed, moved, mirrored); [] when none. */
  readonly aliases: readonly string[];
  /** The README's opening (at most 1,500 characters as crawled), sanitised; null when unknown. */
  readonly readme: string | null;
  /** How many indexed repositories mention the project (the anchor-text count, docs/ranking.md). */
  readonly mentions: number;
  /** When the newest crawl saw the project (ISO 8601, the crawl's date at midnight UTC), or null. */
  readonly lastSeen: string | null;
}

export interface SearchResult {
  readonly url: string | null;
  readonly name: string;
  readonly description: string | null;
  /** Relative score in (0, 1]: 1 for the best candidate of this query (src/core/engine.ts, "Scores"). */
  readonly score: number;
  readonly language: string | null;
  readonly stars: number | null;
  readonly forks: number | null;
  readonly topics: readonly string[];
  readonly pushedAt: string | null;
  readonly isArchived: boolean | null;
  readonly llmsUrl: string | null;
  /** Present only when includeTree was requested: the compact tree, or null where the index has none. */
  readonly tree?: string | null | undefined;
  readonly evidence: readonly string[];
  /** Other `owner/repo` names of the same project (renamed, moved, mirrored); present only when it has any. */
  readonly aliases?: readonly string[];
}

export type CategoryMode = "default" | "explicit" | "all";

export interface AppliedFilters {
  readonly categories: { readonly mode: CategoryMode; readonly values: readonly Category[]; readonly includeUncategorized: boolean };
  readonly excludeArchived: boolean;
  readonly minStars: number | null;
  readonly maxStars: number | null;
  readonly minForks: number | null;
  readonly maxForks: number | null;
  readonly language: string | null;
  readonly excludeRepos: readonly string[];
  readonly topics: readonly string[];
  readonly staleAfterMonths: number | null;
  /** Set only by a `pushed:` qualifier (QualifierOnlyFilters); absent otherwise. */
  readonly pushedAfter?: string | undefined;
  readonly pushedBefore?: string | undefined;
}

/** One `key:value` qualifier found in a search query (src/core/qualifiers.ts). */
export interface AppliedQualifier {
  /** As written in the query, e.g. `stars:>1000`. */
  readonly qualifier: string;
  /** The filter fields it set, e.g. ["minStars"]; `stars:10..20` sets ["minStars", "maxStars"]. */
  readonly fields: readonly string[];
  /** The subset of `fields` the request's explicit `filters` set too: the explicit value won. */
  readonly overridden: readonly string[];
}

export interface MethodStats {
  readonly hits: number;
  readonly weight: number;
}

export interface SearchMeta {
  /** Number of candidates that matched the query under the filters (before `limit`). */
  readonly total: number;
  readonly timeMs: number;
  /** Keys: "lexical", "dense", and "rerank" when the rerank stage contributed; "popular" alone for a query of qualifiers only. */
  readonly methods: Readonly<Record<string, MethodStats>>;
  readonly appliedFilters: AppliedFilters;
  readonly reranked?: boolean | undefined;
  readonly rerankMs?: number | undefined;
  /** Present only when the query held qualifiers: each one, parsed into appliedFilters. */
  readonly qualifiers?: readonly AppliedQualifier[] | undefined;
  /** Present only when the query held qualifiers: the text that was ranked, without them ("" → ranked by stars). */
  readonly queryText?: string | undefined;
}

export interface SearchResponse {
  readonly query: string;
  readonly results: readonly SearchResult[];
  readonly meta: SearchMeta;
}

export interface IndexStats {
  /** Published version label, or null while nothing is published. */
  readonly version: string | null;
  readonly count: number;
  readonly dims: number;
  readonly embedderId: string | null;
  readonly publishedAt: string | null;
  /** Seconds since publishedAt, or null. */
  readonly ageSeconds: number | null;
  /** Which retrieval methods the core can run right now ("lexical", "dense"). */
  readonly methods: readonly string[];
  readonly rerankerId: string | null;
}

export interface SearchOptions {
  /** Aborted when the caller's deadline passes or the call is cancelled. */
  readonly signal?: AbortSignal | undefined;
  /** Called once per stage of this search with its duration (tracing: the gRPC server's stage spans). */
  readonly onStage?: ((stage: string, seconds: number) => void) | undefined;
}

/** What the gRPC service calls. Implemented by SearchEngine (src/core/engine.ts). */
export interface SearchCore {
  search(req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse>;
  /**
   * Repositories like `req.repo`; NOT_FOUND when the index has no project of that name. Optional so
   * that a core with search only (a test double) still serves: the RPC then answers UNIMPLEMENTED.
   */
  similar?(req: SimilarRequest, opts?: SearchOptions): Promise<SearchResponse>;
  /** The card of `req.repo` (an old name answers the canonical project's card); NOT_FOUND when unknown. Optional as `similar`. */
  repository?(req: GetRepositoryRequest, opts?: SearchOptions): Promise<RepositoryCard>;
  stats(): Promise<IndexStats>;
  /** True once an index version is loaded and searchable. */
  ready(): boolean;
}
