/**
 * `reposearch/client`: the typed TypeScript client of the reposearch REST API.
 *
 *   import { RepoSearchClient, RepoSearchError } from "reposearch/client";
 *   const client = new RepoSearchClient({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.REPOSEARCH_API_KEY });
 *   const { results } = await client.search({ query: "Go library for building CLIs", filters: { minStars: 100 } });
 *
 * Errors are RepoSearchError; branch on `code`. The generated types (`components`, `paths`,
 * `operations`) are exported too, for callers that want the document's own names.
 */
export { RepoSearchClient, type CallOptions, type RepoSearchClientOptions, type RetryEvent } from "./client.js";
export { RepoSearchError, type ClientErrorCode } from "./errors.js";
export type { components, operations, paths } from "./openapi.js";
export type {
  AppliedFilters,
  Category,
  ErrorCode,
  ErrorDetail,
  Filters,
  RepositoryCard,
  SearchMeta,
  SearchRequest,
  SearchResponse,
  SearchResult,
  SimilarRequest,
} from "./types.js";
