/**
 * The gateway's counters against fakes: each refusal, limiter failure, debit and refund is counted
 * once, under its bounded label, and nothing secret becomes a label. Also: two apps on one registry
 * share their metrics instead of failing to register them twice.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, test } from "vitest";
import { Registry } from "prom-client";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { Logger, setLogSink } from "../common/logger.js";
import { emptyResponse } from "../../test/support/core-testkit.js";
import type { SearchRequest, SearchResponse } from "../core/types.js";
import { SEARCH_PRICE_MICROS, type DebitOutcome, type Principal } from "./accounts/types.js";
import { createGatewayApp } from "./app.js";
import type { RateLimitDecision } from "./limiter.js";
import { createGatewayMetrics, type GatewayMetrics } from "./metrics.js";

const KEY = "rsk_MetricKey_secretPartNeverALabel";
const restoreSink = setLogSink(() => {});
afterAll(() => setLogSink(restoreSink));

const decision = (allowed: boolean, degraded = false): RateLimitDecision => ({
  allowed,
  limit: 10,
  remaining: allowed ? 9 : 0,
  resetUnixSeconds: Math.ceil(Date.now() / 1000) + 60,
  retryAfterSeconds: allowed ? 0 : 30,
  degraded,
});

/** What the fakes do on the next request; tests set it before each call. */
const behave = {
  ip: async (): Promise<RateLimitDecision> => decision(true),
  account: async (): Promise<RateLimitDecision> => decision(true),
  principal: (): Principal | null => ({ accountId: "acct_1", accountName: "acme", accountStatus: "active", keyPrefix: "rsk_MetricKey", scopes: ["search"] }),
  debit: async (): Promise<DebitOutcome> => ({ ok: true, balanceMicros: 1_000_000 }),
  search: async (req: SearchRequest): Promise<SearchResponse> => emptyResponse(req.query),
};
const defaults = { ...behave };

let base = "";
let metrics: GatewayMetrics;
let close: () => Promise<void>;

beforeAll(async () => {
  metrics = createGatewayMetrics();
  const app = createGatewayApp({
    core: {
      search: (req) => behave.search(req),
      similar: () => Promise.reject(new Error("not in this fake")),
      repository: () => Promise.reject(new Error("not in this fake")),
      stats: () => Promise.reject(new Error("not in this fake")),
      health: async () => "SERVING",
    },
    accounts: {
      authenticate: async (key) => (key === KEY ? behave.principal() : null),
      debit: () => behave.debit(),
      refund: async () => true,
      commit: async () => true,
      health: async () => ({ status: "up", latencyMs: 1 }),
    },
    limiter: { consumeIp: () => behave.ip(), consumeAccount: () => behave.account() },
    config: {
      server: { coreTimeoutMs: 1_000 },
      gateway: { trustedProxies: [], maxBodyBytes: 16_384, rateLimit: { ipPerMinute: 10, accountPerMinute: 10, failMode: "closed", failOpenPerMinute: 100 } },
    },
    logger: new Logger({ test: "metrics" }),
    version: "0.0.0-test",
    startedAt: Date.now(),
    cacheHealth: async () => ({ status: "up", latencyMs: 0 }),
    metrics,
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((r) => server.once("listening", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => new Promise<void>((r) => server.close(() => r()));
});

afterAll(async () => close?.());

async function post(key: string | undefined, body: unknown = { query: "http client" }): Promise<number> {
  const res = await fetch(`${base}/v1/codehost/search`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key !== undefined ? { "x-api-key": key } : {}) },
    body: JSON.stringify(body),
  });
  await res.text();
  Object.assign(behave, defaults);
  return res.status;
}

async function value(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await metrics.registry.getSingleMetric(name)!.get()).values;
  return m.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

test("auth failures are counted by reason: missing, invalid, forbidden, insufficient_credits", async () => {
  assert.equal(await post(undefined), 401);
  assert.equal(await post("rsk_Wrong_key"), 401);
  assert.equal(await post("x".repeat(600)), 401);
  behave.principal = () => ({ accountId: "acct_1", accountName: "acme", accountStatus: "suspended", keyPrefix: "rsk_MetricKey", scopes: ["search"] });
  assert.equal(await post(KEY), 403);
  behave.principal = () => ({ accountId: "acct_1", accountName: "acme", accountStatus: "active", keyPrefix: "rsk_MetricKey", scopes: [] });
  assert.equal(await post(KEY), 403);
  behave.debit = async () => ({ ok: false, reason: "insufficient_credits", balanceMicros: 0 });
  assert.equal(await post(KEY), 403, "INSUFFICIENT_CREDITS is a 403");
  assert.equal(await value("auth_failures_total", { reason: "missing" }), 1);
  assert.equal(await value("auth_failures_total", { reason: "invalid" }), 2);
  assert.equal(await value("auth_failures_total", { reason: "forbidden" }), 2);
  assert.equal(await value("auth_failures_total", { reason: "insufficient_credits" }), 1);
});

test("rate-limit rejections by scope; limiter outages counted in both fail modes", async () => {
  behave.ip = async () => decision(false);
  assert.equal(await post(KEY), 429);
  behave.account = async () => decision(false);
  assert.equal(await post(KEY), 429);
  assert.equal(await value("rate_limit_rejections_total", { scope: "ip" }), 1);
  assert.equal(await value("rate_limit_rejections_total", { scope: "account" }), 1);

  // Fail closed: the limiter throws RATE_LIMIT_UNAVAILABLE (503).
  behave.ip = async () => {
    throw new ReposearchError(ErrorCode.RateLimitUnavailable, "store down");
  };
  assert.equal(await post(KEY), 503);
  // Fail open: an allowed, degraded decision.
  behave.account = async () => decision(true, true);
  assert.equal(await post(KEY), 200);
  assert.equal(await value("rate_limiter_unavailable_total"), 2);
});

test("credits: debits and refunds in micro-dollars", async () => {
  const debited0 = await value("credits_debited_micros_total");
  const refunded0 = await value("credits_refunded_micros_total");
  assert.equal(await post(KEY), 200);
  assert.equal(await post(KEY), 200);
  behave.search = async () => {
    throw new ReposearchError(ErrorCode.Unavailable, "core down");
  };
  assert.equal(await post(KEY), 502);
  assert.equal((await value("credits_debited_micros_total")) - debited0, 3 * SEARCH_PRICE_MICROS);
  assert.equal((await value("credits_refunded_micros_total")) - refunded0, SEARCH_PRICE_MICROS);
  // A request refused before the debit charges nothing.
  assert.equal(await post(KEY, { query: 42 }), 400);
  assert.equal((await value("credits_debited_micros_total")) - debited0, 3 * SEARCH_PRICE_MICROS);
});

test("the exposition has no key, account or query in any label, and uses the latency buckets", async () => {
  const text = await (await fetch(`${base}/metrics`)).text();
  assert.ok(!text.includes("MetricKey") && !text.includes("acct_1") && !text.includes("http client"), "no key, account id or query in /metrics");
  assert.match(text, /http_request_duration_seconds_bucket\{le="0\.03",method="POST",route="\/v1\/codehost\/search",status="200"\}/);
  assert.match(text, /http_request_duration_seconds_bucket\{le="0\.3",/);
  for (const name of [
    "auth_failures_total",
    "rate_limit_rejections_total",
    "rate_limiter_unavailable_total",
    "credits_debited_micros_total",
    "credits_refunded_micros_total",
    "query_cache_requests_total",
  ]) {
    assert.match(text, new RegExp(`# TYPE ${name} counter`));
  }
});

test("two apps on one registry share their metrics (no duplicate registration)", () => {
  const reg = new Registry();
  const a = createGatewayMetrics(reg);
  const b = createGatewayMetrics(reg);
  assert.equal(a.httpDuration, b.httpDuration);
  assert.equal(a.authFailures, b.authFailures);
  assert.ok(reg.getSingleMetric("process_cpu_user_seconds_total"), "default metrics once");
});
