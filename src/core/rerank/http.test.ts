/**
 * HttpReranker against a real node:http server on loopback that speaks TEI's /rerank (answers sorted by
 * score, as TEI does) with scriptable failures; plus runRerankStage's timeout and fallback semantics,
 * against that server and against scripted in-memory rerankers.
 */
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, beforeEach, describe, test } from "vitest";
import { ConfigError, ErrorCode } from "../../common/errors.js";
import { Logger, setLogSink } from "../../common/logger.js";
import { startFakeService } from "../../../test/support/tei-testkit.js";
import { loadConfig } from "../../config/config.js";
import { createReranker } from "./factory.js";
import { DEFAULT_RERANK_RETRY_POLICY, HttpReranker, type HttpRerankerOptions, RerankServiceError, type RetryPolicy } from "./http.js";
import { runRerankStage, type RerankCandidate, type Reranker } from "./types.js";

/** The server's relevance: the share of query words present in the text, squashed into [0, 1) like TEI's sigmoid. */
function relevance(query: string, text: string): number {
  const words = new Set(text.toLowerCase().split(/\W+/));
  const hits = query
    .toLowerCase()
    .split(/\W+/)
    .filter((w) => w && words.has(w)).length;
  return hits / (1 + hits);
}

interface RerankBody {
  query: string;
  texts: string[];
  raw_scores: boolean;
  return_text: boolean;
  truncate: boolean;
}
type Behaviour = { status: number; body?: string; headers?: Record<string, string> } | "hang" | { delayMs: number } | ((body: RerankBody) => unknown);
interface TeiServer {
  url: string;
  /** Batch sizes of every /rerank request, failed ones included. */
  requests: number[];
  script: Behaviour[];
  close(): Promise<void>;
}

function teiAnswer(body: RerankBody): { index: number; score: number }[] {
  return body.texts.map((t, index) => ({ index, score: relevance(body.query, t) })).sort((a, b) => b.score - a.score);
}

async function startTei(pathPrefix = "/"): Promise<TeiServer> {
  const state: Omit<TeiServer, "url" | "close"> = { requests: [], script: [] };
  return startFakeService(state, pathPrefix, (req, res, route, raw) => {
    if (req.method !== "POST" || route !== "/rerank") return res.writeHead(404).end();
    const body = JSON.parse(raw.toString("utf8")) as RerankBody;
    assert.equal(body.raw_scores, false);
    assert.equal(body.return_text, false);
    assert.equal(body.truncate, true);
    assert.equal(req.headers["content-type"], "application/json");
    state.requests.push(body.texts.length);
    const next = state.script.shift();
    if (next === "hang") return; // never answers
    const answer = () =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(typeof next === "function" ? next(body) : teiAnswer(body)));
    if (next && typeof next === "object" && "delayMs" in next) return void setTimeout(answer, next.delayMs).unref();
    if (next && typeof next === "object") return res.writeHead(next.status, next.headers ?? {}).end(next.body ?? "");
    answer();
  });
}

const FAST_RETRY: RetryPolicy = { maxAttempts: 3, initialBackoffMs: 5, maxBackoffMs: 20, retryOn: [429, 502, 503, 504] };
const QUERY = "incremental rust compiler";
const CANDIDATES: RerankCandidate[] = [
  { id: "py", text: "a web framework for python" },
  { id: "rustc", text: "an incremental Rust compiler" },
  { id: "bindings", text: "rust bindings for libgit2" },
  { id: "go", text: "a compiler for go written in rust" },
  { id: "none", text: "" },
];
const EXPECTED = CANDIDATES.map((c) => relevance(QUERY, c.text));
const signal = () => new AbortController().signal;

describe("HttpReranker", () => {
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
    logs.length = 0;
  });
  const reranker = (extra: Partial<HttpRerankerOptions> = {}) => new HttpReranker({ url: tei.url, timeoutMs: 2_000, retry: FAST_RETRY, ...extra });

  test("maps TEI's score-sorted answer back to input order; the id names host and path", async () => {
    const r = reranker();
    assert.equal(r.id, `http:${new URL(tei.url).host}/tei`);
    const scores = await r.score(QUERY, CANDIDATES, { signal: signal() });
    assert.deepEqual(scores, EXPECTED);
    assert.deepEqual(tei.requests, [5]);
    const stage = await runRerankStage(r, QUERY, CANDIDATES, { timeoutMs: 2_000 });
    assert.deepEqual(stage.order, [1, 3, 2, 0, 4]); // "bindings" and "go" differ; "py" and "none" tie at 0 and keep their order
    assert.equal(stage.error, undefined);
    assert.deepEqual(await r.score(QUERY, [], { signal: signal() }), []);
    assert.deepEqual(tei.requests, [5, 5]);
  });

  test("larger candidate lists go out as concurrent batches of batchSize, reassembled in order", async () => {
    const r = reranker({ batchSize: 2 });
    assert.deepEqual(await r.score(QUERY, CANDIDATES, { signal: signal() }), EXPECTED);
    assert.deepEqual([...tei.requests].sort(), [1, 2, 2]);
  });

  test("retries 503 and 429 (Retry-After) then succeeds; logs never carry the query or texts", async () => {
    const r = reranker();
    tei.script.push({ status: 503 }, { status: 429, headers: { "retry-after": "0" } });
    assert.deepEqual(await r.score("secret query", [{ id: "a", text: "secret text" }], { signal: signal() }), [relevance("secret query", "secret text")]);
    assert.deepEqual(tei.requests, [1, 1, 1]);
    assert.equal(logs.filter((l) => l.includes("retrying")).length, 2);
    assert.ok(logs.every((l) => !l.includes("secret")));
  });

  test("a non-retryable status fails at once with a typed error that does not quote the input", async () => {
    const r = reranker();
    tei.script.push({ status: 413, body: JSON.stringify({ error: "secret text is too long", error_type: "Validation" }) });
    await assert.rejects(r.score(QUERY, [{ id: "a", text: "secret text" }], { signal: signal() }), (err: unknown) => {
      assert.ok(err instanceof RerankServiceError);
      assert.equal(err.code, ErrorCode.ExternalService);
      assert.equal(err.status, 413);
      assert.equal(err.attempts, 1);
      assert.match(err.message, /HTTP 413 Validation/);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    });
    assert.deepEqual(tei.requests, [1]);
  });

  test("retryable statuses give up after maxAttempts; the default policy retries 500 once", async () => {
    tei.script.push({ status: 502 }, { status: 502 }, { status: 502 });
    await assert.rejects(
      reranker().score(QUERY, CANDIDATES, { signal: signal() }),
      (err: unknown) => err instanceof RerankServiceError && err.status === 502 && err.attempts === 3,
    );
    assert.deepEqual(tei.requests, [5, 5, 5]);
    tei.requests.length = 0;
    tei.script.push({ status: 500 }, { status: 500 });
    const withDefaults = new HttpReranker({ url: tei.url, timeoutMs: 2_000 });
    await assert.rejects(
      withDefaults.score(QUERY, CANDIDATES, { signal: signal() }),
      (err: unknown) => err instanceof RerankServiceError && err.status === 500 && err.attempts === 2,
    );
    assert.deepEqual(tei.requests, [5, 5]);
  });

  test("malformed responses are rejected with ExternalService errors, without retrying", async () => {
    const r = reranker();
    const cases: [Behaviour, RegExp][] = [
      [() => ({ results: [] }), /expected an array of 5 \{index, score\} objects, got object/],
      [(b) => teiAnswer(b).slice(1), /expected 5 entries, got 4/],
      [(b) => teiAnswer(b).map((e, k, all) => (k === 1 ? { ...e, index: all[0]!.index } : e)), /appears more than once/],
      [(b) => teiAnswer(b).map((e) => (e.index === 4 ? { ...e, index: 5 } : e)), /index 5, expected an integer in \[0, 5\)/],
      [(b) => teiAnswer(b).map((e) => (e.index === 2 ? { ...e, index: "2" } : e)), /index "2"/],
      [(b) => teiAnswer(b).map((e) => (e.index === 3 ? { index: 3, score: null } : e)), /non-numeric score/],
      [(b) => teiAnswer(b).map((e) => (e.index === 3 ? 0.5 : e)), /is not an object/],
      [{ status: 200, body: "<html>oops</html>" }, /not JSON/],
    ];
    for (const [behaviour, pattern] of cases) {
      tei.requests.length = 0;
      tei.script.push(behaviour);
      await assert.rejects(r.score(QUERY, CANDIDATES, { signal: signal() }), (err: unknown) => {
        return (
          err instanceof RerankServiceError &&
          err.code === ErrorCode.ExternalService &&
          /malformed response|not JSON/.test(err.message) &&
          pattern.test(err.message)
        );
      });
      assert.deepEqual(tei.requests, [5]);
    }
  });

  test("network errors are retried, then reported with status null", async () => {
    const dead = await startTei();
    const url = dead.url;
    await dead.close();
    const r = new HttpReranker({ url, timeoutMs: 500, retry: { ...FAST_RETRY, maxAttempts: 2 } });
    await assert.rejects(r.score(QUERY, CANDIDATES, { signal: signal() }), (err: unknown) => {
      return err instanceof RerankServiceError && err.status === null && err.attempts === 2 && /ECONNREFUSED/.test(err.message);
    });
  });

  test("a per-attempt timeout is retried like a network error", async () => {
    tei.script.push("hang");
    const r = reranker({ timeoutMs: 100 });
    assert.deepEqual(await r.score(QUERY, CANDIDATES, { signal: signal() }), EXPECTED);
    assert.deepEqual(tei.requests, [5, 5]);
    assert.ok(logs.some((l) => l.includes("no response within 100 ms")));
  });

  test("the caller's abort ends a pending request at once, with its reason, and is not retried", async () => {
    tei.script.push("hang");
    const r = reranker({ timeoutMs: 5_000 });
    const ac = new AbortController();
    const started = performance.now();
    setTimeout(() => ac.abort(new Error("client went away")), 50);
    await assert.rejects(r.score(QUERY, CANDIDATES, { signal: ac.signal }), /client went away/);
    assert.ok(performance.now() - started < 1_000);
    assert.deepEqual(tei.requests, [5]);
  });

  test("a slow server: runRerankStage gives up at the timeout with order null and ms ≈ timeout", async () => {
    const timeoutMs = 150;
    for (const behaviour of ["hang", { delayMs: 1_500 }] as const) {
      tei.requests.length = 0;
      tei.script.push(behaviour);
      const started = performance.now();
      const stage = await runRerankStage(reranker({ timeoutMs: 5_000 }), QUERY, CANDIDATES, { timeoutMs });
      const wall = performance.now() - started;
      assert.equal(stage.order, null);
      assert.match(stage.error ?? "", /timed out after 150 ms/);
      assert.ok(stage.ms >= timeoutMs - 5 && stage.ms < timeoutMs + 250, `ms ${stage.ms}`);
      assert.ok(wall < timeoutMs + 300, `wall ${wall}`);
      assert.deepEqual(tei.requests, [5]); // the stage's deadline also stops retries
    }
    assert.ok(logs.some((l) => l.includes("fell back")));
  });

  test("options are validated by the constructor", () => {
    const ok = { url: "http://127.0.0.1:1/", timeoutMs: 100 };
    assert.throws(() => new HttpReranker({ ...ok, url: "not a url" }), /absolute http\(s\) URL/);
    assert.throws(() => new HttpReranker({ ...ok, url: "ftp://x/" }), /must be http\(s\)/);
    assert.throws(() => new HttpReranker({ ...ok, url: "http://x/?a=1" }), /query string/);
    assert.throws(() => new HttpReranker({ ...ok, timeoutMs: 0 }), /timeoutMs/);
    assert.throws(() => new HttpReranker({ ...ok, batchSize: 0 }), /batchSize/);
    assert.throws(() => new HttpReranker({ ...ok, retry: { ...FAST_RETRY, maxAttempts: 0 } }), /maxAttempts/);
    assert.throws(() => new HttpReranker({ ...ok, retry: { ...FAST_RETRY, retryOn: [503, 404] } }), /only 429 and 5xx.*404/);
    assert.equal(new HttpReranker({ url: "https://tei.internal:8443/rerank-svc", timeoutMs: 100 }).id, "http:tei.internal:8443/rerank-svc");
    assert.ok(DEFAULT_RERANK_RETRY_POLICY.retryOn.every((s) => s === 429 || s >= 500));
  });
});

describe("createReranker", () => {
  const rerank = { kind: "off" as const, modelDir: null, httpUrl: null, timeoutMs: 200 };

  test("off → null; http → HttpReranker from RERANK_HTTP_URL; local → the injected builder", async () => {
    assert.equal(await createReranker({ rerank }), null);
    const config = loadConfig({ RERANKER: "http", RERANK_HTTP_URL: "http://127.0.0.1:9/tei", DATA_DIR: "/tmp/reposearch-unused" });
    const r = await createReranker(config);
    assert.ok(r instanceof HttpReranker);
    assert.equal(r.id, "http:127.0.0.1:9/tei");
    const local: Reranker = { id: "local:v1", score: async (_q, c) => c.map(() => 0), close: async () => {} };
    let built = 0;
    const got = await createReranker({ rerank: { ...rerank, kind: "local" } }, { local: async () => (built++, local) });
    assert.equal(got, local);
    assert.equal(built, 1);
  });

  test("a kind without what it needs is a configuration error", async () => {
    await assert.rejects(createReranker({ rerank: { ...rerank, kind: "local" } }), ConfigError);
    await assert.rejects(createReranker({ rerank: { ...rerank, kind: "http" } }), /RERANK_HTTP_URL/);
    await assert.rejects(createReranker({ rerank: { ...rerank, kind: "http", httpUrl: "ftp://x" } }), RangeError);
  });
});

describe("runRerankStage", () => {
  const custom = new Logger({ probe: "custom-logger" });
  let restoreSink: (l: string) => void;
  const logs: string[] = [];
  beforeAll(() => {
    restoreSink = setLogSink((l) => logs.push(l));
  });
  afterAll(() => setLogSink(restoreSink));

  /** A reranker whose score() is the given function. */
  const fake = (score: Reranker["score"]): Reranker => ({ id: "fake:1", score, close: async () => {} });
  const three: RerankCandidate[] = [
    { id: "a", text: "a" },
    { id: "b", text: "b" },
    { id: "c", text: "c" },
  ];

  test("orders best first; ties keep the first-stage order", async () => {
    const stage = await runRerankStage(
      fake(async () => [0.5, 0.9, 0.5]),
      "q",
      three,
      { timeoutMs: 1_000 },
    );
    assert.deepEqual(stage.order, [1, 0, 2]);
    assert.ok(stage.ms >= 0);
    const allEqual = await runRerankStage(
      fake(async () => [1, 1, 1]),
      "q",
      three,
      { timeoutMs: 1_000 },
    );
    assert.deepEqual(allEqual.order, [0, 1, 2]);
    const negative = await runRerankStage(
      fake(async () => [-3, -1, -2]),
      "q",
      three,
      { timeoutMs: 1_000 },
    );
    assert.deepEqual(negative.order, [1, 2, 0]);
  });

  test("an empty pool needs no scoring", async () => {
    let calls = 0;
    const stage = await runRerankStage(
      fake(async () => (calls++, [])),
      "q",
      [],
      { timeoutMs: 1_000 },
    );
    assert.deepEqual(stage.order, []);
    assert.equal(calls, 0);
  });

  test("wrong length, non-finite scores, rejections and synchronous throws fall back to order null", async () => {
    const cases: [Reranker["score"], RegExp][] = [
      [async () => [1, 2], /2 scores for 3 candidates/],
      [async () => [1, Number.NaN, 2], /score 1 is not a finite number/],
      [async () => [1, 2, Number.POSITIVE_INFINITY], /score 2 is not a finite number/],
      [async () => null as unknown as number[], /returned null/],
      [async () => Promise.reject(new Error("model exploded")), /score failed: model exploded/],
      [
        () => {
          throw new TypeError("not callable");
        },
        /score failed: TypeError: not callable/,
      ],
    ];
    for (const [score, pattern] of cases) {
      logs.length = 0;
      const stage = await runRerankStage(fake(score), "q", three, { timeoutMs: 1_000, logger: custom });
      assert.equal(stage.order, null);
      assert.match(stage.error ?? "", pattern);
      assert.ok(stage.ms >= 0);
      assert.equal(logs.filter((l) => l.includes("fell back") && l.includes("custom-logger")).length, 1);
    }
  });

  test("a reranker that ignores its signal still cannot hold the stage past the timeout", async () => {
    let sawAbort = false;
    const never = fake(
      (_q, _c, { signal }) =>
        new Promise<number[]>(() => {
          signal.addEventListener("abort", () => (sawAbort = true));
        }),
    );
    const stage = await runRerankStage(never, "q", three, { timeoutMs: 60 });
    assert.equal(stage.order, null);
    assert.match(stage.error ?? "", /timed out after 60 ms/);
    assert.ok(stage.ms >= 55 && stage.ms < 400, `ms ${stage.ms}`);
    assert.ok(sawAbort, "the reranker's signal is aborted at the deadline");
  });

  test("the caller's signal ends the stage too, before or during scoring", async () => {
    const pre = new AbortController();
    pre.abort(new Error("client went away"));
    let calls = 0;
    const before = await runRerankStage(
      fake(async () => (calls++, [1, 2, 3])),
      "q",
      three,
      { timeoutMs: 1_000, signal: pre.signal },
    );
    assert.equal(before.order, null);
    assert.match(before.error ?? "", /aborted before start \(client went away\)/);
    assert.equal(calls, 0);

    const mid = new AbortController();
    setTimeout(() => mid.abort(new Error("request deadline")), 30);
    const slow = fake((_q, _c, { signal }) => new Promise<number[]>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))));
    const during = await runRerankStage(slow, "q", three, { timeoutMs: 5_000, signal: mid.signal });
    assert.equal(during.order, null);
    assert.match(during.error ?? "", /aborted \(request deadline\)/);
    assert.ok(during.ms < 1_000);
  });

  test("an invalid timeout is a fallback, not a throw", async () => {
    const stage = await runRerankStage(
      fake(async () => [1, 2, 3]),
      "q",
      three,
      { timeoutMs: 0 },
    );
    assert.equal(stage.order, null);
    assert.match(stage.error ?? "", /invalid timeoutMs/);
  });
});
