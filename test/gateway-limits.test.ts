/**
 * Limits and credits under concurrency, end to end over real HTTP: a real gRPC core over a small real
 * index, real gateways on the real Redis (REDIS_URL, default redis://127.0.0.1:6379), SQLite and
 * Postgres ledgers.
 *
 * Isolation on a shared Redis: every account is fresh (its limiter key is unique), the gateways
 * trust 127.0.0.1 as a proxy so each test presents its own client address in X-Forwarded-For
 * (a unique per-IP key), queries carry a per-run nonce (unique query-cache keys), and exactly the
 * keys this file touched are deleted at the end. Nothing is flushed.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, onTestFinished, test } from "vitest";
import { skipTest } from "./support/skip.js";
import { Redis } from "ioredis";
import pg from "pg";
import { setLogLevel, setLogSink } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import { SqliteAccountStore } from "../src/gateway/accounts/sqlite.js";
import { MICROS_PER_USD, SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { queryCacheKey } from "../src/gateway/query-cache.js";
import { validateResponse } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, startCli, tempDir } from "./helpers.js";
import { buildIndex, fundedAccount, postSearch, stackEnv, uniqueName, type TestAccount } from "./stack.js";

const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const DATABASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const VERSION = "0.0.0-limits";
const NONCE = randomBytes(6).toString("hex");

// Warnings and errors only; they are printed when a test fails.
const logLines: string[] = [];
const restoreSink = setLogSink((line) => logLines.push(line));
setLogLevel("warn");

let dir: string;
let core: CoreHandle;
let redis: Redis;
/** Redis keys this file made; deleted at the end. */
const touchedKeys = new Set<string>();
const closers: (() => Promise<void>)[] = [];

/** A client address of its own (TEST-NET-2/benchmark range), so per-IP counters never collide with other runs. */
function uniqueIp(): string {
  const b = randomBytes(2);
  const ip = `198.${18 + (b[0]! & 1)}.${b[1]}.${1 + Math.floor(Math.random() * 254)}`;
  touchedKeys.add(`reposearch:rl:ip:${ip}`);
  return ip;
}

function gatewayEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return stackEnv(dir, {
    LOG_LEVEL: "warn",
    LEDGER_SQLITE_PATH: path.join(dir, "ledger.sqlite"),
    CACHE_BACKEND: "redis",
    REDIS_URL,
    RATE_LIMIT_FAIL_MODE: "closed",
    TRUSTED_PROXIES: "127.0.0.1",
    // Generous: 60 searches land on a 2-core machine at once, beside the rest of the suite. The
    // limits' own tests count admissions; how a slow Redis fails is tested in faults.test.ts.
    CORE_TIMEOUT_MS: "30000",
    REDIS_COMMAND_TIMEOUT_MS: "5000",
    ...extra,
  });
}

async function inProcessGateway(extra: Record<string, string>): Promise<GatewayHandle> {
  const g = await startGateway(loadConfig(gatewayEnv(extra)), { version: VERSION, coreAddress: core.grpc.address });
  closers.push(() => g.close());
  return g;
}

/** A fresh account on `store` with `usd` of credit and a key; its limiter key is remembered for cleanup. */
async function account(store: AccountStore, usd: number): Promise<TestAccount> {
  const a = await fundedAccount(store, uniqueName("lim", 12), usd);
  touchedKeys.add(`reposearch:rl:acct:${a.id}`);
  return a;
}

function search(base: string, key: string | undefined, ip: string, query = `json parser ${NONCE}`): Promise<Response> {
  touchedKeys.add(`reposearch:qc:${queryCacheKey({ query })}`);
  return postSearch(base, { query }, key, { "x-forwarded-for": ip });
}

interface Answer {
  readonly status: number;
  readonly code?: string;
  readonly headers: Headers;
}

/** Reads and validates a response body (SearchResponse or Error) and returns its status and error code. */
async function answer(res: Response): Promise<Answer> {
  const body = (await res.json()) as { error?: { code: string } };
  const schema = res.status === 200 ? "SearchResponse" : "Error";
  assert.deepEqual(validateResponse(schema, body).errors, [], `${res.status} body: ${JSON.stringify(body).slice(0, 500)}`);
  return { status: res.status, ...(body.error ? { code: body.error.code } : {}), headers: res.headers };
}

function countBy(answers: readonly Answer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) {
    const k = a.code ? `${a.status} ${a.code}` : String(a.status);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect().catch((e: unknown) => {
    throw new Error(`these tests need Redis at ${REDIS_URL} (set REDIS_URL): ${(e as Error).message}`);
  });
  dir = await tempDir("gw-limits");
  await buildIndex(dir, await datasetLines(600));
  core = await startCore(loadConfig(gatewayEnv()), { version: VERSION });
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await core?.close();
  if (redis) {
    if (touchedKeys.size > 0) await redis.del(...touchedKeys).catch(() => 0);
    redis.disconnect();
  }
  setLogSink(restoreSink);
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("100 parallel searches against a per-account limit of 60 → exactly 60 × 200 and 40 × 429; 60 charges", async () => {
  const gw = await inProcessGateway({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "60" });
  const a = await account(gw.accounts, 5);
  const ip = uniqueIp();
  const answers = await Promise.all(Array.from({ length: 100 }, () => search(gw.url, a.key, ip).then(answer)));
  assert.deepEqual(countBy(answers), { "200": 60, "429 RATE_LIMIT_EXCEEDED": 40 }, logLines.slice(-5).join("\n"));
  // Each admitted request saw its own count: remaining 59, 58, …, 0, each exactly once.
  const remaining = answers.filter((x) => x.status === 200).map((x) => Number(x.headers.get("x-ratelimit-remaining")));
  assert.deepEqual(
    remaining.sort((x, y) => x - y),
    Array.from({ length: 60 }, (_, i) => i),
  );
  for (const r of answers.filter((x) => x.status === 429)) {
    assert.equal(r.headers.get("x-ratelimit-limit"), "60");
    assert.equal(r.headers.get("x-ratelimit-remaining"), "0");
    assert.ok(Number(r.headers.get("retry-after")) >= 1);
    assert.ok(Number(r.headers.get("x-ratelimit-reset")) > Date.now() / 1000 - 1);
  }
  assert.equal(await gw.accounts.balance(a.name), 5 * MICROS_PER_USD - 60 * SEARCH_PRICE_MICROS);
  assert.equal(Number(await redis.get(`reposearch:rl:acct:${a.id}`)), 100, "the counter lives in Redis");
  assert.equal(await redis.exists(`reposearch:qc:${queryCacheKey({ query: `json parser ${NONCE}` })}`), 1, "the answer is in the shared query cache");
});

test("two gateway processes sharing Redis and a SQLite ledger admit exactly the limit in total", async () => {
  const children: ChildProcess[] = [];
  onTestFinished(async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            const timer = setTimeout(() => c.kill("SIGKILL"), 5_000);
            c.once("exit", () => {
              clearTimeout(timer);
              resolve();
            });
            c.kill("SIGTERM");
          }),
      ),
    );
  });
  const env = gatewayEnv({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "60", CORE_ADDRESS: core.grpc.address });
  const urls = await Promise.all(
    [0, 1].map(async () => {
      const { child, done } = startCli(["serve", "--role", "gateway"], env);
      children.push(child);
      let out = "";
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`gateway did not start within 20 s: ${out}`)), 20_000);
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /serving at (http:\/\/\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        void done.then((r) => {
          clearTimeout(timer);
          reject(new Error(`gateway exited with ${r.code}: ${r.stderr.slice(-2000)}`));
        });
      });
    }),
  );
  assert.notEqual(urls[0], urls[1]);

  // The test's own connection to the ledger file both processes use.
  const store = SqliteAccountStore.open(path.join(dir, "ledger.sqlite"));
  onTestFinished(() => store.close());
  const a = await account(store, 5);
  const ip = uniqueIp();
  const answers = await Promise.all(
    Array.from({ length: 100 }, (_, i) => search(urls[i % 2]!, a.key, ip).then((r) => answer(r).then((x) => ({ ...x, via: i % 2 })))),
  );
  assert.deepEqual(countBy(answers), { "200": 60, "429 RATE_LIMIT_EXCEEDED": 40 }, "without a shared count each process would admit 50");
  const perProcess = [0, 1].map((p) => answers.filter((x) => x.via === p && x.status === 200).length);
  assert.equal(perProcess[0]! + perProcess[1]!, 60, `admitted per process: ${perProcess.join(" + ")}`);
  assert.equal(await store.balance(a.name), 5 * MICROS_PER_USD - 60 * SEARCH_PRICE_MICROS, "both processes charge the one ledger, exactly once each");
});

test("the per-IP limit applies before authentication, to every path, per client address", async () => {
  const gw = await inProcessGateway({ RATE_LIMIT_IP_PER_MINUTE: "5" });
  const a = await account(gw.accounts, 5);
  const ip = uniqueIp();
  const statuses: string[] = [];
  for (let i = 0; i < 3; i++) statuses.push(`${(await answer(await search(gw.url, undefined, ip))).status}`);
  statuses.push(`${(await answer(await search(gw.url, "rsk_notAKey", ip))).status}`);
  statuses.push(`${(await fetch(`${gw.url}/health`, { headers: { "x-forwarded-for": ip } })).status}`);
  assert.deepEqual(statuses, ["401", "401", "401", "401", "200"]);
  // Over the limit: unauthenticated, authenticated, health, unknown paths all get 429 from the IP scope.
  for (const res of [
    await search(gw.url, undefined, ip),
    await search(gw.url, a.key, ip),
    await fetch(`${gw.url}/health`, { headers: { "x-forwarded-for": ip } }),
    await fetch(`${gw.url}/nope`, { headers: { "x-forwarded-for": ip } }),
  ]) {
    const x = await answer(res);
    assert.equal(x.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(x.headers.get("x-ratelimit-limit"), "5");
    assert.ok(Number(x.headers.get("retry-after")) >= 1);
  }
  assert.equal(await gw.accounts.balance(a.name), 5 * MICROS_PER_USD, "nothing charged");
  // Another client address has its own counter; the same account searches fine from there.
  assert.equal((await answer(await search(gw.url, a.key, uniqueIp()))).status, 200);
  assert.equal(Number(await redis.get(`reposearch:rl:ip:${ip}`)), 9);
});

/** $5 is the smallest top-up: spend all but `searches` prices directly on the ledger. */
async function leaveSearches(store: AccountStore, acct: { name: string; id: string }, searches: number): Promise<void> {
  await store.debit(acct.id, 5 * MICROS_PER_USD - searches * SEARCH_PRICE_MICROS, `drain-${randomUUID()}`);
  assert.equal(await store.balance(acct.name), searches * SEARCH_PRICE_MICROS);
}

async function creditRace(gateways: readonly GatewayHandle[], store: AccountStore): Promise<void> {
  // N parallel searches with plenty of credit: the balance drops by exactly N prices.
  const rich = await account(store, 5);
  const ip = uniqueIp();
  const n = 50;
  const ok = await Promise.all(
    Array.from({ length: n }, (_, i) => search(gateways[i % gateways.length]!.url, rich.key, ip, `orm ${i % 7} ${NONCE}`).then(answer)),
  );
  assert.deepEqual(countBy(ok), { "200": n });
  assert.equal(await store.balance(rich.name), 5 * MICROS_PER_USD - n * SEARCH_PRICE_MICROS);

  // 50 parallel searches with a balance of exactly 30: 30 answered, 20 refused, balance 0, never negative.
  const poor = await account(store, 5);
  await leaveSearches(store, poor, 30);
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => search(gateways[i % gateways.length]!.url, poor.key, ip, `yaml ${i % 5} ${NONCE}`).then(answer)),
  );
  assert.deepEqual(countBy(answers), { "200": 30, "403 INSUFFICIENT_CREDITS": 20 });
  assert.equal(await store.balance(poor.name), 0);
}

test("credits under concurrency on SQLite: exact debits, and a balance of 30 searches admits exactly 30 of 50", async () => {
  const gw = await inProcessGateway({});
  await creditRace([gw], gw.accounts);
});

test("credits under concurrency on Postgres, two gateways on one ledger", async (t) => {
  const schema = `gw_limits_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (e) {
    return skipTest(t, `Postgres unreachable at ${DATABASE_URL}: ${(e as Error).message}`);
  }
  await admin.query(`CREATE SCHEMA ${schema}`);
  onTestFinished(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  const url = `${DATABASE_URL}${DATABASE_URL.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const pgEnv = { LEDGER_BACKEND: "postgres", DATABASE_URL: url };
  const a = await inProcessGateway(pgEnv);
  const b = await inProcessGateway(pgEnv);
  assert.equal(a.accounts.backend, "postgres");
  await creditRace([a, b], a.accounts);
  const kinds = await admin.query(`SELECT kind, count(*)::int AS n FROM ${schema}.ledger GROUP BY kind ORDER BY kind`);
  assert.deepEqual(kinds.rows, [
    { kind: "debit", n: 50 + 1 + 30 }, // 50 searches, 1 drain, 30 searches
    { kind: "topup", n: 2 },
  ]);
});

test("rate-limit headers report the scope that binds first (fewer remaining), on every answer", async () => {
  const gw = await inProcessGateway({ RATE_LIMIT_IP_PER_MINUTE: "10", RATE_LIMIT_ACCOUNT_PER_MINUTE: "15" });
  const a = await account(gw.accounts, 5);
  const [ipA, ipB] = [uniqueIp(), uniqueIp()];
  const headers = (x: Answer) => [x.status, x.headers.get("x-ratelimit-limit"), x.headers.get("x-ratelimit-remaining")];
  // From ipA the per-IP budget (10) runs out before the account's (15): the headers follow the IP scope.
  const fromA: Answer[] = [];
  for (let i = 0; i < 10; i++) fromA.push(await answer(await search(gw.url, a.key, ipA)));
  assert.deepEqual(
    fromA.map(headers),
    Array.from({ length: 10 }, (_, i) => [200, "10", String(9 - i)]),
    "a client pacing itself by the headers sees the per-IP budget it is about to exhaust",
  );
  const refusedA = await answer(await search(gw.url, a.key, ipA));
  assert.deepEqual(headers(refusedA), [429, "10", "0"]);
  // From ipB the account has 5 left and the address 10: the account binds.
  const fromB: Answer[] = [];
  for (let i = 0; i < 5; i++) fromB.push(await answer(await search(gw.url, a.key, ipB)));
  assert.deepEqual(
    fromB.map(headers),
    Array.from({ length: 5 }, (_, i) => [200, "15", String(4 - i)]),
  );
  const refusedB = await answer(await search(gw.url, a.key, ipB));
  assert.equal(refusedB.code, "RATE_LIMIT_EXCEEDED");
  assert.deepEqual(headers(refusedB), [429, "15", "0"]);
  assert.ok(Number(refusedB.headers.get("retry-after")) >= 1);
  // Answers other than a search pass the per-IP limit only, and report it: health, a 401.
  const health = await fetch(`${gw.url}/health`, { headers: { "x-forwarded-for": ipB } });
  assert.deepEqual([health.status, health.headers.get("x-ratelimit-limit"), health.headers.get("x-ratelimit-remaining")], [200, "10", "3"]);
  const unauth = await answer(await search(gw.url, undefined, ipB));
  assert.deepEqual(headers(unauth), [401, "10", "2"]);
  assert.equal(await gw.accounts.balance(a.name), 5 * MICROS_PER_USD - 15 * SEARCH_PRICE_MICROS);
});

test("forwarding headers cannot choose the per-IP key: ignored from untrusted peers; behind a trusted proxy only the right-most untrusted hop counts", async () => {
  const spoofs = (i: number): Record<string, string> => ({
    "x-forwarded-for": `203.0.113.${i}`,
    "x-real-ip": `203.0.113.${i}`,
    forwarded: `for=203.0.113.${i}`,
    "true-client-ip": `203.0.113.${i}`,
    "cf-connecting-ip": `203.0.113.${i}`,
    "x-client-ip": `203.0.113.${i}`,
  });
  // No trusted proxy: the socket's address is the key whatever the headers say. (Memory backend: the
  // key 127.0.0.1 is then this gateway's own, not shared with other runs on Redis.)
  const direct = await inProcessGateway({ CACHE_BACKEND: "memory", TRUSTED_PROXIES: "", RATE_LIMIT_IP_PER_MINUTE: "5" });
  const directStatuses: number[] = [];
  for (let i = 1; i <= 8; i++) directStatuses.push((await fetch(`${direct.url}/health`, { headers: spoofs(i) })).status);
  assert.deepEqual(directStatuses, [200, 200, 200, 200, 200, 429, 429, 429]);

  // Behind a trusted proxy (127.0.0.1): entries the client wrote to the left of the proxy's are ignored.
  const proxied = await inProcessGateway({ RATE_LIMIT_IP_PER_MINUTE: "5" });
  const client = uniqueIp();
  const proxiedStatuses: number[] = [];
  for (let i = 1; i <= 8; i++) {
    const forged = `198.51.100.${i}, 10.${i}.0.1`;
    proxiedStatuses.push((await fetch(`${proxied.url}/health`, { headers: { ...spoofs(i), "x-forwarded-for": `${forged}, ${client}` } })).status);
  }
  assert.deepEqual(proxiedStatuses, [200, 200, 200, 200, 200, 429, 429, 429]);
  assert.equal(Number(await redis.get(`reposearch:rl:ip:${client}`)), 8, "counted under the address the proxy saw");
});
