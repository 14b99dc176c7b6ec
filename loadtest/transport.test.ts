/** The transport ceiling: a real echo server (two cluster processes) and the real generator on loopback. */
import assert from "node:assert/strict";
import { test } from "vitest";
import { transportCeiling } from "./transport.js";

test("the echo server answers every request with the given body, from two processes, and stops cleanly", async () => {
  const body = Buffer.from(JSON.stringify({ query: "q", results: [], meta: { total: 0 } }));
  const r = await transportCeiling({
    processes: 2,
    connections: 4,
    seconds: 1,
    requests: [{ mix: "test", body: Buffer.from('{"query":"rss reader"}') }],
    responseBody: body,
  });
  assert.equal(r.errors, 0);
  assert.ok(r.perSecond > 0, `no responses: ${JSON.stringify(r)}`);
  assert.equal(r.responseBytes, body.length);
  assert.equal(r.processes, 2);
  // CPU is read over the primary and its workers; with two busy workers it is above the primary's own.
  assert.ok(r.serverCpuPct !== null && r.serverCpuPct > 0);
  assert.ok(r.generatorCpuPct > 0);
});
