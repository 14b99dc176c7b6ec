/**
 * EmbedPool with real worker threads: USE-lite (compared with in-process embeddings) and the http
 * embedder against a loopback TEI-like server, which can also stall or blow a worker's heap on demand.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, test } from "vitest";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { setLogSink } from "../common/logger.js";
import { EmbedServiceError } from "./http.js";
import { EmbedPool } from "./pool.js";
import { UseLiteEmbedder } from "./use-lite.js";

const DIMS = 8;
function hashVector(text: string): number[] {
  return Array.from(createHash("sha256").update(text).digest().subarray(0, DIMS), (b) => b - 127.5);
}
function assertClose(actual: Float32Array, expected: ArrayLike<number>, tol: number): void {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`);
}

/**
 * /embed answers hash vectors after `delayMs`; the text "stall" is never answered, and "oom" gets ~10 MB of
 * small arrays, enough to exceed a worker's 10 MB heap limit while it parses them.
 */
async function startServer(opts: { delayMs?: number; status?: number } = {}) {
  let inFlight = 0;
  const state = { maxInFlight: 0, requests: 0 };
  const oomBody = `[${Array(8_000)
    .fill(`[${Array(256).fill("0.5").join(",")}]`)
    .join(",")}]`;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      if (req.url === "/info") return res.writeHead(404).end();
      const { inputs } = JSON.parse(body) as { inputs: string[] };
      state.requests++;
      if (opts.status) return res.writeHead(opts.status).end();
      if (inputs.includes("stall")) return;
      if (inputs.includes("oom")) return res.writeHead(200).end(oomBody);
      inFlight++;
      state.maxInFlight = Math.max(state.maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(inputs.map(hashVector)));
      }, opts.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref(); // a hung test must fail on its timeout, not keep the process alive
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

const httpSpec = (url: string) => ({ kind: "http" as const, url, timeoutMs: 5_000, batchSize: 16 });

// A pool bug shows up as a hang; fail fast instead.
const timeout = 15_000;

describe("EmbedPool", () => {
  const logs: string[] = [];
  let restoreSink: (l: string) => void;
  beforeAll(() => (restoreSink = setLogSink((l) => logs.push(l))));
  afterAll(() => setLogSink(restoreSink));

  test("use-lite in 2 workers equals in-process embeddings, in order, across concurrent calls", { timeout }, async () => {
    const [pool, local] = await Promise.all([EmbedPool.create({ kind: "use-lite" }, { workers: 2, batchSize: 3 }), UseLiteEmbedder.load()]);
    try {
      assert.equal(pool.workerCount, 2);
      assert.equal(pool.id, local.id);
      assert.equal(pool.dims, 512);
      const texts = ["react", "a fast json parser written in rust", "kubernetes operator", "", "vector database", "cli", "game engine"];
      const [a, b] = await Promise.all([pool.embed(texts), pool.embed([...texts].reverse())]);
      const want = await local.embed(texts);
      assert.equal(a.length, texts.length);
      a.forEach((v, i) => assertClose(v, want[i]!, 1e-5));
      b.forEach((v, i) => assertClose(v, want[texts.length - 1 - i]!, 1e-5));
      // Each vector arrives as its own transferred buffer, not a view into a shared one.
      assert.ok(a.every((v) => v.byteOffset === 0 && v.buffer.byteLength === 512 * 4));
      assert.deepEqual(await pool.embed([]), []);
    } finally {
      await Promise.all([pool.close(), local.close()]);
    }
  });

  test("http: batches run on both workers at once and come back in order", { timeout }, async () => {
    const server = await startServer({ delayMs: 40 });
    const pool = await EmbedPool.create(httpSpec(server.url), { workers: 2, batchSize: 2 });
    try {
      // Different lengths, so the pool's length-sorted batching has to put results back in place.
      const texts = Array.from({ length: 9 }, (_, i) => `text ${i} ${"more ".repeat((i * 7) % 5)}`);
      const vectors = await pool.embed(texts);
      vectors.forEach((v, i) => {
        const raw = hashVector(texts[i]!);
        const n = Math.hypot(...raw);
        assertClose(
          v,
          raw.map((x) => x / n),
          1e-6,
        );
      });
      assert.equal(server.maxInFlight, 2);
    } finally {
      await pool.close();
      await server.close();
    }
  });

  test("a worker that fails to start rejects create with its typed error", { timeout }, async () => {
    const server = await startServer({ status: 500 });
    try {
      await assert.rejects(EmbedPool.create(httpSpec(server.url), { workers: 2, batchSize: 4 }), (err: unknown) => {
        return err instanceof EmbedServiceError && err.status === 500 && err.code === ErrorCode.ExternalService;
      });
    } finally {
      await server.close();
    }
  });

  test("a crashed worker rejects its batch; survivors carry on; with none left, queued and later calls reject", { timeout }, async () => {
    const server = await startServer();
    const pool = await EmbedPool.create(httpSpec(server.url), { workers: 2, batchSize: 1, resourceLimits: { maxOldGenerationSizeMb: 10 } });
    try {
      await assert.rejects(pool.embed(["oom"]), /embed worker \d crashed: .*memory limit/);
      assert.equal((await pool.embed(["a", "b", "c"])).length, 3);
      // The last worker takes "oom" while "x" and "y" wait in the queue: all three must settle, not hang.
      const results = await Promise.allSettled([pool.embed(["oom"]), pool.embed(["x"]), pool.embed(["y"])]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["rejected", "rejected", "rejected"],
      );
      assert.match(String((results[1] as PromiseRejectedResult).reason), /all embed workers crashed/);
      await assert.rejects(pool.embed(["z"]), (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.Unavailable);
      assert.ok(logs.some((l) => l.includes("embed worker crashed")));
    } finally {
      await pool.close();
      await server.close();
    }
  });

  test("close rejects pending batches, ends the workers and is idempotent", { timeout }, async () => {
    const server = await startServer();
    const pool = await EmbedPool.create(httpSpec(server.url), { workers: 1, batchSize: 1 });
    try {
      const pending = pool.embed(["stall", "queued"]);
      while (server.requests < 2) await new Promise((r) => setTimeout(r, 5)); // the probe, then "stall"
      const closing = pool.close();
      assert.equal(pool.close(), closing);
      await assert.rejects(pending, /embed pool is closed/);
      await closing;
      await assert.rejects(pool.embed(["x"]), /embed pool is closed/);
    } finally {
      await server.close();
    }
  });

  test("options are validated", { timeout }, async () => {
    await assert.rejects(EmbedPool.create({ kind: "use-lite" }, { workers: 0, batchSize: 1 }), RangeError);
    await assert.rejects(EmbedPool.create({ kind: "use-lite" }, { workers: 1, batchSize: 0 }), RangeError);
  });
});
