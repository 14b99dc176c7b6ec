/**
 * A text-embeddings-inference (TEI) reranker endpoint: `POST {url}/rerank` with
 * `{"query": q, "texts": [...], "raw_scores": false, "return_text": false, "truncate": true}` answers
 * `[{"index": i, "score": s}, ...]` sorted by score, so scores are mapped back by index.
 * Query and texts never appear in errors or logs: they are user data.
 */
import { logger } from "../../common/logger.js";
import { parseServiceUrl, TeiEndpoint, TeiServiceError, validateRetryPolicy, type RetryPolicy } from "../../common/tei-client.js";
import type { RerankCandidate, Reranker } from "./types.js";

export type { RetryPolicy } from "../../common/tei-client.js";

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
export class RerankServiceError extends TeiServiceError {}

export class HttpReranker implements Reranker {
  readonly id: string;
  readonly batchSize: number;
  private readonly endpoint: TeiEndpoint;

  /** Validates everything up front and makes no request: the service may come up after the search core. */
  constructor(opts: HttpRerankerOptions) {
    const base = parseServiceUrl(opts.url);
    if (base.search !== "" || base.hash !== "") throw new RangeError("url must not carry a query string or fragment");
    if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs < 1) throw new RangeError(`timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
    const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
    const retry = opts.retry ?? DEFAULT_RERANK_RETRY_POLICY;
    validateRetryPolicy(retry, { onlyRetryableStatuses: true });

    this.endpoint = new TeiEndpoint({
      base,
      route: "rerank",
      timeoutMs: opts.timeoutMs,
      retry,
      names: { service: "rerank service", request: "rerank request" },
      errorClass: RerankServiceError,
      log,
    });
    this.batchSize = batchSize;
    this.id = `http:${this.endpoint.where}`;
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
    return this.endpoint.post(body, (json, attempts) => this.parse(json, texts.length, attempts), signal);
  }

  /** TEI's answer → scores in input order; anything but a permutation of the indexes with finite scores is rejected. */
  private parse(json: unknown, expected: number, attempts: number): number[] {
    const bad = (why: string) => this.endpoint.malformed(why, attempts);
    if (!Array.isArray(json)) throw bad(`expected an array of ${expected} {index, score} objects, got ${json === null ? "null" : typeof json}`);
    if (json.length !== expected) throw bad(`expected ${expected} entries, got ${json.length}`);
    const scores = new Array<number>(expected);
    const seen = new Array<boolean>(expected).fill(false);
    json.forEach((entry: unknown, k) => {
      if (entry === null || typeof entry !== "object") throw bad(`entry ${k} is not an object`);
      const { index, score } = entry as { index?: unknown; score?: unknown };
      if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= expected)
        throw bad(`entry ${k} has index ${JSON.stringify(index)}, expected an integer in [0, ${expected})`);
      if (seen[index]) throw bad(`index ${index} appears more than once`);
      if (typeof score !== "number" || !Number.isFinite(score)) throw bad(`entry ${k} has a non-numeric score`);
      seen[index] = true;
      scores[index] = score;
    });
    return scores;
  }
}
