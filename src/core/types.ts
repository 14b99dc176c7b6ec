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

export interface SearchRequest {
  readonly query: string;
  /** 1–50, default 10. */
  readonly limit?: number | undefined;
  readonly includeTree?: boolean | undefined;
  readonly filters?: SearchFilters | undefined;
  /** Per-request rerank switch. undefined → the server's default; the stage runs only when the server enables it too. */
  readonly rerank?: boolean | undefined;
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
}

export interface MethodStats {
  readonly hits: number;
  readonly weight: number;
}

export interface SearchMeta {
  /** Number of candidates that matched the query under the filters (before `limit`). */
  readonly total: number;
  readonly timeMs: number;
  /** Keys: "lexical", "dense", and "rerank" when the rerank stage contributed. */
  readonly methods: Readonly<Record<string, MethodStats>>;
  readonly appliedFilters: AppliedFilters;
  readonly reranked?: boolean | undefined;
  readonly rerankMs?: number | undefined;
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
  stats(): Promise<IndexStats>;
  /** True once an index version is loaded and searchable. */
  ready(): boolean;
}
