/**
 * BatchingEmbedder in front of a real HttpEmbedder, against a node:http embedding service on loopback
 * that records the size of every /embed request.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, test } from "vitest";
import { startFakeService } from "../../test/support/tei-testkit.js";
import { BatchingEmbedder } from "./batching.js";
import { HttpEmbedder } from "./http.js";

interface Service {
  /** Inputs of every /embed request, in arrival order. */
  requests: string[][];
  /** Status to answer the next /embed requests with (200 when empty). */
  failNext: number[];
}

function vectorOf(text: string): number[] {
  return Array.from(createHash("sha256").update(text).digest().subarray(0, 8), (b) => b - 127.5);
}

describe("BatchingEmbedder", () => {
  let svc: Service & { url: string; close(): Promise<void> };
  let http: HttpEmbedder;
  const queries = Array.from({ length: 10 }, (_, i) => `query number ${i}`);

  beforeAll(async () => {
    svc = await startFakeService<Service>({ requests: [], failNext: [] }, "/", (req, res, route, raw) => {
      if (req.method === "GET" && route === "/info") {
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ model_id: "test/batch", max_client_batch_size: 256 }));
      }
      const { inputs } = JSON.parse(raw.toString("utf8")) as { inputs: string[] };
      svc.requests.push(inputs);
      const status = svc.failNext.shift();
      if (status !== undefined) return res.writeHead(status).end("{}");
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(inputs.map(vectorOf)));
    });
    http = await HttpEmbedder.connect({
      url: svc.url,
      timeoutMs: 5_000,
      batchSize: 256,
      retry: { maxAttempts: 1, initialBackoffMs: 1, maxBackoffMs: 1, retryOn: [] },
    });
  });
  afterAll(async () => {
    await http.close();
    await svc.close();
  });
  beforeEach(() => {
    svc.requests.length = 0;
    svc.failNext.length = 0;
  });

  test("requests made together go to the model as one call, and each caller gets its own vectors", async () => {
    const sizes: number[] = [];
    const b = new BatchingEmbedder(http, { maxBatch: 32, onBatch: (n) => sizes.push(n) });
    assert.equal(b.id, http.id);
    assert.equal(b.dims, http.dims);
    const together = await Promise.all(queries.map((q) => b.embed([q])));
    assert.deepEqual(svc.requests, [queries]);
    assert.deepEqual(sizes, [10]);
    svc.requests.length = 0;
    for (let i = 0; i < queries.length; i++) {
      const [alone] = await http.embed([queries[i]!]);
      assert.equal(together[i]!.length, 1);
      assert.deepEqual(together[i]![0], alone, `query ${i}: the same vector as embedded alone`);
    }
  });

  test("a turn larger than maxBatch is split, and a request's texts are never split across calls", async () => {
    const b = new BatchingEmbedder(http, { maxBatch: 4 });
    await Promise.all(queries.map((q) => b.embed([q])));
    assert.deepEqual(
      svc.requests.map((r) => r.length),
      [4, 4, 2],
    );
    svc.requests.length = 0;
    const [abc, de, f] = await Promise.all([b.embed(["a", "b", "c"]), b.embed(["d", "e"]), b.embed(["f"])]);
    assert.deepEqual(svc.requests, [
      ["a", "b", "c"],
      ["d", "e", "f"],
    ]);
    assert.equal(abc!.length, 3);
    assert.equal(de!.length, 2);
    assert.deepEqual(f, await http.embed(["f"]));
  });

  test("requests of different turns are not held back for each other", async () => {
    const b = new BatchingEmbedder(http, { maxBatch: 32 });
    await b.embed([queries[0]!]);
    await new Promise((r) => setImmediate(r));
    await b.embed([queries[1]!]);
    assert.deepEqual(svc.requests, [[queries[0]], [queries[1]]]);
    assert.deepEqual(await b.embed([]), []);
    assert.equal(svc.requests.length, 2, "an empty request makes no call");
  });

  test("a failed call fails every request in it, and the next call goes through", async () => {
    const b = new BatchingEmbedder(http, { maxBatch: 32 });
    svc.failNext.push(400);
    const outcomes = await Promise.allSettled(queries.slice(0, 3).map((q) => b.embed([q])));
    assert.deepEqual(
      svc.requests.map((r) => r.length),
      [3],
    );
    assert.ok(outcomes.every((o) => o.status === "rejected"));
    const reasons = outcomes.map((o) => (o as PromiseRejectedResult).reason as Error);
    assert.ok(
      reasons.every((r) => r === reasons[0] && /embedding/i.test(r.message)),
      String(reasons[0]),
    );
    const [v] = await b.embed([queries[3]!]);
    assert.deepEqual(v, (await http.embed([queries[3]!]))[0]);
  });

  test("maxBatch must be a positive integer", () => {
    for (const maxBatch of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => new BatchingEmbedder(http, { maxBatch }), /maxBatch must be a positive integer/);
    }
  });
});
