/**
 * The client side shared by text-embeddings-inference (TEI) endpoints (`/embed`, `/rerank`): the retry
 * policy as data, jittered backoff that honours Retry-After, a timeout per attempt, the caller's abort
 * signal, and the mapping of each response to an answer, a retryable failure or a final one.
 * Request bodies and TEI's error messages (which may quote the input) never reach errors or logs:
 * they are user data.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, ReposearchError } from "./errors.js";
import type { Logger } from "./logger.js";

/** Which failures are retried, and how long to wait between attempts (exponential, jittered, capped). */
export interface RetryPolicy {
  /** Total attempts, the first included; 1 disables retries. */
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** HTTP statuses worth retrying. Network errors and timeouts are always retried. */
  readonly retryOn: readonly number[];
}

/** A TEI service failed or answered something unusable. `status` is null for network errors and timeouts. */
export class TeiServiceError extends ReposearchError {
  readonly status: number | null;
  readonly attempts: number;
  constructor(message: string, opts: { status: number | null; attempts: number; cause?: unknown }) {
    super(ErrorCode.ExternalService, message, { cause: opts.cause });
    this.status = opts.status;
    this.attempts = opts.attempts;
  }
}

/** `onlyRetryableStatuses`: `retryOn` may hold only 429 and 5xx. */
export function validateRetryPolicy(p: RetryPolicy, opts: { onlyRetryableStatuses?: boolean } = {}): void {
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) throw new RangeError(`retry.maxAttempts must be an integer >= 1, got ${p.maxAttempts}`);
  if (!(p.initialBackoffMs >= 0)) throw new RangeError(`retry.initialBackoffMs must be >= 0, got ${p.initialBackoffMs}`);
  if (!(p.maxBackoffMs >= p.initialBackoffMs)) throw new RangeError(`retry.maxBackoffMs must be >= initialBackoffMs, got ${p.maxBackoffMs}`);
  if (!opts.onlyRetryableStatuses) return;
  const bad = p.retryOn.filter((s) => !(s === 429 || (Number.isInteger(s) && s >= 500 && s <= 599)));
  if (bad.length > 0) throw new RangeError(`retry.retryOn may hold only 429 and 5xx statuses, got ${bad.join(", ")}`);
}

/** Delay before attempt `attempt + 1`: a server's Retry-After wins (capped), else jittered exponential backoff. */
export function backoffMs(policy: RetryPolicy, attempt: number, retryAfterHeader: string | null = null): number {
  const retryAfterS = retryAfterHeader !== null ? Number(retryAfterHeader) : NaN;
  if (Number.isFinite(retryAfterS) && retryAfterS >= 0) return Math.min(policy.maxBackoffMs, retryAfterS * 1000);
  const ceiling = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
  // "Equal jitter": at least half the ceiling, so retries from many workers spread out but never hammer.
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** A service base URL: absolute http(s), its path ending in `/` so that relative routes keep a path prefix. */
export function parseServiceUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RangeError(`url must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new RangeError(`url must be http(s), got ${u.protocol}`);
  if (!u.pathname.endsWith("/")) u.pathname += "/";
  return u;
}

/** host + path of a service base URL, for ids, logs and errors. */
export function serviceWhere(base: URL): string {
  return `${base.host}${base.pathname.replace(/\/+$/, "")}`;
}

export interface TeiEndpointOptions {
  /** Base URL as returned by parseServiceUrl. */
  readonly base: URL;
  /** The route under `base`, e.g. `embed`. */
  readonly route: string;
  /** Per request attempt, response body included. */
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  /** How errors name the service ("embedding service") and the retry warning the request ("embedding request"). */
  readonly names: { readonly service: string; readonly request: string };
  /** The error class callers catch. */
  readonly errorClass: new (message: string, opts: { status: number | null; attempts: number; cause?: unknown }) => TeiServiceError;
  readonly log: Logger;
}

type Attempt =
  | { readonly ok: true; readonly json: unknown }
  | {
      readonly ok: false;
      readonly message: string;
      readonly status: number | null;
      readonly retryable: boolean;
      readonly retryAfter: string | null;
      readonly cause: unknown;
    };

/** One JSON POST route of a TEI service, with retries. */
export class TeiEndpoint {
  /** host + path of the service, for ids, logs and errors. */
  readonly where: string;
  private readonly url: URL;

  constructor(private readonly opts: TeiEndpointOptions) {
    this.url = new URL(opts.route, opts.base);
    this.where = serviceWhere(opts.base);
  }

  /**
   * POSTs `body` until an attempt answers 2xx JSON, then returns `parse(json, attempts)`; retries what the
   * policy allows. Once `signal` aborts nothing is retried and its reason is thrown: it is the honest answer.
   */
  async post<T>(body: string, parse: (json: unknown, attempts: number) => T, signal?: AbortSignal): Promise<T> {
    const { retry, names, log } = this.opts;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.attempt(body, signal);
      if (outcome.ok) return parse(outcome.json, attempt);
      signal?.throwIfAborted();
      if (!outcome.retryable || attempt >= retry.maxAttempts) {
        throw new this.opts.errorClass(`${names.service} ${this.where}: ${outcome.message} (attempt ${attempt} of ${retry.maxAttempts})`, {
          status: outcome.status,
          attempts: attempt,
          cause: outcome.cause,
        });
      }
      const delayMs = backoffMs(retry, attempt, outcome.retryAfter);
      log.warn(`${names.request} failed; retrying`, { service: this.where, failure: outcome.message, attempt, delayMs: Math.round(delayMs) });
      try {
        await sleep(delayMs, undefined, { signal });
      } catch {
        signal?.throwIfAborted();
      }
    }
  }

  /** The error for a 200 whose body is not the expected shape. */
  malformed(why: string, attempts: number): TeiServiceError {
    return new this.opts.errorClass(`${this.opts.names.service} ${this.where}: malformed response (${why})`, { status: 200, attempts });
  }

  /** One request. Never throws: the caller decides on retries from the outcome. */
  private async attempt(body: string, signal: AbortSignal | undefined): Promise<Attempt> {
    const { timeoutMs, retry } = this.opts;
    const failed = (message: string, status: number | null, retryable: boolean, cause?: unknown, retryAfter: string | null = null): Attempt => ({
      ok: false,
      message,
      status,
      retryable,
      cause,
      retryAfter,
    });
    const timeout = AbortSignal.timeout(timeoutMs);
    const network = (err: unknown): Attempt => {
      if (timeout.aborted && !signal?.aborted) return failed(`no response within ${timeoutMs} ms`, null, true, err);
      const e = err as Error & { cause?: { code?: string } };
      return failed(`request failed (${e.cause?.code ?? e.message})`, null, true, err);
    };
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      return network(err);
    }
    if (!res.ok) {
      // Only TEI's error_type (e.g. "Overloaded", "Validation") is kept: its message may quote the input.
      const errorType = await res
        .json()
        .then((j: unknown) => (j as { error_type?: unknown } | null)?.error_type)
        .catch(() => undefined);
      const kind = typeof errorType === "string" ? ` ${errorType}` : "";
      return failed(`HTTP ${res.status}${kind}`, res.status, retry.retryOn.includes(res.status), undefined, res.headers.get("retry-after"));
    }
    try {
      return { ok: true, json: await res.json() };
    } catch (err) {
      return err instanceof SyntaxError ? failed("response is not JSON", res.status, false, err) : network(err);
    }
  }
}
