/**
 * The core's gRPC API end to end over loopback: a real grpc-js server (port 0) and the real
 * CoreClient / raw grpc-js clients, with an in-test SearchCore that records what it received.
 */
import assert from "node:assert/strict";
import { afterAll, beforeAll, describe, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { ConfigError, ErrorCode, ReposearchError } from "../../common/errors.js";
import { Logger, setLogLevel, setLogSink } from "../../common/logger.js";
import { nullResult } from "../../../test/support/core-testkit.js";
import type { IndexStats, SearchCore, SearchOptions, SearchRequest, SearchResponse, SearchResult } from "../types.js";
import { CoreClient, checkCoreAddress, isRetryableCoreError } from "./client.js";
import {
  HEALTH_SERVICE_NAME,
  SEARCH_SERVICE_NAME,
  STREAM_BATCH_MAX,
  loadProtos,
  requestFromProto,
  requestToProto,
  responseFromProto,
  responseToProto,
} from "./convert.js";
import { startGrpcServer, type GrpcServerHandle } from "./server.js";
import { expectError, grpcCodeOf, reflectionClient, waitUntil } from "../../../test/support/grpc-testkit.js";

// ---------------------------------------------------------------------------------------------
// Fixtures

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));
setLogLevel("debug");
const logger = new Logger({ test: "grpc" });

type SearchImpl = (req: SearchRequest, opts: SearchOptions | undefined) => Promise<SearchResponse>;

const baseResult: SearchResult = {
  url: "https://codehost.example/a/b",
  name: "a/b",
  description: "A thing",
  score: 1,
  language: "Go",
  stars: 120,
  forks: 7,
  topics: ["cli", "go"],
  pushedAt: "2024-05-01T00:00:00Z",
  isArchived: false,
  llmsUrl: "https://a.example/llms.txt",
  evidence: ["matched: cli tool"],
};

/** Echoes the request: records it, answers with `results` and the query it received. */
class EchoCore implements SearchCore {
  isReady = true;
  received: SearchRequest[] = [];
  signals: AbortSignal[] = [];
  results: SearchResult[] = [baseResult];
  metaExtra: { reranked?: boolean; rerankMs?: number } = {};
  impl: SearchImpl | undefined;
  statsValue: IndexStats = {
    version: null,
    count: 0,
    dims: 0,
    embedderId: null,
    publishedAt: null,
    ageSeconds: null,
    methods: [],
    rerankerId: null,
  };

  ready(): boolean {
    return this.isReady;
  }
  async stats(): Promise<IndexStats> {
    return this.statsValue;
  }
  async search(req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse> {
    this.received.push(req);
    if (opts?.signal) this.signals.push(opts.signal);
    if (this.impl) return this.impl(req, opts);
    return {
      query: req.query,
      results: this.results,
      meta: {
        total: this.results.length,
        timeMs: 1.25,
        methods: { lexical: { hits: 3, weight: 0.4 }, dense: { hits: 0, weight: 0.6 } },
        appliedFilters: {
          categories: { mode: "default", values: ["library", "tool"], includeUncategorized: true },
          excludeArchived: true,
          minStars: null,
          maxStars: 0,
          minForks: 5,
          maxForks: null,
          language: null,
          excludeRepos: [],
          topics: ["x"],
          staleAfterMonths: null,
        },
        ...this.metaExtra,
      },
    };
  }
}

/** Answers like EchoCore with no results, after `delayMs(req)` ms. */
const delayedEcho =
  (delayMs: (req: SearchRequest) => number): SearchImpl =>
  async (req) => {
    await sleep(delayMs(req));
    return { query: req.query, results: [], meta: (await new EchoCore().search(req)).meta };
  };

/** Resolves when the core's signal aborts; rejects with its reason (what a well-behaved core does). */
const waitForAbort: SearchImpl = (_req, opts) =>
  new Promise((_resolve, reject) => {
    const signal = opts?.signal;
    assert.ok(signal, "the server passes a signal");
    signal.addEventListener("abort", () => reject(new Error("aborted by signal")), { once: true });
  });

async function start(
  core: SearchCore,
  extra: { shutdownGraceMs?: number; healthPollMs?: number; maxConnectionAgeMs?: number } = {},
): Promise<GrpcServerHandle> {
  return startGrpcServer({
    core,
    host: "127.0.0.1",
    port: 0,
    logger,
    shutdownGraceMs: extra.shutdownGraceMs ?? 5_000,
    healthPollMs: extra.healthPollMs ?? 60_000,
    ...(extra.maxConnectionAgeMs !== undefined ? { maxConnectionAgeMs: extra.maxConnectionAgeMs } : {}),
  });
}

// ---------------------------------------------------------------------------------------------

// Every behaviour of a search holds alike for unary calls and for searches multiplexed on a stream.
for (const streams of [0, 1])
  describe(`gRPC SearchService (${streams === 0 ? "unary Search" : "SearchStream"})`, () => {
    const core = new EchoCore();
    let server: GrpcServerHandle;
    let client: CoreClient;

    beforeAll(async () => {
      server = await start(core);
      server.setServing(true);
      client = new CoreClient(server.address, { streams });
    });
    afterAll(async () => {
      client.close();
      await server.shutdown();
    });

    it("binds a real port when asked for 0", () => {
      assert.ok(server.port > 0);
      assert.equal(server.address, `127.0.0.1:${server.port}`);
    });

    it("request presence survives the wire: absent vs set, [] vs values, false vs absent", async () => {
      const cases: SearchRequest[] = [
        { query: "q" },
        { query: "q", limit: 10 },
        { query: "q", limit: 1, includeTree: false, rerank: false },
        { query: "q", includeTree: true, rerank: true },
        { query: "q", filters: {} },
        { query: "q", filters: { categories: [] } },
        { query: "q", filters: { categories: ["library"] } },
        { query: "q", filters: { categories: ["curated-list", "educational", "ai-ml"] } },
        { query: "q", filters: { topics: ["cli"] } },
        { query: "q", filters: { minStars: 0, maxStars: 0, minForks: 0, maxForks: 0, excludeArchived: false } },
        {
          query: "full  ✓ 😀",
          limit: 50,
          includeTree: true,
          rerank: false,
          filters: {
            minStars: 10,
            maxStars: 5_000_000_000,
            minForks: 1,
            maxForks: 2,
            language: "TypeScript",
            excludeRepos: ["a/b", "c/d"],
            categories: ["tool"],
            topics: ["x", "y"],
            excludeArchived: true,
            staleAfterMonths: 600,
          },
        },
      ];
      for (const req of cases) {
        core.received = [];
        const res = await client.search(req);
        assert.deepEqual(core.received, [req], `core received ${JSON.stringify(core.received)} for ${JSON.stringify(req)}`);
        assert.equal(res.query, req.query);
      }
      // A repeated field has no presence; empty and absent excludeRepos mean the same thing.
      core.received = [];
      await client.search({ query: "q", filters: { excludeRepos: [] } });
      assert.deepEqual(core.received, [{ query: "q", filters: {} }]);
    });

    it("response presence survives the wire: tree undefined vs null vs text, nulls vs values, zeros", async () => {
      const nulls = nullResult("n/n");
      core.results = [
        baseResult,
        { ...baseResult, name: "t/null", tree: null },
        { ...baseResult, name: "t/text", tree: "src/\n  main.go\nREADME.md" },
        { ...baseResult, name: "t/empty", tree: "" },
        nulls,
        { ...nulls, name: "z/z", stars: 0, forks: 0, isArchived: false, url: "", description: "" },
      ];
      try {
        core.metaExtra = {};
        const res = await client.search({ query: "q", includeTree: true });
        assert.deepEqual(res.results, core.results);
        assert.ok(!("tree" in res.results[0]!), "tree not requested → key absent");
        assert.equal(res.results[1]!.tree, null);
        assert.equal(res.results[3]!.tree, "");
        assert.ok(!("reranked" in res.meta) && !("rerankMs" in res.meta));
        const expected = await core.search({ query: "q" });
        assert.deepEqual(res.meta, expected.meta);

        core.metaExtra = { reranked: false, rerankMs: 0 };
        const ranFellBack = await client.search({ query: "q" });
        assert.equal(ranFellBack.meta.reranked, false);
        assert.equal(ranFellBack.meta.rerankMs, 0);

        core.metaExtra = { reranked: true, rerankMs: 12.5 };
        const ran = await client.search({ query: "q" });
        assert.deepEqual([ran.meta.reranked, ran.meta.rerankMs], [true, 12.5]);
      } finally {
        core.results = [baseResult];
        core.metaExtra = {};
      }
    });

    it("applied-filter category modes map both ways", async () => {
      for (const mode of ["default", "explicit", "all"] as const) {
        const res = responseFromProto(
          loadProtos().searchService.Search!.responseDeserialize(
            loadProtos().searchService.Search!.responseSerialize(
              responseToProto({
                query: "q",
                results: [],
                meta: {
                  total: 0,
                  timeMs: 0,
                  methods: {},
                  appliedFilters: {
                    categories: { mode, values: mode === "all" ? [] : ["data"], includeUncategorized: false },
                    excludeArchived: false,
                    minStars: 0,
                    maxStars: null,
                    minForks: null,
                    maxForks: null,
                    language: "go",
                    excludeRepos: ["a/b"],
                    topics: [],
                    staleAfterMonths: 6,
                  },
                },
              }),
            ),
          ),
        );
        assert.equal(res.meta.appliedFilters.categories.mode, mode);
        assert.equal(res.meta.appliedFilters.minStars, 0);
        assert.equal(res.meta.appliedFilters.maxStars, null);
        assert.equal(res.meta.appliedFilters.staleAfterMonths, 6);
      }
      // An unknown mode is a malformed response, reported as INTERNAL (never passed on half-read).
      const err = await expectError(
        Promise.resolve().then(() =>
          responseFromProto({ query: "q", results: [], meta: { appliedFilters: { categories: { mode: "CATEGORY_MODE_UNSPECIFIED" } } } }),
        ),
      );
      assert.equal(err.code, ErrorCode.Internal);
    });

    it("requestToProto/requestFromProto are inverse for every presence case", () => {
      const def = loadProtos().searchService.Search;
      const req: SearchRequest = { query: "q", limit: 0, filters: { categories: [], topics: [], staleAfterMonths: 0 } };
      assert.deepEqual(requestFromProto(def!.requestDeserialize(def!.requestSerialize(requestToProto(req)))), req);
    });

    it("GetIndexStats round-trips nulls and values", async () => {
      assert.deepEqual(await client.stats(), core.statsValue);
      const full: IndexStats = {
        version: "v-20240501",
        count: 56_123,
        dims: 128,
        embedderId: "static-128",
        publishedAt: "2024-05-01T00:00:00.000Z",
        ageSeconds: 0,
        methods: ["lexical", "dense"],
        rerankerId: "local",
      };
      core.statsValue = full;
      assert.deepEqual(await client.stats(), full);
    });

    it("validation errors → INVALID_ARGUMENT, code and details rebuilt by the client; the core is not called", async () => {
      core.received = [];
      const err = await expectError(client.search({ query: "", limit: 99, filters: { topics: [], categories: ["nope" as "library"], excludeRepos: ["bad"] } }));
      assert.equal(err.code, ErrorCode.ValidationError);
      assert.equal(grpcCodeOf(err), grpc.status.INVALID_ARGUMENT);
      assert.match(err.message, /^invalid search request: query must be at least 1 character long/);
      assert.deepEqual(
        err.details?.map((d) => `${d.path}:${d.rule}`),
        ["query:minLength", "limit:maximum", "filters.excludeRepos[0]:pattern", "filters.categories[0]:enum", "filters.topics:minItems"],
      );
      assert.deepEqual(err.toJSON().error.status, 400);
      assert.deepEqual(core.received, []);
      // A negative int64 survives the wire and is rejected, not wrapped.
      const negative = await expectError(client.search({ query: "q", filters: { minStars: -1 } }));
      assert.deepEqual(
        negative.details?.map((d) => d.path),
        ["filters.minStars"],
      );
    });

    it("an internal error → INTERNAL with a generic message; the secret is only in the server log", async () => {
      const secret = "password=hunter2 at db.internal:5432";
      core.impl = async () => {
        throw new Error(secret);
      };
      logLines.length = 0;
      try {
        const err = await expectError(client.search({ query: "q" }));
        assert.equal(err.code, ErrorCode.Internal);
        assert.equal(grpcCodeOf(err), grpc.status.INTERNAL);
        assert.equal(err.message, "internal error");
        assert.ok(!err.message.includes("hunter2"));
        assert.ok(!JSON.stringify(err.toJSON()).includes("hunter2"));
        const cause = err.cause as Partial<grpc.ServiceError>;
        assert.ok(!String(cause.details).includes("hunter2"));
        assert.ok(
          logLines.some((l) => l.includes('"level":"error"') && l.includes("hunter2")),
          "cause logged server-side",
        );
      } finally {
        core.impl = undefined;
      }
    });

    it("a ReposearchError thrown by the core keeps its code and message", async () => {
      core.impl = async () => {
        throw new ReposearchError(ErrorCode.ExternalService, "embedder unavailable");
      };
      try {
        const err = await expectError(client.search({ query: "q" }));
        assert.equal(err.code, ErrorCode.ExternalService);
        assert.equal(err.message, "embedder unavailable");
        assert.equal(grpcCodeOf(err), grpc.status.UNAVAILABLE);
        assert.equal(isRetryableCoreError(err), false);
      } finally {
        core.impl = undefined;
      }
    });

    it("deadline: DEADLINE_EXCEEDED within the deadline plus slack, and the core's signal is aborted", async () => {
      core.impl = waitForAbort;
      core.signals = [];
      try {
        const t0 = Date.now();
        const err = await expectError(client.search({ query: "slow" }, { deadlineMs: 150 }));
        const elapsed = Date.now() - t0;
        assert.equal(err.code, ErrorCode.DeadlineExceeded);
        assert.equal(grpcCodeOf(err), grpc.status.DEADLINE_EXCEEDED);
        assert.ok(elapsed >= 140 && elapsed < 150 + 500, `took ${elapsed} ms`);
        assert.equal(core.signals.length, 1);
        assert.ok(await waitUntil(() => core.signals[0]!.aborted, 1_000), "core signal aborted");
        const reason: unknown = core.signals[0]!.reason;
        assert.ok(reason instanceof ReposearchError && reason.code === ErrorCode.DeadlineExceeded, `reason ${String(reason)}`);
      } finally {
        core.impl = undefined;
      }
    });

    it("deadline: a core that ignores its signal cannot hold the call", async () => {
      core.impl = () => new Promise(() => undefined);
      try {
        const t0 = Date.now();
        const err = await expectError(client.search({ query: "stuck" }, { deadlineMs: 100 }));
        assert.equal(err.code, ErrorCode.DeadlineExceeded);
        assert.ok(Date.now() - t0 < 100 + 500);
      } finally {
        core.impl = undefined;
      }
    });

    it("an answered call leaves its signal alone when grpc-js reports the closed stream as 'cancelled'", async () => {
      core.signals = [];
      await client.search({ query: "answered" });
      assert.equal(core.signals.length, 1);
      // grpc-js emits 'cancelled' on the server call once the stream closes, answered or not; treating
      // that as the client leaving would abort (and build an Error for) every finished call.
      await sleep(100);
      assert.equal(core.signals[0]!.aborted, false, `aborted with ${String(core.signals[0]!.reason)}`);
    });

    it("client cancellation (AbortSignal) rejects with the reason and aborts the core's signal", async () => {
      core.impl = waitForAbort;
      core.signals = [];
      try {
        const ac = new AbortController();
        const p = client.search({ query: "cancel me" }, { signal: ac.signal, deadlineMs: 5_000 });
        assert.ok(await waitUntil(() => core.signals.length === 1, 2_000));
        const reason = new Error("caller went away");
        ac.abort(reason);
        await assert.rejects(p, (e: unknown) => e === reason);
        assert.ok(await waitUntil(() => core.signals[0]!.aborted, 2_000), "server saw the cancellation");
        // An already-aborted signal never sends the call.
        await assert.rejects(client.search({ query: "q" }, { signal: AbortSignal.abort(reason) }), (e: unknown) => e === reason);
      } finally {
        core.impl = undefined;
      }
    });

    it("passes request metadata and logs one debug line per call without the query", async () => {
      logLines.length = 0;
      await client.search({ query: "very-private-query-text" }, { metadata: { "x-request-id": "req-123" } });
      const lines = logLines.filter((l) => l.includes('"msg":"grpc call"'));
      assert.equal(lines.length, 1);
      const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
      assert.deepEqual([rec.level, rec.method, rec.code, rec.requestId], ["debug", streams === 0 ? "Search" : "SearchStream", "OK", "req-123"]);
      assert.equal(typeof rec.ms, "number");
      assert.ok(!logLines.some((l) => l.includes("very-private-query-text")));
    });

    it("server reflection lists the search and health services (v1 and v1alpha)", async () => {
      for (const version of ["v1", "v1alpha"] as const) {
        const reflection = reflectionClient(server.address, version);
        try {
          const names = await reflection.listServices();
          assert.ok(names.includes(SEARCH_SERVICE_NAME), `${version}: ${names.join(",")}`);
          assert.ok(names.includes(HEALTH_SERVICE_NAME), `${version}: ${names.join(",")}`);

          // grpcurl's `describe` needs the file that defines a symbol; it must decode.
          const described = await reflection.ask<{ fileDescriptorResponse?: { fileDescriptorProto?: Buffer[] } }>({
            fileContainingSymbol: "reposearch.v1.SearchService",
          });
          const files = described.fileDescriptorResponse?.fileDescriptorProto ?? [];
          assert.ok(files.length >= 1);
          // Descriptors carry the proto's own field names, not proto-loader's camelCase renaming.
          assert.ok(files.some((f) => f.includes("include_tree") && f.includes("stale_after_months")));
          assert.ok(!files.some((f) => f.includes("includeTree")));
        } finally {
          reflection.close();
        }
      }
    });

    it("waitForReady resolves against a live server", async () => {
      await client.waitForReady(2_000);
    });
  });

describe("gRPC SearchStream", () => {
  interface RawStream {
    readonly call: grpc.ClientDuplexStream<object, object>;
    /** Every message the server sent, in order. */
    readonly answers: object[];
    readonly status: Promise<grpc.StatusObject>;
  }

  /** Runs `fn` with a raw SearchStream call (for what CoreClient never sends) to a server over `core`. */
  async function withRawStream(core: EchoCore, fn: (raw: RawStream) => Promise<void>): Promise<void> {
    const server = await start(core);
    server.setServing(true);
    const def = loadProtos().searchService.SearchStream!;
    const client = new grpc.Client(server.address, grpc.credentials.createInsecure());
    try {
      const call = client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize);
      const answers: object[] = [];
      call.on("data", (m: object) => answers.push(m));
      call.on("error", () => undefined);
      const status = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
      await fn({ call, answers, status });
    } finally {
      client.close();
      await server.shutdown();
    }
  }

  it("many searches in flight on one stream: each gets its own answer, whatever the completion order", async () => {
    const core = new EchoCore();
    core.impl = delayedEcho(() => Math.floor(Math.random() * 30));
    const server = await start(core);
    const client = new CoreClient(server.address, { streams: 1 });
    try {
      const queries = Array.from({ length: 200 }, (_, i) => `query ${i}`);
      const answers = await Promise.all(queries.map((q) => client.search({ query: q, limit: 5 })));
      assert.deepEqual(
        answers.map((a) => a.query),
        queries,
      );
      // Failures interleaved with successes fail alone.
      const mixed = await Promise.allSettled(queries.slice(0, 20).map((q, i) => client.search({ query: i % 2 === 0 ? q : "" })));
      mixed.forEach((r, i) => {
        if (i % 2 === 0) assert.equal(r.status === "fulfilled" && r.value.query, queries[i]);
        else assert.ok(r.status === "rejected" && r.reason instanceof ReposearchError && r.reason.code === ErrorCode.ValidationError, `search ${i}`);
      });
    } finally {
      client.close();
      await server.shutdown();
    }
  });

  it("streams are retired after streamMaxAgeMs; a search still open on a retired stream is answered", async () => {
    const core = new EchoCore();
    core.impl = delayedEcho((req) => (req.query === "slow" ? 400 : 0));
    const server = await start(core);
    const client = new CoreClient(server.address, { streams: 1, streamMaxAgeMs: 100 });
    try {
      const slow = client.search({ query: "slow" }, { deadlineMs: 5_000 });
      for (let i = 0; i < 6; i++) {
        await sleep(60);
        assert.equal((await client.search({ query: `q${i}` })).query, `q${i}`);
      }
      assert.equal((await slow).query, "slow");
      // Retired streams were half-closed and ended by the server, so nothing holds shutdown up.
      const t0 = Date.now();
      await server.shutdown();
      assert.ok(Date.now() - t0 < 1_000, `shutdown took ${Date.now() - t0} ms`);
    } finally {
      client.close();
    }
  });

  it("shutdown ends an idle stream at once, answers the search open on it, and refuses new ones (UNAVAILABLE)", async () => {
    const core = new EchoCore();
    core.impl = delayedEcho((req) => (req.query === "finish me" ? 300 : 0));
    const server = await start(core, { shutdownGraceMs: 5_000 });
    const idle = new CoreClient(server.address, { streams: 1 });
    const busy = new CoreClient(server.address, { streams: 1 });
    try {
      assert.equal((await idle.search({ query: "opens the stream" })).query, "opens the stream");
      const inFlight = busy.search({ query: "finish me" }, { deadlineMs: 5_000 });
      assert.ok(await waitUntil(() => core.received.some((r) => r.query === "finish me"), 2_000));
      const t0 = Date.now();
      await server.shutdown();
      // Without ending the streams, shutdown would wait for the 5 s grace.
      assert.ok(Date.now() - t0 < 2_000, `shutdown took ${Date.now() - t0} ms`);
      assert.equal((await inFlight).query, "finish me");
      const err = await expectError(idle.search({ query: "too late" }, { deadlineMs: 1_000 }));
      assert.equal(err.code, ErrorCode.Unavailable);
      assert.ok(isRetryableCoreError(err));
    } finally {
      idle.close();
      busy.close();
    }
  });

  it("a core cut off mid-search fails the searches open on the stream with UNAVAILABLE", async () => {
    const core = new EchoCore();
    core.impl = () => new Promise(() => undefined);
    const server = await start(core, { shutdownGraceMs: 100 });
    const client = new CoreClient(server.address, { streams: 1 });
    try {
      const stuck = [expectError(client.search({ query: "a" }, { deadlineMs: 10_000 })), expectError(client.search({ query: "b" }, { deadlineMs: 10_000 }))];
      assert.ok(await waitUntil(() => core.received.length === 2, 2_000));
      await server.shutdown();
      for (const err of await Promise.all(stuck)) {
        assert.equal(err.code, ErrorCode.Unavailable);
        assert.ok(isRetryableCoreError(err));
      }
    } finally {
      client.close();
    }
  });

  it("protocol: an id already open fails the stream (INVALID_ARGUMENT) and aborts its searches; cancel of an unknown id does nothing", async () => {
    const core = new EchoCore();
    core.impl = waitForAbort;
    await withRawStream(core, async (raw) => {
      raw.call.write({ cancel: [999] });
      raw.call.write({ searches: [{ id: 7, request: { query: "q" } }] });
      assert.ok(await waitUntil(() => core.signals.length === 1, 2_000));
      raw.call.write({ searches: [{ id: 7, request: { query: "again" } }] });
      const status = await raw.status;
      assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
      assert.match(status.details, /search id 7 is already open/);
      assert.ok(await waitUntil(() => core.signals[0]!.aborted, 2_000), "the open search was stopped");
      assert.deepEqual(raw.answers, []);
    });
  });

  it("searches sent together are answered together: outcomes finishing in one turn share a message", async () => {
    const core = new EchoCore();
    await withRawStream(core, async (raw) => {
      raw.call.write({ searches: [1, 2, 3].map((id) => ({ id, request: { query: `q${id}` }, timeoutMs: 5_000 })) });
      assert.ok(await waitUntil(() => raw.answers.length >= 1, 2_000));
      await sleep(50);
      assert.equal(raw.answers.length, 1, "one message");
      const outcomes = (raw.answers[0] as { outcomes: { id: number; response?: { query: string } }[] }).outcomes;
      assert.deepEqual(outcomes.map((o) => [o.id, o.response?.query]).sort(), [
        [1, "q1"],
        [2, "q2"],
        [3, "q3"],
      ]);
      // A bigger burst is split: at most STREAM_BATCH_MAX outcomes a message.
      raw.answers.length = 0;
      raw.call.write({ searches: Array.from({ length: 40 }, (_, i) => ({ id: 100 + i, request: { query: `b${i}` } })) });
      const outcomesOf = (m: object): unknown[] => (m as { outcomes: unknown[] }).outcomes;
      assert.ok(await waitUntil(() => raw.answers.reduce((n, m) => n + outcomesOf(m).length, 0) === 40, 2_000));
      assert.ok(
        raw.answers.length >= 2 && raw.answers.every((m) => outcomesOf(m).length <= STREAM_BATCH_MAX),
        raw.answers.map((m) => outcomesOf(m).length).join(","),
      );
      // One id twice in one message is a protocol error.
      raw.call.write({
        searches: [
          { id: 4, request: { query: "a" } },
          { id: 4, request: { query: "b" } },
        ],
      });
      const status = await raw.status;
      assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
      assert.match(status.details, /search id 4 is already open/);
    });
  });

  it("protocol: a cancel is answered with CANCELLED; a search without a request fails the stream", async () => {
    const core = new EchoCore();
    core.impl = waitForAbort;
    await withRawStream(core, async (raw) => {
      raw.call.write({ searches: [{ id: 1, request: { query: "q" }, timeoutMs: 5_000 }] });
      assert.ok(await waitUntil(() => core.signals.length === 1, 2_000));
      raw.call.write({ cancel: [1] });
      assert.ok(await waitUntil(() => raw.answers.length === 1, 2_000));
      assert.deepEqual(raw.answers[0], { outcomes: [{ id: 1, error: { status: grpc.status.CANCELLED, message: "cancelled", details: [] } }] });
      raw.call.write({ searches: [{ id: 2 }] });
      const status = await raw.status;
      assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
      assert.match(status.details, /request/);
    });
  });

  it("several streams spread over every core the address resolves to", async () => {
    const cores = [new EchoCore(), new EchoCore()];
    for (const c of cores) c.impl = delayedEcho(() => 20);
    const servers = await Promise.all(cores.map((c) => start(c)));
    servers.forEach((s) => s.setServing(true));
    const client = new CoreClient(`ipv4:${servers.map((s) => s.address).join(",")}`, { streams: 4 });
    try {
      // READY means one connection is up; the round robin only spreads calls (here: streams) over the
      // connections that are up when each call starts. Loopback connects within milliseconds.
      await client.waitForReady(5_000);
      await sleep(300);
      await Promise.all(Array.from({ length: 40 }, (_, i) => client.search({ query: `q${i}` })));
      const counts = cores.map((c) => c.received.length);
      assert.equal(counts[0]! + counts[1]!, 40);
      assert.ok(
        counts.every((n) => n >= 10),
        `searches per core ${counts.join("/")}`,
      );
    } finally {
      client.close();
      await Promise.all(servers.map((s) => s.shutdown()));
    }
  });

  it("CoreClient rejects bad stream options", () => {
    for (const opts of [{ streams: -1 }, { streams: 1.5 }, { streams: 1, streamMaxAgeMs: 0 }]) {
      assert.throws(() => new CoreClient("127.0.0.1:1", opts), ConfigError, JSON.stringify(opts));
    }
    const c = new CoreClient("127.0.0.1:1", { streams: 2 });
    assert.equal(c.searchMethod, "SearchStream");
    c.close();
    const u = new CoreClient("127.0.0.1:1");
    assert.equal(u.searchMethod, "Search");
    u.close();
  });
});

describe("gRPC health and readiness", () => {
  it("NOT_SERVING until the core is ready, then SERVING; the operator switch; unknown services", async () => {
    const core = new EchoCore();
    core.isReady = false;
    const server = await start(core);
    const client = new CoreClient(server.address);
    try {
      assert.equal(await client.health(), "NOT_SERVING");
      assert.equal(await client.health(CoreClient.serviceName), "NOT_SERVING");
      assert.equal(await client.health("no.such.Service"), "SERVICE_UNKNOWN");
      const notReady = await expectError(client.search({ query: "q" }));
      assert.equal(notReady.code, ErrorCode.Unavailable);
      assert.ok(isRetryableCoreError(notReady));

      server.setServing(true); // the operator allows it, but the core is not ready yet
      assert.equal(await client.health(), "NOT_SERVING");
      core.isReady = true;
      server.setServing(true);
      assert.equal(await client.health(), "SERVING");
      assert.equal(await client.health(SEARCH_SERVICE_NAME), "SERVING");
      server.setServing(false);
      assert.equal(await client.health(), "NOT_SERVING");
      server.setServing(true);
      assert.equal(await client.health(), "SERVING");
    } finally {
      client.close();
      await server.shutdown();
    }
  });

  it("polls core.ready() so readiness shows up without a push", async () => {
    const core = new EchoCore();
    core.isReady = false;
    const server = await start(core, { healthPollMs: 20 });
    const client = new CoreClient(server.address);
    try {
      assert.equal(await client.health(), "NOT_SERVING");
      core.isReady = true;
      await sleep(100); // a few poll periods
      assert.equal(await client.health(), "SERVING");
    } finally {
      client.close();
      await server.shutdown();
    }
  });

  it("turns NOT_SERVING as soon as shutdown starts (seen by a Watch stream)", async () => {
    const core = new EchoCore();
    const server = await start(core);
    const watch = loadProtos().healthService.Watch;
    const raw = new grpc.Client(server.address, grpc.credentials.createInsecure());
    const seen: string[] = [];
    const stream = raw.makeServerStreamRequest(watch!.path, watch!.requestSerialize, watch!.responseDeserialize, { service: "" });
    stream.on("data", (msg: { status?: string }) => seen.push(msg.status ?? "UNKNOWN"));
    stream.on("error", () => undefined); // CANCELLED once we stop watching
    try {
      assert.ok(await waitUntil(() => seen.includes("SERVING"), 2_000), `seen ${seen.join(",")}`);
      const stopping = server.shutdown();
      assert.ok(await waitUntil(() => seen.at(-1) === "NOT_SERVING", 2_000), `seen ${seen.join(",")}`);
      stream.cancel(); // the watch is an in-flight call; ending it lets shutdown finish gracefully
      await stopping;
    } finally {
      raw.close();
      await server.shutdown();
    }
  });
});

describe("gRPC shutdown", () => {
  it("lets an in-flight call finish, then refuses new connections (UNAVAILABLE, retryable)", async () => {
    const core = new EchoCore();
    core.impl = delayedEcho(() => 300);
    const server = await start(core, { shutdownGraceMs: 5_000 });
    const client = new CoreClient(server.address);
    try {
      const inFlight = client.search({ query: "finish me" }, { deadlineMs: 5_000 });
      assert.ok(await waitUntil(() => core.received.length === 1, 2_000));
      const t0 = Date.now();
      await server.shutdown();
      const res = await inFlight;
      assert.equal(res.query, "finish me");
      assert.ok(Date.now() - t0 < 2_000, "shutdown finished with the call, not at the grace limit");

      const after = new CoreClient(server.address, { channelOptions: { "grpc.initial_reconnect_backoff_ms": 50 } });
      try {
        const err = await expectError(after.search({ query: "too late" }, { deadlineMs: 500 }));
        assert.equal(err.code, ErrorCode.Unavailable);
        const refused = await expectError(after.waitForReady(200));
        assert.equal(refused.code, ErrorCode.Unavailable);
        assert.ok(isRetryableCoreError(refused));
      } finally {
        after.close();
      }
    } finally {
      client.close();
    }
  });

  it("cuts calls that outlive the grace period", async () => {
    const core = new EchoCore();
    core.impl = () => new Promise(() => undefined);
    const server = await start(core, { shutdownGraceMs: 100 });
    const client = new CoreClient(server.address);
    try {
      const stuck = expectError(client.search({ query: "never" }, { deadlineMs: 10_000 }));
      assert.ok(await waitUntil(() => core.received.length === 1, 2_000));
      const t0 = Date.now();
      await server.shutdown();
      assert.ok(Date.now() - t0 < 100 + 1_000, `shutdown took ${Date.now() - t0} ms`);
      const err = await stuck;
      assert.equal(err.code, ErrorCode.Unavailable);
    } finally {
      client.close();
    }
  });
});

describe("CoreClient address", () => {
  it("fails fast on a bad address with a clear message", () => {
    for (const bad of ["", "nope", "127.0.0.1", "127.0.0.1:0", "host:70000", "http://h:1", "a b:1", ":50051"]) {
      assert.throws(
        () => new CoreClient(bad),
        (e: unknown) => e instanceof ConfigError && /CORE_ADDRESS: invalid search-core address/.test(e.message),
        bad,
      );
    }
    for (const ok of ["127.0.0.1:50051", "localhost:1", "[::1]:50051", "core.internal:443", "dns:///core:50051", "unix:/tmp/core.sock"]) {
      assert.equal(checkCoreAddress(ok), ok);
    }
  });
});

describe("core replicas", () => {
  it("the client spreads calls over every address its target resolves to (round robin, not pick_first)", async () => {
    const cores = [new EchoCore(), new EchoCore()];
    const servers = await Promise.all(cores.map((c) => start(c)));
    servers.forEach((s) => s.setServing(true));
    // One target, two addresses: what dns:/// of a headless Service gives for two core pods.
    const client = new CoreClient(`ipv4:${servers.map((s) => s.address).join(",")}`);
    try {
      await client.waitForReady(5_000);
      for (let i = 0; i < 20; i++) await client.search({ query: `q${i}` });
      const counts = cores.map((c) => c.received.length);
      assert.equal(counts[0]! + counts[1]!, 20);
      assert.ok(
        counts.every((n) => n >= 5),
        `calls per replica ${counts.join("/")}`,
      );
    } finally {
      client.close();
      await Promise.all(servers.map((s) => s.shutdown()));
    }
  });

  it("maxConnectionAgeMs closes a connection after that long (GOAWAY), and the next call reconnects", async () => {
    const core = new EchoCore();
    const server = await start(core, { maxConnectionAgeMs: 300, shutdownGraceMs: 100 });
    server.setServing(true);
    const raw = new grpc.Client(server.address, grpc.credentials.createInsecure());
    const client = new CoreClient(server.address);
    try {
      await new Promise<void>((resolve, reject) => raw.waitForReady(Date.now() + 5_000, (err) => (err ? reject(err) : resolve())));
      const channel = raw.getChannel();
      assert.equal(channel.getConnectivityState(false), grpc.connectivityState.READY);
      // Without an age limit the connection would stay READY well past this deadline.
      const left = await new Promise<boolean>((resolve) =>
        channel.watchConnectivityState(grpc.connectivityState.READY, Date.now() + 3_000, (err) => resolve(!err)),
      );
      assert.ok(left, "the connection was still up after 3 s");
      // Calls keep working across the rotation.
      for (let i = 0; i < 3; i++) assert.equal((await client.search({ query: `after ${i}` })).query, `after ${i}`);
    } finally {
      raw.close();
      client.close();
      await server.shutdown();
    }
  });
});
