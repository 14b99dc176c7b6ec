/**
 * The one error type of the client. A refusal or failure the service answered carries the contract's
 * `code` and HTTP `status` (service-spec.md §7) with its `details` and `Retry-After`; a failure that
 * arose in the client (no HTTP exchange, or an answer that is not the contract's) carries a client code
 * and status 0, so callers branch on `code` alone.
 */
import type { ErrorCode, ErrorDetail } from "./types.js";

/** Failures without a contract answer: the attempt timed out, the connection failed, the body was not the contract's, or an argument was malformed. */
export type ClientErrorCode = "TIMEOUT" | "CONNECTION_ERROR" | "INVALID_RESPONSE" | "INVALID_ARGUMENT";

export interface RepoSearchErrorInit {
  readonly code: ErrorCode | ClientErrorCode;
  readonly message: string;
  readonly status?: number;
  readonly details?: readonly ErrorDetail[];
  readonly retryAfterSeconds?: number | null;
  readonly requestId?: string | null;
  readonly attempts?: number;
  readonly cause?: unknown;
}

export class RepoSearchError extends Error {
  override readonly name = "RepoSearchError";
  /** The contract's error code (`RATE_LIMIT_EXCEEDED`, …), or a ClientErrorCode. */
  readonly code: ErrorCode | ClientErrorCode;
  /** The HTTP status of the answer; 0 when the error arose in the client. */
  readonly status: number;
  /** Field-level problems (VALIDATION_ERROR); empty otherwise. */
  readonly details: readonly ErrorDetail[];
  /** The answer's `Retry-After` in whole seconds (429, 503), or null. */
  readonly retryAfterSeconds: number | null;
  /** The answer's `X-Request-Id` (quote it to the operator), or null. */
  readonly requestId: string | null;
  /** Attempts made, the first included. */
  readonly attempts: number;

  constructor(init: RepoSearchErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status ?? 0;
    this.details = init.details ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.requestId = init.requestId ?? null;
    this.attempts = init.attempts ?? 1;
  }

  /** The same error after `attempts` attempts. */
  withAttempts(attempts: number): RepoSearchError {
    const { code, message, status, details, retryAfterSeconds, requestId, cause } = this;
    return new RepoSearchError({ code, message, status, details, retryAfterSeconds, requestId, attempts, cause });
  }
}
