/**
 * OpenTelemetry tracing end to end: a small real index built with the real CLI, a real gRPC core and
 * a real gateway in this process (ports 0), an in-memory span exporter. One REST search must give one
 * trace: the gateway's server span → its client span around the core call → the core's gRPC server
 * span (parent carried as traceparent in the gRPC metadata) → one span per engine stage.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, test } from "vitest";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { setLogLevel } from "../src/common/logger.js";
import { initTracing, type Tracing } from "../src/common/tracing.js";
import { loadConfig, type Config } from "../src/config/config.js";
import { SEARCH_PATH } from "../src/gateway/openapi.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, tempDir } from "./helpers.js";
import { buildIndex, fundedAccount, postSearch, stackEnv, uniqueName } from "./stack.js";

const GATEWAY_SPAN = `POST ${SEARCH_PATH}`;
/** The core call's spans are named after the method: SearchStream by default (CORE_STREAMS 1), Search with CORE_STREAMS 0. */
const coreSpan = (method: string): string => `reposearch.v1.SearchService/${method}`;

setLogLevel("warn");

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let dir: string;
let config: Config;
let core: CoreHandle;
let gw: GatewayHandle;
/** A second gateway on unary calls (CORE_STREAMS=0). */
let gwUnary: GatewayHandle;
let key: string;

beforeAll(async () => {
  dir = await tempDir("tracing");
  await buildIndex(dir, await datasetLines(500));
  tracing = initTracing({ serviceName: "reposearch-test", serviceVersion: "0.0.0-test", exporter });
  assert.equal(tracing.enabled, true);
  config = loadConfig(stackEnv(dir, { QUERY_CACHE_TTL_MS: "0", LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: "" }));
  core = await startCore(config, { version: "0.0.0-test" });
  gw = await startGateway(config, { version: "0.0.0-test", coreAddress: core.grpc.address });
  const unaryConfig = loadConfig(stackEnv(dir, { QUERY_CACHE_TTL_MS: "0", LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: "", CORE_STREAMS: "0" }));
  gwUnary = await startGateway(unaryConfig, { version: "0.0.0-test", coreAddress: core.grpc.address });
  key = (await fundedAccount(gw.accounts, uniqueName("trace"), 5)).key;
});

afterAll(async () => {
  await gw?.close();
  await gwUnary?.close();
  await core?.close();
  await tracing?.shutdown();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function search(body: unknown, headers: Record<string, string> = {}, gateway = gw): Promise<Response> {
  return postSearch(gateway.url, body, key, headers);
}

/**
 * The gateway's span of the one request since the last reset. It ends when the response closes, a
 * moment after the client has the body, so wait for it.
 */
async function gatewaySpan(): Promise<ReadableSpan> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = exporter.getFinishedSpans().filter((x) => x.name === GATEWAY_SPAN);
    if (found.length > 0) {
      assert.equal(found.length, 1, "one gateway span per request");
      return found[0]!;
    }
    if (Date.now() > deadline)
      assert.fail(
        `no gateway span; spans: ${exporter
          .getFinishedSpans()
          .map((x) => x.name)
          .join(", ")}`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

const parentId = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const hrMs = (t: [number, number]): number => t[0] * 1e3 + t[1] / 1e6;

for (const method of ["SearchStream", "Search"]) {
  test(`one REST search is one trace: gateway span → client span → gRPC server span → stage spans (${method})`, async () => {
    const CORE_SPAN = coreSpan(method);
    exporter.reset();
    const res = await search({ query: "javascript web framework library", limit: 5 }, {}, method === "Search" ? gwUnary : gw);
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();
    const gwSpan = await gatewaySpan();

    const traceId = gwSpan.spanContext().traceId;
    assert.match(traceId, /^[0-9a-f]{32}$/);
    const spans = exporter.getFinishedSpans();
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    assert.equal(
      new Set(spans.map((s) => s.spanContext().traceId)).size,
      1,
      `one trace only: ${spans.map((s) => `${s.name}@${s.spanContext().traceId}`).join(", ")}`,
    );

    // The gateway's server span is the root.
    assert.equal(gwSpan.kind, SpanKind.SERVER);
    assert.equal(parentId(gwSpan), undefined, "the gateway span is the root when the caller sent no traceparent");
    assert.equal(gwSpan.attributes["http.route"], SEARCH_PATH);
    assert.equal(gwSpan.attributes["http.response.status_code"], 200);
    assert.equal(gwSpan.resource.attributes["service.name"], "reposearch-test");

    // The gateway's client span around the core call.
    const client = inTrace.filter((s) => s.name === CORE_SPAN && s.kind === SpanKind.CLIENT);
    assert.equal(client.length, 1, "one client span");
    assert.equal(parentId(client[0]!), gwSpan.spanContext().spanId, "client span is a child of the gateway span");

    // The core's gRPC server span, continued from the traceparent in the metadata.
    const server = inTrace.filter((s) => s.name === CORE_SPAN && s.kind === SpanKind.SERVER);
    assert.equal(server.length, 1, "one gRPC server span");
    const grpcSpan = server[0]!;
    assert.equal(parentId(grpcSpan), client[0]!.spanContext().spanId, "gRPC server span is a child of the client span");
    assert.equal(grpcSpan.parentSpanContext?.isRemote, true, "the parent came over the wire");
    assert.equal(grpcSpan.attributes["rpc.system"], "grpc");
    assert.equal(client[0]!.attributes["rpc.method"], method);
    assert.equal(grpcSpan.attributes["rpc.method"], method);
    assert.equal(grpcSpan.attributes["rpc.grpc.status_code"], 0);
    assert.notEqual(grpcSpan.status.code, SpanStatusCode.ERROR);

    // One span per stage, each a child of the gRPC server span and inside it in time.
    const stages = inTrace.filter((s) => s.name.startsWith("search."));
    const names = stages.map((s) => s.name).sort();
    for (const want of ["search.dense", "search.embed", "search.evidence", "search.lexical", "search.rank"]) {
      assert.equal(names.filter((n) => n === want).length, 1, `exactly one ${want} span (got ${names.join(", ")})`);
    }
    assert.ok(!names.includes("search.rerank"), "rerank is off on this server");
    const [gStart, gEnd] = [hrMs(grpcSpan.startTime), hrMs(grpcSpan.endTime)];
    for (const s of stages) {
      assert.equal(parentId(s), grpcSpan.spanContext().spanId, `${s.name} is a child of the gRPC server span`);
      assert.equal(s.attributes["search.stage"], s.name.slice("search.".length));
      assert.ok(hrMs(s.startTime) >= gStart - 2 && hrMs(s.endTime) <= gEnd + 2, `${s.name} lies within the gRPC span`);
    }
    // Nothing else was recorded for this request.
    assert.equal(inTrace.length, 3 + stages.length, `spans: ${inTrace.map((s) => s.name).join(", ")}`);
  });
}

test("a caller's traceparent is continued: the gateway span becomes a child of the caller's span", async () => {
  exporter.reset();
  const callerTrace = randomUUID().replace(/-/g, "");
  const callerSpan = randomUUID().replace(/-/g, "").slice(0, 16);
  const res = await search({ query: "http client", limit: 3 }, { traceparent: `00-${callerTrace}-${callerSpan}-01` });
  assert.equal(res.status, 200);
  await res.json();
  const gwSpan = await gatewaySpan();
  assert.equal(gwSpan.spanContext().traceId, callerTrace);
  assert.equal(parentId(gwSpan), callerSpan);
  const grpcSpan = exporter.getFinishedSpans().find((s) => s.name === coreSpan("SearchStream") && s.kind === SpanKind.SERVER);
  assert.equal(grpcSpan?.spanContext().traceId, callerTrace, "the core's span is in the caller's trace too");
});

test("a refused search is traced at the gateway only, with its status", async () => {
  exporter.reset();
  const res = await postSearch(gw.url, { query: "x" });
  assert.equal(res.status, 401);
  await res.text();
  const gwSpan = await gatewaySpan();
  assert.equal(gwSpan.attributes["http.response.status_code"], 401);
  assert.notEqual(gwSpan.status.code, SpanStatusCode.ERROR, "a 4xx is the caller's mistake, not a server error");
  assert.deepEqual(
    exporter.getFinishedSpans().map((s) => s.name),
    [GATEWAY_SPAN],
    "no core spans",
  );
});

test("health checks and scrapes make no spans", async () => {
  exporter.reset();
  await (await fetch(`${gw.url}/health`)).text();
  await (await fetch(`${gw.url}/metrics`)).text();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(
    exporter.getFinishedSpans().map((s) => s.name),
    [],
  );
});
