/**
 * The core protects itself and its neighbours (docs/threat-model.md), end to end over loopback: real
 * grpc-js and Connect servers (port 0), the real CoreClient, raw grpc-js clients for what CoreClient
 * never sends, and an in-test SearchCore whose searches run until the test lets them finish, so what
 * runs, waits or is refused is observed by order and counts, never by time.
 */
import assert from "node:assert/strict";
import { afterEach, describe, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigError, ErrorCode } from "../../common/errors.js";
import { Logger, setLogSink } from "../../common/logger.js";
import { metricsExposition } from "../../common/metrics.js";
import { SearchService } from "../../gen/reposearch/v1/search_pb.js";
import { emptyResponse } from "../../../test/support/core-testkit.js";
import { connectError, expectError, grpcCodeOf, reflectionClient, waitUntil } from "../../../test/support/grpc-testkit.js";
import { createCoreMetrics, type CoreMetrics } from "../metrics.js";
import type { IndexStats, SearchCore, SearchOptions, SearchRequest, SearchResponse } from "../types.js";
import { createCoreAuth } from "./auth.js";
import { CoreClient } from "./client.js";
import { startConnectServer } from "./connect.js";
import { loadProtos, requestToProto } from "./convert.js";
import { FairScheduler } from "./scheduler.js";
import { startGrpcServer, type GrpcServerOptions } from "./server.js";

setLogSink(() => undefined);
const logger = new Logger({ test: "protection" });

const TOKENS = new Map([
  ["alpha", "alpha-token-0123456789abcdef"],
  ["beta", "beta-token-0123456789abcdefg"],
]);
const auth = createCoreAuth(TOKENS);

/**
 * A search core whose searches run until the test calls `finish(query)` (or their signal aborts):
 * `started` lists the queries in the order the core began them.
 */
class GateCore implements SearchCore {
  readonly started: string[] = [];
  private readonly gates = new Map<string, () => void>();
  ready(): boolean {
    return true;
  }
  async stats(): Promise<IndexStats> {
    return { version: "v1", count: 1, dims: 0, embedderId: null, publishedAt: null, ageSeconds: null, methods: [], rerankerId: null };
  }
  search(req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse> {
    this.started.push(req.query);
    return new Promise((resolve, reject) => {
      this.gates.set(req.query, () => resolve(emptyResponse(req.query)));
      opts?.signal?.addEventListener("abort", () => reject(opts.signal!.reason as Error), { once: true });
    });
  }
  finish(query: string): void {
    const open = this.gates.get(query);
    assert.ok(open, `search ${query} is running`);
    this.gates.delete(query);
    open();
  }
}

/** Answers every search at once with no results, recording what it received. */
class EchoCore extends GateCore {
  readonly received: SearchRequest[] = [];
  override search(req: SearchRequest): Promise<SearchResponse> {
    this.received.push(req);
    return Promise.resolve(emptyResponse(req.query));
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function grpcServer(core: SearchCore, extra: Partial<GrpcServerOptions> = {}) {
  const server = await startGrpcServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 1_000, healthPollMs: 60_000, ...extra });
  server.setServing(true);
  cleanups.push(() => server.shutdown());
  return server;
}

function client(address: string, opts: ConstructorParameters<typeof CoreClient>[1] = {}): CoreClient {
  const c = new CoreClient(address, opts);
  cleanups.push(() => c.close());
  return c;
}

/** A raw grpc-js client (no deadline unless asked, metadata as given). */
function rawClient(address: string): grpc.Client {
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  cleanups.push(() => raw.close());
  return raw;
}

function bearer(name: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${TOKENS.get(name)!}`);
  return md;
}

/** One raw unary Search; resolves with its status code (0 on success). */
function rawSearch(raw: grpc.Client, request: SearchRequest, md: grpc.Metadata, deadline?: number): Promise<number> {
  const def = loadProtos().searchService.Search!;
  return new Promise((resolve) => {
    raw.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, requestToProto(request), md, deadline ? { deadline } : {}, (err) =>
      resolve(err ? err.code : 0),
    );
  });
}

/** A raw SearchStream: `send` one message, `outcomes` every outcome so far as [id, status] (0: a response). */
function rawStream(raw: grpc.Client, md: grpc.Metadata) {
  const def = loadProtos().searchService.SearchStream!;
  const call = raw.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, md);
  const outcomes: [number, number][] = [];
  call.on("data", (m: { outcomes?: { id: number; response?: object; error?: { status?: number } }[] }) => {
    for (const o of m.outcomes ?? []) outcomes.push([o.id, o.response ? 0 : (o.error?.status ?? -1)]);
  });
  call.on("error", () => undefined);
  const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  cleanups.push(() => call.cancel());
  return {
    outcomes,
    status,
    send(searches: { id: number; query: string; timeoutMs?: number }[]): void {
      call.write({ searches: searches.map((s) => ({ id: s.id, request: requestToProto({ query: s.query }), timeoutMs: s.timeoutMs, metadata: {} })) });
    },
  };
}

function metricsOf(m: CoreMetrics): Promise<string> {
  return metricsExposition(m.registry);
}

describe("core authentication", () => {
  it("every SearchService call needs a known token, on both ports; health stays open; reflection is behind it", async () => {
    const metrics = createCoreMetrics();
    const core = new EchoCore();
    const server = await grpcServer(core, { auth, metrics });

    // No token, a wrong one: UNAUTHENTICATED, rebuilt as AUTH_ERROR; the core never sees the request.
    for (const opts of [{}, { token: "wrong-token-0123456789abcdef" }]) {
      const c = client(server.address, opts);
      const err = await expectError(c.search({ query: "q" }));
      assert.equal(err.code, ErrorCode.AuthError);
      assert.equal(grpcCodeOf(err), grpc.status.UNAUTHENTICATED);
      assert.equal((await expectError(c.stats())).code, ErrorCode.AuthError);
      assert.equal((await expectError(client(server.address, { ...opts, streams: 1 }).search({ query: "q" }))).code, ErrorCode.AuthError);
      assert.equal(await c.health(), "SERVING", "health needs no token (probes)");
    }
    assert.equal(core.received.length, 0);

    // A known token, as Bearer (unary and stream) or in x-reposearch-core-token.
    assert.equal((await client(server.address, { token: TOKENS.get("alpha")! }).search({ query: "a" })).query, "a");
    assert.equal((await client(server.address, { token: TOKENS.get("alpha")!, streams: 1 }).search({ query: "b" })).query, "b");
    const viaHeader = await client(server.address).search({ query: "c" }, { metadata: { "x-reposearch-core-token": TOKENS.get("beta")! } });
    assert.equal(viaHeader.query, "c");
    // A caller cannot claim another's name for its share or its metrics.
    await client(server.address, { token: TOKENS.get("beta")! }).search({ query: "d" }, { metadata: { "x-reposearch-caller": "alpha" } });
    assert.deepEqual(
      core.received.map((r) => r.query),
      ["a", "b", "c", "d"],
    );

    // Reflection describes the service only to a caller with a token.
    const reflection = reflectionClient(server.address);
    cleanups.push(() => reflection.close());
    await assert.rejects(reflection.listServices(), (e: grpc.ServiceError) => e.code === grpc.status.UNAUTHENTICATED);

    // The Connect port checks the same tokens.
    const connect = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 1_000, auth, metrics });
    cleanups.push(() => connect.shutdown());
    const cc = createClient(SearchService, createConnectTransport({ baseUrl: connect.url, httpVersion: "1.1" }));
    const refused = await connectError(cc.search({ query: "q" }));
    assert.equal(refused.code, Code.Unauthenticated);
    assert.equal(refused.metadata.get("reposearch-error-code"), ErrorCode.AuthError);
    assert.equal(
      (await connectError(cc.search({ query: "q" }, { headers: { authorization: "Bearer nope-0123456789abcdefghijkl" } }))).code,
      Code.Unauthenticated,
    );
    assert.equal((await cc.search({ query: "e" }, { headers: { authorization: `Bearer ${TOKENS.get("alpha")!}` } })).query, "e");

    // Per-caller metrics, labelled by name; no token anywhere in them.
    const text = await metricsOf(metrics);
    assert.match(text, /core_caller_calls_total\{caller="alpha",grpc_method="Search",grpc_code="OK"\} 2/);
    assert.match(text, /core_caller_calls_total\{caller="alpha",grpc_method="SearchStream",grpc_code="OK"\} 1/);
    assert.match(text, /core_caller_calls_total\{caller="beta",grpc_method="Search",grpc_code="OK"\} 2/);
    assert.match(text, /core_auth_failures_total\{port="grpc",reason="missing"\} [1-9]/);
    assert.match(text, /core_auth_failures_total\{port="grpc",reason="invalid"\} [1-9]/);
    assert.match(text, /core_auth_failures_total\{port="connect",reason="invalid"\} 1/);
    for (const token of TOKENS.values()) assert.ok(!text.includes(token), "a token in the metrics");
  });

  it("refuses to listen beyond loopback without tokens, with a message that says what to set", async () => {
    for (const host of ["0.0.0.0", "::", "10.1.2.3"]) {
      await assert.rejects(
        startGrpcServer({ core: new EchoCore(), host, port: 0, logger, shutdownGraceMs: 100 }),
        (e: unknown) => e instanceof ConfigError && /CORE_AUTH_TOKENS/.test(e.message) && e.message.includes(host),
      );
      await assert.rejects(
        startConnectServer({ core: new EchoCore(), host, port: 0, logger, shutdownGraceMs: 100 }),
        (e: unknown) => e instanceof ConfigError && /CORE_AUTH_TOKENS/.test(e.message),
      );
    }
    // With tokens it starts on any interface; without, on loopback.
    await grpcServer(new EchoCore(), { host: "0.0.0.0", auth });
    await grpcServer(new EchoCore(), { host: "::1" });
  });
});

describe("core bounds", () => {
  it("a search without a deadline gets the default one, on a unary call, a stream and the Connect port", async () => {
    const core = new GateCore();
    const server = await grpcServer(core, { defaultDeadlineMs: 100 });
    const raw = rawClient(server.address);
    // No deadline from the caller; the core never finishes: the default deadline ends it.
    assert.equal(await rawSearch(raw, { query: "unary" }, new grpc.Metadata()), grpc.status.DEADLINE_EXCEEDED);
    const stream = rawStream(raw, new grpc.Metadata());
    stream.send([{ id: 1, query: "streamed" }]);
    assert.ok(await waitUntil(() => stream.outcomes.length === 1, 10_000), "the stream search was answered");
    assert.deepEqual(stream.outcomes, [[1, grpc.status.DEADLINE_EXCEEDED]]);
    const connect = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 100, defaultDeadlineMs: 100 });
    cleanups.push(() => connect.shutdown());
    const cc = createClient(SearchService, createConnectTransport({ baseUrl: connect.url, httpVersion: "1.1" }));
    assert.equal((await connectError(cc.search({ query: "connect" }))).code, Code.DeadlineExceeded);
    assert.deepEqual(core.started, ["unary", "streamed", "connect"]);
  });

  it("topics, categories and excludeRepos are bounded before validation; messages by maxMessageBytes", async () => {
    const core = new EchoCore();
    const server = await grpcServer(core, { maxMessageBytes: 64 * 1024 });
    const c = client(server.address, { channelOptions: { "grpc.max_send_message_length": 16 * 1024 * 1024 } });
    const topics = (n: number, len = 3) => Array.from({ length: n }, (_, i) => `t${i}`.padEnd(len, "x"));

    const many = await expectError(c.search({ query: "q", filters: { topics: topics(5_000) } }));
    assert.equal(many.code, ErrorCode.ValidationError);
    assert.deepEqual(many.details?.[0], {
      path: "filters.topics",
      rule: "maxItems",
      message: "must NOT have more than 1000 items (a bound of the search core)",
    });
    const long = await expectError(c.search({ query: "q", filters: { topics: ["ok", "x".repeat(300)] } }));
    assert.deepEqual([long.code, long.details?.[0]?.path, long.details?.[0]?.rule], [ErrorCode.ValidationError, "filters.topics[1]", "maxLength"]);
    const cats = await expectError(c.search({ query: "q", filters: { categories: Array(1_001).fill("library") } }));
    assert.deepEqual([cats.details?.[0]?.path, cats.details?.[0]?.rule], ["filters.categories", "maxItems"]);
    assert.equal(core.received.length, 0, "nothing beyond a bound reaches the core");
    // At the bounds: answered.
    assert.equal((await c.search({ query: "q", filters: { topics: topics(1_000, 40) } })).query, "q");
    // A message beyond maxMessageBytes (here 64 KiB; 100,000 topics are about 600 KB) is refused by the transport.
    const big = await expectError(c.search({ query: "q", filters: { topics: topics(100_000) } }));
    assert.equal(grpcCodeOf(big), grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(core.received.length, 1);

    const connect = await startConnectServer({ core, host: "127.0.0.1", port: 0, logger, shutdownGraceMs: 100, maxMessageBytes: 64 * 1024 });
    cleanups.push(() => connect.shutdown());
    const cc = createClient(SearchService, createConnectTransport({ baseUrl: connect.url, httpVersion: "1.1" }));
    assert.equal((await connectError(cc.search({ query: "q", filters: { topics: { values: topics(5_000) } } }))).code, Code.InvalidArgument);
    assert.equal((await connectError(cc.search({ query: "q", filters: { topics: { values: topics(100_000) } } }))).code, Code.ResourceExhausted);
    assert.equal(core.received.length, 1);
  });
});

describe("core admission and fair share", () => {
  it("a flood from one caller waits its turn: another caller's search runs after one of the flood's, not after all of it", async () => {
    const metrics = createCoreMetrics();
    const core = new GateCore();
    const scheduler = new FairScheduler({ maxRunning: 2, maxQueued: 100, maxQueuedPerCaller: 3 }, metrics);
    const server = await grpcServer(core, { auth, scheduler, metrics });
    const raw = rawClient(server.address);

    // alpha: 10 searches in one message. 2 run, 3 wait, 5 are refused at once.
    const flood = rawStream(raw, bearer("alpha"));
    flood.send(Array.from({ length: 10 }, (_, i) => ({ id: i + 1, query: `a${i}`, timeoutMs: 60_000 })));
    assert.ok(await waitUntil(() => flood.outcomes.length === 5, 10_000), `refused: ${JSON.stringify(flood.outcomes)}`);
    assert.deepEqual(
      flood.outcomes.map(([, status]) => status),
      Array(5).fill(grpc.status.RESOURCE_EXHAUSTED),
    );
    assert.deepEqual(core.started, ["a0", "a1"]);

    // beta: one search; it waits behind the two running ones, not behind alpha's queue.
    const single = rawSearch(raw, { query: "b0" }, bearer("beta"), Date.now() + 60_000);
    assert.ok(await waitUntil(() => scheduler.queued === 4, 10_000), "beta's search is queued");
    core.finish("a0"); // alpha's turn (it queued first): a2
    core.finish("a1"); // beta's turn: b0, ahead of alpha's a3 and a4
    assert.ok(await waitUntil(() => core.started.length === 4, 10_000));
    assert.deepEqual(core.started, ["a0", "a1", "a2", "b0"]);
    core.finish("b0");
    assert.equal(await single, grpc.status.OK);
    for (const q of ["a2", "a3", "a4"]) {
      assert.ok(await waitUntil(() => core.started.includes(q), 10_000), q);
      core.finish(q);
    }
    assert.ok(await waitUntil(() => flood.outcomes.length === 10, 10_000));
    assert.equal(scheduler.running + scheduler.queued, 0);

    const text = await metricsOf(metrics);
    assert.match(text, /core_caller_searches_rejected_total\{caller="alpha",reason="caller_queue_full"\} 5/);
    assert.match(text, /core_caller_queue_wait_seconds_count\{caller="beta"\} 1/);
    assert.match(text, /core_caller_searches_running\{caller="alpha"\} 0/);
  });

  it("a stream message may start streamMaxBatch searches and a stream hold streamMaxOpen; the rest is refused search by search", async () => {
    const core = new GateCore();
    const server = await grpcServer(core, { streamMaxBatch: 4, streamMaxOpen: 6 });
    const stream = rawStream(rawClient(server.address), new grpc.Metadata());
    stream.send(Array.from({ length: 6 }, (_, i) => ({ id: i + 1, query: `m${i}`, timeoutMs: 60_000 })));
    assert.ok(await waitUntil(() => stream.outcomes.length === 2, 10_000));
    assert.deepEqual(stream.outcomes, [
      [5, grpc.status.RESOURCE_EXHAUSTED],
      [6, grpc.status.RESOURCE_EXHAUSTED],
    ]);
    stream.send([7, 8, 9].map((id) => ({ id, query: `n${id}`, timeoutMs: 60_000 })));
    assert.ok(await waitUntil(() => stream.outcomes.length === 3, 10_000));
    assert.deepEqual(stream.outcomes[2], [9, grpc.status.RESOURCE_EXHAUSTED]);
    assert.deepEqual(core.started, ["m0", "m1", "m2", "m3", "n7", "n8"]);
    // The stream itself goes on: finished searches free their places.
    core.finish("m0");
    stream.send([{ id: 10, query: "o10", timeoutMs: 60_000 }]);
    assert.ok(await waitUntil(() => core.started.includes("o10"), 10_000));
  });
});
