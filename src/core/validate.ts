/**
 * The core's check of a search request. Direct gRPC and Connect callers reach the core without the
 * REST facade, so the core validates every request itself, against the same schema the REST API
 * publishes (src/contract/search-request.ts, plus the internal `rerank` switch): both reject exactly
 * the same things, with the same rule names.
 *
 * Runtime types are checked too (not only ranges), so an unchecked object cast to SearchRequest is
 * safe to pass. Details use the core's dotted paths (`filters.excludeRepos[3]`); the gateway turns
 * them into JSON pointers.
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { repositoryRequestSchema, similarRequestSchema } from "../contract/repository-requests.js";
import { coreSearchRequestSchema } from "../contract/search-request.js";
import { unpairedSurrogateDetails } from "../contract/unicode.js";
import { ajvErrorsToDetails, compileSchema } from "../contract/validator.js";
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { GetRepositoryRequest, SearchFilters, SearchRequest, SimilarRequest } from "./types.js";

const CATEGORY_SET: ReadonlySet<string> = new Set(CATEGORIES);

export function isCategory(v: unknown): v is Category {
  return typeof v === "string" && CATEGORY_SET.has(v);
}

const validate = compileSchema(coreSearchRequestSchema);
const validateSimilar = compileSchema(similarRequestSchema);
const validateRepository = compileSchema(repositoryRequestSchema);

/** `/filters/excludeRepos/3` → `filters.excludeRepos[3]`. */
function dottedPath(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(token) ? `[${token}]` : out === "" ? token : `.${token}`;
  }
  return out;
}

function isRecord(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A copy without keys whose value is undefined (a decoded proto or a spread object carries them; JSON cannot). */
function withoutUndefined(v: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = Array.isArray(x) ? [...(x as unknown[])] : x;
  return out;
}

/**
 * Validates a search request and returns it normalised: a fresh object holding only the fields that
 * are set (undefined keys dropped, arrays copied). Presence is preserved exactly: absent stays absent
 * (defaults are the engine's business), so `categories: []` and an absent `categories` stay distinct.
 * Throws ReposearchError(VALIDATION_ERROR) with one detail per problem.
 */
export function validateSearchRequest(req: SearchRequest): SearchRequest {
  return validateAgainst(validate, "search", req) as unknown as SearchRequest & { filters?: SearchFilters };
}

/** validateSearchRequest's check for a similar request (the same filters, limit and includeTree rules). */
export function validateSimilarRequest(req: SimilarRequest): SimilarRequest {
  return validateAgainst(validateSimilar, "similar", req) as unknown as SimilarRequest;
}

/** validateSearchRequest's check for a repository-card request. */
export function validateRepositoryRequest(req: GetRepositoryRequest): GetRepositoryRequest {
  return validateAgainst(validateRepository, "repository", req) as unknown as GetRepositoryRequest;
}

function validateAgainst(check: ReturnType<typeof compileSchema>, what: string, req: unknown): Record<string, unknown> {
  if (!isRecord(req)) {
    throw new ReposearchError(ErrorCode.ValidationError, `invalid ${what} request: the body must be an object`, {
      details: [{ path: "", rule: "type", message: "must be an object" }],
    });
  }
  const out = withoutUndefined(req);
  if (isRecord(out.filters)) out.filters = withoutUndefined(out.filters);
  const valid = check(out);
  // A Connect JSON caller can send an unpaired surrogate that no UTF-8 answer could echo unchanged.
  const unicode = unpairedSurrogateDetails(out);
  if (!valid || unicode.length > 0) {
    const details: ErrorDetail[] = [...(valid ? [] : ajvErrorsToDetails(check.errors)), ...unicode].map((d) => ({ ...d, path: dottedPath(d.path) }));
    const first = details[0] ?? { path: "", message: "is invalid" };
    const more = details.length > 1 ? ` (and ${details.length - 1} more)` : "";
    throw new ReposearchError(ErrorCode.ValidationError, `invalid ${what} request: ${first.path || "body"} ${first.message}${more}`, { details });
  }
  return out;
}
