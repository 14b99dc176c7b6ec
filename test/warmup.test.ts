/**
 * The core's start-up warm-up (src/core/warmup.ts) over a small real index built by the real CLI:
 * the searches it derives from the index, that startCore runs them through the engine before it opens
 * its ports (the stage histogram counts them), its two bounds, and that a failure ends it without
 * failing the start.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, it } from "vitest";
import { logger, setLogLevel, setLogSink } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import { SearchEngine } from "../src/core/engine.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { warmUp, warmUpRequests } from "../src/core/warmup.js";
import { startCore } from "../src/server/serve.js";
import { embeddedStoreFromConfig, type EmbeddedStore } from "../src/store/embedded/store.js";
import { datasetLines, oneRecordPerName, tempDir } from "./helpers.js";
import { buildIndex, stackEnv } from "./stack.js";

setLogLevel("warn");

let dir: string;
let store: EmbeddedStore;

const envWith = (extra: Record<string, string>) => stackEnv(dir, { LOG_LEVEL: "info", ...extra });

/** Searches the core's engine has run: one "rank" stage observation each. */
async function searchesRun(core: Awaited<ReturnType<typeof startCore>>): Promise<number> {
  const h = await core.metrics.stageDuration.get();
  return h.values.find((v) => v.metricName === "search_stage_duration_seconds_count" && v.labels.stage === "rank")?.value ?? 0;
}

beforeAll(async () => {
  dir = await tempDir("warmup");
  await buildIndex(dir, oneRecordPerName(await datasetLines(340)).slice(0, 300), { env: stackEnv(dir, { STATIC_TRAIN_EPOCHS: "0", LOG_LEVEL: "warn" }) });
  store = await embeddedStoreFromConfig(loadConfig(envWith({})));
});

afterAll(async () => {
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("warmUpRequests", () => {
  it("derives topic searches from the index, most used first, deterministically, under a rotation of filters", async () => {
    const indexed = await store.scroll({ limit: 10_000 });
    // Each topic as a query, and how many repositories carry it.
    const counts = new Map<string, number>();
    for (const p of indexed) for (const q of p.payload.topics.map((t) => t.replace(/-/g, " "))) counts.set(q, (counts.get(q) ?? 0) + 1);
    const languages = new Set(indexed.flatMap((p) => (p.payload.language ? [p.payload.language] : [])));
    const requests = await warmUpRequests(store, 30);
    assert.equal(requests.length, Math.min(30, counts.size));
    assert.ok(requests.length >= 14, `a 300-repository index has more than 14 topics (got ${requests.length})`);
    assert.deepEqual(await warmUpRequests(store, 30), requests);
    assert.equal(new Set(requests.map((r) => r.query)).size, requests.length, "each topic once");
    for (const r of requests) assert.ok(counts.has(r.query), `${r.query} is an indexed topic`);
    // The first is the topic most of the top repositories carry.
    assert.equal(counts.get(requests[0]!.query), Math.max(...counts.values()));
    // Filtered paths warm too: unfiltered, an indexed language, stars, categories.
    assert.equal(requests[0]!.filters, undefined);
    assert.ok(languages.has(requests[1]!.filters?.language ?? ""), JSON.stringify(requests[1]));
    assert.ok(requests.some((r) => r.filters?.minStars !== undefined) && requests.some((r) => r.filters?.categories !== undefined));
    assert.deepEqual(await warmUpRequests(store, 0), []);
  });
});

describe("startCore's warm-up", () => {
  it("runs the searches through the engine before the ports open, and says so in a log line and two gauges", async () => {
    const lines: string[] = [];
    const prev = setLogSink((l) => lines.push(l));
    setLogLevel("info");
    const core = await startCore(loadConfig(envWith({ WARMUP_QUERIES: "12" })), { version: "test" });
    setLogSink(prev);
    setLogLevel("warn");
    try {
      assert.equal(await searchesRun(core), 12);
      assert.equal((await core.metrics.warmupSearches.get()).values[0]?.value, 12);
      assert.ok(((await core.metrics.warmupSeconds.get()).values[0]?.value ?? 0) > 0);
      const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const done = logged.findIndex((l) => l.msg === "warm-up done");
      assert.equal(logged[done]?.queries, 12);
      assert.ok(done < logged.findIndex((l) => l.msg === "gRPC server listening"), "warm before the port opens");
      // And the core serves afterwards.
      const client = new CoreClient(core.grpc.address, { defaultDeadlineMs: 10_000 });
      assert.ok((await client.search({ query: "web framework", limit: 5 })).results.length > 0);
      client.close();
      assert.equal(await searchesRun(core), 13);
    } finally {
      await core.close();
    }
  });

  it("runs none with WARMUP_QUERIES=0 or a zero time budget", async () => {
    const settings: Record<string, string>[] = [{ WARMUP_QUERIES: "0" }, { WARMUP_QUERIES: "50", WARMUP_MAX_MS: "0" }];
    for (const extra of settings) {
      const core = await startCore(loadConfig(envWith(extra)), { version: "test" });
      try {
        assert.equal(await searchesRun(core), 0, JSON.stringify(extra));
        assert.equal((await core.metrics.warmupSearches.get()).values[0]?.value ?? 0, 0);
      } finally {
        await core.close();
      }
    }
  });

  it("ends early with a warning, never a throw, when a search fails", async () => {
    const config = loadConfig(envWith({}));
    const closed = await embeddedStoreFromConfig(config);
    const engine = SearchEngine.fromConfig(config, closed, { reranker: null });
    await engine.sync();
    const requests = await warmUpRequests(closed, 5);
    assert.equal(requests.length, 5);
    await closed.close();
    const lines: string[] = [];
    const prev = setLogSink((l) => lines.push(l));
    const result = await warmUp(engine, closed, { queries: 5, maxMs: 10_000, logger });
    setLogSink(prev);
    assert.equal(result.queries, 0);
    assert.ok(
      lines.some((l) => (JSON.parse(l) as { msg: string }).msg.startsWith("warm-up stopped early")),
      lines.join("\n"),
    );
  });
});
