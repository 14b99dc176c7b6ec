/**
 * Core metrics: the index gauges read their source at scrape time (one read per scrape), stages and
 * gRPC calls land in their histograms, and the core and the gateway can share one registry.
 */
import assert from "node:assert/strict";
import { test } from "vitest";
import { Registry } from "prom-client";
import { versionNumber } from "../common/metrics.js";
import { createGatewayMetrics } from "../gateway/metrics.js";
import { createCoreMetrics } from "./metrics.js";

test("versionNumber: the numeric part of a version label", () => {
  assert.equal(versionNumber("v000003"), 3);
  assert.equal(versionNumber("v123456"), 123456);
  assert.equal(versionNumber(null), 0);
  assert.equal(versionNumber("latest"), 0);
});

test("index gauges are read from the source at every scrape, once per scrape", async () => {
  const m = createCoreMetrics();
  let reads = 0;
  let stats = { version: "v000002" as string | null, count: 500, ageSeconds: 42 as number | null };
  m.trackIndex(async () => {
    reads++;
    return stats;
  });
  let text = await m.registry.metrics();
  assert.match(text, /^index_version 2$/m);
  assert.match(text, /^index_points 500$/m);
  assert.match(text, /^index_age_seconds 42$/m);
  assert.equal(reads, 1, "one stats() read serves the three gauges");
  await new Promise((r) => setImmediate(r));
  stats = { version: "v000003", count: 501, ageSeconds: 1 };
  text = await m.registry.metrics();
  assert.match(text, /^index_version 3$/m);
  assert.match(text, /^index_points 501$/m);
  assert.equal(reads, 2);
  // A failing source leaves the last values.
  await new Promise((r) => setImmediate(r));
  m.trackIndex(async () => {
    throw new Error("store down");
  });
  text = await m.registry.metrics();
  assert.match(text, /^index_points 501$/m);
});

test("stages, rerank fallbacks, embedding batches and gRPC calls are recorded under bounded labels", async () => {
  const m = createCoreMetrics();
  m.observeStage("dense", 0.004);
  m.observeStage("lexical", 0.001);
  m.rerankFallback();
  m.embedBatch(25);
  m.embedBatch(3);
  m.observeCall("reposearch.v1.SearchService", "Search", "OK", 0.012);
  m.observeCall("reposearch.v1.SearchService", "Search", "INVALID_ARGUMENT", 0.001);
  const text = await m.registry.metrics();
  assert.match(text, /search_stage_duration_seconds_count\{stage="dense"\} 1/);
  assert.match(text, /search_stage_duration_seconds_bucket\{le="0\.005",stage="dense"\} 1/);
  assert.match(text, /^rerank_fallbacks_total 1$/m);
  assert.match(text, /^search_query_embed_batch_size_bucket\{le="4"\} 1$/m);
  assert.match(text, /^search_query_embed_batch_size_bucket\{le="32"\} 2$/m);
  assert.match(text, /^search_query_embed_batch_size_sum 28$/m);
  assert.match(text, /grpc_server_handling_seconds_bucket\{le="0\.02",grpc_service="reposearch\.v1\.SearchService",grpc_method="Search",grpc_code="OK"\} 1/);
  assert.match(text, /grpc_server_handled_total\{grpc_service="reposearch\.v1\.SearchService",grpc_method="Search",grpc_code="INVALID_ARGUMENT"\} 1/);
});

test("core and gateway on one registry: one exposition with both", async () => {
  const reg = new Registry();
  const core = createCoreMetrics(reg);
  const gw = createGatewayMetrics(reg);
  core.trackIndex(async () => ({ version: "v000001", count: 7, ageSeconds: 0 }));
  gw.queryCacheRequests.inc({ result: "hit" });
  const text = await reg.metrics();
  assert.match(text, /^index_points 7$/m);
  assert.match(text, /query_cache_requests_total\{result="hit"\} 1/);
  assert.equal(text.match(/^# TYPE process_cpu_user_seconds_total/gm)?.length, 1, "default metrics once");
});
