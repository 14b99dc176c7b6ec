/**
 * The client's own rules, without a server: options fail fast, a malformed name never leaves the
 * process, and an unreachable service is a CONNECTION_ERROR after the bounded retries. Calls against
 * the real gateway (answers, every error, a 429 with Retry-After) are test/client.test.ts.
 */
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RepoSearchClient, type RetryEvent } from "./client.js";
import { RepoSearchError } from "./errors.js";

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A real HTTP server that counts requests and never answers them. */
let silent: Server;
let silentUrl: string;
let received = 0;
beforeAll(async () => {
  silent = createHttpServer(() => void received++);
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(async () => {
  silent.closeAllConnections();
  await new Promise<void>((r) => silent.close(() => r()));
});

describe("RepoSearchClient", () => {
  it("refuses bad options when it is made", () => {
    assert.throws(() => new RepoSearchClient({ baseUrl: "not a url" }), /absolute http\(s\) URL/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "ftp://example.com" }), /http or https/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "localhost:8080" }), /http or https/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "http://example.com/?a=1" }), /query or a fragment/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "http://example.com", maxAttempts: 0 }), /maxAttempts must be an integer from 1 to 10/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "http://example.com", maxAttempts: 2.5 }), /maxAttempts/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "http://example.com", timeoutMs: 0 }), /timeoutMs/);
    assert.throws(() => new RepoSearchClient({ baseUrl: "http://example.com", apiKey: "a b" }), /apiKey/);
    const c = new RepoSearchClient({ baseUrl: "http://example.com/prefix/" });
    assert.equal(c.baseUrl, "http://example.com/prefix", "a path prefix is kept, its trailing slash dropped");
    assert.equal(c.maxAttempts, 3);
  });

  it("a name that is not owner/repo is refused without a request", async () => {
    const before = received;
    const c = new RepoSearchClient({ baseUrl: silentUrl });
    const err = await c.repository("no-slash").catch((e: unknown) => e);
    assert.ok(err instanceof RepoSearchError);
    assert.equal(err.code, "INVALID_ARGUMENT");
    assert.equal(err.status, 0);
    assert.equal(err.details[0]?.path, "/repo");
    assert.equal(received, before);
  });

  it("an unreachable service: CONNECTION_ERROR after maxAttempts, each retry announced", async () => {
    const port = await closedPort();
    const retries: RetryEvent[] = [];
    const c = new RepoSearchClient({ baseUrl: `http://127.0.0.1:${port}`, maxAttempts: 3, onRetry: (e) => retries.push(e) });
    const err = await c.search({ query: "x" }).catch((e: unknown) => e);
    assert.ok(err instanceof RepoSearchError);
    assert.equal(err.code, "CONNECTION_ERROR");
    assert.equal(err.attempts, 3);
    assert.deepEqual(
      retries.map((r) => r.attempt),
      [1, 2],
    );
    assert.ok(retries.every((r) => r.delayMs > 0 && r.error.code === "CONNECTION_ERROR"));
  });

  it("an attempt that outlives timeoutMs is a TIMEOUT and is not retried", async () => {
    const before = received;
    const c = new RepoSearchClient({ baseUrl: silentUrl, timeoutMs: 100, maxAttempts: 3 });
    const err = await c.search({ query: "x" }).catch((e: unknown) => e);
    assert.ok(err instanceof RepoSearchError);
    assert.equal(err.code, "TIMEOUT");
    assert.equal(err.attempts, 1);
    assert.equal(received - before, 1);
  });
});
