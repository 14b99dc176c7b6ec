/**
 * A text-embeddings-inference (TEI) compatible endpoint: `POST {url}/embed` with
 * `{"inputs": [...], "normalize": true, "truncate": true}` answers `number[][]`.
 * Texts never appear in errors or logs: they are user data.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { logger } from "../common/logger.js";
import type { Embedder } from "./types.js";
import { l2normalize } from "./types.js";

const log = logger.child({ component: "embed-http" });

/** Which failures are retried, and how long to wait between attempts (exponential, jittered, capped). */
export interface RetryPolicy {
  /** Total attempts, the first included; 1 disables retries. */
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** HTTP statuses worth retrying. Network errors and timeouts are always retried. */
  readonly retryOn: readonly number[];
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  initialBackoffMs: 250,
  maxBackoffMs: 5_000,
  retryOn: [429, 502, 503, 504],
};

export interface HttpEmbedderOptions {
  /** Base URL of the service; `/embed` and `/info` are appended. */
  readonly url: string;
  /** Per request, response body included. */
  readonly timeoutMs: number;
  /** Texts per request; capped by the server's `max_client_batch_size` when /info reports one. */
  readonly batchSize: number;
  readonly retry?: RetryPolicy;
}

/** The embedding service failed or answered something unusable. `status` is null for network errors and timeouts. */
export class EmbedServiceError extends ReposearchError {
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

/** The subset of TEI's `GET /info` this embedder uses. */
interface ServiceInfo {
  readonly modelId: string | null;
  readonly maxClientBatchSize: number | null;
}

function validateRetryPolicy(p: RetryPolicy): void {
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) throw new RangeError(`retry.maxAttempts must be an integer >= 1, got ${p.maxAttempts}`);
  if (!(p.initialBackoffMs >= 0)) throw new RangeError(`retry.initialBackoffMs must be >= 0, got ${p.initialBackoffMs}`);
  if (!(p.maxBackoffMs >= p.initialBackoffMs)) throw new RangeError(`retry.maxBackoffMs must be >= initialBackoffMs, got ${p.maxBackoffMs}`);
}

/** Delay before attempt `attempt + 1`: a server's Retry-After wins (capped), else jittered exponential backoff. */
export function backoffMs(policy: RetryPolicy, attempt: number, retryAfterHeader: string | null = null): number {
  const retryAfterS = retryAfterHeader !== null ? Number(retryAfterHeader) : NaN;
  if (Number.isFinite(retryAfterS) && retryAfterS >= 0) return Math.min(policy.maxBackoffMs, retryAfterS * 1000);
  const ceiling = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** (attempt - 1));
  // "Equal jitter": at least half the ceiling, so retries from many workers spread out but never hammer.
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export class HttpEmbedder implements Embedder {
  readonly id: string;
  readonly batchSize: number;
  private readonly base: URL;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly where: string;
  private outputDims = 0;

  private constructor(opts: HttpEmbedderOptions, info: ServiceInfo) {
    this.base = HttpEmbedder.parseUrl(opts.url);
    this.timeoutMs = opts.timeoutMs;
    this.retry = opts.retry ?? DEFAULT_RETRY_POLICY;
    this.where = `${this.base.host}${this.base.pathname.replace(/\/+$/, "")}`;
    this.batchSize = Math.min(opts.batchSize, info.maxClientBatchSize ?? Infinity);
    this.id = `http:${this.where}${info.modelId ? `@${info.modelId}` : ""}`;
  }

  private static parseUrl(url: string): URL {
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

  /**
   * Asks `/info` for the model id (optional: not every compatible server has it), then embeds one probe
   * text so `dims` is known, and the service proven reachable, before anything is indexed.
   */
  static async connect(opts: HttpEmbedderOptions): Promise<HttpEmbedder> {
    HttpEmbedder.parseUrl(opts.url);
    if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs < 1) throw new RangeError(`timeoutMs must be a positive integer, got ${opts.timeoutMs}`);
    if (!Number.isInteger(opts.batchSize) || opts.batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${opts.batchSize}`);
    validateRetryPolicy(opts.retry ?? DEFAULT_RETRY_POLICY);

    const info = await HttpEmbedder.fetchInfo(opts);
    const embedder = new HttpEmbedder(opts, info);
    await embedder.embed(["dimension probe"]);
    return embedder;
  }

  private static async fetchInfo(opts: HttpEmbedderOptions): Promise<ServiceInfo> {
    try {
      const res = await fetch(new URL("info", HttpEmbedder.parseUrl(opts.url)), { signal: AbortSignal.timeout(opts.timeoutMs) });
      if (!res.ok) {
        await res.body?.cancel();
        return { modelId: null, maxClientBatchSize: null };
      }
      const body = (await res.json()) as { model_id?: unknown; max_client_batch_size?: unknown };
      const batch = body.max_client_batch_size;
      return {
        modelId: typeof body.model_id === "string" && body.model_id !== "" ? body.model_id : null,
        maxClientBatchSize: typeof batch === "number" && Number.isInteger(batch) && batch > 0 ? batch : null,
      };
    } catch {
      // /info is a nicety; the probe embed that follows reports a dead service properly.
      return { modelId: null, maxClientBatchSize: null };
    }
  }

  get dims(): number {
    return this.outputDims;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) {
      out.push(...(await this.embedBatch(texts.slice(start, start + this.batchSize))));
    }
    return out;
  }

  private async embedBatch(inputs: readonly string[]): Promise<Float32Array[]> {
    const body = JSON.stringify({ inputs, normalize: true, truncate: true });
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.attempt(body);
      if (outcome.ok) return this.parse(outcome.json, inputs.length, attempt);
      if (!outcome.retryable || attempt >= this.retry.maxAttempts) {
        throw new EmbedServiceError(`embedding service ${this.where}: ${outcome.message} (attempt ${attempt} of ${this.retry.maxAttempts})`, {
          status: outcome.status,
          attempts: attempt,
          cause: outcome.cause,
        });
      }
      const delayMs = backoffMs(this.retry, attempt, outcome.retryAfter);
      log.warn("embedding request failed; retrying", { service: this.where, failure: outcome.message, attempt, delayMs: Math.round(delayMs) });
      await sleep(delayMs);
    }
  }

  /** One request. Never throws: the caller decides on retries from the outcome. */
  private async attempt(body: string): Promise<Attempt> {
    const failed = (message: string, status: number | null, retryable: boolean, cause?: unknown, retryAfter: string | null = null): Attempt => ({
      ok: false,
      message,
      status,
      retryable,
      cause,
      retryAfter,
    });
    const network = (err: unknown): Attempt => {
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === "TimeoutError") return failed(`no response within ${this.timeoutMs} ms`, null, true, err);
      return failed(`request failed (${e.cause?.code ?? e.message})`, null, true, err);
    };
    let res: Response;
    try {
      res = await fetch(new URL("embed", this.base), {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
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

  private parse(json: unknown, expected: number, attempts: number): Float32Array[] {
    const bad = (why: string) => new EmbedServiceError(`embedding service ${this.where}: malformed response (${why})`, { status: 200, attempts });
    if (!Array.isArray(json)) throw bad(`expected an array of ${expected} vectors, got ${json === null ? "null" : typeof json}`);
    if (json.length !== expected) throw bad(`expected ${expected} vectors, got ${json.length}`);
    const dims = this.outputDims || (Array.isArray(json[0]) ? json[0].length : 0);
    if (dims === 0) throw bad("expected non-empty number arrays");
    const out = json.map((row: unknown, i) => {
      if (!Array.isArray(row) || row.length !== dims) throw bad(`vector ${i} is not an array of ${dims} numbers`);
      const v = new Float32Array(dims);
      for (let j = 0; j < dims; j++) {
        const x = row[j] as unknown;
        if (typeof x !== "number" || !Number.isFinite(x)) throw bad(`vector ${i} has a non-numeric value`);
        v[j] = x;
      }
      // The request asks for normalised vectors; normalising again keeps the Embedder contract if the server ignores it.
      return l2normalize(v);
    });
    this.outputDims = dims;
    return out;
  }

  async close(): Promise<void> {}
}
