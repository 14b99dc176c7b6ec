/**
 * A text-embeddings-inference (TEI) compatible endpoint: `POST {url}/embed` with
 * `{"inputs": [...], "normalize": true, "truncate": true}` answers `number[][]`.
 * Texts never appear in errors or logs: they are user data. Retries, timeouts and error mapping are
 * common/tei-client.ts, shared with the HTTP reranker.
 */
import { logger } from "../common/logger.js";
import { parseServiceUrl, TeiEndpoint, TeiServiceError, validateRetryPolicy, type RetryPolicy } from "../common/tei-client.js";
import type { Embedder } from "./types.js";
import { l2normalize } from "./types.js";

export { backoffMs, type RetryPolicy } from "../common/tei-client.js";

const log = logger.child({ component: "embed-http" });

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
export class EmbedServiceError extends TeiServiceError {}

/** The subset of TEI's `GET /info` this embedder uses. */
interface ServiceInfo {
  readonly modelId: string | null;
  readonly maxClientBatchSize: number | null;
}

export class HttpEmbedder implements Embedder {
  readonly id: string;
  readonly batchSize: number;
  private readonly endpoint: TeiEndpoint;
  private outputDims = 0;

  private constructor(opts: HttpEmbedderOptions, info: ServiceInfo) {
    this.endpoint = new TeiEndpoint({
      base: parseServiceUrl(opts.url),
      route: "embed",
      timeoutMs: opts.timeoutMs,
      retry: opts.retry ?? DEFAULT_RETRY_POLICY,
      names: { service: "embedding service", request: "embedding request" },
      errorClass: EmbedServiceError,
      log,
    });
    this.batchSize = Math.min(opts.batchSize, info.maxClientBatchSize ?? Infinity);
    this.id = `http:${this.endpoint.where}${info.modelId ? `@${info.modelId}` : ""}`;
  }

  /**
   * Asks `/info` for the model id (optional: not every compatible server has it), then embeds one probe
   * text so `dims` is known, and the service proven reachable, before anything is indexed.
   */
  static async connect(opts: HttpEmbedderOptions): Promise<HttpEmbedder> {
    parseServiceUrl(opts.url);
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
      const res = await fetch(new URL("info", parseServiceUrl(opts.url)), { signal: AbortSignal.timeout(opts.timeoutMs) });
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
    return this.endpoint.post(JSON.stringify({ inputs, normalize: true, truncate: true }), (json, attempts) => this.parse(json, inputs.length, attempts));
  }

  private parse(json: unknown, expected: number, attempts: number): Float32Array[] {
    const bad = (why: string) => this.endpoint.malformed(why, attempts);
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
