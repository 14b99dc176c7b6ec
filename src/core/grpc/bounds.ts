/**
 * Size bounds the core puts on a search request before anything else looks at it, so that what one
 * request can cost is bounded (100,000 topics once cost about 0.4 s of CPU in validation and filter
 * building). The request schema (src/contract/) is the contract and stays as it is; these bounds sit
 * far above anything a sane request carries, and above what a REST body of the default MAX_BODY_BYTES
 * (16 KiB) can hold for excludeRepos, so the REST API is unaffected:
 *
 * - excludeRepos: at most 50 items (the contract's own bound, checked here before the schema walks them);
 * - topics and categories: at most 1,000 items each (the contract sets none; GitHub allows 20 topics
 *   per repository and there are 13 categories);
 * - each of their strings: at most 256 UTF-16 units (a GitHub topic has at most 50 characters, an
 *   `owner/repo` at most 140).
 *
 * query and language are bounded by the contract itself (500 and 100 code points), and the whole
 * message by CORE_MAX_MESSAGE_BYTES. A request beyond a bound is a VALIDATION_ERROR (INVALID_ARGUMENT),
 * with details in the schema's rule names.
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../../common/errors.js";
import type { SearchRequest } from "../types.js";

export const REQUEST_BOUNDS = {
  excludeReposMaxItems: 50,
  topicsMaxItems: 1_000,
  categoriesMaxItems: 1_000,
  itemMaxLength: 256,
} as const;

function checkList(details: ErrorDetail[], path: string, value: unknown, maxItems: number): void {
  if (!Array.isArray(value)) return; // the schema reports a wrong type
  if (value.length > maxItems) {
    details.push({ path, rule: "maxItems", message: `must NOT have more than ${maxItems} items (a bound of the search core)` });
    return;
  }
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (typeof item === "string" && item.length > REQUEST_BOUNDS.itemMaxLength) {
      details.push({
        path: `${path}[${i}]`,
        rule: "maxLength",
        message: `must NOT have more than ${REQUEST_BOUNDS.itemMaxLength} characters (a bound of the search core)`,
      });
      return;
    }
  }
}

/** Throws VALIDATION_ERROR when a list of `req.filters` is beyond REQUEST_BOUNDS; returns `req` otherwise. */
export function checkRequestBounds(req: SearchRequest): SearchRequest {
  const filters = (req as { readonly filters?: unknown }).filters;
  if (typeof filters !== "object" || filters === null) return req;
  const f = filters as Readonly<Record<string, unknown>>;
  const details: ErrorDetail[] = [];
  checkList(details, "filters.excludeRepos", f.excludeRepos, REQUEST_BOUNDS.excludeReposMaxItems);
  checkList(details, "filters.topics", f.topics, REQUEST_BOUNDS.topicsMaxItems);
  checkList(details, "filters.categories", f.categories, REQUEST_BOUNDS.categoriesMaxItems);
  if (details.length === 0) return req;
  const first = details[0]!;
  throw new ReposearchError(ErrorCode.ValidationError, `invalid search request: ${first.path} ${first.message}`, { details });
}
