/**
 * Tracing set-up: off by default (no provider, no spans, no cost), OTLP/HTTP export to
 * `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces` when configured (against a local receiver), shutdown
 * flushes, and W3C trace context round-trips through plain header maps.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "vitest";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { loadConfig } from "../config/config.js";
import { ROOT_CONTEXT, SpanKind, extractTraceContext, initTracing, otlpTracesUrl, stageSpan, startSpan, traceHeaders, tracer, trace } from "./tracing.js";

test("config: tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; the endpoint must be http(s)", () => {
  const off = loadConfig({});
  assert.equal(off.tracing.otlpEndpoint, null);
  assert.equal(off.tracing.serviceName, null);
  const on = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SERVICE_NAME: "rs-gw" });
  assert.equal(on.tracing.otlpEndpoint, "http://collector:4318");
  assert.equal(on.tracing.serviceName, "rs-gw");
  assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4317" }), /OTEL_EXPORTER_OTLP_ENDPOINT/);
  assert.equal(otlpTracesUrl("http://c:4318/"), "http://c:4318/v1/traces");
});

test("without an endpoint or exporter nothing is registered and spans are no-ops", async () => {
  const t = initTracing({ serviceName: "x", otlpEndpoint: null });
  assert.equal(t.enabled, false);
  const span = tracer().startSpan("nothing");
  assert.equal(span.isRecording(), false);
  assert.deepEqual(traceHeaders(trace.setSpan(ROOT_CONTEXT, span)), {}, "an invalid span propagates nothing");
  span.end();
  await t.shutdown();
});

test("a caller's traceparent passes through even when this process does not record", () => {
  const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const parent = extractTraceContext({ traceparent: tp });
  const { span, ctx } = startSpan("noop", {}, parent);
  assert.equal(span.isRecording(), false);
  assert.equal(traceHeaders(ctx).traceparent, tp);
});

test("in-memory exporter: parent links, W3C round trip, stage spans after the fact", async () => {
  const exporter = new InMemorySpanExporter();
  const t = initTracing({ serviceName: "unit", exporter });
  try {
    const root = startSpan("root", { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    const headers = traceHeaders(root.ctx);
    assert.match(headers.traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const remote = extractTraceContext(headers);
    const child = startSpan("child", { kind: SpanKind.SERVER }, remote);
    stageSpan(child.ctx, "search.rank", 0.002, { "search.stage": "rank" });
    child.span.end();
    root.span.end();
    const spans = exporter.getFinishedSpans();
    const byName = new Map(spans.map((s) => [s.name, s]));
    assert.equal(byName.get("child")!.parentSpanContext?.spanId, root.span.spanContext().spanId);
    const stage = byName.get("search.rank")!;
    assert.equal(stage.parentSpanContext?.spanId, child.span.spanContext().spanId);
    const ms = stage.duration[0] * 1e3 + stage.duration[1] / 1e6;
    assert.ok(Math.abs(ms - 2) < 0.5, `stage span lasts its reported 2 ms (got ${ms})`);
    assert.equal(new Set(spans.map((s) => s.spanContext().traceId)).size, 1);
  } finally {
    await t.shutdown();
  }
  assert.equal(tracer().startSpan("after").isRecording(), false, "shutdown unregisters the provider");
});

test("stage spans stay inside their parent when the wall clock has drifted from the monotonic clock", async () => {
  const exporter = new InMemorySpanExporter();
  const t = initTracing({ serviceName: "unit", exporter });
  const realNow = Date.now;
  try {
    // The wall clock a second ahead of where the process's monotonic clock puts it (an NTP step, or
    // days of slew): the SDK times ordinary spans from Date.now().
    const driftMs = 1000;
    Date.now = () => realNow() + driftMs;
    const parent = startSpan("core", { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    await new Promise((r) => setTimeout(r, 5));
    stageSpan(parent.ctx, "search.lexical", 0.003, { "search.stage": "lexical" });
    parent.span.end();
    const spans = new Map(exporter.getFinishedSpans().map((s) => [s.name, s]));
    const ms = (hr: [number, number]) => hr[0] * 1e3 + hr[1] / 1e6;
    const [p, s] = [spans.get("core")!, spans.get("search.lexical")!];
    // Each span maps the monotonic clock to the wall clock by its own pair of clock readings (Date.now()
    // in whole milliseconds, then performance.now()), so two spans' mappings differ by a millisecond, or
    // by more when the process is descheduled between the readings on a loaded machine: the slack. A
    // stage span built on the other clock lands the whole drift outside.
    const slackMs = 20;
    const [startGap, endGap] = [ms(s.startTime) - ms(p.startTime), ms(p.endTime) - ms(s.endTime)];
    assert.ok(startGap >= -slackMs && endGap >= -slackMs, `stage starts ${startGap} ms after the parent and ends ${endGap} ms before it`);
  } finally {
    Date.now = realNow;
    await t.shutdown();
  }
});

test("OTLP/HTTP: spans are posted to <endpoint>/v1/traces, flushed by shutdown", async () => {
  const received: { url: string; contentType: string; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString("latin1")));
    req.on("end", () => {
      received.push({ url: req.url ?? "", contentType: req.headers["content-type"] ?? "", body });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const t = initTracing({ serviceName: "reposearch-otlp-test", serviceVersion: "1.2.3", otlpEndpoint: endpoint });
    assert.equal(t.enabled, true);
    const { span } = startSpan("exported-span", { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    span.end();
    assert.equal(received.length, 0, "batched, not sent per span");
    await t.shutdown();
    assert.ok(received.length >= 1, "shutdown flushed the batch");
    assert.equal(received[0]!.url, "/v1/traces");
    const all = received.map((r) => r.body).join("");
    assert.ok(all.includes("exported-span"), "the span is in the export");
    assert.ok(all.includes("reposearch-otlp-test"), "service.name is in the export");
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});
