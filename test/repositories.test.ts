/**
 * Beyond the spec, end to end: POST /v1/codehost/similar, GET /v1/codehost/repos/{owner}/{repo} and
 * GitHub-style qualifiers in `query`, through a real gateway (real HTTP) over a real core (real gRPC
 * over loopback, and its Connect port), on a small real index built by the real CLI from the first
 * 1,500 dataset records plus hand-made fixtures whose fields the assertions control. Every JSON body is
 * validated against the served OpenAPI document's schemas; charges are read from the SQLite ledger.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, test } from "vitest";
import { ErrorCode, ReposearchError } from "../src/common/errors.js";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, type Config } from "../src/config/config.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { MICROS_PER_USD, SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { SIMILAR_PATH, type SchemaName } from "../src/gateway/openapi.js";
import { validateResponse } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, tempDir } from "./helpers.js";
import { buildIndex, freePort, fundedAccount, postSearch, stackEnv, uniqueName, type TestAccount } from "./stack.js";

setLogLevel("warn");

// ---------------------------------------------------------------------------------------------
// Fixtures: a note-taking project known under two names, its alternatives, and a few records whose
// fields the qualifier tests read.

const DAY_MS = 86_400_000;
const RECENT = new Date(Date.now() - 20 * DAY_MS).toISOString().replace(/\.\d{3}Z$/, "Z");
const OLD = "2019-06-01T00:00:00Z";
const SEED = "simfx/quillnest";
const OLD_NAME = "oldfx/quillnest";
const SEED_DESCRIPTION = "Quillnest is a local-first markdown note taking engine with backlinks and full text search";
const SEED_TREE = ["Cargo.toml", "README.md", "src/", "src/lib.rs", "src/index/", "src/index/deep/x.rs"];

const FIXTURES: readonly Record<string, unknown>[] = [
  {
    name: SEED,
    url: `https://github.com/${SEED}`,
    description: SEED_DESCRIPTION,
    stars: 4200,
    forks: 300,
    language: "Rust",
    topics: ["markdown", "notes", "note-taking", "knowledge-base"],
    pushedAt: RECENT,
    isArchived: false,
    homepage: "https://quillnest.example",
    license: "MIT",
    createdAt: "2019-04-01T10:00:00Z",
    // A bidi override: the card must not pass it on.
    readme: "# Quillnest\n\nLocal-first **markdown** notes.\u202e with backlinks",
    tree: SEED_TREE,
    llmsTxtPaths: ["llms.txt"],
    lastSeen: "2026-08-20",
  },
  // The same project under its former name: merged into SEED as an alias (same repository part and description).
  {
    name: OLD_NAME,
    description: SEED_DESCRIPTION,
    stars: 4000,
    forks: 280,
    language: "Rust",
    topics: ["markdown", "notes"],
    pushedAt: OLD,
    lastSeen: "2024-01-10",
  },
  {
    name: "simfx/inkhaven",
    description: "Inkhaven is a markdown note taking app with backlinks, tags and full text search",
    stars: 2100,
    forks: 150,
    language: "Rust",
    topics: ["markdown", "notes", "note-taking"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: "simfx/paperbay",
    description: "Paperbay is a self-hosted markdown note taking server with backlinks and full text search",
    stars: 900,
    forks: 60,
    language: "Go",
    topics: ["notes", "markdown", "self-hosted"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: "simfx/scribblefort",
    description: "Scribblefort keeps markdown notes and journals as plain text files with full text search",
    stars: 40,
    forks: 2,
    language: "TypeScript",
    topics: ["notes", "journal"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: "simfx/notewarden-archived",
    description: "Notewarden was a markdown note taking engine with backlinks (archived)",
    stars: 1300,
    forks: 70,
    language: "Rust",
    topics: ["markdown", "notes"],
    pushedAt: OLD,
    isArchived: true,
  },
];

// ---------------------------------------------------------------------------------------------
// Stack

let dir: string;
let config: Config;
let core: CoreHandle;
let gw: GatewayHandle;
let accounts: AccountStore;
let grpcClient: CoreClient;
const closers: (() => Promise<void>)[] = [];

function envFor(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return stackEnv(dir, { RATE_LIMIT_FAIL_MODE: "closed", TRUSTED_PROXIES: "", ...extra });
}

async function extraGateway(extra: Record<string, string>, coreAddress = core.grpc.address): Promise<GatewayHandle> {
  const g = await startGateway(loadConfig(envFor(extra)), { version: "0.0.0-repositories", coreAddress });
  closers.push(() => g.close());
  return g;
}

beforeAll(async () => {
  dir = await tempDir("repositories");
  await buildIndex(dir, [...(await datasetLines(1500)), ...FIXTURES]);
  config = loadConfig(envFor());
  core = await startCore(config, { version: "0.0.0-repositories" });
  gw = await startGateway(config, { version: "0.0.0-repositories", coreAddress: core.grpc.address });
  accounts = gw.accounts;
  grpcClient = new CoreClient(core.grpc.address);
});

afterAll(async () => {
  grpcClient?.close();
  for (const close of closers.reverse()) await close().catch(() => {});
  await gw?.close();
  await core?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Helpers

interface ErrorBody {
  readonly code: string;
  readonly message: string;
  readonly status: number;
  readonly details?: { readonly path: string; readonly rule: string; readonly message: string }[];
}

interface Result {
  name: string;
  score: number;
  language: string | null;
  stars: number | null;
  forks: number | null;
  topics: string[];
  pushedAt: string | null;
  isArchived: boolean | null;
  evidence: string[];
  aliases?: string[];
  tree?: string | null;
}

interface SearchBody {
  query: string;
  results: Result[];
  meta: {
    total: number;
    methods: Record<string, { hits: number; weight: number }>;
    appliedFilters: Record<string, unknown> & { categories: { mode: string; values: string[] } };
    qualifiers?: { qualifier: string; fields: string[]; overridden: string[] }[];
    queryText?: string;
  };
}

async function expectBody<T>(res: Response, status: number, schema: SchemaName): Promise<T> {
  const text = await res.text();
  assert.equal(res.status, status, text.slice(0, 1000));
  const body = JSON.parse(text) as unknown;
  assert.deepEqual(validateResponse(schema, body).errors, [], `${schema}: ${text.slice(0, 1000)}`);
  return body as T;
}

async function expectError(res: Response, status: number, code: string): Promise<ErrorBody> {
  const body = await expectBody<{ error: ErrorBody }>(res, status, "Error");
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.status, status);
  return body.error;
}

async function account(usd = 5): Promise<TestAccount> {
  return fundedAccount(accounts, uniqueName("repos"), usd);
}

function postSimilar(base: string, body: unknown, key?: string): Promise<Response> {
  return fetch(`${base}${SIMILAR_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key !== undefined ? { "x-api-key": key } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function getCard(base: string, name: string, key?: string): Promise<Response> {
  const [owner, repo] = name.split("/").map(encodeURIComponent);
  return fetch(`${base}/v1/codehost/repos/${owner}/${repo}`, { headers: key !== undefined ? { "x-api-key": key } : {} });
}

/** The account's ledger entries (debits and refunds) in order. */
function ledger(accountName: string): { kind: string; amount: number }[] {
  const db = new Database(config.gateway.sqlitePath, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        "SELECT l.kind, l.amount_micros AS amount FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.name = ? AND l.kind != 'topup' ORDER BY l.id",
      )
      .all(accountName) as { kind: string; amount: number }[];
  } finally {
    db.close();
  }
}

const namesOf = (r: readonly Result[]): string[] => r.map((x) => x.name);
const allNames = (r: readonly Result[]): string[] => r.flatMap((x) => [x.name, ...(x.aliases ?? [])].map((n) => n.toLowerCase()));

// ---------------------------------------------------------------------------------------------

describe("POST /v1/codehost/similar", () => {
  let acct: TestAccount;
  beforeAll(async () => {
    acct = await account();
  });

  test("ranked alternatives, the repository itself excluded under every name, evidence of what is shared", async () => {
    const body = await expectBody<SearchBody>(await postSimilar(gw.url, { repo: SEED }, acct.key), 200, "SearchResponse");
    assert.equal(body.query, SEED);
    assert.equal(body.results.length, 10);
    assert.ok(!allNames(body.results).includes(SEED) && !allNames(body.results).includes(OLD_NAME), namesOf(body.results).join(", "));
    assert.equal(body.results[0]!.score, 1);
    for (let i = 1; i < body.results.length; i++) assert.ok(body.results[i - 1]!.score >= body.results[i]!.score && body.results[i]!.score > 0);
    assert.deepEqual(Object.keys(body.meta.methods).sort(), ["dense", "lexical"]);
    assert.ok(body.meta.total >= body.results.length);
    // The closest fixture (same topics, language and words) leads; the other alternatives follow it in the top 5.
    assert.equal(body.results[0]!.name, "simfx/inkhaven", namesOf(body.results).join(", "));
    assert.ok(namesOf(body.results.slice(0, 5)).includes("simfx/paperbay"), namesOf(body.results).join(", "));
    const ink = body.results[0]!;
    assert.match(
      ink.evidence[0]!,
      /^Shares with simfx\/quillnest: topics \((markdown|notes|note-taking)(, (markdown|notes|note-taking)){2}\); language Rust; terms \(/,
    );
    assert.match(ink.evidence[1]!, /^Semantic similarity -?\d\.\d\d \(cosine\) to simfx\/quillnest's embedding/);
    const paper = body.results.find((r) => r.name === "simfx/paperbay")!;
    assert.ok(!paper.evidence[0]!.includes("language"), "Go is not the seed's language");
    // Archived alternatives are excluded by default, as in a search.
    assert.ok(!namesOf(body.results).includes("simfx/notewarden-archived"));
    assert.equal(body.meta.appliedFilters.excludeArchived, true);
  });

  test("a former name resolves to the project: the same answer, echoed under the current name", async () => {
    const now = await expectBody<SearchBody>(await postSimilar(gw.url, { repo: SEED, limit: 5 }, acct.key), 200, "SearchResponse");
    const old = await expectBody<SearchBody>(await postSimilar(gw.url, { repo: "OldFx/QuillNest", limit: 5 }, acct.key), 200, "SearchResponse");
    assert.equal(old.query, SEED);
    assert.deepEqual(namesOf(old.results), namesOf(now.results));
  });

  test("filters are the search's own, applied before ranking and reported", async () => {
    const go = await expectBody<SearchBody>(await postSimilar(gw.url, { repo: SEED, filters: { language: "Go" } }, acct.key), 200, "SearchResponse");
    assert.ok(go.results.length > 0);
    assert.ok(
      go.results.every((r) => r.language?.toLowerCase() === "go"),
      namesOf(go.results).join(", "),
    );
    assert.equal(go.results[0]!.name, "simfx/paperbay");
    assert.equal(go.meta.appliedFilters.language, "Go");

    const big = await expectBody<SearchBody>(
      await postSimilar(gw.url, { repo: SEED, limit: 20, filters: { minStars: 1000, excludeRepos: ["simfx/inkhaven"] } }, acct.key),
      200,
      "SearchResponse",
    );
    assert.ok(big.results.every((r) => (r.stars ?? 0) >= 1000));
    assert.ok(!namesOf(big.results).includes("simfx/inkhaven"));
    assert.deepEqual(big.meta.appliedFilters.excludeRepos, ["simfx/inkhaven"]);

    const withArchived = await expectBody<SearchBody>(
      await postSimilar(gw.url, { repo: SEED, limit: 3, includeTree: true, filters: { excludeArchived: false, language: "rust" } }, acct.key),
      200,
      "SearchResponse",
    );
    assert.equal(withArchived.results.length, 3);
    assert.ok(namesOf(withArchived.results).includes("simfx/notewarden-archived"), namesOf(withArchived.results).join(", "));
    assert.ok(withArchived.results.every((r) => "tree" in r));
  });

  test("charged once per answer; an unknown repository is 404 NOT_FOUND and refunded", async () => {
    const a = await account();
    const before = await accounts.balance(a.name);
    await expectBody<SearchBody>(await postSimilar(gw.url, { repo: SEED, limit: 3 }, a.key), 200, "SearchResponse");
    assert.equal(await accounts.balance(a.name), before - SEARCH_PRICE_MICROS);
    assert.deepEqual(ledger(a.name), [{ kind: "debit", amount: -SEARCH_PRICE_MICROS }]);

    const e = await expectError(await postSimilar(gw.url, { repo: "nobody-here/nothing-at-all" }, a.key), 404, "NOT_FOUND");
    assert.match(e.message, /nobody-here\/nothing-at-all/);
    assert.equal(await accounts.balance(a.name), before - SEARCH_PRICE_MICROS, "the 404 costs nothing");
    assert.deepEqual(
      ledger(a.name).map((l) => l.kind),
      ["debit", "debit", "refund"],
    );
  });

  test("a core failure is 502 and refunded", async () => {
    const dead = await extraGateway({}, `127.0.0.1:${await freePort()}`);
    const a = await account();
    await expectError(await postSimilar(dead.url, { repo: SEED }, a.key), 502, "EXTERNAL_SERVICE_ERROR");
    assert.equal(await accounts.balance(a.name), 5 * MICROS_PER_USD);
    assert.deepEqual(
      ledger(a.name).map((l) => l.kind),
      ["debit", "refund"],
    );
  });

  test("400 for a bad body, with every problem in details, never charged", async () => {
    const a = await account();
    const cases: [unknown, string, string][] = [
      [{}, "/repo", "required"],
      [{ repo: "no-slash" }, "/repo", "pattern"],
      [{ repo: "a/b c" }, "/repo", "pattern"],
      [{ repo: `a/${"b".repeat(200)}` }, "/repo", "maxLength"],
      [{ repo: SEED, limit: 0 }, "/limit", "minimum"],
      [{ repo: SEED, limit: 51 }, "/limit", "maximum"],
      [{ repo: SEED, query: "x" }, "/query", "additionalProperties"],
      [{ repo: SEED, filters: { minstars: 3 } }, "/filters/minstars", "additionalProperties"],
      [{ repo: SEED, filters: { categories: ["nope"] } }, "/filters/categories/0", "enum"],
    ];
    for (const [body, path, rule] of cases) {
      const e = await expectError(await postSimilar(gw.url, body, a.key), 400, "VALIDATION_ERROR");
      assert.ok(
        e.details?.some((d) => d.path === path && d.rule === rule),
        `${JSON.stringify(body)}: ${JSON.stringify(e.details)}`,
      );
    }
    await expectError(await postSimilar(gw.url, "{not json", a.key), 400, "VALIDATION_ERROR");
    await expectError(
      await fetch(`${gw.url}${SIMILAR_PATH}`, { method: "POST", headers: { "content-type": "text/plain", "x-api-key": a.key }, body: "{}" }),
      400,
      "VALIDATION_ERROR",
    );
    assert.deepEqual(ledger(a.name), []);
  });

  test("401 without a key; 429 on the account's limit, shared with searches", async () => {
    await expectError(await postSimilar(gw.url, { repo: SEED }), 401, "AUTH_ERROR");
    const limited = await extraGateway({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "2" });
    const a = await account();
    assert.equal((await postSearch(limited.url, { query: "markdown notes" }, a.key)).status, 200);
    assert.equal((await postSimilar(limited.url, { repo: SEED }, a.key)).status, 200);
    const res = await postSimilar(limited.url, { repo: SEED }, a.key);
    await expectError(res, 429, "RATE_LIMIT_EXCEEDED");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    assert.equal(res.headers.get("x-ratelimit-limit"), "2");
    assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
    assert.equal(ledger(a.name).filter((l) => l.kind === "debit").length, 2, "the refused call was not charged");
  });
});

describe("GET /v1/codehost/repos/{owner}/{repo}", () => {
  let acct: TestAccount;
  beforeAll(async () => {
    acct = await account();
  });

  test("every stored field, owner text sanitised", async () => {
    const res = await getCard(gw.url, SEED, acct.key);
    const card = await expectBody<Record<string, unknown>>(res, 200, "Repository");
    const { category, mentions, ...rest } = card;
    assert.deepEqual(rest, {
      name: SEED,
      url: `https://github.com/${SEED}`,
      description: SEED_DESCRIPTION,
      language: "Rust",
      stars: 4200,
      forks: 300,
      topics: ["markdown", "notes", "note-taking", "knowledge-base"],
      pushedAt: new Date(RECENT).toISOString(),
      createdAt: "2019-04-01T10:00:00.000Z",
      isArchived: false,
      license: "MIT",
      homepage: "https://quillnest.example",
      llmsUrl: `https://raw.githubusercontent.com/${SEED}/HEAD/llms.txt`,
      tree: "Cargo.toml\nREADME.md\nsrc/\nsrc/lib.rs\nsrc/index/",
      aliases: [OLD_NAME],
      readme: "# Quillnest\n\nLocal-first **markdown** notes. with backlinks",
      lastSeen: "2026-08-20T00:00:00.000Z",
    });
    assert.ok(category === null || typeof category === "string");
    assert.equal(typeof mentions, "number");
    assert.ok(res.headers.get("x-ratelimit-limit"));
  });

  test("a former name answers the current project's card; an unknown one is 404", async () => {
    const card = await expectBody<{ name: string; aliases: string[] }>(await getCard(gw.url, OLD_NAME, acct.key), 200, "Repository");
    assert.equal(card.name, SEED);
    assert.deepEqual(card.aliases, [OLD_NAME]);
    const upper = await expectBody<{ name: string }>(await getCard(gw.url, "SIMFX/QUILLNEST", acct.key), 200, "Repository");
    assert.equal(upper.name, SEED);
    const e = await expectError(await getCard(gw.url, "nobody-here/nothing-at-all", acct.key), 404, "NOT_FOUND");
    assert.match(e.message, /no indexed repository named nobody-here\/nothing-at-all/);
    // One path segment each: an encoded slash or whitespace is a validation error, a third segment no route.
    const bad = await expectError(await fetch(`${gw.url}/v1/codehost/repos/a%20b/c`, { headers: { "x-api-key": acct.key } }), 400, "VALIDATION_ERROR");
    assert.deepEqual(
      bad.details?.map((d) => [d.path, d.rule]),
      [["/owner", "pattern"]],
    );
    await expectError(await fetch(`${gw.url}/v1/codehost/repos/a/b/c`, { headers: { "x-api-key": acct.key } }), 404, "NOT_FOUND");
  });

  test("401 without a key or with a wrong one", async () => {
    await expectError(await getCard(gw.url, SEED), 401, "AUTH_ERROR");
    await expectError(await getCard(gw.url, SEED, "rsk_nope0000_notakey"), 401, "AUTH_ERROR");
  });

  test("not charged, even with no credits left", async () => {
    const broke = await account(0);
    for (let i = 0; i < 3; i++) await expectBody(await getCard(gw.url, SEED, broke.key), 200, "Repository");
    assert.equal(await accounts.balance(broke.name), 0);
    assert.deepEqual(ledger(broke.name), []);
  });

  test("rate limited by the account's per-minute limit", async () => {
    const limited = await extraGateway({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "2" });
    const a = await account();
    for (let i = 0; i < 2; i++) assert.equal((await getCard(limited.url, SEED, a.key)).status, 200);
    const res = await getCard(limited.url, SEED, a.key);
    await expectError(res, 429, "RATE_LIMIT_EXCEEDED");
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
    assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
  });
});

describe("qualifiers in query", () => {
  let acct: TestAccount;
  beforeAll(async () => {
    acct = await account(10);
  });

  async function search(body: Record<string, unknown>): Promise<SearchBody> {
    return expectBody<SearchBody>(await postSearch(gw.url, body, acct.key), 200, "SearchResponse");
  }

  const inDays = (iso: string) => new Date(iso).getTime();
  /** [query, appliedFilters fields expected, what every result must satisfy] */
  const forms: [string, Record<string, unknown>, (r: Result) => boolean][] = [
    ["language:rust", { language: "rust" }, (r) => r.language?.toLowerCase() === "rust"],
    ['language:"Rust"', { language: "Rust" }, (r) => r.language?.toLowerCase() === "rust"],
    ["stars:>1000", { minStars: 1001 }, (r) => (r.stars ?? -1) >= 1001],
    ["stars:>=1000", { minStars: 1000 }, (r) => (r.stars ?? -1) >= 1000],
    ["stars:<50", { maxStars: 49 }, (r) => r.stars !== null && r.stars <= 49],
    ["stars:<=50", { maxStars: 50 }, (r) => r.stars !== null && r.stars <= 50],
    ["stars:100..5000", { minStars: 100, maxStars: 5000 }, (r) => r.stars !== null && r.stars >= 100 && r.stars <= 5000],
    ["stars:4200", { minStars: 4200, maxStars: 4200 }, (r) => r.stars === 4200],
    ["forks:>100", { minForks: 101 }, (r) => (r.forks ?? -1) >= 101],
    ["forks:<=60", { maxForks: 60 }, (r) => r.forks !== null && r.forks <= 60],
    ["forks:10..200", { minForks: 10, maxForks: 200 }, (r) => r.forks !== null && r.forks >= 10 && r.forks <= 200],
    ["topic:markdown", { topics: ["markdown"] }, (r) => r.topics.includes("markdown")],
    ['topic:"note taking"', { topics: ["note-taking"] }, (r) => r.topics.includes("note-taking")],
    ["archived:true", { excludeArchived: false }, () => true],
    ["archived:false", { excludeArchived: true }, (r) => r.isArchived !== true],
    ["pushed:>2024-01-01", { pushedAfter: "2024-01-02T00:00:00.000Z" }, (r) => r.pushedAt !== null && inDays(r.pushedAt) >= Date.UTC(2024, 0, 2)],
    ["pushed:<2020-01-01", { pushedBefore: "2020-01-01T00:00:00.000Z" }, (r) => r.pushedAt !== null && inDays(r.pushedAt) < Date.UTC(2020, 0, 1)],
    [
      "pushed:2019-01-01..2019-12-31",
      { pushedAfter: "2019-01-01T00:00:00.000Z", pushedBefore: "2020-01-01T00:00:00.000Z" },
      (r) => r.pushedAt !== null && inDays(r.pushedAt) >= Date.UTC(2019, 0, 1) && inDays(r.pushedAt) < Date.UTC(2020, 0, 1),
    ],
  ];
  for (const [qualifier, expected, holds] of forms) {
    test(`${qualifier}: parsed into appliedFilters, removed from the text, every result satisfies it`, async () => {
      const body = await search({ query: `markdown note taking ${qualifier}`, limit: 20, filters: { excludeArchived: qualifier !== "archived:true" } });
      for (const [field, value] of Object.entries(expected)) {
        if (field === "excludeArchived") continue; // set explicitly above, which wins (tested below)
        assert.deepEqual(body.meta.appliedFilters[field], value, field);
      }
      assert.equal(body.meta.queryText, "markdown note taking");
      assert.equal(body.meta.qualifiers?.[0]?.qualifier, qualifier);
      assert.ok(
        body.results.every(holds),
        `${qualifier}: ${body.results.map((r) => `${r.name}:${r.stars}/${r.forks}/${r.language}/${r.pushedAt}`).join(", ")}`,
      );
    });
  }

  test("archived: sets excludeArchived when filters leave it unset", async () => {
    const incl = await search({ query: "markdown note taking engine backlinks archived:true", limit: 50 });
    assert.equal(incl.meta.appliedFilters.excludeArchived, false);
    assert.ok(namesOf(incl.results).includes("simfx/notewarden-archived"), namesOf(incl.results).join(", "));
    const excl = await search({ query: "markdown note taking engine backlinks archived:false", limit: 50 });
    assert.equal(excl.meta.appliedFilters.excludeArchived, true);
    assert.ok(excl.results.every((r) => r.isArchived !== true));
  });

  test("category: becomes an explicit category list", async () => {
    const body = await search({ query: "markdown notes category:tool category:application", limit: 20 });
    assert.deepEqual(body.meta.appliedFilters.categories, { mode: "explicit", values: ["tool", "application"], includeUncategorized: false });
    assert.deepEqual(
      body.meta.qualifiers?.map((q) => q.fields),
      [["categories"], ["categories"]],
    );
  });

  test("explicit filters win over qualifiers, field by field, and meta.qualifiers says which", async () => {
    const body = await search({ query: "notes language:go stars:10..5000 topic:markdown", limit: 20, filters: { language: "Rust", minStars: 2000 } });
    const af = body.meta.appliedFilters;
    assert.equal(af.language, "Rust");
    assert.equal(af.minStars, 2000);
    assert.equal(af.maxStars, 5000);
    assert.deepEqual(af.topics, ["markdown"]);
    assert.deepEqual(body.meta.qualifiers, [
      { qualifier: "language:go", fields: ["language"], overridden: ["language"] },
      { qualifier: "stars:10..5000", fields: ["minStars", "maxStars"], overridden: ["minStars"] },
      { qualifier: "topic:markdown", fields: ["topics"], overridden: [] },
    ]);
    assert.ok(body.results.length > 0);
    assert.ok(body.results.every((r) => r.language === "Rust" && (r.stars ?? 0) >= 2000 && (r.stars ?? 0) <= 5000 && r.topics.includes("markdown")));
  });

  test("unknown key:value tokens stay text; no qualifier, no meta.qualifiers", async () => {
    const body = await search({ query: "markdown foo:bar notes" });
    assert.equal(body.meta.queryText, undefined);
    assert.equal(body.meta.qualifiers, undefined);
    assert.ok(!("pushedAfter" in body.meta.appliedFilters));
  });

  test("a framed request ranks the words that describe the need, and meta.queryText says which", async () => {
    const plain = await search({ query: "markdown note taking engine", limit: 10 });
    assert.equal(plain.meta.queryText, undefined, "nothing removed, nothing reported");
    assert.ok(namesOf(plain.results).includes(SEED), namesOf(plain.results).join(", "));
    for (const framed of [
      "What is the best markdown note taking engine?",
      "I'm looking for a popular markdown note taking engine",
      "GitHub repository for markdown note taking engine",
    ]) {
      const body = await search({ query: framed, limit: 10 });
      assert.equal(body.query, framed);
      assert.match(body.meta.queryText ?? "", /^(?:a )?markdown note taking engine$/, framed);
      assert.deepEqual(namesOf(body.results), namesOf(plain.results), framed);
    }
    const both = await search({ query: "best markdown note taking engine language:rust", limit: 10 });
    assert.equal(both.meta.queryText, "markdown note taking engine");
    assert.equal(both.meta.qualifiers?.[0]?.qualifier, "language:rust");
  });

  test("only qualifiers: the most-starred repositories under them (method popular), evidence naming them", async () => {
    const body = await search({ query: "language:rust topic:markdown", limit: 5 });
    assert.equal(body.meta.queryText, "");
    assert.deepEqual(Object.keys(body.meta.methods), ["popular"]);
    assert.ok(body.results.length >= 2);
    assert.equal(body.results[0]!.name, SEED, "4,200 stars: the most-starred Rust repository with topic markdown here");
    assert.equal(body.results[0]!.score, 1);
    for (let i = 1; i < body.results.length; i++) assert.ok((body.results[i - 1]!.stars ?? 0) >= (body.results[i]!.stars ?? 0));
    assert.ok(body.results.every((r) => r.language?.toLowerCase() === "rust" && r.topics.includes("markdown")));
    assert.match(body.results[0]!.evidence[0]!, /^Ranked by stars: the query holds only qualifiers \(language:rust topic:markdown\)/);
    assert.ok(body.meta.total >= body.results.length);
  });

  test("every malformed qualifier is a 400 naming it at /query, never charged", async () => {
    const a = await account();
    for (const bad of ["stars:>abc", "archived:maybe", "category:nope", "pushed:>2024-13-45", "forks:5..1", "-language:go", "topic:", 'language:"Go']) {
      const e = await expectError(await postSearch(gw.url, { query: `markdown notes ${bad}` }, a.key), 400, "VALIDATION_ERROR");
      assert.equal(e.details?.length, 1, JSON.stringify(e.details));
      assert.equal(e.details![0]!.path, "/query");
      assert.equal(e.details![0]!.rule, "qualifier");
      assert.ok(e.details![0]!.message.includes(`"${bad}"`), `${bad}: ${e.details![0]!.message}`);
    }
    assert.deepEqual(ledger(a.name), [], "refused before the debit");
  });

  test("gRPC and Connect callers get the same parsing from the core", async () => {
    const res = await grpcClient.search({ query: "notes pushed:>=2020-05-01 stars:<5000" });
    assert.equal(res.meta.appliedFilters.pushedAfter, "2020-05-01T00:00:00.000Z");
    assert.equal(res.meta.appliedFilters.maxStars, 4999);
    assert.equal(res.meta.queryText, "notes");
    assert.deepEqual(
      res.meta.qualifiers?.map((q) => q.qualifier),
      ["pushed:>=2020-05-01", "stars:<5000"],
    );
    await assert.rejects(grpcClient.search({ query: "notes archived:maybe" }), (err: unknown) => {
      assert.ok(err instanceof ReposearchError);
      assert.equal(err.code, ErrorCode.ValidationError);
      assert.deepEqual(
        err.details?.map((d) => [d.path, d.rule]),
        [["query", "qualifier"]],
      );
      return true;
    });
    const connect = await fetch(`${core.connect.url}/reposearch.v1.SearchService/Search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "notes language:rust" }),
    });
    assert.equal(connect.status, 200);
    const json = (await connect.json()) as { meta: { appliedFilters: { language: string }; queryText: string } };
    assert.equal(json.meta.appliedFilters.language, "rust");
    assert.equal(json.meta.queryText, "notes");
  });
});

describe("the core's Similar and GetRepository RPCs", () => {
  test("gRPC: similar by a former name; the card; NOT_FOUND and INVALID_ARGUMENT with the contract's codes", async () => {
    const res = await grpcClient.similar({ repo: OLD_NAME, limit: 4, filters: { language: "rust" } });
    assert.equal(res.query, SEED);
    assert.equal(res.results.length, 4);
    assert.ok(res.results.every((r) => r.language?.toLowerCase() === "rust" && r.name !== SEED));
    const card = await grpcClient.repository({ repo: OLD_NAME });
    assert.equal(card.name, SEED);
    assert.deepEqual(card.aliases, [OLD_NAME]);
    assert.equal(card.tree, "Cargo.toml\nREADME.md\nsrc/\nsrc/lib.rs\nsrc/index/");
    assert.equal(card.stars, 4200);
    for (const call of [() => grpcClient.similar({ repo: "nobody/none" }), () => grpcClient.repository({ repo: "nobody/none" })]) {
      await assert.rejects(call(), (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.NotFound);
    }
    await assert.rejects(grpcClient.similar({ repo: "no-slash" }), (err: unknown) => {
      assert.ok(err instanceof ReposearchError && err.code === ErrorCode.ValidationError);
      assert.deepEqual(
        err.details?.map((d) => [d.path, d.rule]),
        [["repo", "pattern"]],
      );
      return true;
    });
  });

  test("Connect JSON: Similar and GetRepository; not_found for an unknown name", async () => {
    const call = (method: string, body: unknown) =>
      fetch(`${core.connect.url}/reposearch.v1.SearchService/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const similar = (await (await call("Similar", { repo: SEED, limit: 2 })).json()) as { query: string; results: { name: string }[] };
    assert.equal(similar.query, SEED);
    assert.equal(similar.results.length, 2);
    const card = (await (await call("GetRepository", { repo: OLD_NAME })).json()) as { name: string; aliases: string[]; license: string };
    assert.deepEqual([card.name, card.aliases, card.license], [SEED, [OLD_NAME], "MIT"]);
    const missing = await call("GetRepository", { repo: "nobody/none" });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { code: string }).code, "not_found");
  });
});

describe("llms.txt", () => {
  test("states the served index's size, and documents similar, the repository card and the qualifiers", async () => {
    const stats = await core.engine.stats();
    assert.ok(stats.count > 1000);
    const text = await (await fetch(`${gw.url}/llms.txt`)).text();
    assert.ok(text.includes(`an index of ${new Intl.NumberFormat("en-US").format(stats.count)} public source-code repositories`), text.slice(0, 300));
    assert.ok(!text.includes("56,000"));
    for (const word of [
      "POST /v1/codehost/similar",
      "GET /v1/codehost/repos/<owner>/<repo>",
      "stars:>",
      "pushed:>2024-01-01",
      "meta.qualifiers",
      "rule `qualifier`",
    ]) {
      assert.ok(text.includes(word), `llms.txt mentions ${word}`);
    }
  });
});
