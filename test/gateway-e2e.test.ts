/**
 * The REST facade end to end: a small real index built with the real CLI, a real gRPC core and a
 * real gateway in this process, real HTTP. Every JSON response body is validated against the
 * OpenAPI document (validateResponse). Extra gateways with other configurations (small limits, a
 * closed core port, a dead Redis, a fault-injected dependency) share the same SQLite ledger.
 *
 * All log lines of the process are captured (setLogSink); the last test checks that no key (nor
 * the secret part of one) was ever logged.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, test } from "vitest";
import Database from "better-sqlite3";
import { Logger, setLogLevel, setLogSink } from "../src/common/logger.js";
import { loadConfig, type Config } from "../src/config/config.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { generateKey } from "../src/gateway/accounts/keys.js";
import { MICROS_PER_USD, SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { createGatewayApp } from "../src/gateway/app.js";
import { createLimiter } from "../src/gateway/limiter.js";
import { SEARCH_PATH, type SchemaName } from "../src/gateway/openapi.js";
import { validateResponse } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, tempDir } from "./helpers.js";
import { buildIndex, freePort, fundedAccount, postSearch, stackEnv, uniqueName, type TestAccount } from "./stack.js";

// ---- log capture: every line this process logs, from the first import on ----
const logLines: string[] = [];
const restoreSink = setLogSink((line) => logLines.push(line));
setLogLevel("info"); // access-log lines are at info; the key check must see them

const VERSION = "0.0.0-e2e";

interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly status: number;
  readonly details?: { readonly path: string; readonly rule: string; readonly message: string }[];
}

/** Every key this file creates or presents; none of them (nor their secret part) may appear in a log line. */
const presentedKeys = new Set<string>();

let dir: string;
let config: Config;
let core: CoreHandle;
let gw: GatewayHandle;
let accounts: AccountStore;
/** Extra servers to close at the end (gateways and plain http servers). */
const closers: (() => Promise<void>)[] = [];

function envFor(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return stackEnv(dir, { RATE_LIMIT_FAIL_MODE: "closed", TRUSTED_PROXIES: "", MAX_BODY_BYTES: "16384", ...extra });
}

/** A gateway of this process with other settings, on the same ledger; closed after the file. */
async function extraGateway(extra: Record<string, string>, coreAddress = core.grpc.address): Promise<GatewayHandle> {
  const g = await startGateway(loadConfig(envFor(extra)), { version: VERSION, coreAddress });
  closers.push(() => g.close());
  return g;
}

/** An account with `usd` dollars of credit (0 = none) and a fresh key. */
async function accountWithKey(usd: number, name = uniqueName("acct")): Promise<TestAccount> {
  const a = await fundedAccount(accounts, name, usd);
  presentedKeys.add(a.key);
  return a;
}

/** Reads a JSON body, validates it against `schema` and checks the status. */
async function expectBody<T>(res: Response, status: number, schema: SchemaName): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`not JSON (status ${res.status}): ${text.slice(0, 300)}`);
  }
  assert.equal(res.status, status, text.slice(0, 1000));
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(validateResponse(schema, body).errors, [], `${schema} schema: ${text.slice(0, 1000)}`);
  return body as T;
}

/** An error response: Error schema, status, code, and no internals (stack frames, error class names). */
async function expectError(res: Response, status: number, code: string): Promise<ErrorBody> {
  const body = await expectBody<{ error: ErrorBody }>(res, status, "Error");
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.status, status);
  const s = JSON.stringify(body);
  assert.ok(!/\bat .+:\d+:\d+/.test(s) && !s.includes("node_modules") && !s.includes("/src/"), `no stack in the body: ${s}`);
  return body.error;
}

interface SearchBody {
  query: string;
  results: { name: string; score: number; language: string | null; stars: number | null; tree?: string | null; isArchived: boolean | null }[];
  meta: {
    total: number;
    timeMs: number;
    methods: Record<string, { hits: number; weight: number }>;
    appliedFilters: {
      categories: { mode: string; values: string[]; includeUncategorized: boolean };
      excludeArchived: boolean;
      minStars: number | null;
      maxStars: number | null;
      minForks: number | null;
      maxForks: number | null;
      language: string | null;
      excludeRepos: string[];
      topics: string[];
      staleAfterMonths: number | null;
    };
    reranked?: boolean;
    rerankMs?: number;
  };
}

function ledgerRows(accountName: string): { kind: string; amount_micros: number; request_id: string | null }[] {
  const db = new Database(config.gateway.sqlitePath, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare("SELECT l.kind, l.amount_micros, l.request_id FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.name = ? ORDER BY l.id")
      .all(accountName) as { kind: string; amount_micros: number; request_id: string | null }[];
  } finally {
    db.close();
  }
}

let gatewayStartedAt = 0;
let datasetRows: Record<string, unknown>[] = [];

beforeAll(async () => {
  dir = await tempDir("gw-e2e");
  datasetRows = await datasetLines(1500);
  await buildIndex(dir, datasetRows);
  config = loadConfig(envFor());
  core = await startCore(config, { version: VERSION });
  gatewayStartedAt = Date.now();
  gw = await startGateway(config, { version: VERSION, coreAddress: core.grpc.address });
  accounts = gw.accounts;
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await gw?.close();
  await core?.close();
  setLogSink(restoreSink);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("200 search", () => {
  let key: string;
  beforeAll(async () => {
    key = (await accountWithKey(5)).key;
  });

  test("spec shape, defaults in appliedFilters, limit defaults to 10, rate-limit and request-id headers", async () => {
    const res = await postSearch(gw.url, { query: "http client library" }, key);
    const body = await expectBody<SearchBody>(res, 200, "SearchResponse");
    assert.equal(body.query, "http client library");
    assert.equal(body.results.length, 10, "limit defaults to 10 (the index has far more matches)");
    assert.ok(body.meta.total >= body.results.length);
    assert.equal(typeof body.meta.timeMs, "number");
    assert.ok(Object.keys(body.meta.methods).length > 0);
    const af = body.meta.appliedFilters;
    assert.equal(af.excludeArchived, true);
    assert.equal(af.categories.mode, "default");
    assert.ok(!af.categories.values.includes("educational") && !af.categories.values.includes("curated-list"));
    assert.ok(af.categories.values.includes("library"));
    assert.deepEqual(
      {
        minStars: af.minStars,
        maxStars: af.maxStars,
        minForks: af.minForks,
        maxForks: af.maxForks,
        language: af.language,
        staleAfterMonths: af.staleAfterMonths,
      },
      { minStars: null, maxStars: null, minForks: null, maxForks: null, language: null, staleAfterMonths: null },
    );
    assert.deepEqual(af.excludeRepos, []);
    assert.deepEqual(af.topics, []);
    for (const r of body.results) {
      assert.ok(r.score >= 0 && r.score <= 1, `score ${r.score}`);
      assert.ok(!("tree" in r), "no tree unless includeTree");
      assert.notEqual(r.isArchived, true, "archived repositories are excluded by default");
    }
    for (let i = 1; i < body.results.length; i++) assert.ok(body.results[i - 1]!.score >= body.results[i]!.score, "ordered by score");
    assert.equal(body.meta.reranked, undefined, "rerank is off on this server");
    assert.match(res.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{32}$/);
    assert.equal(res.headers.get("x-ratelimit-limit"), "100000");
    assert.ok(Number(res.headers.get("x-ratelimit-remaining")) < 100000);
  });

  test("limit, includeTree and filters are honoured and reported", async () => {
    const three = await expectBody<SearchBody>(await postSearch(gw.url, { query: "web framework", limit: 3 }, key), 200, "SearchResponse");
    assert.ok(three.results.length <= 3 && three.results.length > 0);

    const tree = await expectBody<SearchBody>(
      await postSearch(gw.url, { query: "command line tool", limit: 5, includeTree: true }, key),
      200,
      "SearchResponse",
    );
    assert.ok(tree.results.length > 0);
    for (const r of tree.results) assert.ok("tree" in r && (r.tree === null || typeof r.tree === "string"), "includeTree adds tree");
    // Few records of the dataset carry a tree: look one of them up by its own description.
    const withTree = datasetRows.find((r) => Array.isArray(r.tree) && r.tree.length > 0 && typeof r.description === "string" && r.description.length > 10);
    assert.ok(withTree, "the dataset slice has a record with a tree");
    const named = await expectBody<SearchBody>(
      await postSearch(
        gw.url,
        { query: String(withTree.description).slice(0, 500), limit: 50, includeTree: true, filters: { categories: [], excludeArchived: false } },
        key,
      ),
      200,
      "SearchResponse",
    );
    const hit = named.results.find((r) => r.name === withTree.name);
    assert.ok(hit, `${String(withTree.name)} is found by its description`);
    assert.ok(typeof hit.tree === "string" && hit.tree.length > 0, "a result with a tree in the index carries it");
    // docs/api.md: newline-separated paths, directories end with "/".
    assert.ok(
      hit.tree.split("\n").some((p) => p.endsWith("/")),
      hit.tree.slice(0, 200),
    );

    const filtered = await expectBody<SearchBody>(
      await postSearch(
        gw.url,
        {
          query: "library",
          limit: 50,
          filters: {
            language: "python",
            minStars: 100,
            categories: ["library", "tool"],
            excludeArchived: false,
            excludeRepos: ["a/b"],
            topics: ["python"],
            staleAfterMonths: 600,
          },
        },
        key,
      ),
      200,
      "SearchResponse",
    );
    const af = filtered.meta.appliedFilters;
    assert.equal(af.categories.mode, "explicit");
    assert.deepEqual([...af.categories.values].sort(), ["library", "tool"]);
    assert.equal(af.excludeArchived, false);
    assert.equal(af.minStars, 100);
    assert.equal(af.staleAfterMonths, 600);
    assert.deepEqual(af.excludeRepos, ["a/b"]);
    assert.deepEqual(af.topics, ["python"]);
    for (const r of filtered.results) {
      assert.equal(r.language?.toLowerCase(), "python");
      assert.ok((r.stars ?? -1) >= 100);
    }

    const all = await expectBody<SearchBody>(await postSearch(gw.url, { query: "awesome list", filters: { categories: [] } }, key), 200, "SearchResponse");
    assert.equal(all.meta.appliedFilters.categories.mode, "all");
    assert.deepEqual(all.meta.appliedFilters.categories.values, []);

    // Lengths are counted in characters (code points), by the gateway and the core alike: 500 emoji are 1000 UTF-16 units.
    const emoji = await expectBody<SearchBody>(await postSearch(gw.url, { query: "😀".repeat(500) }, key), 200, "SearchResponse");
    assert.equal(emoji.query, "😀".repeat(500));

    const blank = await expectBody<SearchBody>(await postSearch(gw.url, { query: "   " }, key), 200, "SearchResponse");
    assert.deepEqual(blank.results, []);
    assert.equal(blank.meta.reranked, undefined);
  });
});

describe("400 VALIDATION_ERROR", () => {
  let acct: { name: string; key: string };
  beforeAll(async () => {
    acct = await accountWithKey(5);
  });

  const f = (filters: Record<string, unknown>) => ({ query: "q", filters });
  const cases: [string, unknown, string, string][] = [
    ["unknown top-level property", { query: "q", foo: 1 }, "/foo", "additionalProperties"],
    ["unknown filter property", f({ minstars: 1 }), "/filters/minstars", "additionalProperties"],
    ["query missing", { limit: 5 }, "/query", "required"],
    ["query empty", { query: "" }, "/query", "minLength"],
    ["query 501 characters", { query: "a".repeat(501) }, "/query", "maxLength"],
    ["query 501 characters outside the BMP", { query: "😀".repeat(501) }, "/query", "maxLength"],
    ["query not a string", { query: 42 }, "/query", "type"],
    ["limit 0", { query: "q", limit: 0 }, "/limit", "minimum"],
    ["limit 51", { query: "q", limit: 51 }, "/limit", "maximum"],
    ['limit "5"', { query: "q", limit: "5" }, "/limit", "type"],
    ["limit 1.5", { query: "q", limit: 1.5 }, "/limit", "type"],
    ["includeTree not boolean", { query: "q", includeTree: "yes" }, "/includeTree", "type"],
    ["filters not an object", { query: "q", filters: [] }, "/filters", "type"],
    ['language ""', f({ language: "" }), "/filters/language", "minLength"],
    ["language 101 characters", f({ language: "x".repeat(101) }), "/filters/language", "maxLength"],
    ["excludeRepos 51 items", f({ excludeRepos: Array.from({ length: 51 }, (_, i) => `o/r${i}`) }), "/filters/excludeRepos", "maxItems"],
    ['excludeRepos ["bad"]', f({ excludeRepos: ["bad"] }), "/filters/excludeRepos/0", "pattern"],
    ['excludeRepos ["a/b/c"]', f({ excludeRepos: ["a/b/c"] }), "/filters/excludeRepos/0", "pattern"],
    ["topics []", f({ topics: [] }), "/filters/topics", "minItems"],
    ['topics [""]', f({ topics: [""] }), "/filters/topics/0", "minLength"],
    ['categories ["nope"]', f({ categories: ["nope"] }), "/filters/categories/0", "enum"],
    ["staleAfterMonths 0", f({ staleAfterMonths: 0 }), "/filters/staleAfterMonths", "exclusiveMinimum"],
    ["staleAfterMonths 601", f({ staleAfterMonths: 601 }), "/filters/staleAfterMonths", "maximum"],
    ["staleAfterMonths 1.5", f({ staleAfterMonths: 1.5 }), "/filters/staleAfterMonths", "type"],
    ["minStars -1", f({ minStars: -1 }), "/filters/minStars", "minimum"],
    ["maxForks -1", f({ maxForks: -1 }), "/filters/maxForks", "minimum"],
    ["minStars beyond 2^53", f({ minStars: 2 ** 53 }), "/filters/minStars", "maximum"],
    ["excludeArchived not boolean", f({ excludeArchived: "false" }), "/filters/excludeArchived", "type"],
    ["body an array", [{ query: "q" }], "", "type"],
  ];

  test("every schema rule of spec 2.1/2.2 → 400 with a detail naming the field path and rule; nothing charged", async () => {
    const balance = await accounts.balance(acct.name);
    for (const [name, body, pathWanted, rule] of cases) {
      const err = await expectError(await postSearch(gw.url, body, acct.key), 400, "VALIDATION_ERROR");
      assert.ok(
        err.details?.some((d) => d.path === pathWanted && d.rule === rule),
        `${name}: expected a detail {path: ${JSON.stringify(pathWanted)}, rule: ${rule}}, got ${JSON.stringify(err.details)}`,
      );
    }
    assert.equal(await accounts.balance(acct.name), balance, "4xx never charges");
    assert.deepEqual(
      ledgerRows(acct.name).map((r) => r.kind),
      ["topup"],
      "no ledger entry for rejected requests",
    );
  });

  test("every problem in a body is reported, not only the first", async () => {
    const err = await expectError(
      await postSearch(gw.url, { query: "", limit: 99, filters: { minStars: -1, categories: ["nope"] } }, acct.key),
      400,
      "VALIDATION_ERROR",
    );
    const got = new Set(err.details!.map((d) => `${d.path} ${d.rule}`));
    for (const want of ["/query minLength", "/limit maximum", "/filters/minStars minimum", "/filters/categories/0 enum"])
      assert.ok(got.has(want), `${want} in ${[...got].join(", ")}`);
  });

  test("malformed JSON, wrong content type and an oversized body → 400 (before authentication)", async () => {
    for (const key of [acct.key, undefined]) {
      let err = await expectError(await postSearch(gw.url, '{"query": "x",', key), 400, "VALIDATION_ERROR");
      assert.deepEqual(
        err.details?.map((d) => d.rule),
        ["json"],
      );
      err = await expectError(await postSearch(gw.url, "{'query': 'x'}", key), 400, "VALIDATION_ERROR");
      assert.deepEqual(
        err.details?.map((d) => d.rule),
        ["json"],
      );
      err = await expectError(await postSearch(gw.url, JSON.stringify({ query: "x" }), key, { "content-type": "text/plain" }), 400, "VALIDATION_ERROR");
      assert.deepEqual(
        err.details?.map((d) => d.rule),
        ["contentType"],
      );
      err = await expectError(
        await fetch(`${gw.url}${SEARCH_PATH}`, { method: "POST", headers: key ? { "x-api-key": key } : {}, body: new Uint8Array([1, 2, 3]) }),
        400,
        "VALIDATION_ERROR",
      );
      assert.deepEqual(
        err.details?.map((d) => d.rule),
        ["contentType"],
      );
      err = await expectError(await postSearch(gw.url, JSON.stringify({ query: "x".repeat(20_000) }), key), 400, "VALIDATION_ERROR");
      assert.deepEqual(
        err.details?.map((d) => d.rule),
        ["maxBodyBytes"],
      );
    }
    // An empty JSON body parses as {} and fails on the missing query.
    const empty = await expectError(await postSearch(gw.url, "", acct.key), 400, "VALIDATION_ERROR");
    assert.ok(empty.details?.some((d) => d.path === "/query" && d.rule === "required"));
    assert.deepEqual(
      ledgerRows(acct.name).map((r) => r.kind),
      ["topup"],
    );
  });
});

describe("401, 403, 404", () => {
  test("401 AUTH_ERROR for missing, malformed, unknown and revoked keys; unknown and revoked say the same", async () => {
    const body = { query: "http server" };
    const missing = await expectError(await postSearch(gw.url, body, undefined), 401, "AUTH_ERROR");
    assert.match(missing.message, /missing/i);
    await expectError(await postSearch(gw.url, body, "   "), 401, "AUTH_ERROR");
    const malformed = await expectError(await postSearch(gw.url, body, "not-a-key"), 401, "AUTH_ERROR");
    await expectError(await postSearch(gw.url, body, "x".repeat(2000)), 401, "AUTH_ERROR");
    // Well-formed (valid checksum) but never issued.
    const unknownKey = generateKey().key;
    presentedKeys.add(unknownKey);
    const unknown = await expectError(await postSearch(gw.url, body, unknownKey), 401, "AUTH_ERROR");
    // A real key with a flipped secret character (checksum fails).
    const real = await accountWithKey(5);
    const tampered = real.key.slice(0, 20) + (real.key[20] === "A" ? "B" : "A") + real.key.slice(21);
    presentedKeys.add(tampered);
    await expectError(await postSearch(gw.url, body, tampered), 401, "AUTH_ERROR");
    // Revoked.
    await expectBody(await postSearch(gw.url, body, real.key), 200, "SearchResponse");
    assert.equal(await accounts.revokeKey(real.prefix), 1);
    const revoked = await expectError(await postSearch(gw.url, body, real.key), 401, "AUTH_ERROR");
    assert.equal(revoked.message, unknown.message, "revoked and unknown keys are indistinguishable");
    assert.equal(malformed.message, unknown.message);
    assert.equal(await accounts.balance(real.name), 5 * MICROS_PER_USD - SEARCH_PRICE_MICROS, "only the one successful search was charged");
  });

  test("403 FORBIDDEN for a suspended account and for a key without the search scope; nothing charged", async () => {
    const s = await accountWithKey(5);
    await accounts.setAccountStatus(s.name, "suspended");
    const err = await expectError(await postSearch(gw.url, { query: "x" }, s.key), 403, "FORBIDDEN");
    assert.match(err.message, /suspended/);
    // Body content is not judged for a forbidden caller.
    await expectError(await postSearch(gw.url, { nonsense: true }, s.key), 403, "FORBIDDEN");
    assert.equal(await accounts.balance(s.name), 5 * MICROS_PER_USD);
    await accounts.setAccountStatus(s.name, "active");
    await expectBody(await postSearch(gw.url, { query: "x" }, s.key), 200, "SearchResponse");

    // The store only mints "search" keys today (KNOWN_SCOPES), so a key with another scope set is
    // written straight into the ledger file: what a key minted by a later version would look like.
    const n = await accountWithKey(5);
    const db = new Database(config.gateway.sqlitePath);
    try {
      assert.equal(db.prepare("UPDATE api_keys SET scopes = 'admin' WHERE prefix = ?").run(n.prefix).changes, 1);
    } finally {
      db.close();
    }
    const scope = await expectError(await postSearch(gw.url, { query: "x" }, n.key), 403, "FORBIDDEN");
    assert.match(scope.message, /scope/);
    assert.equal(await accounts.balance(n.name), 5 * MICROS_PER_USD);
  });

  test("403 INSUFFICIENT_CREDITS when the balance is empty or below the price", async () => {
    const empty = await accountWithKey(0);
    await expectError(await postSearch(gw.url, { query: "x" }, empty.key), 403, "INSUFFICIENT_CREDITS");
    assert.equal(await accounts.balance(empty.name), 0);

    // $5 is the smallest top-up; spend all but 999 micros directly on the ledger.
    const low = await accountWithKey(5);
    const principal = await accounts.authenticate(low.key);
    await accounts.debit(principal!.accountId, 5 * MICROS_PER_USD - 2 * SEARCH_PRICE_MICROS + 1, `drain-${randomUUID()}`);
    assert.equal(await accounts.balance(low.name), 2 * SEARCH_PRICE_MICROS - 1);
    await expectBody(await postSearch(gw.url, { query: "x" }, low.key), 200, "SearchResponse");
    assert.equal(await accounts.balance(low.name), SEARCH_PRICE_MICROS - 1);
    await expectError(await postSearch(gw.url, { query: "x" }, low.key), 403, "INSUFFICIENT_CREDITS");
    assert.equal(await accounts.balance(low.name), SEARCH_PRICE_MICROS - 1, "a refused search costs nothing");
  });

  test("404 NOT_FOUND in the error shape for unknown routes and wrong methods", async () => {
    for (const [method, p] of [
      ["GET", "/nope"],
      ["GET", "/v2/codehost/search"],
      ["POST", "/health"],
      ["GET", SEARCH_PATH],
      ["DELETE", SEARCH_PATH],
      ["GET", "/docs/../package.json"],
      ["GET", "/docs/swagger-ui.js.map"],
    ] as const) {
      await expectError(await fetch(`${gw.url}${p}`, { method }), 404, "NOT_FOUND");
    }
  });
});

describe("credits", () => {
  test("each successful search debits exactly 1000 micros, cached answers included; 4xx never charges", async () => {
    const a = await accountWithKey(5);
    const start = await accounts.balance(a.name);
    const queries = ["json parser", "orm for postgres", "json parser", "markdown renderer", "json parser"];
    for (const [i, q] of queries.entries()) {
      await expectBody(await postSearch(gw.url, { query: q }, a.key), 200, "SearchResponse");
      assert.equal(await accounts.balance(a.name), start - (i + 1) * SEARCH_PRICE_MICROS);
    }
    await expectError(await postSearch(gw.url, { query: "" }, a.key), 400, "VALIDATION_ERROR");
    await expectError(await postSearch(gw.url, "{", a.key), 400, "VALIDATION_ERROR");
    await expectError(await fetch(`${gw.url}/v1/codehost/serch`, { method: "POST", headers: { "x-api-key": a.key } }), 404, "NOT_FOUND");
    assert.equal(await accounts.balance(a.name), start - queries.length * SEARCH_PRICE_MICROS);
    const rows = ledgerRows(a.name);
    assert.deepEqual(
      rows.map((r) => [r.kind, r.amount_micros]),
      [["topup", 5 * MICROS_PER_USD], ...queries.map(() => ["debit", -SEARCH_PRICE_MICROS])],
    );
    assert.equal(new Set(rows.filter((r) => r.kind === "debit").map((r) => r.request_id)).size, queries.length, "one ledger id per request");
  });
});

describe("429, 502, 503, 500", () => {
  test("429 RATE_LIMIT_EXCEEDED with X-RateLimit-* and Retry-After, per account and then per IP", async () => {
    const limited = await extraGateway({ RATE_LIMIT_IP_PER_MINUTE: "6", RATE_LIMIT_ACCOUNT_PER_MINUTE: "2" });
    const a = await accountWithKey(5);
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await postSearch(limited.url, { query: "logging library" }, a.key);
      await expectBody(res, 200, "SearchResponse");
      assert.equal(res.headers.get("x-ratelimit-limit"), "2");
      assert.equal(res.headers.get("x-ratelimit-remaining"), String(1 - i));
      statuses.push(res.status);
    }
    const check429 = async (res: Response, limit: string, scope: RegExp): Promise<void> => {
      const err = await expectError(res, 429, "RATE_LIMIT_EXCEEDED");
      assert.match(err.message, scope);
      assert.equal(res.headers.get("x-ratelimit-limit"), limit);
      assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
      const reset = Number(res.headers.get("x-ratelimit-reset"));
      const nowS = Date.now() / 1000;
      assert.ok(Number.isInteger(reset) && reset >= Math.floor(nowS) && reset <= nowS + 61, `reset ${reset}`);
      const retry = Number(res.headers.get("retry-after"));
      assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `retry-after ${retry}`);
    };
    // Requests 3-6 pass the IP limit (6) but not the account limit (2).
    for (let i = 0; i < 4; i++) await check429(await postSearch(limited.url, { query: "logging library" }, a.key), "2", /per account/);
    // Request 7 is over the IP limit, which applies before authentication and to every path.
    await check429(await postSearch(limited.url, { query: "logging library" }, a.key), "6", /per IP/);
    await check429(await postSearch(limited.url, { query: "x" }, undefined), "6", /per IP/);
    await check429(await fetch(`${limited.url}/health`), "6", /per IP/);
    await check429(await fetch(`${limited.url}/nope`), "6", /per IP/);
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD - 2 * SEARCH_PRICE_MICROS, "429s are not charged");
  });

  test("502 EXTERNAL_SERVICE_ERROR when the core is unreachable, refunded; /health 503 unhealthy", async () => {
    const closed = await freePort();
    const orphan = await extraGateway({ CORE_TIMEOUT_MS: "1500" }, `127.0.0.1:${closed}`);
    const a = await accountWithKey(5);
    const t0 = Date.now();
    const err = await expectError(await postSearch(orphan.url, { query: "database driver" }, a.key), 502, "EXTERNAL_SERVICE_ERROR");
    assert.ok(Date.now() - t0 < 5_000);
    assert.doesNotMatch(err.message, /UNAVAILABLE|ECONNREFUSED|14 /);
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD, "the debit was refunded");
    assert.deepEqual(
      ledgerRows(a.name).map((r) => [r.kind, r.amount_micros]),
      [
        ["topup", 5 * MICROS_PER_USD],
        ["debit", -SEARCH_PRICE_MICROS],
        ["refund", SEARCH_PRICE_MICROS],
      ],
    );
    const res = await fetch(`${orphan.url}/health`);
    const h = await expectBody<{ status: string; services: { db: { status: string }; cache: { status: string } } }>(res, 503, "Health");
    assert.equal(h.status, "unhealthy");
    assert.equal(h.services.db.status, "up");
    assert.equal(h.services.cache.status, "up");
  });

  test("503 RATE_LIMIT_UNAVAILABLE with Retry-After when Redis is down and the limiter fails closed; /health degraded", async () => {
    const closed = await freePort();
    const t0 = Date.now();
    const dead = await extraGateway({ CACHE_BACKEND: "redis", REDIS_URL: `redis://127.0.0.1:${closed}`, RATE_LIMIT_FAIL_MODE: "closed" });
    assert.ok(Date.now() - t0 < 4_000, "start-up does not hang on a dead Redis");
    const a = await accountWithKey(5);
    const res = await postSearch(dead.url, { query: "x" }, a.key);
    await expectError(res, 503, "RATE_LIMIT_UNAVAILABLE");
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal(res.headers.get("x-ratelimit-limit"), null);
    await expectError(await postSearch(dead.url, { query: "x" }, undefined), 503, "RATE_LIMIT_UNAVAILABLE");
    await expectError(await fetch(`${dead.url}/llms.txt`), 503, "RATE_LIMIT_UNAVAILABLE");
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD);

    const hr = await fetch(`${dead.url}/health`);
    const h = await expectBody<{ status: string; services: { db: { status: string }; cache: { status: string; latencyMs: number; error?: string } } }>(
      hr,
      200,
      "Health",
    );
    assert.equal(h.status, "degraded");
    assert.equal(h.services.db.status, "up");
    assert.equal(h.services.cache.status, "down");
    assert.equal(typeof h.services.cache.latencyMs, "number");
    assert.ok(typeof h.services.cache.error === "string" && h.services.cache.error.length > 0);
  });

  test("500 INTERNAL_ERROR says nothing about the cause (fault-injected bug in a dependency)", async () => {
    const a = await accountWithKey(5);
    const marker = "secretInternalDetail_42";
    // Fault-injection double: the real memory limiter, except that the per-account check hits a
    // programming error (a TypeError whose message names internals and even the presented key).
    const real = await createLimiter(config, new Logger({ test: "e2e-500" }));
    const app = createGatewayApp({
      core: new CoreClient(core.grpc.address, { defaultDeadlineMs: 2_000 }),
      accounts,
      limiter: {
        consumeIp: (ip) => real.consumeIp(ip),
        consumeAccount: async () => {
          throw new TypeError(`Cannot read properties of undefined (reading '${marker}') while serving ${a.key}`);
        },
      },
      config,
      logger: new Logger({ service: "reposearch", test: "e2e-500" }),
      version: VERSION,
      startedAt: Date.now(),
      cacheHealth: () => real.cacheHealth(),
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise<void>((r) => server.once("listening", () => r()));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const res = await postSearch(base, { query: "x" }, a.key);
    const text = await res.clone().text();
    const err = await expectError(res, 500, "INTERNAL_ERROR");
    assert.equal(err.message, "internal error");
    assert.equal(err.details, undefined);
    for (const leak of [marker, "TypeError", "Cannot read", a.key, "stack"]) assert.ok(!text.includes(leak), `body leaks ${leak}: ${text}`);
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD);
    // The cause is logged (for operators), scrubbed of the key.
    const logged = logLines.filter((l) => l.includes('"internal error"') && l.includes(marker));
    assert.ok(logged.length >= 1, "the cause is in the log");
  });
});

describe("health and descriptive documents", () => {
  test("/health: 200 healthy, db and cache up with latencies, uptime in seconds", async () => {
    const res = await fetch(`${gw.url}/health`);
    const h = await expectBody<{
      status: string;
      version: string;
      uptime: number;
      services: { db: { status: string; latencyMs: number }; cache: { status: string; latencyMs: number } };
    }>(res, 200, "Health");
    assert.equal(h.status, "healthy");
    assert.equal(h.version, VERSION);
    assert.equal(h.services.db.status, "up");
    assert.equal(h.services.cache.status, "up");
    assert.ok(typeof h.services.db.latencyMs === "number" && h.services.db.latencyMs >= 0);
    assert.ok(typeof h.services.cache.latencyMs === "number" && h.services.cache.latencyMs >= 0);
    const expectedSeconds = (Date.now() - gatewayStartedAt) / 1000;
    assert.ok(h.uptime >= 0 && Math.abs(h.uptime - expectedSeconds) < 2, `uptime ${h.uptime} s, expected about ${expectedSeconds.toFixed(1)} s`);
    assert.equal(res.headers.get("cache-control"), "no-store");
  });

  test("/.well-known/openapi.json, /llms.txt, /docs, /metrics", async () => {
    const o = await fetch(`${gw.url}/.well-known/openapi.json`);
    assert.equal(o.status, 200);
    assert.match(o.headers.get("content-type") ?? "", /^application\/json/);
    const doc = (await o.json()) as { openapi: string; info: { version: string }; paths: Record<string, Record<string, { operationId?: string }>> };
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.version, "0.0.1");
    assert.equal(doc.paths[SEARCH_PATH]?.post?.operationId, "searchRepositories");
    assert.equal(doc.paths["/health"]?.get?.operationId, "getHealth");

    const l = await fetch(`${gw.url}/llms.txt`);
    assert.equal(l.status, 200);
    assert.match(l.headers.get("content-type") ?? "", /^text\/plain/);
    const llms = await l.text();
    assert.ok(llms.startsWith("# "), llms.slice(0, 50));
    assert.ok(llms.includes(SEARCH_PATH));

    const d = await fetch(`${gw.url}/docs`);
    assert.equal(d.status, 200);
    assert.match(d.headers.get("content-type") ?? "", /^text\/html/);
    const html = await d.text();
    assert.match(html, /<html/i);
    assert.match(html, /swagger-ui/);
    for (const asset of ["/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/docs/init.js"]) {
      const r = await fetch(`${gw.url}${asset}`);
      assert.equal(r.status, 200, asset);
      await r.arrayBuffer();
    }

    const m = await fetch(`${gw.url}/metrics`);
    assert.equal(m.status, 200);
    const metrics = await m.text();
    assert.match(metrics, /http_request_duration_seconds_bucket\{[^}]*route="\/v1\/codehost\/search"/);
    assert.match(metrics, /http_request_duration_seconds/);
  });
});

test("logs never contain a key or its secret part", async () => {
  // One more of each kind, so this test stands on its own: success, key-shaped unknown key, revoked key, failure.
  const a = await accountWithKey(5);
  await expectBody(await postSearch(gw.url, { query: "yaml parser" }, a.key), 200, "SearchResponse");
  const shaped = generateKey().key;
  presentedKeys.add(shaped);
  await expectError(await postSearch(gw.url, { query: "yaml parser" }, shaped), 401, "AUTH_ERROR");
  await accounts.revokeKey(a.prefix);
  await expectError(await postSearch(gw.url, { query: "yaml parser" }, a.key), 401, "AUTH_ERROR");

  assert.ok(presentedKeys.size >= 10, `keys checked: ${presentedKeys.size}`);
  const access = logLines.filter((l) => l.includes('"msg":"request"'));
  assert.ok(access.length > 50, `access-log lines captured: ${access.length}`);
  assert.ok(
    access.some((l) => l.includes(a.prefix)),
    "the key prefix (public part) is logged for authenticated requests",
  );
  assert.ok(
    logLines.some((l) => l.includes('"upstream failure"')),
    "502 failures were logged",
  );
  for (const key of presentedKeys) {
    const secret = key.slice("rsk_".length + 8 + 1); // after "rsk_<public id>_"
    for (const line of logLines) {
      assert.ok(!line.includes(key), `a log line contains a full key: ${line.slice(0, 300)}`);
      assert.ok(!line.includes(secret), `a log line contains a key's secret part: ${line.slice(0, 300)}`);
    }
  }
});
