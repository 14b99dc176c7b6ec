/**
 * The core's Connect port over loopback with an in-test SearchCore: deadlines, cancellation, error
 * mapping, metadata, HTTP/1.1 and HTTP/2 on one port, and graceful shutdown. The end-to-end test over a
 * real index is test/core-connect.test.ts.
 */
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, createClient, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, describe, it } from "vitest";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { Logger, setLogLevel, setLogSink } from "../../common/logger.js";
import { emptyResponse } from "../../../test/support/core-testkit.js";
import { waitUntil, connectError } from "../../../test/support/grpc-testkit.js";
import { SearchService } from "../../gen/reposearch/v1/search_pb.js";
import type { IndexStats, SearchCore, SearchOptions, SearchRequest, SearchResponse } from "../types.js";
import { startConnectServer, type ConnectServerHandle } from "./connect.js";

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));
setLogLevel("debug");
const logger = new Logger({ test: "connect" });

/** A core whose searches run `impl` (default: an empty answer at once); records requests and signals. */
class FakeCore implements SearchCore {
  isReady = true;
  received: SearchRequest[] = [];
  signals: AbortSignal[] = [];
  constructor(private readonly impl: (req: SearchRequest, opts?: SearchOptions) => Promise<SearchResponse> = async (req) => emptyResponse(req.query)) {}
  ready(): boolean {
    return this.isReady;
  }
  async stats(): Promise<IndexStats> {
    return { version: "v1", count: 3, dims: 8, embedderId: null, publishedAt: null, ageSeconds: null, methods: ["lexical"], rerankerId: null };
  }
  search(req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse> {
    this.received.push(req);
    if (opts?.signal) this.signals.push(opts.signal);
    return this.impl(req, opts);
  }
}

/** Never answers; rejects once its signal aborts (what a well-behaved core does). */
const untilAborted = (_req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse> =>
  new Promise((_resolve, reject) => opts?.signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true }));

const servers: ConnectServerHandle[] = [];
const sessions: Http2SessionManager[] = [];
afterAll(async () => {
  for (const m of sessions) m.abort();
  await Promise.all(servers.map((s) => s.shutdown()));
});

async function start(core: SearchCore, shutdownGraceMs = 5_000): Promise<ConnectServerHandle> {
  const server = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs });
  servers.push(server);
  return server;
}

function h1(server: ConnectServerHandle): Transport {
  return createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
}
function h2(server: ConnectServerHandle): Transport {
  const sessionManager = new Http2SessionManager(server.url);
  sessions.push(sessionManager);
  return createConnectTransport({ baseUrl: server.url, httpVersion: "2", sessionManager });
}

describe("Connect port", () => {
  it("serves HTTP/1.1 and HTTP/2 (prior knowledge) on one port", async () => {
    const core = new FakeCore();
    const server = await start(core);
    for (const transport of [h1(server), h2(server), createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" })]) {
      const res = await createClient(SearchService, transport).search({ query: "q", limit: 3, filters: { minStars: 5n } });
      assert.equal(res.query, "q");
    }
    assert.deepEqual(
      core.received.map((r) => [r.query, r.limit, r.filters?.minStars]),
      Array(3).fill(["q", 3, 5]),
    );
    // A raw node:http2 client (prior knowledge, as curl --http2-prior-knowledge).
    const session = http2.connect(server.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/reposearch.v1.SearchService/GetIndexStats", "content-type": "application/json" });
      stream.end("{}");
      let body = "";
      stream.setEncoding("utf8").on("data", (d: string) => (body += d));
      await new Promise((resolve) => stream.on("end", resolve));
      assert.equal((JSON.parse(body) as { count: string }).count, "3");
    } finally {
      session.close();
    }
    // An HTTP/1.1 request that starts like the HTTP/2 preface ("P"), sent in pieces.
    const socket = net.connect(server.port, "127.0.0.1");
    let raw = "";
    socket.setEncoding("utf8").on("data", (d: string) => (raw += d));
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("P");
    await sleep(50);
    socket.write("OST /reposearch.v1.SearchService/GetIndexStats HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n");
    await sleep(50);
    socket.end("Content-Length: 2\r\nConnection: close\r\n\r\n{}");
    await new Promise((resolve) => socket.once("close", resolve));
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.match(raw, /"count":"3"/);
  });

  it("passes x-request-id to the log line, with the protocol", async () => {
    const server = await start(new FakeCore());
    await createClient(SearchService, h1(server)).search({ query: "q" }, { headers: { "x-request-id": "req-connect-1" } });
    const line = logLines.find((l) => l.includes('"requestId":"req-connect-1"'));
    assert.ok(line, logLines.slice(-5).join("\n"));
    assert.match(line, /"msg":"connect call"/);
    assert.match(line, /"protocol":"connect"/);
    assert.match(line, /"code":"OK"/);
  });

  it("maps each outcome to its Connect code: not ready → unavailable, a core failure → internal with a generic message", async () => {
    const core = new FakeCore(async () => {
      throw new Error("secret stack detail");
    });
    const server = await start(core);
    const client = createClient(SearchService, h1(server));
    const internal = await connectError(client.search({ query: "q" }));
    assert.equal(internal.code, Code.Internal);
    assert.equal(internal.rawMessage, "internal error");
    assert.equal(internal.metadata.get("reposearch-error-code"), ErrorCode.Internal);
    core.isReady = false;
    const unavailable = await connectError(client.search({ query: "q" }));
    assert.equal(unavailable.code, Code.Unavailable);
    assert.equal(unavailable.metadata.get("reposearch-error-code"), ErrorCode.Unavailable);
    // GetIndexStats answers even before an index is loaded.
    assert.equal((await client.getIndexStats({})).version, "v1");
    const failing = new FakeCore(async () => {
      throw new ReposearchError(ErrorCode.ExternalService, "embedder down");
    });
    const err = await connectError(createClient(SearchService, h1(await start(failing))).search({ query: "q" }));
    assert.equal(err.code, Code.Unavailable);
    assert.equal(err.rawMessage, "embedder down");
  });

  it("the caller's timeout is the core's deadline: the core's signal aborts with DEADLINE_EXCEEDED", async () => {
    const core = new FakeCore(untilAborted);
    const server = await start(core);
    const t0 = Date.now();
    const err = await connectError(createClient(SearchService, h2(server)).search({ query: "q" }, { timeoutMs: 300 }));
    assert.equal(err.code, Code.DeadlineExceeded);
    assert.ok(Date.now() - t0 < 2_000);
    assert.ok(await waitUntil(() => core.signals[0]?.aborted === true, 2_000), "the core's signal aborted");
    const reason: unknown = core.signals[0]!.reason;
    assert.ok(reason instanceof ReposearchError && reason.code === ErrorCode.DeadlineExceeded, String(reason));
  });

  it("a caller that goes away cancels the core's work", async () => {
    const core = new FakeCore(untilAborted);
    const server = await start(core);
    const ac = new AbortController();
    const call = createClient(SearchService, h1(server)).search({ query: "q" }, { signal: ac.signal });
    assert.ok(await waitUntil(() => core.signals.length === 1, 2_000));
    ac.abort();
    await assert.rejects(call);
    assert.ok(await waitUntil(() => core.signals[0]!.aborted, 2_000), "the core's signal aborted");
    assert.equal((core.signals[0]!.reason as Error).name, "CallCancelled");
  });

  it("shutdown lets an in-flight call finish, refuses new calls, and does not wait for idle connections", async () => {
    const core = new FakeCore(async (req) => {
      await sleep(req.query === "slow" ? 400 : 0);
      return emptyResponse(req.query);
    });
    const server = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 5_000 });
    const keepAlive = createClient(SearchService, h1(server));
    const multiplexed = createClient(SearchService, h2(server));
    assert.equal((await keepAlive.search({ query: "warm" })).query, "warm"); // leaves an idle keep-alive connection
    const slow = multiplexed.search({ query: "slow" });
    assert.ok(await waitUntil(() => core.received.some((r) => r.query === "slow"), 2_000));
    const t0 = Date.now();
    const closing = server.shutdown();
    const refused = await connectError(keepAlive.search({ query: "late" }));
    assert.equal(refused.code, Code.Unavailable, refused.message);
    assert.equal(refused.rawMessage, "server is shutting down");
    assert.equal((await slow).query, "slow");
    await closing;
    assert.ok(Date.now() - t0 < 2_000, `shutdown took ${Date.now() - t0} ms`);
    await assert.rejects(
      fetch(`${server.url}/reposearch.v1.SearchService/GetIndexStats`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }),
    );
  });

  it("shutdown cuts a call still running when the grace expires", async () => {
    const core = new FakeCore(() => new Promise(() => undefined));
    const server = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 200 });
    const stuck = connectError(createClient(SearchService, h1(server)).search({ query: "stuck" }));
    assert.ok(await waitUntil(() => core.received.length === 1, 2_000));
    const t0 = Date.now();
    await server.shutdown();
    assert.ok(Date.now() - t0 < 2_000);
    await stuck;
    assert.ok(logLines.some((l) => l.includes("Connect shutdown grace expired")));
  });

  it("a taken port fails the start with the address in the message", async () => {
    const server = await start(new FakeCore());
    await assert.rejects(
      startConnectServer({ core: new FakeCore(), host: "127.0.0.1", port: server.port, logger, shutdownGraceMs: 100 }),
      /Connect server could not bind 127\.0\.0\.1:\d+: .*EADDRINUSE/,
    );
  });
});
