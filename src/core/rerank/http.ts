/**
 * A text-embeddings-inference (TEI) reranker endpoint: `POST {url}/rerank` with
 * `{"query": q, "texts": [...], "raw_scores": false, "return_text": false, "truncate": true}` answers
 * `[{"index": i, "score": s}, ...]` sorted by score, so scores are mapped back by index.
 * Query and texts never appear in errors or logs: they are user data.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { logger } from "../../common/logger.js";
import { backoffMs, type RetryPolicy } from "../../embed/http.js";
import type { RerankCandidate, Reranker } from "./types.js";

export type { RetryPolicy } from "../../embed/http.js";

const log = logger.child({ component: "rerank-http" });

/**
 * Tighter than the embedder's: the rerank stage has a budget of a few hundred milliseconds, and the
 * stage's signal cuts any retry that would not fit anyway. 500 is retried too: TEI answers it for
 * transient backend failures, and a rerank request has no side effects.
 */
export const DEFAULT_RERANK_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 2,
  initialBackoffMs: 20,
  maxBackoffMs: 100,
  retryOn: [429, 500, 502, 503, 504],
};

/** TEI's default `max_client_batch_size`. */
const DEFAULT_BATCH_SIZE = 32;

export interface HttpRerankerOptions {
  /** Base URL of the service; `rerank` is appended (so a path prefix such as `/tei/` is kept). */
  readonly url: string;
  /** Per request attempt, response body included. */
  readonly timeoutMs: number;
  /** Which failures are retried and how long to wait; only 5xx/429 statuses listed here and network errors qualify. */
  readonly retry?: RetryPolicy;
  /** Texts per request; larger candidate lists are split into concurrent requests. */
  readonly batchSize?: number;
}

/** The rerank service failed or answered something unusable. `status` is null for network errors and timeouts. */
export class RerankServiceError extends ReposearchError {
  readonly status: number | null;
  readonly attempts: number;
  constructor(message: string, opts: { status: number | null; attempts: number; cause?: unknown }) {
    super(ErrorCode.ExternalService, message, { cause: opts.cause });
    this.status = opts.status;
    this.attempts = opts.attempts;
  }
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

function validateRetryPolicy(p: RetryPolicy): void {
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) throw new RangeError(`retry.maxAttempts must be an integer >= 1, got ${p.maxAttempts}`);
  if (!(p.initialBackoffMs >= 0)) throw new RangeError(`retry.initialBackoffMs must be >= 0, got ${p.initialBackoffMs}`);
  if (!(p.maxBackoffMs >= p.initialBackoffMs)) throw new RangeError(`retry.maxBackoffMs must be >= initialBackoffMs, got ${p.maxBackoffMs}`);
  const bad = p.retryOn.filter((s) => !(s === 429 || (Number.isInteger(s) && s >= 500 && s <= 599)));
  if (bad.length > 0) throw new RangeError(`retry.retryOn may hold only 429 and 5xx statuses, got ${bad.join(", ")}`);
}

export class HttpReranker implements Reranker {
  readonly id: string;
  readonly batchSize: number;
  private readonly endpoint: URL;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  /** host + path, for ids, logs and errors. */
  private readonly where: string;

  /** Validates everything up front and makes no request: the service may come up after the search core. */
  constructor(opts: HttpRerankerOptions) {
    let base: URL;
    try {
      base = new URL(opts.url);
    } catch {
      throw new RangeError(`url must be an absolute http(s) URL, got ${JSON.stringify(opts.url)}`);
    }
    if (base.protocol !== "http:" && base.protocol !== "https:") throw new RangeError(`url must be http(s), got ${base.protocol}`);
    if (base.search !== "" || base.hash !== "") throw new RangeError("url must not carry a query string or fragment");
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs < 1) throw new RangeError(`timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
    const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
    this.retry = opts.retry ?? DEFAULT_RERANK_RETRY_POLICY;
    validateRetryPolicy(this.retry);

    this.endpoint = new URL("rerank", base);
    this.timeoutMs = opts.timeoutMs;
    this.batchSize = batchSize;
    this.where = `${base.host}${base.pathname.replace(/\/+$/, "")}`;
    this.id = `http:${this.where}`;
  }

  async score(query: string, candidates: readonly RerankCandidate[], opts: { readonly signal: AbortSignal }): Promise<number[]> {
    opts.signal.throwIfAborted();
    if (candidates.length === 0) return [];
    const texts = candidates.map((c) => c.text);
    if (texts.length <= this.batchSize) return this.scoreBatch(query, texts, opts.signal);
    // Concurrent batches: the stage budget is one round trip, not one per batch. The first failure cancels the rest.
    const siblings = new AbortController();
    const signal = AbortSignal.any([opts.signal, siblings.signal]);
    const batches: Promise<number[]>[] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) {
      batches.push(
        this.scoreBatch(query, texts.slice(start, start + this.batchSize), signal).catch((err: unknown) => {
          siblings.abort(err);
          throw err;
        }),
      );
    }
    try {
      return (await Promise.all(batches)).flat();
    } finally {
      // Losers of the Promise.all race were already cancelled; keep their rejections from going unhandled.
      for (const b of batches) b.catch(() => {});
    }
  }

  async close(): Promise<void> {}

  private async scoreBatch(query: string, texts: readonly string[], signal: AbortSignal): Promise<number[]> {
    const body = JSON.stringify({ query, texts, raw_scores: false, return_text: false, truncate: true });
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.attempt(body, signal);
      if (outcome.ok) return this.parse(outcome.json, texts.length, attempt);
      // The caller gave up: no retry, and its reason is the honest answer.
      signal.throwIfAborted();
      if (!outcome.retryable || attempt >= this.retry.maxAttempts) {
        throw new RerankServiceError(`rerank service ${this.where}: ${outcome.message} (attempt ${attempt} of ${this.retry.maxAttempts})`, {
          status: outcome.status,
          attempts: attempt,
          cause: outcome.cause,
        });
      }
      const delayMs = backoffMs(this.retry, attempt, outcome.retryAfter);
      log.warn("rerank request failed; retrying", { service: this.where, failure: outcome.message, attempt, delayMs: Math.round(delayMs) });
      try {
        await sleep(delayMs, undefined, { signal });
      } catch {
        signal.throwIfAborted();
      }
    }
  }

  /** One request. Never throws: the caller decides on retries from the outcome. */
  private async attempt(body: string, signal: AbortSignal): Promise<Attempt> {
    const failed = (message: string, status: number | null, retryable: boolean, cause?: unknown, retryAfter: string | null = null): Attempt => ({
      ok: false,
      message,
      status,
      retryable,
      cause,
      retryAfter,
    });
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const network = (err: unknown): Attempt => {
      if (timeout.aborted && !signal.aborted) return failed(`no response within ${this.timeoutMs} ms`, null, true, err);
      const e = err as Error & { cause?: { code?: string } };
      return failed(`request failed (${e.cause?.code ?? e.message})`, null, true, err);
    };
    let res: Response;
    try {
      res = await fetch(this.endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        signal: AbortSignal.any([signal, timeout]),
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
      return failed(`HTTP ${res.status}${kind}`, res.status, this.retry.retryOn.includes(res.status), undefined, res.headers.get("retry-after"));
    }
    try {
      return { ok: true, json: await res.json() };
    } catch (err) {
      return err instanceof SyntaxError ? failed("response is not JSON", res.status, false, err) : network(err);
    }
  }

  /** TEI's answer → scores in input order; anything but a permutation of the indexes with finite scores is rejected. */
  private parse(json: unknown, expected: number, attempts: number): number[] {
    const bad = (why: string) => new RerankServiceError(`rerank service ${this.where}: malformed response (${why})`, { status: 200, attempts });
    if (!Array.isArray(json)) throw bad(`expected an array of ${expected} {index, score} objects, got ${json === null ? "null" : typeof json}`);
    if (json.length !== expected) throw bad(`expected ${expected} entries, got ${json.length}`);
    const scores = new Array<number>(expected);
    const seen = new Array<boolean>(expected).fill(false);
    json.forEach((entry: unknown, k) => {
      if (entry === null || typeof entry !== "object") throw bad(`entry ${k} is not an object`);
      const { index, score } = entry as { index?: unknown; score?: unknown };
      if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= expected) throw bad(`entry ${k} has index ${JSON.stringify(index)}, expected an integer in [0, ${expected})`);
      if (seen[index]) throw bad(`index ${index} appears more than once`);
      if (typeof score !== "number" || !Number.isFinite(score)) throw bad(`entry ${k} has a non-numeric score`);
      seen[index] = true;
      scores[index] = score;
    });
    return scores;
  }
}
