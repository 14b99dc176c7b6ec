/**
 * The REST facade against fakes of the core, the account store and the limiter: the order of
 * checks, error mapping, charging policy, health rules and descriptive documents. Every JSON
 * response is validated against the OpenAPI document.
 */
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { afterAll, test } from "vitest";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { Logger, setLogSink } from "../common/logger.js";
import { appliedFilters } from "../../test/support/core-testkit.js";
import type { SearchRequest, SearchResponse } from "../core/types.js";
import { SEARCH_PRICE_MICROS, type DebitOutcome, type Principal, type StoreHealth } from "./accounts/types.js";
import { createGatewayApp, toJsonPointer, type GatewayAppConfig, type GatewayDeps } from "./app.js";
import { createLimiter, type RateLimitDecision } from "./limiter.js";
import { createGatewayMetrics } from "./metrics.js";
import { openApiDocument, type SchemaName } from "./openapi.js";
import { createMemoryQueryCache } from "./query-cache.js";
import type { CoreApi, CoreServingStatus, ServiceHealth } from "./types.js";
import { validateResponse } from "./validation.js";

const GOOD_KEY = "rsk_GoodKey1_s3cr3tPartThatMustNeverBeLogged";
const logLines: string[] = [];
const restoreSink = setLogSink((line) => logLines.push(line));
afterAll(() => {
  setLogSink(restoreSink);
  for (const line of logLines) assert.ok(!line.includes("s3cr3tPart"), `a log line contains the API key: ${line}`);
});

function sampleResponse(req: SearchRequest): SearchResponse {
  return {
    query: req.query,
    results: [
      {
        url: "https://example.invalid/acme/limiter",
        name: "acme/limiter",
        description: "A rate limiter",
        score: 1,
        language: "TypeScript",
        stars: 1200,
        forks: 40,
        topics: ["rate-limiting"],
        pushedAt: "2025-01-02T03:04:05Z",
        isArchived: false,
        llmsUrl: null,
        ...(req.includeTree ? { tree: "README.md\nsrc/\nsrc/index.ts" } : {}),
        evidence: ["description: A rate limiter"],
      },
    ],
    meta: {
      total: 1,
      timeMs: 12.5,
      methods: { lexical: { hits: 1, weight: 0.4 }, dense: { hits: 1, weight: 0.6 } },
      appliedFilters: appliedFilters({ mode: "default", values: ["library"], includeUncategorized: true }),
    },
  };
}

const allow = (limit: number): RateLimitDecision => ({
  allowed: true,
  limit,
  remaining: limit - 1,
  resetUnixSeconds: Math.ceil(Date.now() / 1000) + 60,
  retryAfterSeconds: 0,
  degraded: false,
});
const deny = (limit: number): RateLimitDecision => ({ ...allow(limit), allowed: false, remaining: 0, retryAfterSeconds: 42 });

interface Harness {
  readonly base: string;
  readonly calls: {
    search: SearchRequest[];
    authenticate: number;
    debit: { accountId: string; micros: number; requestId: string }[];
    refund: string[];
    ipKeys: string[];
    accountKeys: string[];
  };
  readonly deps: GatewayDeps;
  close(): Promise<void>;
}

interface Overrides {
  search?: CoreApi["search"];
  coreHealth?: () => Promise<CoreServingStatus>;
  authenticate?: (key: string) => Promise<Principal | null>;
  debit?: () => Promise<DebitOutcome>;
  dbHealth?: () => Promise<StoreHealth>;
  cacheHealth?: () => Promise<ServiceHealth>;
  consumeIp?: (ip: string) => Promise<RateLimitDecision>;
  consumeAccount?: (id: string) => Promise<RateLimitDecision>;
  config?: Partial<GatewayAppConfig["gateway"]> & { coreTimeoutMs?: number };
  queryCacheTtlMs?: number;
}

const principal = (over: Partial<Principal> = {}): Principal => ({
  accountId: "acct_1",
  accountName: "acme",
  accountStatus: "active",
  keyPrefix: "rsk_GoodKey1",
  scopes: ["search"],
  ...over,
});

async function start(o: Overrides = {}): Promise<Harness> {
  const calls: Harness["calls"] = { search: [], authenticate: 0, debit: [], refund: [], ipKeys: [], accountKeys: [] };
  const config: GatewayAppConfig = {
    server: { coreTimeoutMs: o.config?.coreTimeoutMs ?? 2_000 },
    gateway: {
      trustedProxies: o.config?.trustedProxies ?? [],
      maxBodyBytes: o.config?.maxBodyBytes ?? 16_384,
      rateLimit: o.config?.rateLimit ?? { ipPerMinute: 30, accountPerMinute: 60, failMode: "closed", failOpenPerMinute: 600 },
    },
  };
  const deps: GatewayDeps = {
    core: {
      async search(req, opts) {
        calls.search.push(req);
        return o.search ? o.search(req, opts) : sampleResponse(req);
      },
      similar: async () => Promise.reject(new ReposearchError(ErrorCode.Internal, "not in this fake")),
      repository: async () => Promise.reject(new ReposearchError(ErrorCode.Internal, "not in this fake")),
      stats: async () => Promise.reject(new ReposearchError(ErrorCode.Internal, "not in this fake")),
      health: o.coreHealth ?? (async () => "SERVING"),
    },
    accounts: {
      async authenticate(key) {
        calls.authenticate++;
        if (o.authenticate) return o.authenticate(key);
        return key === GOOD_KEY ? principal() : null;
      },
      async debit(accountId, micros, requestId) {
        calls.debit.push({ accountId, micros, requestId });
        return o.debit ? o.debit() : { ok: true, balanceMicros: 5_000_000 };
      },
      async refund(requestId) {
        calls.refund.push(requestId);
        return true;
      },
      commit: async () => true,
      health: o.dbHealth ?? (async () => ({ status: "up", latencyMs: 1.2 })),
    },
    limiter: {
      async consumeIp(ip) {
        calls.ipKeys.push(ip);
        return o.consumeIp ? o.consumeIp(ip) : allow(30);
      },
      async consumeAccount(id) {
        calls.accountKeys.push(id);
        return o.consumeAccount ? o.consumeAccount(id) : allow(60);
      },
    },
    config,
    logger: new Logger({ test: "app" }),
    version: "9.9.9-test",
    startedAt: Date.now() - 12_345,
    cacheHealth: o.cacheHealth ?? (async () => ({ status: "up", latencyMs: 0.3 })),
    queryCache: o.queryCacheTtlMs ? createMemoryQueryCache({ ttlMs: o.queryCacheTtlMs, maxEntries: 100 }) : null,
    metrics: createGatewayMetrics(),
  };
  const app = createGatewayApp(deps);
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((r) => server.once("listening", () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    calls,
    deps,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function search(h: Harness, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${h.base}/v1/codehost/search`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": GOOD_KEY, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** Reads an error response, checks it against the Error schema and returns its `error` member. */
async function errorOf(
  res: Response,
  status: number,
  code: string,
): Promise<{ code: string; message: string; status: number; details?: { path: string; rule: string; message: string }[] }> {
  const body = (await res.json()) as { error: { code: string; message: string; status: number; details?: { path: string; rule: string; message: string }[] } };
  assert.deepEqual(validateResponse("Error", body).errors, []);
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error.code, code);
  assert.equal(body.error.status, status);
  assert.ok(!JSON.stringify(body).includes("    at "), "no stack trace in the body");
  return body.error;
}

async function json(res: Response, schema: SchemaName): Promise<unknown> {
  const body: unknown = await res.json();
  assert.deepEqual(validateResponse(schema, body).errors, []);
  return body;
}

test("search: 200 with the core's answer, one debit of the search price keyed by the request id, the binding scope's rate-limit headers", async () => {
  const h = await start();
  try {
    const res = await search(h, { query: "rate limiter", limit: 5, includeTree: true, filters: { language: "TypeScript" } });
    assert.equal(res.status, 200);
    const body = (await json(res, "SearchResponse")) as SearchResponse;
    assert.equal(body.results[0]!.tree, "README.md\nsrc/\nsrc/index.ts");
    assert.deepEqual(h.calls.search, [{ query: "rate limiter", limit: 5, includeTree: true, filters: { language: "TypeScript" } }]);
    assert.equal(h.calls.debit.length, 1);
    assert.equal(h.calls.debit[0]!.micros, SEARCH_PRICE_MICROS);
    assert.equal(h.calls.debit[0]!.accountId, "acct_1");
    assert.match(h.calls.debit[0]!.requestId, /^req_[0-9a-f]{32}$/);
    assert.equal(res.headers.get("x-request-id"), h.calls.debit[0]!.requestId);
    assert.deepEqual(h.calls.refund, []);
    // The per-IP scope binds first here: 29 of 30 left against the account's 59 of 60.
    assert.equal(res.headers.get("x-ratelimit-limit"), "30");
    assert.equal(res.headers.get("x-ratelimit-remaining"), "29");
    assert.match(res.headers.get("x-ratelimit-reset") ?? "", /^\d{10}$/);
    assert.deepEqual(h.calls.accountKeys, ["acct_1"]);
    assert.deepEqual(h.calls.ipKeys, ["127.0.0.1"]);
    // whitespace-only queries are valid input
    const blank = await search(h, { query: "   " });
    assert.equal(blank.status, 200);
  } finally {
    await h.close();
  }
});

test("X-Request-Id: a sane caller id is echoed, but the ledger is keyed by a server id; junk ids are replaced", async () => {
  const h = await start();
  try {
    const a = await search(h, { query: "x" }, { "x-request-id": "client-abc.123" });
    assert.equal(a.headers.get("x-request-id"), "client-abc.123");
    const b = await search(h, { query: "x" }, { "x-request-id": "client-abc.123" });
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(h.calls.debit.length, 2);
    assert.notEqual(h.calls.debit[0]!.requestId, h.calls.debit[1]!.requestId, "reusing an X-Request-Id cannot make a search free");
    const c = await fetch(`${h.base}/health`, { headers: { "x-request-id": "bad id with spaces <script>" } });
    assert.match(c.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{32}$/);
  } finally {
    await h.close();
  }
});

test("transport checks come before authentication: content type, size, JSON syntax", async () => {
  const h = await start({ config: { maxBodyBytes: 1024 } });
  try {
    const wrongType = await fetch(`${h.base}/v1/codehost/search`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ query: "x" }),
    });
    let e = await errorOf(wrongType, 400, "VALIDATION_ERROR");
    assert.equal(e.details?.[0]!.rule, "contentType");

    const big = await search(h, { query: "x".repeat(2000) }, { "x-api-key": "" });
    e = await errorOf(big, 400, "VALIDATION_ERROR");
    assert.deepEqual(e.details?.[0], { path: "", rule: "maxBodyBytes", message: "request body must be at most 1024 bytes" });

    const malformed = await search(h, '{"query": ', {});
    e = await errorOf(malformed, 400, "VALIDATION_ERROR");
    assert.equal(e.details?.[0]!.rule, "json");

    const primitive = await search(h, '"just a string"', {});
    await errorOf(primitive, 400, "VALIDATION_ERROR");

    const charsetJson = await fetch(`${h.base}/v1/codehost/search`, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8", "x-api-key": GOOD_KEY },
      body: JSON.stringify({ query: "x" }),
    });
    assert.equal(charsetJson.status, 200);
    assert.equal(h.calls.authenticate, 1, "only the well-formed request reached authentication");
  } finally {
    await h.close();
  }
});

test("authentication: missing → 401; unknown and revoked keys → the same 401; suspended or unscoped → 403 FORBIDDEN", async () => {
  const revoked = "rsk_Revoked1_xyz";
  const h = await start({
    authenticate: async (key) => {
      if (key === GOOD_KEY) return principal();
      if (key === "rsk_Suspend_1") return principal({ accountStatus: "suspended" });
      if (key === "rsk_NoScope_1") return principal({ scopes: ["admin"] });
      void revoked;
      return null;
    },
  });
  try {
    const missing = await search(h, { query: "x" }, { "x-api-key": "" });
    const m = await errorOf(missing, 401, "AUTH_ERROR");
    assert.match(m.message, /X-API-Key/);
    const unknown = await errorOf(await search(h, { query: "x" }, { "x-api-key": "rsk_Unknown_zzz" }), 401, "AUTH_ERROR");
    const rev = await errorOf(await search(h, { query: "x" }, { "x-api-key": revoked }), 401, "AUTH_ERROR");
    assert.equal(unknown.message, rev.message);
    await errorOf(await search(h, { query: "x" }, { "x-api-key": "k".repeat(600) }), 401, "AUTH_ERROR");
    const suspended = await errorOf(await search(h, { query: "x" }, { "x-api-key": "rsk_Suspend_1" }), 403, "FORBIDDEN");
    assert.match(suspended.message, /suspended/);
    await errorOf(await search(h, { query: "x" }, { "x-api-key": "rsk_NoScope_1" }), 403, "FORBIDDEN");
    assert.equal(h.calls.debit.length, 0);
    assert.equal(h.calls.search.length, 0);
    assert.equal(h.calls.accountKeys.length, 0, "the account limit is not consumed by unauthenticated callers");
  } finally {
    await h.close();
  }
});

test("unauthenticated callers learn nothing about the body: an invalid body without a key is 401", async () => {
  const h = await start();
  try {
    await errorOf(await search(h, { nope: true }, { "x-api-key": "" }), 401, "AUTH_ERROR");
  } finally {
    await h.close();
  }
});

test("body validation after auth: 400 with every detail, no charge", async () => {
  const h = await start();
  try {
    const e = await errorOf(await search(h, { query: "", limit: 0, extra: 1, filters: { minStars: -1, color: "red" } }), 400, "VALIDATION_ERROR");
    const got = (e.details ?? []).map((d) => `${d.path} ${d.rule}`).sort();
    assert.deepEqual(got, [
      "/extra additionalProperties",
      "/filters/color additionalProperties",
      "/filters/minStars minimum",
      "/limit minimum",
      "/query minLength",
    ]);
    await errorOf(await search(h, [1, 2]), 400, "VALIDATION_ERROR");
    const empty = await errorOf(await search(h, ""), 400, "VALIDATION_ERROR");
    assert.deepEqual(
      empty.details?.map((d) => `${d.path}|${d.rule}`),
      ["/query|required"],
      "an empty body parses as {}",
    );
    assert.equal(h.calls.debit.length, 0);
    assert.equal(h.calls.search.length, 0);
  } finally {
    await h.close();
  }
});

test("per-account limit → 429 with X-RateLimit-* and Retry-After, before body validation and without a charge", async () => {
  const h = await start({ consumeAccount: async () => deny(60) });
  try {
    const res = await search(h, { query: "x", limit: 999 });
    const e = await errorOf(res, 429, "RATE_LIMIT_EXCEEDED");
    assert.match(e.message, /per account/);
    assert.equal(res.headers.get("retry-after"), "42");
    assert.equal(res.headers.get("x-ratelimit-limit"), "60");
    assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
    assert.match(res.headers.get("x-ratelimit-reset") ?? "", /^\d+$/);
    assert.equal(h.calls.debit.length, 0);
  } finally {
    await h.close();
  }
});

test("per-IP limit applies to every request (search, health, docs, 404) before authentication", async () => {
  const h = await start({ consumeIp: async () => deny(30) });
  try {
    for (const [method, path] of [
      ["POST", "/v1/codehost/search"],
      ["GET", "/health"],
      ["GET", "/llms.txt"],
      ["GET", "/no/such/path"],
    ] as const) {
      const res = await fetch(h.base + path, { method, headers: { "content-type": "application/json" }, body: method === "POST" ? "{}" : undefined });
      const e = await errorOf(res, 429, "RATE_LIMIT_EXCEEDED");
      assert.match(e.message, /per IP/);
      assert.equal(res.headers.get("retry-after"), "42");
      assert.equal(res.headers.get("x-ratelimit-limit"), "30");
    }
    assert.equal(h.calls.authenticate, 0);
  } finally {
    await h.close();
  }
});

test("per-IP limit with the real memory limiter: the 31st request in a minute is refused", async () => {
  const limiter = await createLimiter(
    {
      gateway: {
        cacheBackend: "memory",
        redisUrl: "redis://127.0.0.1:1",
        redisCommandTimeoutMs: 500,
        rateLimit: { ipPerMinute: 30, accountPerMinute: 60, failMode: "closed", failOpenPerMinute: 600 },
      },
    },
    new Logger(),
  );
  const h = await start({ consumeIp: (ip) => limiter.consumeIp(ip) });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await fetch(`${h.base}/.well-known/openapi.json`)).status);
    assert.deepEqual(statuses.slice(0, 30), Array<number>(30).fill(200));
    assert.equal(statuses[30], 429);
  } finally {
    await h.close();
  }
});

test("limiter store down (fail closed) → 503 RATE_LIMIT_UNAVAILABLE with Retry-After only; /health still answers", async () => {
  const unavailable = async (): Promise<RateLimitDecision> => {
    throw new ReposearchError(ErrorCode.RateLimitUnavailable, "rate limiting is temporarily unavailable; retry later");
  };
  const h = await start({ consumeIp: unavailable, cacheHealth: async () => ({ status: "down", latencyMs: 1, error: "ECONNREFUSED" }) });
  try {
    const res = await search(h, { query: "x" });
    await errorOf(res, 503, "RATE_LIMIT_UNAVAILABLE");
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal(res.headers.get("x-ratelimit-limit"), null);
    const health = await fetch(`${h.base}/health`);
    assert.equal(health.status, 200);
    const body = (await json(health, "Health")) as { status: string };
    assert.equal(body.status, "degraded");
  } finally {
    await h.close();
  }
});

test("credits: insufficient → 403 INSUFFICIENT_CREDITS and the core is not called; ledger down → 502, nothing charged", async () => {
  const poor = await start({ debit: async () => ({ ok: false, reason: "insufficient_credits", balanceMicros: 500 }) });
  try {
    await errorOf(await search(poor, { query: "x" }), 403, "INSUFFICIENT_CREDITS");
    assert.equal(poor.calls.search.length, 0);
  } finally {
    await poor.close();
  }
  const down = await start({
    debit: async () => {
      throw new Error("connection terminated");
    },
  });
  try {
    const e = await errorOf(await search(down, { query: "x" }), 502, "EXTERNAL_SERVICE_ERROR");
    assert.match(e.message, /ledger/);
    assert.equal(down.calls.search.length, 0);
    assert.deepEqual(down.calls.refund, [down.calls.debit[0]!.requestId], "a debit that may have committed is reversed");
  } finally {
    await down.close();
  }
  const authDown = await start({
    authenticate: async () => {
      throw new Error(`db error while looking up ${GOOD_KEY}`);
    },
  });
  try {
    await errorOf(await search(authDown, { query: "x" }), 502, "EXTERNAL_SERVICE_ERROR");
    assert.equal(authDown.calls.debit.length, 0);
  } finally {
    await authDown.close();
  }
});

test("core failures: unavailable / deadline / internal → 502 and refunded; core VALIDATION_ERROR → 400 and refunded", async () => {
  const cases: { err: unknown; status: number; code: string }[] = [
    { err: new ReposearchError(ErrorCode.Unavailable, "index not loaded"), status: 502, code: "EXTERNAL_SERVICE_ERROR" },
    { err: new ReposearchError(ErrorCode.DeadlineExceeded, "deadline"), status: 502, code: "EXTERNAL_SERVICE_ERROR" },
    { err: new ReposearchError(ErrorCode.Internal, "segfault in engine at 0xdead"), status: 502, code: "EXTERNAL_SERVICE_ERROR" },
    {
      err: Object.assign(new Error("14 UNAVAILABLE: connect ECONNREFUSED"), { code: 14, details: "connect ECONNREFUSED" }),
      status: 502,
      code: "EXTERNAL_SERVICE_ERROR",
    },
    { err: new Error("boom"), status: 502, code: "EXTERNAL_SERVICE_ERROR" },
    {
      err: new ReposearchError(ErrorCode.ValidationError, "filters.maxStars must be >= minStars", {
        details: [{ path: "filters.excludeRepos[3]", rule: "pattern", message: "must be owner/repo" }],
      }),
      status: 400,
      code: "VALIDATION_ERROR",
    },
  ];
  for (const c of cases) {
    const h = await start({
      search: async () => {
        throw c.err;
      },
    });
    try {
      const e = await errorOf(await search(h, { query: "x" }), c.status, c.code);
      assert.ok(!e.message.includes("0xdead") && !e.message.includes("ECONNREFUSED"), "internal detail stays in the log");
      if (c.status === 400) assert.deepEqual(e.details, [{ path: "/filters/excludeRepos/3", rule: "pattern", message: "must be owner/repo" }]);
      assert.equal(h.calls.debit.length, 1);
      assert.deepEqual(h.calls.refund, [h.calls.debit[0]!.requestId]);
    } finally {
      await h.close();
    }
  }
});

test("core that ignores its deadline: 502 shortly after coreTimeoutMs, refunded; the deadline and a signal reach the core", async () => {
  let seen: { deadlineMs: number; signal?: AbortSignal } | undefined;
  const h = await start({
    config: { coreTimeoutMs: 100 },
    search: (_req, opts) => {
      seen = opts;
      return new Promise<SearchResponse>(() => {});
    },
  });
  try {
    const t0 = Date.now();
    await errorOf(await search(h, { query: "x" }), 502, "EXTERNAL_SERVICE_ERROR");
    assert.ok(Date.now() - t0 < 1500);
    assert.equal(seen?.deadlineMs, 100);
    assert.equal(seen?.signal?.aborted, true);
    assert.equal(h.calls.refund.length, 1);
  } finally {
    await h.close();
  }
});

test("unexpected errors → 500 INTERNAL_ERROR with a generic message; the cause is logged without the key", async () => {
  const h = await start({
    consumeAccount: async () => {
      throw new TypeError(`cannot read property of undefined (key ${GOOD_KEY})`);
    },
  });
  try {
    const e = await errorOf(await search(h, { query: "x" }), 500, "INTERNAL_ERROR");
    assert.equal(e.message, "internal error");
    const line = logLines.find((l) => l.includes("internal error") && l.includes("cannot read property"));
    assert.ok(line, "cause is logged");
    assert.ok(line.includes("[REDACTED]"));
  } finally {
    await h.close();
  }
});

test("query cache: an identical request is served from the cache, still charged and counted; metrics record hit and miss", async () => {
  const h = await start({ queryCacheTtlMs: 60_000 });
  try {
    const a = await search(h, { query: "cache me" });
    const b = await search(h, { query: "cache me", limit: 10, filters: { excludeArchived: true } });
    const c = await search(h, { query: "cache me", limit: 3 });
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(c.status, 200);
    assert.deepEqual(await b.json(), await a.json());
    assert.equal(h.calls.search.length, 2, "second request hit the cache, third has another limit");
    assert.equal(h.calls.debit.length, 3);
    assert.equal(h.calls.accountKeys.length, 3);
    const metrics = await (await fetch(`${h.base}/metrics`)).text();
    assert.match(metrics, /query_cache_requests_total\{result="hit"\} 1/);
    assert.match(metrics, /query_cache_requests_total\{result="miss"\} 2/);
    assert.match(metrics, /http_request_duration_seconds_count\{method="POST",route="\/v1\/codehost\/search",status="200"\} 3/);
    assert.match(metrics, /process_cpu_user_seconds_total/);
  } finally {
    await h.close();
  }
});

test("health: healthy / degraded (cache down) / unhealthy (core not serving, core unreachable, db down) / never hangs", async () => {
  const cases: { o: Overrides; status: number; overall: string }[] = [
    { o: {}, status: 200, overall: "healthy" },
    { o: { cacheHealth: async () => ({ status: "down", latencyMs: 2, error: "ECONNREFUSED" }) }, status: 200, overall: "degraded" },
    { o: { coreHealth: async () => "NOT_SERVING" }, status: 503, overall: "unhealthy" },
    {
      o: {
        coreHealth: async () => {
          throw new Error("unreachable");
        },
      },
      status: 503,
      overall: "unhealthy",
    },
    { o: { dbHealth: async () => ({ status: "down", latencyMs: 3, error: "connection refused" }) }, status: 503, overall: "unhealthy" },
    {
      o: { coreHealth: () => new Promise<CoreServingStatus>(() => {}), dbHealth: () => new Promise<StoreHealth>(() => {}) },
      status: 503,
      overall: "unhealthy",
    },
  ];
  for (const c of cases) {
    const h = await start(c.o);
    try {
      const t0 = Date.now();
      const res = await fetch(`${h.base}/health`);
      assert.ok(Date.now() - t0 < 2_000, "answers within the check timeout");
      assert.equal(res.status, c.status);
      const body = (await json(res, "Health")) as { status: string; version: string; uptime: number; services: { db: ServiceHealth; cache: ServiceHealth } };
      assert.equal(body.status, c.overall);
      assert.equal(body.version, "9.9.9-test");
      assert.ok(body.uptime >= 12.3 && body.uptime < 60, `uptime in seconds: ${body.uptime}`);
      assert.equal(Math.round(body.uptime * 10), body.uptime * 10, "one decimal");
    } finally {
      await h.close();
    }
  }
});

test("descriptive documents: openapi.json is the document; llms.txt follows llmstxt.org; /docs is self-hosted", async () => {
  const h = await start();
  try {
    const doc = await fetch(`${h.base}/.well-known/openapi.json`);
    assert.equal(doc.status, 200);
    assert.match(doc.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(await doc.json(), JSON.parse(JSON.stringify(openApiDocument)));

    const llms = await fetch(`${h.base}/llms.txt`);
    assert.match(llms.headers.get("content-type") ?? "", /text\/plain/);
    const text = await llms.text();
    assert.ok(text.startsWith("# reposearch\n\n> "));
    assert.match(text, /\]\(\/\.well-known\/openapi\.json\)/);
    assert.match(text, /\]\(\/docs\)/);
    assert.match(text, /^## Docs$/m);
    for (const word of ["X-API-Key", "Retry-After", "INSUFFICIENT_CREDITS", "$0.001", "staleAfterMonths", "30 requests per minute", "60 searches per minute"]) {
      assert.ok(text.includes(word), `llms.txt mentions ${word}`);
    }

    const page = await fetch(`${h.base}/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'self'/);
    const html = await page.text();
    assert.ok(!/https?:\/\//.test(html), "no external URLs on the page");
    for (const src of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const asset = await fetch(h.base + src[1]);
      assert.equal(asset.status, 200, src[1]);
      await asset.arrayBuffer();
    }
    const init = await (await fetch(`${h.base}/docs/init.js`)).text();
    assert.match(init, /\/\.well-known\/openapi\.json/);
    assert.match(init, /validatorUrl: null/);
    // the package's own petstore initializer and index are not exposed
    await errorOf(await fetch(`${h.base}/docs/swagger-initializer.js`), 404, "NOT_FOUND");
    await errorOf(await fetch(`${h.base}/docs/index.html`), 404, "NOT_FOUND");
    await errorOf(await fetch(`${h.base}/docs/..%2Fpackage.json`), 404, "NOT_FOUND");
  } finally {
    await h.close();
  }
});

test("unknown routes and wrong methods → 404 NOT_FOUND in the error shape", async () => {
  const h = await start();
  try {
    await errorOf(await fetch(`${h.base}/v2/search`), 404, "NOT_FOUND");
    const wrong = await errorOf(await fetch(`${h.base}/v1/codehost/search`), 404, "NOT_FOUND");
    assert.match(wrong.message, /GET is not supported/);
    await errorOf(await fetch(`${h.base}/health`, { method: "POST" }), 404, "NOT_FOUND");
    const metrics = await (await fetch(`${h.base}/metrics`)).text();
    assert.match(metrics, /route="unmatched",status="404"/);
  } finally {
    await h.close();
  }
});

test("toJsonPointer: dotted core paths become JSON pointers", () => {
  assert.equal(toJsonPointer(""), "");
  assert.equal(toJsonPointer("query"), "/query");
  assert.equal(toJsonPointer("filters.minStars"), "/filters/minStars");
  assert.equal(toJsonPointer("filters.excludeRepos[12]"), "/filters/excludeRepos/12");
  assert.equal(toJsonPointer("/already/pointer"), "/already/pointer");
});

test("client IP: behind a trusted proxy the right-most untrusted X-Forwarded-For hop is limited", async () => {
  const h = await start({ config: { trustedProxies: ["127.0.0.1"] } });
  try {
    await fetch(`${h.base}/health`, { headers: { "x-forwarded-for": "6.6.6.6, 203.0.113.50" } });
    await fetch(`${h.base}/health`, { headers: { "x-forwarded-for": "2001:db8:1:2::99" } });
    assert.deepEqual(h.calls.ipKeys, ["203.0.113.50", "2001:db8:1:2::/64"]);
  } finally {
    await h.close();
  }
  const direct = await start();
  try {
    await fetch(`${direct.base}/health`, { headers: { "x-forwarded-for": "203.0.113.50" } });
    assert.deepEqual(direct.calls.ipKeys, ["127.0.0.1"], "X-Forwarded-For is ignored from untrusted peers");
  } finally {
    await direct.close();
  }
});

test("access log: one line per request with route template and status, never headers or keys", async () => {
  const h = await start();
  try {
    logLines.length = 0;
    await search(h, { query: "x" });
    const line = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === "request");
    assert.ok(line);
    assert.equal(line.method, "POST");
    assert.equal(line.route, "/v1/codehost/search");
    assert.equal(line.status, 200);
    assert.equal(typeof line.durationMs, "number");
    assert.equal(line.accountId, "acct_1");
    assert.equal(line.keyPrefix, "rsk_GoodKey1");
    assert.ok(!JSON.stringify(line).toLowerCase().includes("x-api-key"));
  } finally {
    await h.close();
  }
});
