/**
 * One closed set of error codes for the whole service. Each code maps to exactly one HTTP status
 * (the public contract, spec section 7), one gRPC status and one Connect code (the internal core API).
 * `cause` is for logs only and is never serialised onto the wire.
 */
export const ErrorCode = {
  ValidationError: "VALIDATION_ERROR",
  AuthError: "AUTH_ERROR",
  Forbidden: "FORBIDDEN",
  InsufficientCredits: "INSUFFICIENT_CREDITS",
  NotFound: "NOT_FOUND",
  RateLimitExceeded: "RATE_LIMIT_EXCEEDED",
  Internal: "INTERNAL_ERROR",
  ExternalService: "EXTERNAL_SERVICE_ERROR",
  RateLimitUnavailable: "RATE_LIMIT_UNAVAILABLE",
  /** The index is not loaded yet, or the server is shutting down (internal; 502 on the wire). */
  Unavailable: "UNAVAILABLE",
  /** The caller's deadline passed (internal; 502 on the wire). */
  DeadlineExceeded: "DEADLINE_EXCEEDED",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const httpStatusOf: Readonly<Record<ErrorCode, number>> = {
  VALIDATION_ERROR: 400,
  AUTH_ERROR: 401,
  FORBIDDEN: 403,
  INSUFFICIENT_CREDITS: 403,
  NOT_FOUND: 404,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  EXTERNAL_SERVICE_ERROR: 502,
  RATE_LIMIT_UNAVAILABLE: 503,
  UNAVAILABLE: 502,
  DEADLINE_EXCEEDED: 502,
};

/** Numeric gRPC status codes (see grpc/doc/statuscodes.md). */
export const grpcStatusOf: Readonly<Record<ErrorCode, number>> = {
  VALIDATION_ERROR: 3, // INVALID_ARGUMENT
  AUTH_ERROR: 16, // UNAUTHENTICATED
  FORBIDDEN: 7, // PERMISSION_DENIED
  INSUFFICIENT_CREDITS: 9, // FAILED_PRECONDITION
  NOT_FOUND: 5, // NOT_FOUND
  RATE_LIMIT_EXCEEDED: 8, // RESOURCE_EXHAUSTED
  INTERNAL_ERROR: 13, // INTERNAL
  EXTERNAL_SERVICE_ERROR: 14, // UNAVAILABLE
  RATE_LIMIT_UNAVAILABLE: 14, // UNAVAILABLE
  UNAVAILABLE: 14, // UNAVAILABLE
  DEADLINE_EXCEEDED: 4, // DEADLINE_EXCEEDED
};

/** The Connect protocol's error codes, as its JSON error bodies name them (connectrpc.com/docs/protocol#error-codes). */
export type ConnectCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

/** Connect codes of the core's Connect port; each is the Connect name of the code's gRPC status above. */
export const connectCodeOf: Readonly<Record<ErrorCode, ConnectCode>> = {
  VALIDATION_ERROR: "invalid_argument",
  AUTH_ERROR: "unauthenticated",
  FORBIDDEN: "permission_denied",
  INSUFFICIENT_CREDITS: "failed_precondition",
  NOT_FOUND: "not_found",
  RATE_LIMIT_EXCEEDED: "resource_exhausted",
  INTERNAL_ERROR: "internal",
  EXTERNAL_SERVICE_ERROR: "unavailable",
  RATE_LIMIT_UNAVAILABLE: "unavailable",
  UNAVAILABLE: "unavailable",
  DEADLINE_EXCEEDED: "deadline_exceeded",
};

/** One field-level problem: `path` is a JSON pointer-ish dotted path, `rule` the broken constraint. */
export interface ErrorDetail {
  readonly path: string;
  readonly rule: string;
  readonly message: string;
}

export class ReposearchError extends Error {
  override readonly name = "ReposearchError";
  readonly code: ErrorCode;
  readonly details: readonly ErrorDetail[] | undefined;
  override readonly cause: unknown;

  constructor(code: ErrorCode, message: string, opts: { details?: ErrorDetail[]; cause?: unknown } = {}) {
    super(message);
    this.code = code;
    this.details = opts.details;
    this.cause = opts.cause;
  }

  get httpStatus(): number {
    return httpStatusOf[this.code];
  }

  get grpcStatus(): number {
    return grpcStatusOf[this.code];
  }

  get connectCode(): ConnectCode {
    return connectCodeOf[this.code];
  }

  /** Normalise anything thrown into a ReposearchError; unknown errors become INTERNAL_ERROR. */
  static from(err: unknown, fallback: ErrorCode = ErrorCode.Internal): ReposearchError {
    if (err instanceof ReposearchError) return err;
    return new ReposearchError(fallback, fallback === ErrorCode.Internal ? "internal error" : String((err as Error)?.message ?? err), {
      cause: err,
    });
  }

  /** The wire shape of spec section 2.6. Never includes `cause` or a stack. */
  toJSON(): { error: { code: ErrorCode; message: string; status: number; details?: ErrorDetail[] } } {
    const body: { code: ErrorCode; message: string; status: number; details?: ErrorDetail[] } = {
      code: this.code,
      message: this.message,
      status: this.httpStatus,
    };
    if (this.details && this.details.length > 0) body.details = [...this.details];
    return { error: body };
  }
}

/** Raised at start-up when configuration is invalid; the message lists every problem. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.problems = problems;
  }
}
