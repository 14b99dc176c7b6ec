/**
 * What the MCP server needs from reposearch: three calls in the public contract's types. Three
 * implementations stand behind it, and the tools cannot tell them apart:
 *   - the gateway's operations (src/gateway/mcp-route.ts), for Streamable HTTP at /mcp: the caller's
 *     key, limits and credits apply to each call;
 *   - the typed client (src/client), for `reposearch mcp` forwarding to a remote service;
 *   - the in-process core (src/server/local-api.ts), for `reposearch mcp` over a local data dir.
 *
 * Each implementation fails by throwing whatever its layer throws; `contractFailure` reads all of them
 * as the contract's error (code, HTTP status, details, Retry-After), so the tools report one shape.
 */
import { ReposearchError, httpStatusOf } from "../common/errors.js";
import { RepoSearchError } from "../client/errors.js";
import type { ErrorCode, ErrorDetail, RepositoryCard, SearchRequest, SearchResponse, SimilarRequest } from "../client/types.js";

export interface ApiCallOptions {
  /** Aborted when the MCP client cancels the call or goes away. */
  readonly signal?: AbortSignal | undefined;
}

export interface RepoSearchApi {
  search(request: SearchRequest, options?: ApiCallOptions): Promise<SearchResponse>;
  similar(request: SimilarRequest, options?: ApiCallOptions): Promise<SearchResponse>;
  /** `name` is `owner/repo`. */
  repository(name: string, options?: ApiCallOptions): Promise<RepositoryCard>;
}

/** A refused or failed call as the contract states it (service-spec.md §7). */
export interface ContractFailure {
  readonly code: ErrorCode;
  readonly status: number;
  readonly message: string;
  readonly details: readonly ErrorDetail[];
  /** Whole seconds to wait (429, 503), or null. */
  readonly retryAfterSeconds: number | null;
}

const INTERNAL: ContractFailure = { code: "INTERNAL_ERROR", status: 500, message: "internal error", details: [], retryAfterSeconds: null };

/** Internal core codes (UNAVAILABLE, DEADLINE_EXCEEDED) are not the contract's: they reach callers as 502. */
function publicCodeOf(code: string): ErrorCode {
  return code === "UNAVAILABLE" || code === "DEADLINE_EXCEEDED" ? "EXTERNAL_SERVICE_ERROR" : (code as ErrorCode);
}

function retryAfterOf(err: object): number | null {
  const v = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.ceil(v) : null;
}

/** Anything an implementation threw, as the contract's failure; unknown errors are INTERNAL_ERROR (their text stays in the log). */
export function contractFailure(err: unknown): ContractFailure {
  if (err instanceof RepoSearchError) {
    switch (err.code) {
      case "TIMEOUT":
      case "CONNECTION_ERROR":
      case "INVALID_RESPONSE":
        // The remote service could not be used: an upstream failure, as the gateway reports its core's.
        return { code: "EXTERNAL_SERVICE_ERROR", status: 502, message: err.message, details: [], retryAfterSeconds: err.retryAfterSeconds };
      case "INVALID_ARGUMENT":
        return { code: "VALIDATION_ERROR", status: 400, message: err.message, details: err.details, retryAfterSeconds: null };
      default:
        return { code: err.code, status: err.status, message: err.message, details: err.details, retryAfterSeconds: err.retryAfterSeconds };
    }
  }
  if (err instanceof ReposearchError) {
    const code = publicCodeOf(err.code);
    const status = httpStatusOf[code];
    return {
      code,
      status,
      message: code === "INTERNAL_ERROR" ? INTERNAL.message : err.message,
      details: err.details ?? [],
      retryAfterSeconds: retryAfterOf(err),
    };
  }
  return INTERNAL;
}
