/**
 * Limiter against the real Redis at REDIS_URL (default redis://127.0.0.1:6379). Every test uses its
 * own key prefix, so runs never see each other's counters.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, test } from "vitest";
import { ErrorCode, ReposearchError } from "../src/common/errors.js";
import { Logger, setLogSink } from "../src/common/logger.js";
import { createLimiter, type Limiter, type LimiterConfig } from "../src/gateway/limiter.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const logLines: string[] = [];
const restoreSink = setLogSink((line) => logLines.push(line));
const logger = new Logger({ test: "limiter" });
const opened: Limiter[] = [];
afterAll(async () => {
  await Promise.all(opened.map((l) => l.close()));
  setLogSink(restoreSink);
});

function cfg(over: Partial<LimiterConfig["gateway"]["rateLimit"]> & { backend?: "memory" | "redis"; redisUrl?: string } = {}): LimiterConfig {
  return {
    gateway: {
      cacheBackend: over.backend ?? "redis",
      redisUrl: over.redisUrl ?? REDIS_URL,
      redisCommandTimeoutMs: 500,
      rateLimit: {
        ipPerMinute: over.ipPerMinute ?? 30,
        accountPerMinute: over.accountPerMinute ?? 60,
        failMode: over.failMode ?? "closed",
        failOpenPerMinute: over.failOpenPerMinute ?? 600,
      },
    },
  };
}

const uniquePrefix = (): string => `test:rl:${process.pid}:${randomBytes(6).toString("hex")}`;

async function open(config: LimiterConfig, keyPrefix = uniquePrefix()): Promise<Limiter> {
  const l = await createLimiter(config, logger, { keyPrefix });
  opened.push(l);
  return l;
}

/** A local port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test("redis: 100 parallel consumes against a limit of 60 → exactly 60 allowed", async () => {
  const l = await open(cfg({ accountPerMinute: 60 }));
  assert.equal(l.backend, "redis");
  const decisions = await Promise.all(Array.from({ length: 100 }, () => l.consumeAccount("acct-1")));
  const allowed = decisions.filter((d) => d.allowed);
  assert.equal(allowed.length, 60);
  const denied = decisions.filter((d) => !d.allowed);
  for (const d of denied) {
    assert.equal(d.limit, 60);
    assert.equal(d.remaining, 0);
    assert.ok(d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= 60, `retryAfter ${d.retryAfterSeconds}`);
    const nowS = Date.now() / 1000;
    assert.ok(d.resetUnixSeconds >= Math.floor(nowS) && d.resetUnixSeconds <= Math.ceil(nowS) + 60);
    assert.equal(d.degraded, false);
  }
  // remaining counts down to 0 across the allowed ones
  assert.deepEqual(
    allowed.map((d) => d.remaining).sort((a, b) => a - b),
    Array.from({ length: 60 }, (_, i) => i),
  );
  // another key is independent
  assert.equal((await l.consumeAccount("acct-2")).allowed, true);
});

test("redis: two limiter instances (two connections) sharing a prefix count together exactly", async () => {
  const prefix = uniquePrefix();
  const a = await open(cfg({ ipPerMinute: 30 }), prefix);
  const b = await open(cfg({ ipPerMinute: 30 }), prefix);
  assert.notEqual(a.redis, b.redis);
  const decisions = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 === 0 ? a : b).consumeIp("198.51.100.1")));
  assert.equal(decisions.filter((d) => d.allowed).length, 30);
  // a third process with another prefix has its own budget
  const c = await open(cfg({ ipPerMinute: 30 }));
  assert.equal((await c.consumeIp("198.51.100.1")).allowed, true);
});

test("redis: ip and account scopes are separate counters with their own limits", async () => {
  const l = await open(cfg({ ipPerMinute: 2, accountPerMinute: 3 }));
  const ip = await Promise.all([1, 2, 3].map(() => l.consumeIp("k")));
  const acct = await Promise.all([1, 2, 3, 4].map(() => l.consumeAccount("k")));
  assert.equal(ip.filter((d) => d.allowed).length, 2);
  assert.equal(acct.filter((d) => d.allowed).length, 3);
  assert.equal(ip[0]!.limit, 2);
  assert.equal(acct[0]!.limit, 3);
});

test("redis: cacheHealth reports up with a latency", async () => {
  const l = await open(cfg());
  const h = await l.cacheHealth();
  assert.equal(h.status, "up");
  assert.ok(h.latencyMs >= 0 && h.latencyMs < 1000);
});

test("redis down, fail closed → RATE_LIMIT_UNAVAILABLE; cacheHealth down", async () => {
  const port = await closedPort();
  const l = await open(cfg({ redisUrl: `redis://127.0.0.1:${port}`, failMode: "closed" }));
  const t0 = Date.now();
  await assert.rejects(l.consumeIp("203.0.113.1"), (err: unknown) => {
    assert.ok(err instanceof ReposearchError);
    assert.equal(err.code, ErrorCode.RateLimitUnavailable);
    assert.equal(err.httpStatus, 503);
    return true;
  });
  await assert.rejects(l.consumeAccount("acct"), (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.RateLimitUnavailable);
  assert.ok(Date.now() - t0 < 1000, "fails fast, no queueing");
  const h = await l.cacheHealth();
  assert.equal(h.status, "down");
  assert.ok(typeof h.error === "string" && h.error.length > 0);
  assert.ok(
    logLines.some((line) => line.includes("rate-limit store unavailable")),
    "logs a warning",
  );
});

test("redis down, fail open → admitted up to the per-process cap, then 429", async () => {
  const port = await closedPort();
  const l = await open(cfg({ redisUrl: `redis://127.0.0.1:${port}`, failMode: "open", failOpenPerMinute: 5 }));
  const decisions = await Promise.all(Array.from({ length: 8 }, () => l.consumeAccount("acct-open")));
  assert.equal(decisions.filter((d) => d.allowed).length, 5);
  for (const d of decisions) {
    assert.equal(d.degraded, true);
    assert.equal(d.limit, 5);
  }
  const denied = decisions.find((d) => !d.allowed);
  assert.ok(denied && denied.retryAfterSeconds >= 1);
  // warnings are throttled: many failures, few lines
  const warnings = logLines.filter((line) => line.includes("failing open"));
  assert.ok(warnings.length >= 1 && warnings.length <= 2, `throttled warnings: ${warnings.length}`);
});

test("memory backend: exact in-process count, always-up health, no redis", async () => {
  const l = await open(cfg({ backend: "memory", ipPerMinute: 30 }));
  assert.equal(l.backend, "memory");
  assert.equal(l.redis, null);
  const decisions = await Promise.all(Array.from({ length: 50 }, () => l.consumeIp("192.0.2.1")));
  assert.equal(decisions.filter((d) => d.allowed).length, 30);
  const h = await l.cacheHealth();
  assert.deepEqual(h, { status: "up", latencyMs: 0 });
});
