/**
 * Search-response fixtures for tests of the layers that carry responses (gRPC core API, gateway, query
 * cache, OpenAPI validation). Test support only; nothing in the service imports it.
 */
import type { AppliedFilters, SearchResponse, SearchResult } from "../../src/core/types.js";

/** appliedFilters with every filter off; `categories` as given (default: the default set, none listed). */
export function appliedFilters(categories: AppliedFilters["categories"] = { mode: "default", values: [], includeUncategorized: true }): AppliedFilters {
  return {
    categories,
    excludeArchived: true,
    minStars: null,
    maxStars: null,
    minForks: null,
    maxForks: null,
    language: null,
    excludeRepos: [],
    topics: [],
    staleAfterMonths: null,
  };
}

/** A response to `query` with no results. */
export function emptyResponse(query: string): SearchResponse {
  return { query, results: [], meta: { total: 0, timeMs: 1, methods: {}, appliedFilters: appliedFilters() } };
}

/** A result named `name` with every optional field unknown (null) and score 0. */
export function nullResult(name: string): SearchResult {
  return {
    url: null,
    name,
    description: null,
    score: 0,
    language: null,
    stars: null,
    forks: null,
    topics: [],
    pushedAt: null,
    isArchived: null,
    llmsUrl: null,
    evidence: [],
  };
}
