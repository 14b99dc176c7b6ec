/**
 * The typed client (`reposearch/client`) against the real gateway: a small real index, a real core
 * and gateways in this process. Answers are checked against the OpenAPI document's schemas; every
 * error is a RepoSearchError with the contract's code, status, details and Retry-After; 429 and 503
 * are retried after the answer's Retry-After, 502 after a backoff, within maxAttempts.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, test } from "vitest";
import { RepoSearchClient, RepoSearchError, type RetryEvent } from "../src/client/index.js";
import type { SearchResponse } from "reposearch/client";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { MICROS_PER_USD, SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { validateResponse } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, oneRecordPerName, tempDir } from "./helpers.js";
import { buildIndex, freePort, fundedAccount, stackEnv, uniqueName } from "./stack.js";

const VERSION = "0.0.0-client";

let dir: string;
let core: CoreHandle;
let gw: GatewayHandle;
let accounts: AccountStore;
let repoName: string;
const closers: (() => Promise<void>)[] = [];

async function extraGateway(extra: Record<string, string>, coreAddress = core.grpc.address): Promise<GatewayHandle> {
  const g = await startGateway(loadConfig(stackEnv(dir, extra)), { version: VERSION, coreAddress });
  closers.push(() => g.close());
  return g;
}

async function failure(call: Promise<unknown>): Promise<RepoSearchError> {
  const err = await call.then(
    () => assert.fail("resolved"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RepoSearchError, String(err));
  return err;
}

beforeAll(async () => {
  dir = await tempDir("client");
  await buildIndex(dir, oneRecordPerName(await datasetLines(600)));
  const config = loadConfig(stackEnv(dir));
  core = await startCore(config, { version: VERSION });
  gw = await startGateway(config, { version: VERSION, coreAddress: core.grpc.address });
  accounts = gw.accounts;
  repoName = (await core.engine.search({ query: "library" })).results[0]!.name;
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await gw?.close();
  await core?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("answers", () => {
  test("search, similar and repository return the contract's answers", async () => {
    const a = await fundedAccount(accounts, uniqueName("client"), 5);
    const client = new RepoSearchClient({ baseUrl: gw.url, apiKey: a.key });
    const found: SearchResponse = await client.search({ query: "library", limit: 3, filters: { minStars: 1 } });
    assert.deepEqual(validateResponse("SearchResponse", found).errors, []);
    assert.equal(found.results.length, 3);
    assert.equal(found.meta.appliedFilters.minStars, 1);
    const similar = await client.similar({ repo: repoName, limit: 2 });
    assert.deepEqual(validateResponse("SearchResponse", similar).errors, []);
    assert.ok(!similar.results.some((r) => r.name === repoName));
    const card = await client.repository(repoName);
    assert.deepEqual(validateResponse("Repository", card).errors, []);
    assert.equal(card.name, repoName);
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD - 2 * SEARCH_PRICE_MICROS, "search and similar charged, the card free");
  });
});

describe("errors carry the contract's code and are not retried when the caller must act", () => {
  test("400 with every detail, 401, 404: one attempt each, readonly fields, the request id", async () => {
    const a = await fundedAccount(accounts, uniqueName("client-err"), 5);
    const retries: RetryEvent[] = [];
    const client = new RepoSearchClient({ baseUrl: gw.url, apiKey: a.key, onRetry: (e) => retries.push(e) });
    const bad = await failure(client.search({ query: "x", limit: 500, filters: { staleAfterMonths: 0 } }));
    assert.equal(bad.code, "VALIDATION_ERROR");
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.details.map((d) => d.path).sort(), ["/filters/staleAfterMonths", "/limit"]);
    assert.equal(bad.attempts, 1);
    assert.match(bad.requestId ?? "", /^req_/);
    const unknown = await failure(client.repository("no-such-owner/no-such-repo"));
    assert.equal(unknown.code, "NOT_FOUND");
    assert.equal(unknown.status, 404);
    const similarUnknown = await failure(client.similar({ repo: "no-such-owner/no-such-repo" }));
    assert.equal(similarUnknown.code, "NOT_FOUND");
    const anonymous = await failure(new RepoSearchClient({ baseUrl: gw.url }).search({ query: "x" }));
    assert.equal(anonymous.code, "AUTH_ERROR");
    assert.equal(anonymous.status, 401);
    assert.deepEqual(retries, []);
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD, "nothing charged");
  });
});

describe("retries", () => {
  test("429: the error carries Retry-After; a longer wait than maxRetryDelayMs fails at once; with room, the client waits it out and succeeds", async () => {
    const limited = await extraGateway({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "1" });
    const a = await fundedAccount(limited.accounts, uniqueName("client-429"), 5);
    await new RepoSearchClient({ baseUrl: limited.url, apiKey: a.key }).search({ query: "library" });

    const once = await failure(new RepoSearchClient({ baseUrl: limited.url, apiKey: a.key, maxAttempts: 1 }).search({ query: "library" }));
    assert.equal(once.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(once.status, 429);
    assert.ok(once.retryAfterSeconds !== null && once.retryAfterSeconds >= 1 && once.retryAfterSeconds <= 60, String(once.retryAfterSeconds));
    assert.equal(once.attempts, 1);

    const impatient = await failure(
      new RepoSearchClient({ baseUrl: limited.url, apiKey: a.key, maxAttempts: 5, maxRetryDelayMs: 0 }).search({ query: "library" }),
    );
    assert.equal(impatient.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(impatient.attempts, 1, "a Retry-After beyond maxRetryDelayMs ends the call");

    const retries: RetryEvent[] = [];
    const patient = new RepoSearchClient({ baseUrl: limited.url, apiKey: a.key, maxAttempts: 2, maxRetryDelayMs: 65_000, onRetry: (e) => retries.push(e) });
    const t0 = Date.now();
    const res = await patient.search({ query: "library" });
    assert.ok(res.results.length > 0);
    assert.equal(retries.length, 1);
    assert.equal(retries[0]!.error.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(retries[0]!.delayMs, retries[0]!.error.retryAfterSeconds! * 1000, "waited what Retry-After said");
    assert.ok(Date.now() - t0 >= retries[0]!.delayMs - 50);
    assert.equal(await limited.accounts.balance(a.name), 5 * MICROS_PER_USD - 2 * SEARCH_PRICE_MICROS, "only the two answered searches were charged");
  });

  test("503 RATE_LIMIT_UNAVAILABLE: retried after its Retry-After, up to maxAttempts", async () => {
    const dead = await extraGateway({ CACHE_BACKEND: "redis", REDIS_URL: `redis://127.0.0.1:${await freePort()}`, RATE_LIMIT_FAIL_MODE: "closed" });
    const retries: RetryEvent[] = [];
    const client = new RepoSearchClient({ baseUrl: dead.url, apiKey: "rsk_any", maxAttempts: 2, onRetry: (e) => retries.push(e) });
    const t0 = Date.now();
    const err = await failure(client.search({ query: "x" }));
    assert.equal(err.code, "RATE_LIMIT_UNAVAILABLE");
    assert.equal(err.status, 503);
    assert.equal(err.retryAfterSeconds, 5);
    assert.equal(err.attempts, 2);
    assert.deepEqual(
      retries.map((r) => r.delayMs),
      [5_000],
    );
    assert.ok(Date.now() - t0 >= 5_000);
  });

  test("502 when the core is unreachable: retried with backoff, then the error; each attempt refunded", async () => {
    const orphan = await extraGateway({ CORE_TIMEOUT_MS: "1000" }, `127.0.0.1:${await freePort()}`);
    const a = await fundedAccount(orphan.accounts, uniqueName("client-502"), 5);
    const retries: RetryEvent[] = [];
    const err = await failure(
      new RepoSearchClient({ baseUrl: orphan.url, apiKey: a.key, maxAttempts: 3, onRetry: (e) => retries.push(e) }).search({ query: "x" }),
    );
    assert.equal(err.code, "EXTERNAL_SERVICE_ERROR");
    assert.equal(err.status, 502);
    assert.equal(err.attempts, 3);
    assert.equal(retries.length, 2);
    assert.ok(retries.every((r) => r.delayMs > 0 && r.delayMs <= 8_000));
    assert.equal(await orphan.accounts.balance(a.name), 5 * MICROS_PER_USD);
  });
});

test("the package exports the client as reposearch/client (built, self-referenced by name)", () => {
  const script = 'import("reposearch/client").then((m) => console.log([typeof m.RepoSearchClient, typeof m.RepoSearchError].join(",")))';
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: projectRoot, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "function,function");
});
