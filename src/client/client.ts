/**
 * The typed client of the REST API: `search`, `similar` and `repository`, over `fetch`, with no
 * dependency beyond Node's (or a browser's) standard library. Types come from the served OpenAPI
 * document (openapi.ts, generated); the paths below are typed against it, so a renamed endpoint fails
 * the type check rather than a call.
 *
 * Every call makes at most `maxAttempts` attempts. 429 and 503 wait for the answer's `Retry-After`;
 * 500, 502 and a failed connection wait an exponential backoff with jitter (retry.ts). An attempt that
 * outlives `timeoutMs` is abandoned and not retried: the wait is the caller's budget. A `Retry-After`
 * longer than `maxRetryDelayMs` ends the call at once with the error, so a caller never sleeps for
 * minutes without knowing. Options are checked when the client is made (fail fast), not on first use.
 */
import { RepoSearchError, type ClientErrorCode } from "./errors.js";
import type { paths } from "./openapi.js";
import { backoffMs, isRetryable, parseRetryAfter, sleep } from "./retry.js";
import type { ErrorCode, ErrorDetail, RepositoryCard, SearchRequest, SearchResponse, SimilarRequest } from "./types.js";

const SEARCH_PATH: keyof paths = "/v1/codehost/search";
const SIMILAR_PATH: keyof paths = "/v1/codehost/similar";
const REPOSITORY_PATH: keyof paths = "/v1/codehost/repos/{owner}/{repo}";

/** `owner/repo`, as the contract's pattern states it. */
const OWNER_REPO = /^([^/\s]+)\/([^/\s]+)$/;

export interface RetryEvent {
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  /** How long the client waits before the next attempt. */
  readonly delayMs: number;
  readonly error: RepoSearchError;
}

export interface RepoSearchClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  readonly baseUrl: string;
  /** Sent as `X-API-Key`. Never logged by the client. */
  readonly apiKey?: string | undefined;
  /** Attempts per call, the first included: 1 disables retries. 1 to 10; default 3. */
  readonly maxAttempts?: number | undefined;
  /** Deadline of one attempt, from sending to the last byte of the answer. Default 30,000 ms. */
  readonly timeoutMs?: number | undefined;
  /** Longest wait before a retry; a longer `Retry-After` fails the call at once. Default 60,000 ms. */
  readonly maxRetryDelayMs?: number | undefined;
  /** Called before each wait between attempts (for logs and metrics). */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined;
  /** The fetch to use (tests, proxies); default `globalThis.fetch`. */
  readonly fetch?: typeof globalThis.fetch | undefined;
}

export interface CallOptions {
  /** Cancels the call, including a wait between attempts. */
  readonly signal?: AbortSignal | undefined;
}

const DEFAULTS = { maxAttempts: 3, timeoutMs: 30_000, maxRetryDelayMs: 60_000 } as const;

function checkInteger(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`${name} must be an integer from ${min} to ${max} (got ${String(value)})`);
  return value;
}

function checkBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`baseUrl must be an absolute http(s) URL (got ${JSON.stringify(raw)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`baseUrl must use http or https (got ${url.protocol})`);
  if (url.search || url.hash) throw new TypeError("baseUrl must not carry a query or a fragment");
  return url.href.replace(/\/+$/, "");
}

/** The body of a contract error answer, when the answer is one. */
function contractError(body: unknown): { code: ErrorCode; message: string; details: readonly ErrorDetail[] } | null {
  if (body === null || typeof body !== "object" || !("error" in body)) return null;
  const e = (body as { error: unknown }).error;
  if (e === null || typeof e !== "object") return null;
  const { code, message, details } = e as { code?: unknown; message?: unknown; details?: unknown };
  if (typeof code !== "string" || typeof message !== "string") return null;
  return { code: code as ErrorCode, message, details: Array.isArray(details) ? (details as ErrorDetail[]) : [] };
}

export class RepoSearchClient {
  readonly baseUrl: string;
  readonly maxAttempts: number;
  readonly timeoutMs: number;
  readonly maxRetryDelayMs: number;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof globalThis.fetch;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;

  constructor(options: RepoSearchClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.maxAttempts = checkInteger("maxAttempts", options.maxAttempts ?? DEFAULTS.maxAttempts, 1, 10);
    this.timeoutMs = checkInteger("timeoutMs", options.timeoutMs ?? DEFAULTS.timeoutMs, 1, 600_000);
    this.maxRetryDelayMs = checkInteger("maxRetryDelayMs", options.maxRetryDelayMs ?? DEFAULTS.maxRetryDelayMs, 0, 3_600_000);
    if (options.apiKey !== undefined && (options.apiKey === "" || /[\s]/.test(options.apiKey)))
      throw new TypeError("apiKey must be a non-empty token without whitespace");
    this.#apiKey = options.apiKey;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#onRetry = options.onRetry;
  }

  /** `POST /v1/codehost/search`: repositories ranked for a natural-language query (costs one search). */
  search(request: SearchRequest, options: CallOptions = {}): Promise<SearchResponse> {
    return this.#call<SearchResponse>("POST", SEARCH_PATH, request, options);
  }

  /** `POST /v1/codehost/similar`: repositories like `request.repo` (costs one search). */
  similar(request: SimilarRequest, options: CallOptions = {}): Promise<SearchResponse> {
    return this.#call<SearchResponse>("POST", SIMILAR_PATH, request, options);
  }

  /** `GET /v1/codehost/repos/{owner}/{repo}`: the repository's card (not charged). */
  repository(name: string, options: CallOptions = {}): Promise<RepositoryCard> {
    const m = OWNER_REPO.exec(name);
    if (!m) {
      return Promise.reject(
        new RepoSearchError({
          code: "INVALID_ARGUMENT",
          message: `repository name must be owner/repo (got ${JSON.stringify(name)})`,
          details: [{ path: "/repo", rule: "pattern", message: "must be owner/repo: two non-empty parts separated by one slash, no whitespace" }],
        }),
      );
    }
    const path = REPOSITORY_PATH.replace("{owner}", encodeURIComponent(m[1]!)).replace("{repo}", encodeURIComponent(m[2]!));
    return this.#call<RepositoryCard>("GET", path, undefined, options);
  }

  async #call<T>(method: "GET" | "POST", path: string, body: unknown, options: CallOptions): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let failure: RepoSearchError;
      try {
        return (await this.#attempt(method, path, body, options.signal)) as T;
      } catch (err) {
        if (!(err instanceof RepoSearchError)) throw err;
        failure = err.withAttempts(attempt);
      }
      if (attempt >= this.maxAttempts || !isRetryable(failure.code, failure.status)) throw failure;
      const delayMs = failure.retryAfterSeconds !== null ? failure.retryAfterSeconds * 1000 : backoffMs(attempt);
      if (delayMs > this.maxRetryDelayMs) throw failure;
      this.#onRetry?.({ attempt, delayMs, error: failure });
      await sleep(delayMs, options.signal);
    }
  }

  /** One HTTP exchange: the parsed answer, or a RepoSearchError. */
  async #attempt(method: string, path: string, body: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.#apiKey !== undefined) headers["x-api-key"] = this.#apiKey;
    let res: Response;
    let text: string;
    try {
      res = await this.#fetch(this.baseUrl + path, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      const code: ClientErrorCode = timeout.aborted ? "TIMEOUT" : "CONNECTION_ERROR";
      const message = timeout.aborted ? `no answer within ${this.timeoutMs} ms` : `cannot reach ${this.baseUrl}: ${(err as Error).message}`;
      throw new RepoSearchError({ code, message, cause: err });
    }
    const requestId = res.headers.get("x-request-id");
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok && parsed !== undefined) return parsed;
    const retryAfterSeconds = parseRetryAfter(res.headers.get("retry-after"));
    const e = contractError(parsed);
    if (e) throw new RepoSearchError({ ...e, status: res.status, retryAfterSeconds, requestId });
    // Not the contract's answer (a proxy's error page, a truncated body): the status still decides a retry.
    throw new RepoSearchError({
      code: "INVALID_RESPONSE",
      message: `unexpected answer from ${this.baseUrl}: HTTP ${res.status}${text ? ` ${text.slice(0, 200)}` : ""}`,
      status: res.status,
      retryAfterSeconds,
      requestId,
    });
  }
}
