/** The load test's GC figures: read from a real prom-client exposition over real HTTP. */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "vitest";
import { Histogram, Registry } from "prom-client";
import { gcBetween, parseGcTotals, scrapeGc } from "./gc.js";

function gcRegistry(): { registry: Registry; gc: Histogram<"kind"> } {
  const registry = new Registry();
  // The series prom-client's default metrics export, same name, label and buckets' shape.
  const gc = new Histogram({
    name: "nodejs_gc_duration_seconds",
    help: "GC duration",
    labelNames: ["kind"],
    buckets: [0.001, 0.01, 0.1, 1],
    registers: [registry],
  });
  new Histogram({ name: "http_request_duration_seconds", help: "other", labelNames: ["kind"], registers: [registry] }).observe({ kind: "minor" }, 9);
  return { registry, gc };
}

test("per-kind totals come from the sum and count series only, other histograms ignored", async () => {
  const { registry, gc } = gcRegistry();
  gc.observe({ kind: "minor" }, 0.02);
  gc.observe({ kind: "minor" }, 0.03);
  gc.observe({ kind: "major" }, 0.05);
  const t = parseGcTotals(await registry.metrics());
  assert.deepEqual(Object.keys(t).sort(), ["major", "minor"]);
  assert.equal(t.minor!.count, 2);
  assert.ok(Math.abs(t.minor!.seconds - 0.05) < 1e-9);
  assert.equal(t.major!.count, 1);
  assert.deepEqual(parseGcTotals("# no gc here\nprocess_cpu_seconds_total 3\n"), {});
});

test("a phase's GC is the difference of two scrapes; share is per process; a restart voids it", () => {
  const before = { minor: { count: 10, seconds: 0.2 }, major: { count: 1, seconds: 0.05 } };
  const after = { minor: { count: 110, seconds: 2.2 }, major: { count: 2, seconds: 0.11 }, incremental: { count: 2, seconds: 0.04 } };
  const g = gcBetween(before, after, 10, 2)!;
  assert.equal(g.byKind.minor!.count, 100);
  assert.equal(g.byKind.incremental!.count, 2);
  assert.equal(g.fullCount, 3);
  assert.equal(g.pauseSeconds, 2.1);
  // 2.1 s of pauses over 10 s of 2 processes.
  assert.equal(g.pauseSharePct, 10.5);
  assert.equal(gcBetween(before, after, 10, null)!.pauseSharePct, null);
  assert.equal(gcBetween(after, before, 10, 2), null);
  assert.equal(gcBetween(null, after, 10, 2), null);
});

test("scrapeGc reads a live /metrics endpoint and gives null, never a throw, when it cannot", async () => {
  const { registry, gc } = gcRegistry();
  gc.observe({ kind: "minor" }, 0.004);
  const server = http.createServer((req, res) => {
    if (req.url !== "/metrics") return void res.writeHead(404).end();
    void registry.metrics().then((text) => res.writeHead(200, { "content-type": registry.contentType }).end(text));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const t = await scrapeGc(base);
    assert.equal(t?.minor?.count, 1);
    gc.observe({ kind: "minor" }, 0.006);
    assert.equal((await scrapeGc(base))?.minor?.count, 2);
  } finally {
    await new Promise((r) => server.close(r));
  }
  // Nothing listens there any more.
  assert.equal(await scrapeGc(base, 1000), null);
});
