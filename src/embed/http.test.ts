/**
 * HttpEmbedder against a real node:http server on loopback that speaks TEI's /embed and /info, with
 * deterministic hash-based vectors and scriptable failures.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, test } from "vitest";
import { ConfigError, ErrorCode } from "../common/errors.js";
import { setLogSink } from "../common/logger.js";
import { startFakeService } from "../../test/support/tei-testkit.js";
import { loadConfig } from "../config/config.js";
import { createEmbedder, loadQueryEmbedder } from "./factory.js";
import { backoffMs, DEFAULT_RETRY_POLICY, EmbedServiceError, HttpEmbedder, type HttpEmbedderOptions, type RetryPolicy } from "./http.js";

const DIMS = 16;
const MODEL_ID = "test/hash-embed";

/** The server's vector for a text: 16 bytes of its sha256, centred. Not normalised, so the client must be. */
function hashVector(text: string): number[] {
  return Array.from(createHash("sha256").update(text).digest().subarray(0, DIMS), (b) => b - 127.5);
}
function normalized(v: number[]): number[] {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

/** What /embed does next: queued overrides first, then normal answers. */
type Behaviour = { status: number; body?: string; headers?: Record<string, string> } | "hang" | ((inputs: string[]) => unknown);
interface TeiServer {
  url: string;
  /** Batch sizes of every /embed request, failed ones included. */
  requests: number[];
  script: Behaviour[];
  info: "ok" | "404";
  close(): Promise<void>;
}

async function startTei(pathPrefix = "/"): Promise<TeiServer> {
  const state: Omit<TeiServer, "url" | "close"> = { requests: [], script: [], info: "ok" };
  return startFakeService(state, pathPrefix, (req, res, route, raw) => {
    if (req.method === "GET" && route === "/info") {
      if (state.info === "404") return res.writeHead(404).end();
      return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ model_id: MODEL_ID, max_client_batch_size: 8 }));
    }
    if (req.method !== "POST" || route !== "/embed") return res.writeHead(404).end();
    const body = JSON.parse(raw.toString("utf8")) as { inputs: string[]; normalize: boolean; truncate: boolean };
    assert.equal(body.normalize, true);
    assert.equal(body.truncate, true);
    state.requests.push(body.inputs.length);
    const next = state.script.shift();
    if (next === "hang") return; // never answers; the client's timeout must fire
    if (next && typeof next === "object") return res.writeHead(next.status, next.headers ?? {}).end(next.body ?? "");
    const payload = typeof next === "function" ? next(body.inputs) : body.inputs.map(hashVector);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(payload));
  });
}

const FAST_RETRY: RetryPolicy = { maxAttempts: 3, initialBackoffMs: 5, maxBackoffMs: 20, retryOn: [429, 502, 503, 504] };

describe("HttpEmbedder", () => {
  let tei: TeiServer;
  const logs: string[] = [];
  let restoreSink: (l: string) => void;
  beforeAll(async () => {
    tei = await startTei("/tei/");
    restoreSink = setLogSink((l) => logs.push(l));
  });
  afterAll(async () => {
    setLogSink(restoreSink);
    await tei.close();
  });
  beforeEach(() => {
    tei.requests.length = 0;
    tei.script.length = 0;
    tei.info = "ok";
  });
  const connect = async (extra: Partial<HttpEmbedderOptions> = {}) => {
    const e = await HttpEmbedder.connect({ url: tei.url, timeoutMs: 2_000, batchSize: 4, retry: FAST_RETRY, ...extra });
    tei.requests.length = 0; // forget the probe
    return e;
  };

  test("id carries host, path and the /info model id; dims come from the first response", async () => {
    const e = await connect();
    assert.equal(e.id, `http:${new URL(tei.url).host}/tei@${MODEL_ID}`);
    assert.equal(e.dims, DIMS);
    tei.info = "404";
    const bare = await connect();
    assert.equal(bare.id, `http:${new URL(tei.url).host}/tei`);
  });

  test("splits into batches of batchSize, preserves order, and L2-normalises", async () => {
    const e = await connect();
    const texts = Array.from({ length: 10 }, (_, i) => `repository number ${i}`);
    const vectors = await e.embed(texts);
    assert.deepEqual(tei.requests, [4, 4, 2]);
    assert.equal(vectors.length, 10);
    vectors.forEach((v, i) => {
      const want = normalized(hashVector(texts[i]!));
      want.forEach((x, j) => assert.ok(Math.abs(v[j]! - x) < 1e-6));
    });
    assert.deepEqual(await e.embed([]), []);
    assert.deepEqual(tei.requests, [4, 4, 2]);
  });

  test("batchSize is capped by the server's max_client_batch_size", async () => {
    const e = await connect({ batchSize: 32 });
    assert.equal(e.batchSize, 8);
    await e.embed(Array.from({ length: 20 }, (_, i) => `t${i}`));
    assert.deepEqual(tei.requests, [8, 8, 4]);
  });

  test("retries 503 (and 429 with Retry-After) then succeeds; logs never carry the texts", async () => {
    const e = await connect();
    logs.length = 0;
    tei.script.push({ status: 503 }, { status: 429, headers: { "retry-after": "0" } });
    const [v] = await e.embed(["secret text of a private repo"]);
    assert.equal(v!.length, DIMS);
    assert.deepEqual(tei.requests, [1, 1, 1]);
    assert.equal(logs.filter((l) => l.includes("retrying")).length, 2);
    assert.ok(logs.every((l) => !l.includes("secret")));
  });

  test("a hard 500 fails at once with a typed error carrying the status", async () => {
    const e = await connect();
    tei.script.push({ status: 500, body: JSON.stringify({ error: "boom on secret text", error_type: "Backend" }) });
    await assert.rejects(e.embed(["secret text"]), (err: unknown) => {
      assert.ok(err instanceof EmbedServiceError);
      assert.equal(err.code, ErrorCode.ExternalService);
      assert.equal(err.status, 500);
      assert.equal(err.attempts, 1);
      assert.match(err.message, /HTTP 500 Backend/);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    });
    assert.deepEqual(tei.requests, [1]);
  });

  test("retryable statuses give up after maxAttempts", async () => {
    const e = await connect();
    tei.script.push({ status: 502 }, { status: 502 }, { status: 502 });
    await assert.rejects(e.embed(["x"]), (err: unknown) => err instanceof EmbedServiceError && err.status === 502 && err.attempts === 3);
    assert.deepEqual(tei.requests, [1, 1, 1]);
  });

  test("a server that does not answer times out per attempt", async () => {
    const e = await connect({ timeoutMs: 150, retry: { ...FAST_RETRY, maxAttempts: 2 } });
    tei.script.push("hang", "hang");
    const started = Date.now();
    await assert.rejects(
      e.embed(["x"]),
      (err: unknown) => err instanceof EmbedServiceError && err.status === null && /no response within 150 ms/.test(err.message),
    );
    assert.deepEqual(tei.requests, [1, 1]);
    assert.ok(Date.now() - started < 1_500);
  });

  test("wrong-shaped JSON is rejected without retrying", async () => {
    const e = await connect();
    const cases: [Behaviour, RegExp][] = [
      [() => ({ embeddings: [] }), /expected an array of 1 vectors, got object/],
      [(inputs) => [...inputs, "extra"].map(hashVector), /expected 1 vectors, got 2/],
      [() => [hashVector("a").slice(0, 3)], /vector 0 is not an array of 16 numbers/],
      [() => [hashVector("a").map(String)], /non-numeric/],
      [{ status: 200, body: "<html>oops</html>" }, /not JSON/],
    ];
    for (const [behaviour, pattern] of cases) {
      tei.requests.length = 0;
      tei.script.push(behaviour);
      await assert.rejects(e.embed(["x"]), (err: unknown) => err instanceof EmbedServiceError && pattern.test(err.message));
      assert.deepEqual(tei.requests, [1]);
    }
  });

  test("network errors are retried, then reported with status null", async () => {
    const dead = await startTei();
    const url = dead.url;
    await dead.close();
    await assert.rejects(HttpEmbedder.connect({ url, timeoutMs: 500, batchSize: 4, retry: { ...FAST_RETRY, maxAttempts: 2 } }), (err: unknown) => {
      return err instanceof EmbedServiceError && err.status === null && err.attempts === 2 && /ECONNREFUSED/.test(err.message);
    });
  });

  test("options are validated up front", async () => {
    await assert.rejects(HttpEmbedder.connect({ url: "ftp://x", timeoutMs: 1, batchSize: 1 }), RangeError);
    await assert.rejects(HttpEmbedder.connect({ url: tei.url, timeoutMs: 0, batchSize: 1 }), /timeoutMs/);
    await assert.rejects(HttpEmbedder.connect({ url: tei.url, timeoutMs: 10, batchSize: 0 }), /batchSize/);
    await assert.rejects(HttpEmbedder.connect({ url: tei.url, timeoutMs: 10, batchSize: 1, retry: { ...FAST_RETRY, maxAttempts: 0 } }), /maxAttempts/);
  });

  test("backoff grows exponentially within [ceiling/2, ceiling], capped; Retry-After wins", () => {
    const p = { ...DEFAULT_RETRY_POLICY, initialBackoffMs: 100, maxBackoffMs: 1_000 };
    for (const [attempt, ceiling] of [
      [1, 100],
      [2, 200],
      [3, 400],
      [5, 1_000],
    ] as const) {
      const d = backoffMs(p, attempt);
      assert.ok(d >= ceiling / 2 && d <= ceiling, `attempt ${attempt}: ${d}`);
    }
    assert.equal(backoffMs(p, 1, "0.5"), 500);
    assert.equal(backoffMs(p, 1, "60"), 1_000);
  });

  test("factory and loadQueryEmbedder: the service may move, the model may not", async () => {
    const config = loadConfig({ EMBEDDER: "http", EMBED_HTTP_URL: tei.url, EMBED_BATCH_SIZE: "4", DATA_DIR: "/tmp/reposearch-unused" });
    const e = await createEmbedder({ kind: "http", url: tei.url, timeoutMs: 1_000, batchSize: 4 });
    assert.ok(e instanceof HttpEmbedder);
    const moved = await loadQueryEmbedder(config, `http:old-host:8080/tei@${MODEL_ID}`);
    assert.equal(moved.id, e.id);
    await assert.rejects(loadQueryEmbedder(config, "http:old-host:8080/tei@BAAI/other-model"), ConfigError);
  });
});
