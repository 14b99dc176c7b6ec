/**
 * `reposearch search`, `similar` and `repo` as real processes: against a live gateway (flags or
 * REPOSEARCH_URL/REPOSEARCH_API_KEY, charged there) and against the local data dir (the default),
 * `--json` for machines and a table for people; bad flags exit 2 naming the flag, refusals exit 1
 * with the contract's code.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, test } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { SEARCH_PRICE_MICROS } from "../src/gateway/accounts/types.js";
import { validateResponse } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, oneRecordPerName, runCli, tempDir, type CliResult } from "./helpers.js";
import { buildIndex, fundedAccount, stackEnv, uniqueName, type TestAccount } from "./stack.js";

let dir: string;
let core: CoreHandle;
let gw: GatewayHandle;
let account: TestAccount;
let repoName: string;

/** The CLI with no remote service in its environment unless `extra` names one. */
function cli(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, { ...stackEnv(dir), REPOSEARCH_URL: "", REPOSEARCH_API_KEY: "", LOG_LEVEL: "warn", ...extra });
}

function json<T>(r: CliResult): T {
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  return JSON.parse(r.stdout) as T;
}

interface Answer {
  readonly results: { name: string; stars: number | null; language: string | null; tree?: string | null }[];
  readonly meta: { appliedFilters: { minStars: number | null; language: string | null; excludeArchived: boolean; topics: string[] } };
}

beforeAll(async () => {
  dir = await tempDir("cli-search");
  await buildIndex(dir, oneRecordPerName(await datasetLines(500)));
  const config = loadConfig(stackEnv(dir));
  core = await startCore(config, { version: "0.0.0-cli" });
  gw = await startGateway(config, { version: "0.0.0-cli", coreAddress: core.grpc.address });
  account = await fundedAccount(gw.accounts, uniqueName("cli"), 5);
  repoName = (await core.engine.search({ query: "library" })).results[0]!.name;
});

afterAll(async () => {
  await gw?.close();
  await core?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("against a remote service", () => {
  test("--url and --api-key: gh-like flags become the filter object; --json prints the REST answer; charged there", async () => {
    const before = await gw.accounts.balance(account.name);
    const r = await cli(["search", "library", "--url", gw.url, "--api-key", account.key, "--limit", "3", "--stars", ">0", "--include-archived", "--json"]);
    const body = json<Answer>(r);
    assert.deepEqual(validateResponse("SearchResponse", body).errors, []);
    assert.ok(body.results.length > 0 && body.results.length <= 3);
    assert.equal(body.meta.appliedFilters.minStars, 1);
    assert.equal(body.meta.appliedFilters.excludeArchived, false);
    assert.equal(await gw.accounts.balance(account.name), before - SEARCH_PRICE_MICROS);
    assert.ok(!r.stdout.includes(account.key) && !r.stderr.includes(account.key), "the key is never printed");
  });

  test("REPOSEARCH_URL and REPOSEARCH_API_KEY work like the flags; people get a table", async () => {
    const r = await cli(["search", "library", "--limit", "4"], { REPOSEARCH_URL: gw.url, REPOSEARCH_API_KEY: account.key });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, /^ # {2}REPOSITORY\s+STARS {2}LANGUAGE\s+PUSHED\s+DESCRIPTION$/);
    assert.equal(lines.filter((l) => /^\s*\d+ {2}\S+\/\S+/.test(l)).length, 4);
    assert.match(lines.at(-1)!, /^4 of [\d,]+ matches · filters: none beyond the defaults · \d+ ms$/);
  });

  test("similar and repo", async () => {
    const env = { REPOSEARCH_URL: gw.url, REPOSEARCH_API_KEY: account.key };
    const similar = json<Answer>(await cli(["similar", repoName, "--limit", "3", "--json"], env));
    assert.ok(similar.results.length > 0 && !similar.results.some((x) => x.name === repoName));
    const card = json<{ name: string }>(await cli(["repo", repoName, "--json"], env));
    assert.equal(card.name, repoName);
    const text = await cli(["repo", repoName], env);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.startsWith(`${repoName}  (`));
  });

  test("a refusal exits 1 with the contract's code: a bad key, an unknown repository", async () => {
    const bad = await cli(["search", "library", "--url", gw.url, "--api-key", "rsk_not_a_real_key"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^reposearch search: AUTH_ERROR: invalid API key/m);
    const unknown = await cli(["repo", "no-such-owner/no-such-repo", "--url", gw.url, "--api-key", account.key]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^reposearch repo: NOT_FOUND: /m);
  });
});

describe("against the local data dir (the default)", () => {
  test("search with filters, similar and repo answer from the index in the data dir", async () => {
    const lang = (await core.engine.repository({ repo: repoName })).language;
    const body = json<Answer>(await cli(["search", "library", "--data-dir", dir, "--limit", "5", "--tree", "--json", ...(lang ? ["--language", lang] : [])]));
    assert.ok(body.results.length > 0);
    assert.ok(body.results.every((x) => "tree" in x));
    if (lang) assert.ok(body.results.every((x) => x.language?.toLowerCase() === lang.toLowerCase()));
    assert.ok(json<Answer>(await cli(["similar", repoName, "--data-dir", dir, "--json"])).results.length > 0);
    assert.equal(json<{ name: string }>(await cli(["repo", repoName, "--data-dir", dir, "--json"])).name, repoName);
  });

  test("--mode still reads the store's raw channels", async () => {
    const r = await cli(["search", "library", "--data-dir", dir, "--mode", "lexical", "--limit", "2"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ 1\. \S+\/\S+ {2}★/);
  });
});

describe("bad flags: a clear message and exit 2", () => {
  const cases: [string[], RegExp][] = [
    [["search", "x", "--stars", ">abc"], /^reposearch search: --stars: /m],
    [["search", "x", "--limit", "500"], /^reposearch search: --limit: must be <= 50/m],
    [["search", "x", "--category", "nope"], /--category: must be one of: library/],
    [["search", "x", "--exclude", "not-a-repo"], /--exclude: must be owner\/repo/],
    [["search", "x", "--stale-after-months", "soon"], /--stale-after-months must be a whole number/],
    [["search", "x", "--bogus"], /Unknown option '--bogus'/],
    [["search"], /a query is required/],
    [["similar", "not-a-repo"], /OWNER\/REPO: must be owner\/repo/],
    [["repo", "a/b", "c/d"], /expected exactly one OWNER\/REPO/],
    [["search", "x", "--api-key", "rsk_x"], /--api-key needs a remote service/],
    [["search", "x", "--url", "http://127.0.0.1:9"], /needs an API key/],
    [["search", "x", "--url", "ftp://x", "--api-key", "rsk_x"], /--url: baseUrl must use http or https/],
  ];
  test.each(cases)("%j", async (args, message) => {
    const r = await cli([...args, "--data-dir", dir]);
    assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, message);
    assert.match(r.stderr, /usage: reposearch /);
  });
});
