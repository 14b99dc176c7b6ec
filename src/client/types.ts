/**
 * The client's names for the contract's types: a thin facade over the generated ones (openapi.ts), so
 * callers import `SearchRequest`, not `components["schemas"]["SearchRequest"]`, and a regenerated file
 * changes what these mean without changing how they are imported.
 */
import type { components } from "./openapi.js";

type Schemas = components["schemas"];

export type SearchRequest = Schemas["SearchRequest"];
export type Filters = Schemas["Filters"];
export type Category = Schemas["Category"];
export type SearchResponse = Schemas["SearchResponse"];
export type SearchResult = Schemas["Result"];
export type SearchMeta = Schemas["Meta"];
export type AppliedFilters = Schemas["AppliedFilters"];
export type SimilarRequest = Schemas["SimilarRequest"];
export type RepositoryCard = Schemas["Repository"];
/** The contract's error codes (service-spec.md §7). */
export type ErrorCode = Schemas["Error"]["error"]["code"];
export type ErrorDetail = Schemas["ErrorDetail"];
