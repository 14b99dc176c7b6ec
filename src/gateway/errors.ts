/**
 * How the gateway maps failures onto the contract's error shape: body-parser and express client errors,
 * core failures (internal codes never leak), core validation paths as JSON pointers, and errors as log
 * fields with keys scrubbed.
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { redactKeys } from "./accounts/keys.js";

/** Internal core codes are not part of the public contract; they surface as EXTERNAL_SERVICE_ERROR. */
export function publicCode(code: ErrorCode): ErrorCode {
  return code === ErrorCode.Unavailable || code === ErrorCode.DeadlineExceeded ? ErrorCode.ExternalService : code;
}

export function validationError(message: string, details: ErrorDetail[]): ReposearchError {
  return new ReposearchError(ErrorCode.ValidationError, message, { details });
}

/** body-parser and express client errors (they carry a `type` or a 4xx `status`) become 400 VALIDATION_ERROR with one detail. */
export function fromBodyParserError(err: unknown, maxBodyBytes: number): ReposearchError | null {
  if (err === null || typeof err !== "object") return null;
  switch ("type" in err && typeof err.type === "string" ? err.type : "") {
    case "entity.too.large":
      return validationError(`request body is larger than ${maxBodyBytes} bytes`, [
        { path: "", rule: "maxBodyBytes", message: `request body must be at most ${maxBodyBytes} bytes` },
      ]);
    case "entity.parse.failed":
      return validationError("request body is not valid JSON", [{ path: "", rule: "json", message: "must be a JSON object" }]);
    case "charset.unsupported":
    case "encoding.unsupported":
      return validationError("unsupported request encoding", [
        { path: "", rule: "contentType", message: "send UTF-8 JSON as Content-Type: application/json, optionally gzip/deflate encoded" },
      ]);
    case "entity.verify.failed":
      // app.ts's verify hook: the bytes are not UTF-8 (./unicode.ts says why that is refused, not decoded).
      return validationError("request body is not valid UTF-8", [{ path: "", rule: "unicode", message: "send the body as UTF-8 encoded JSON" }]);
    case "request.aborted":
    case "request.size.invalid":
      return validationError("request body was incomplete", [{ path: "", rule: "json", message: "the body ended before Content-Length bytes" }]);
    default:
      break;
  }
  // Other client errors raised by express itself (e.g. an undecodable %-escape in the path).
  const status = "status" in err && typeof err.status === "number" ? err.status : 0;
  if (status >= 400 && status < 500) {
    return validationError("malformed request", [{ path: "", rule: "http", message: "the request line or headers could not be decoded" }]);
  }
  return null;
}

/** The core reports dotted paths (`filters.excludeRepos[0]`); the REST API speaks JSON pointers (`/filters/excludeRepos/0`). */
export function toJsonPointer(path: string): string {
  if (path === "" || path.startsWith("/")) return path;
  const tokens = path.split(".").flatMap((part) => part.split(/\[(\d+)\]/).filter((t) => t !== ""));
  return tokens.map((t) => `/${t.replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}

/** A core failure as the caller sees it: its validation errors (400) and NOT_FOUND (404) pass through, everything else is 502. */
export function fromCoreError(err: unknown): ReposearchError {
  if (err instanceof ReposearchError) {
    if (err.code === ErrorCode.ValidationError) {
      const details = (err.details ?? []).map((d) => ({ ...d, path: toJsonPointer(d.path) }));
      return new ReposearchError(ErrorCode.ValidationError, err.message, { details, cause: err });
    }
    // An unknown repository (similar, repository card): the caller's mistake, said as the core said it.
    if (err.code === ErrorCode.NotFound) return new ReposearchError(ErrorCode.NotFound, err.message, { cause: err });
    const msg =
      err.code === ErrorCode.DeadlineExceeded
        ? "search core did not answer in time"
        : err.code === ErrorCode.Unavailable || err.code === ErrorCode.ExternalService
          ? "search core unavailable"
          : "search core failed";
    return new ReposearchError(ErrorCode.ExternalService, msg, { cause: err });
  }
  // A raw gRPC ServiceError: numeric status code, message in `details`.
  if (err !== null && typeof err === "object" && "code" in err && typeof err.code === "number") {
    const details = "details" in err && typeof err.details === "string" ? err.details : "invalid request";
    if (err.code === 3) return new ReposearchError(ErrorCode.ValidationError, details, { cause: err });
    const msg = err.code === 4 ? "search core did not answer in time" : err.code === 14 ? "search core unavailable" : "search core failed";
    return new ReposearchError(ErrorCode.ExternalService, msg, { cause: err });
  }
  return new ReposearchError(ErrorCode.ExternalService, "search core failed", { cause: err });
}

/** An error as a log field, scrubbed of the presented key and of anything shaped like a key. */
export function describeError(err: unknown, secret: string | undefined): { message: string; name?: string; stack?: string } {
  const scrub = (s: string): string => redactKeys(secret && secret.length > 0 ? s.split(secret).join("[REDACTED]") : s);
  if (err instanceof Error) return { name: err.name, message: scrub(err.message), ...(err.stack ? { stack: scrub(err.stack) } : {}) };
  return { message: scrub(String(err)) };
}
