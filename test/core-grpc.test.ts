/**
 * The gRPC search core end to end: one small real index (≈2,000 real records plus hand-made fixture
 * records with controlled fields) built by the real indexer CLI, served by the real core
 * (startCore, in-process), and queried only through real gRPC clients over loopback (CoreClient,
 * plus raw @grpc/grpc-js for health, watch and reflection).
 *
 * Every fixture's description holds the made-up word "zorblax", so a query for it finds all of them
 * (and, through dense retrieval, some real records too): each filter's result set restricted to the
 * fixtures must equal a brute-force reference computed from the fixture payloads on disk, and every
 * other result must satisfy the filter as well.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import { ErrorCode, ReposearchError } from "../src/common/errors.js";
import { pointIdFor } from "../src/common/hash.js";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { SearchEngine, batchesQueries, retrieverWeights, shippedRanker, type Stage } from "../src/core/engine.js";
import { embeddingText } from "../src/corpus/doc-text.js";
import { loadQueryEmbedder } from "../src/embed/factory.js";
import type { Embedder } from "../src/embed/types.js";
import { HEALTH_SERVICE_NAME, SEARCH_SERVICE_NAME, loadProtos } from "../src/core/grpc/convert.js";
import { expectError, grpcCodeOf, reflectionClient, waitUntil } from "./support/grpc-testkit.js";
import type { AppliedFilters, IndexStats, SearchFilters, SearchRequest, SearchResponse, SearchResult } from "../src/core/types.js";
import { CATEGORIES, type Category, type RepoPayload } from "../src/dataset/record.js";
import { startCore, type CoreHandle } from "../src/server/serve.js";
import { embeddedStoreFromConfig, type EmbeddedStore } from "../src/store/embedded/store.js";
import type { DenseQuery } from "../src/store/types.js";
import { datasetLines, lastReport, runCli, startCli, tempDir, testEnv, writeJsonl } from "./helpers.js";
import { buildIndex } from "./stack.js";

setLogLevel("warn");

// ---------------------------------------------------------------------------------------------
// Fixtures

const WORD = "zorblax";
/** Appears only in one fixture's README, next to markup, badges, a script and a control character. */
const README_WORD = "quarkspindle";
const OWNER = "e2e-fixture";
const DAY_MS = 86_400_000;
const RECENT = new Date(Date.now() - 10 * DAY_MS).toISOString();
const OLD = "2016-03-01T00:00:00Z";

const fx = (repo: string) => `${OWNER}/${repo}`;
const GO = fx("zorblax-go");
const GO_LOWER = fx("zorblax-go-lower");
const PY = fx("zorblax-py");
const ARCHIVED = fx("zorblax-archived");
const UNKNOWNS = fx("zorblax-unknowns");
const AWESOME = fx("awesome-zorblax");
const TUTORIAL = fx("zorblax-tutorial");
const CLI_TOOL = fx("zorblax-cli");
const NEWCOMER = fx("zorblax-newcomer");

const GO_TREE = ["README.md", "go.mod", "cmd/", "cmd/zorblax/", "cmd/zorblax/main.go", "internal/", "internal/wire.go", "internal/deep/nested/x.go"];

const FIXTURES: readonly Record<string, unknown>[] = [
  {
    name: GO,
    description: "A zorblax client library for Go",
    stars: 1500,
    forks: 120,
    language: "Go",
    topics: ["zorblax", "golang"],
    pushedAt: RECENT,
    isArchived: false,
    readme:
      "# Zorblax for Go\n\n[![build](https://ci.example/badge.svg)](https://ci.example/run) [![docs](https://img.example/d.svg)](https://docs.example)\n\n" +
      "<script>alert('pwned')</script>\n\nThe <b>quarkspindle</b> engine\u0007 speaks **zorblax** over `grpc`, see [the guide](https://example.com/guide).\n",
    tree: GO_TREE,
    llmsTxt: true,
    llmsTxtPaths: ["docs/llms-full.txt", "llms.txt"],
  },
  // Language stored lowercase: the filter must match it as well as "Go".
  {
    name: GO_LOWER,
    description: "zorblax bindings package for go programs",
    stars: 50,
    forks: 0,
    language: "go",
    topics: ["zorblax"],
    pushedAt: RECENT,
    isArchived: null,
  },
  {
    name: PY,
    description:
      "A zorblax parser library for Python. It reads zorblax documents, validates them against zorblax schemas, converts them to " +
      "dictionaries and back, streams large zorblax files in constant memory, reports precise line and column numbers for every " +
      "problem it finds, and ships type hints for every public function.",
    stars: 49,
    forks: 5,
    language: "Python",
    topics: ["parser"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: ARCHIVED,
    description: "An archived zorblax library for Go",
    stars: 300,
    forks: 30,
    language: "Go",
    topics: ["zorblax"],
    pushedAt: OLD,
    isArchived: true,
  },
  // Every optional field unknown; the classifier abstains (no category).
  { name: UNKNOWNS, description: "zorblax quux frobnicator", stars: null, forks: null, language: null, topics: [], pushedAt: null, isArchived: null },
  {
    name: AWESOME,
    description: "A curated list of awesome zorblax resources, libraries and tools",
    stars: 900,
    forks: 90,
    language: null,
    topics: ["awesome", "awesome-list"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: TUTORIAL,
    description: "A step-by-step zorblax tutorial and course for beginners",
    stars: 700,
    forks: 70,
    language: "Python",
    topics: ["tutorial", "course"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: CLI_TOOL,
    description: "A command-line tool to lint zorblax files",
    stars: 10_000,
    forks: 2000,
    language: "Rust",
    topics: ["cli", "linter"],
    pushedAt: OLD,
    isArchived: false,
  },
];
const FIXTURE_NAMES = FIXTURES.map((f) => String(f.name));
/**
 * Named, not described, after the fixtures' word, and described in words no other record uses: a
 * mention of the zorblax project, or a common word that shifts the idf of another project's anchor
 * terms, changes that project's evidence and re-embeds it too (src/corpus/anchors.ts).
 */
const NEWCOMER_FIXTURE = {
  name: NEWCOMER,
  description: "Newcomer frobwidget qelpmatic",
  stars: 5,
  forks: 1,
  language: "Go",
  topics: ["newcomer"],
  pushedAt: RECENT,
  isArchived: false,
};

/** What the classifier must decide for the fixtures (their cues are strong on purpose). */
const EXPECTED_CATEGORIES: Readonly<Record<string, Category | null>> = {
  [AWESOME]: "curated-list",
  [TUTORIAL]: "educational",
  [GO]: "library",
  [GO_LOWER]: "library",
  [PY]: "library",
  [ARCHIVED]: "library",
  [CLI_TOOL]: "tool",
  [UNKNOWNS]: null,
};

const isFixture = (name: string) => name.toLowerCase().startsWith(`${OWNER}/`);

// ---------------------------------------------------------------------------------------------
// The reference: the spec's filter semantics, written out independently of src/core/filters.ts

const HIDDEN_BY_DEFAULT: ReadonlySet<Category> = new Set(["curated-list", "educational"]);

function monthsBefore(now: Date, months: number): Date {
  const d = new Date(now.getTime());
  d.setUTCMonth(d.getUTCMonth() - months);
  return d;
}

/** Whether a repository passes the filters (spec §2.2; nulls fail bounds, archived null passes). */
function admits(
  p: Pick<RepoPayload, "key" | "stars" | "forks" | "language" | "topics" | "isArchived" | "pushedAt" | "category">,
  f: SearchFilters,
  now = new Date(),
): boolean {
  const within = (v: number | null, lo: number | undefined, hi: number | undefined) =>
    lo === undefined && hi === undefined ? true : v !== null && (lo === undefined || v >= lo) && (hi === undefined || v <= hi);
  if (!within(p.stars, f.minStars, f.maxStars)) return false;
  if (!within(p.forks, f.minForks, f.maxForks)) return false;
  if (f.language !== undefined && (p.language === null || p.language.toLowerCase() !== f.language.toLowerCase())) return false;
  if (f.excludeRepos?.some((r) => r.toLowerCase() === p.key)) return false;
  if (f.topics !== undefined && !f.topics.some((t) => p.topics.includes(t.toLowerCase()))) return false;
  if ((f.excludeArchived ?? true) && p.isArchived === true) return false;
  if (f.staleAfterMonths !== undefined && (p.pushedAt === null || Date.parse(p.pushedAt) < monthsBefore(now, f.staleAfterMonths).getTime())) return false;
  if (f.categories === undefined) return p.category === null || !HIDDEN_BY_DEFAULT.has(p.category);
  if (f.categories.length > 0) return p.category !== null && f.categories.includes(p.category);
  return true;
}

function expectedApplied(f: SearchFilters): AppliedFilters {
  return {
    categories:
      f.categories === undefined
        ? { mode: "default", values: CATEGORIES.filter((c) => !HIDDEN_BY_DEFAULT.has(c)), includeUncategorized: true }
        : f.categories.length === 0
          ? { mode: "all", values: [], includeUncategorized: true }
          : { mode: "explicit", values: [...f.categories], includeUncategorized: false },
    excludeArchived: f.excludeArchived ?? true,
    minStars: f.minStars ?? null,
    maxStars: f.maxStars ?? null,
    minForks: f.minForks ?? null,
    maxForks: f.maxForks ?? null,
    language: f.language ?? null,
    excludeRepos: [...(f.excludeRepos ?? [])],
    topics: [...(f.topics ?? [])],
    staleAfterMonths: f.staleAfterMonths ?? null,
  };
}

function sortedApplied(a: AppliedFilters): AppliedFilters {
  return { ...a, categories: { ...a.categories, values: [...a.categories.values].sort() } };
}

// ---------------------------------------------------------------------------------------------
// Response checks shared by every search

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function checkResponse(res: SearchResponse, req: SearchRequest, opts: { dense: boolean; rerankRan: boolean }): void {
  const limit = req.limit ?? 10;
  assert.equal(res.query, req.query);
  assert.ok(res.results.length <= limit, `${res.results.length} results > limit ${limit}`);
  const m = res.meta;
  assert.ok(m.total >= res.results.length, `total ${m.total} < ${res.results.length} results`);
  assert.ok(m.timeMs >= 0);
  if (req.query.trim() !== "") {
    assert.ok(m.methods.lexical, `methods ${JSON.stringify(m.methods)}`);
    for (const [name, s] of Object.entries(m.methods)) {
      assert.ok(Number.isInteger(s.hits) && s.hits >= 0, `${name}.hits ${s.hits}`);
      assert.ok(typeof s.weight === "number" && s.weight > 0, `${name}.weight ${s.weight}`);
    }
    assert.equal("dense" in m.methods, opts.dense, `methods ${JSON.stringify(m.methods)}`);
  }
  if (opts.rerankRan) {
    assert.equal(m.reranked, true);
    assert.ok(typeof m.rerankMs === "number" && m.rerankMs >= 0);
  } else {
    assert.ok(!("reranked" in m) && !("rerankMs" in m), `rerank fields present: ${JSON.stringify(m)}`);
  }
  let prev = Infinity;
  res.results.forEach((r, i) => {
    assert.ok(r.score >= 0 && r.score <= 1, `score ${r.score}`);
    assert.ok(r.score <= prev, `scores not non-increasing at ${i}`);
    prev = r.score;
    if (i === 0) assert.equal(r.score, 1);
    assert.ok(r.evidence.length >= 1 && r.evidence.length <= 3, `${r.name}: ${r.evidence.length} evidence items`);
    for (const e of r.evidence) {
      assert.ok(e.length > 0 && e.length <= 200, `${r.name}: evidence of ${e.length} chars: ${e}`);
      assert.ok(!CONTROL.test(e), `${r.name}: control character in evidence ${JSON.stringify(e)}`);
    }
    if (req.includeTree === true) {
      assert.ok("tree" in r, `${r.name}: tree missing with includeTree`);
      if (r.tree !== null && r.tree !== undefined) checkTree(r.tree);
    } else {
      assert.ok(!("tree" in r), `${r.name}: tree present without includeTree`);
    }
  });
}

function checkTree(tree: string): void {
  const lines = tree.split("\n");
  assert.ok(lines.length <= 200);
  for (const line of lines) {
    assert.ok(line.length > 0 && line.trim() === line && !CONTROL.test(line), `tree line ${JSON.stringify(line)}`);
    assert.ok(line.replace(/\/$/, "").split("/").length <= 2, `tree line deeper than 2: ${line}`);
  }
}

/** Health over a raw grpc-js client (grpc.health.v1.Health/Check). */
async function rawHealth(address: string, service: string): Promise<string> {
  const check = loadProtos().healthService.Check;
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    return await new Promise<string>((resolve, reject) => {
      raw.makeUnaryRequest(
        check!.path,
        check!.requestSerialize,
        check!.responseDeserialize,
        { service },
        new grpc.Metadata(),
        { deadline: Date.now() + 2_000 },
        (err, value) => {
          if (err) reject(err);
          else resolve(String((value as { status?: unknown }).status));
        },
      );
    });
  } finally {
    raw.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The index and the core

let dataDir: string;
let baseRows: Record<string, unknown>[];
let core: CoreHandle;
let coreClosed = false;
let client: CoreClient;
let refStore: EmbeddedStore;
/** Fixture payloads as the indexer stored them (category included), by name. */
const payloads = new Map<string, RepoPayload>();
let v1Stats: IndexStats;
let denseServed: boolean;

function coreEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = testEnv({
    DATA_DIR: dataDir,
    GRPC_PORT: "0",
    HOST: "127.0.0.1",
    INDEX_WATCH_INTERVAL_MS: "200",
    SHUTDOWN_GRACE_MS: "3000",
    LOG_LEVEL: "warn",
    ...extra,
  });
  if (!("RERANKER" in extra)) delete env.RERANKER; // the server default: off
  return env;
}

beforeAll(async () => {
  dataDir = await tempDir("core-grpc");
  baseRows = await datasetLines(2000);
  const built = await buildIndex(dataDir, [...baseRows, ...FIXTURES], { file: "v1.jsonl" });
  assert.equal(lastReport(built.stderr).published, true);

  // The reference reads the published index from disk, independently of the server under test.
  refStore = await embeddedStoreFromConfig(loadConfig({ ...testEnv(), DATA_DIR: dataDir }));
  const got = await refStore.retrieve(FIXTURE_NAMES.map((n) => pointIdFor(n.toLowerCase())));
  got.forEach((p, i) => {
    assert.ok(p, `fixture ${FIXTURE_NAMES[i]} not indexed`);
    payloads.set(p.name, p);
  });

  core = await startCore(loadConfig(coreEnv()), { version: "e2e-test" });
  client = new CoreClient(core.grpc.address, { defaultDeadlineMs: 5_000 });
  await client.waitForReady(5_000);
  v1Stats = await client.stats();
  denseServed = v1Stats.methods.includes("dense");
});

afterAll(async () => {
  client?.close();
  if (core && !coreClosed) await core.close();
  await refStore?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function payloadsOf(names: readonly string[]): Promise<Map<string, RepoPayload>> {
  const got = await refStore.retrieve(names.map((n) => pointIdFor(n.toLowerCase())));
  const out = new Map<string, RepoPayload>();
  got.forEach((p, i) => {
    assert.ok(p, `result ${names[i]} not in the reference index`);
    out.set(names[i]!, p);
  });
  return out;
}

// ---------------------------------------------------------------------------------------------

describe("fixtures", () => {
  it("are indexed with the categories their cues call for", () => {
    for (const [name, cat] of Object.entries(EXPECTED_CATEGORIES)) assert.equal(payloads.get(name)?.category, cat, name);
    assert.equal(payloads.get(GO_LOWER)?.language, "go", "language is stored as given");
  });
});

describe("filters end to end", () => {
  /** Each case: the filters, and (for readability and as a check on the reference) the fixtures expected. */
  const cases: ReadonlyArray<readonly [string, SearchFilters | undefined, readonly string[]]> = [
    ["no filters: default categories, archived excluded, null archived kept, uncategorized kept", undefined, [GO, GO_LOWER, PY, UNKNOWNS, CLI_TOOL]],
    ["empty filters object = defaults", {}, [GO, GO_LOWER, PY, UNKNOWNS, CLI_TOOL]],
    ["stars band is inclusive at both ends; unknown stars fail", { minStars: 50, maxStars: 1500 }, [GO, GO_LOWER]],
    ["minStars alone", { minStars: 1501 }, [CLI_TOOL]],
    ["forks band is inclusive", { minForks: 5, maxForks: 120 }, [GO, PY]],
    ["maxForks 0 admits zero forks only", { maxForks: 0 }, [GO_LOWER]],
    ["language lowercase", { language: "go" }, [GO, GO_LOWER]],
    ["language uppercase", { language: "GO" }, [GO, GO_LOWER]],
    ["language title case", { language: "Go" }, [GO, GO_LOWER]],
    ["language with archived included", { language: "gO", excludeArchived: false }, [GO, GO_LOWER, ARCHIVED]],
    ["excludeRepos is case-insensitive", { excludeRepos: ["E2E-Fixture/Zorblax-GO", "e2e-fixture/zorblax-cli"] }, [GO_LOWER, PY, UNKNOWNS]],
    ["topics: any of, case-insensitive", { topics: ["ZORBLAX", "linter"] }, [GO, GO_LOWER, CLI_TOOL]],
    ["categories explicit curated-list only", { categories: ["curated-list"] }, [AWESOME]],
    ["categories explicit: listed hidden and visible kinds, no uncategorized", { categories: ["educational", "library"] }, [TUTORIAL, GO, GO_LOWER, PY]],
    ["categories [] disables category filtering", { categories: [] }, [GO, GO_LOWER, PY, UNKNOWNS, AWESOME, TUTORIAL, CLI_TOOL]],
    ["excludeArchived false + all categories: every fixture", { categories: [], excludeArchived: false }, FIXTURE_NAMES],
    ["excludeArchived true explicitly", { excludeArchived: true, categories: [] }, [GO, GO_LOWER, PY, UNKNOWNS, AWESOME, TUTORIAL, CLI_TOOL]],
    ["staleAfterMonths drops old and unknown pushedAt", { staleAfterMonths: 12 }, [GO, GO_LOWER, PY]],
    [
      "staleAfterMonths with everything else open",
      { staleAfterMonths: 600, categories: [], excludeArchived: false },
      [GO, GO_LOWER, PY, ARCHIVED, AWESOME, TUTORIAL, CLI_TOOL],
    ],
    ["combined", { language: "PYTHON", categories: [], minStars: 100, staleAfterMonths: 1 }, [TUTORIAL]],
  ];

  for (const [title, filters, expected] of cases) {
    it(title, async () => {
      const req: SearchRequest = { query: WORD, limit: 50, ...(filters !== undefined ? { filters } : {}) };
      const res = await client.search(req);
      checkResponse(res, req, { dense: denseServed, rerankRan: false });

      // appliedFilters echoes the effective filters, defaults and nulls included.
      assert.deepEqual(sortedApplied(res.meta.appliedFilters), sortedApplied(expectedApplied(filters ?? {})));

      // Fixtures: exactly the brute-force reference over their stored payloads.
      const reference = FIXTURE_NAMES.filter((n) => admits(payloads.get(n)!, filters ?? {}));
      assert.deepEqual([...reference].sort(), [...expected].sort(), "the reference agrees with the case's expectation");
      const got = res.results.map((r) => r.name).filter(isFixture);
      assert.deepEqual([...got].sort(), [...reference].sort());
      assert.equal(res.meta.methods.lexical?.hits, reference.length, "only fixtures contain the word");

      // Every other result satisfies the filters too (checked against its stored payload).
      const all = await payloadsOf(res.results.map((r) => r.name));
      for (const r of res.results) {
        const p = all.get(r.name)!;
        assert.ok(admits(p, filters ?? {}), `${r.name} violates ${JSON.stringify(filters)}`);
        // The result's fields are the stored ones.
        assert.deepEqual(
          [r.stars, r.forks, r.language, [...r.topics], r.isArchived, r.pushedAt, r.url],
          [p.stars, p.forks, p.language, [...p.topics], p.isArchived, p.pushedAt, p.url],
          r.name,
        );
      }
      // Live lexical matches outrank dense-only neighbours. (An archived match may fall below a famous
      // neighbour: the ranker learned that archived repositories are seldom the answer.)
      const live = res.results.map((r) => isFixture(r.name) && r.name !== ARCHIVED);
      const firstOther = res.results.findIndex((r) => !isFixture(r.name));
      assert.ok(
        firstOther === -1 || live.lastIndexOf(true) < firstOther,
        `live fixtures come first: ${res.results.map((r) => `${r.name} (${r.stars ?? "?"}★)`).join(", ")}`,
      );
    });
  }

  it("brute-force reference for a stars band across every category and archived state", async () => {
    // The reference scans every stored fixture payload; the fixtures returned and the lexical hit count must agree.
    const filters: SearchFilters = { minStars: 49, maxStars: 300, categories: [], excludeArchived: false };
    const res = await client.search({ query: WORD, limit: 50, filters });
    const reference = [...payloads.values()].filter((p) => admits(p, filters)).map((p) => p.name);
    assert.deepEqual(reference.sort(), [GO_LOWER, PY, ARCHIVED].sort());
    assert.deepEqual(
      res.results
        .map((r) => r.name)
        .filter(isFixture)
        .sort(),
      reference,
    );
    assert.equal(res.meta.methods.lexical?.hits, 3);
  });
});

describe("results and meta", () => {
  it("meta, scores and evidence are well formed; methods report lexical and dense", async () => {
    const req: SearchRequest = { query: `${WORD} library`, limit: 7 };
    const res = await client.search(req);
    checkResponse(res, req, { dense: denseServed, rerankRan: false });
    assert.equal(res.results.length, 7);
    assert.ok(res.meta.total >= 7);
    assert.ok(denseServed, `stats methods ${v1Stats.methods.join(",")}`);
    assert.ok(res.meta.methods.dense!.hits > 0);
    // A retriever's weight is its features' share of the ranker's split gain.
    const w = retrieverWeights(shippedRanker());
    assert.equal(res.meta.methods.dense!.weight, Math.round(w.dense * 10_000) / 10_000);
    assert.equal(res.meta.methods.lexical!.weight, Math.round(w.lexical * 10_000) / 10_000);
    assert.ok(w.lexical > 0 && w.dense > 0 && w.lexical + w.dense <= 1 + 1e-9);
  });

  it("limit 1 and limit 50 bound the results", async () => {
    const one = await client.search({ query: "http client", limit: 1 });
    assert.equal(one.results.length, 1);
    assert.equal(one.results[0]!.score, 1);
    const fifty = await client.search({ query: "http client", limit: 50, filters: { categories: [] } });
    checkResponse(fifty, { query: "http client", limit: 50 }, { dense: true, rerankRan: false });
    assert.equal(fifty.results.length, 50);
  });

  it("README evidence is plain text: no markup, badges, script or control characters", async () => {
    const res = await client.search({ query: README_WORD, limit: 10 });
    checkResponse(res, { query: README_WORD, limit: 10 }, { dense: denseServed, rerankRan: false });
    const hit = res.results.find((r) => r.name === GO);
    assert.ok(hit, `README-only word did not find ${GO}: ${res.results.map((r) => r.name).join(",")}`);
    const readme = hit.evidence.find((e) => e.startsWith("README:"));
    assert.ok(readme, `no README evidence: ${JSON.stringify(hit.evidence)}`);
    assert.match(readme, new RegExp(README_WORD));
    for (const e of hit.evidence) {
      for (const bad of ["<", ">", "[![", "](", "script", "alert", "pwned", "**", "`", "https://", "\u0007"]) {
        assert.ok(!e.includes(bad), `evidence contains ${JSON.stringify(bad)}: ${JSON.stringify(e)}`);
      }
    }
  });

  it("evidence stays within 200 characters for a long description", async () => {
    const res = await client.search({ query: `${WORD} parser documents schemas`, limit: 5 });
    const hit = res.results.find((r) => r.name === PY);
    assert.ok(hit);
    assert.ok(String(payloads.get(PY)!.description).length > 300);
    for (const e of hit.evidence) assert.ok(e.length <= 200, `${e.length}: ${e}`);
  });

  it("includeTree: the compact tree for the fixture with one, null for fixtures without; absent when not asked", async () => {
    const req: SearchRequest = { query: WORD, limit: 50, includeTree: true, filters: { categories: [], excludeArchived: false } };
    const res = await client.search(req);
    checkResponse(res, req, { dense: denseServed, rerankRan: false });
    for (const r of res.results.filter((x) => isFixture(x.name))) {
      if (r.name === GO) {
        assert.equal(r.tree, "README.md\ngo.mod\ncmd/\ncmd/zorblax/\ninternal/\ninternal/wire.go");
        const lines = r.tree!.split("\n");
        assert.ok(
          lines.filter((l) => l.endsWith("/")).every((l) => GO_TREE.includes(l)),
          "directories keep their trailing slash",
        );
      } else {
        assert.equal(r.tree, null, r.name);
      }
    }
    const without = await client.search({ query: WORD, limit: 50, includeTree: false, filters: { categories: [] } });
    assert.ok(without.results.every((r) => !("tree" in r)));
    const omitted = await client.search({ query: WORD, limit: 50 });
    assert.ok(omitted.results.every((r) => !("tree" in r)));
  });

  it("llmsUrl: set (preferring llms.txt) for the fixture with llms.txt, null for the others", async () => {
    const res = await client.search({ query: WORD, limit: 50, filters: { categories: [], excludeArchived: false } });
    const fixtures = res.results.filter((r) => isFixture(r.name));
    assert.equal(fixtures.length, FIXTURES.length);
    for (const r of fixtures) {
      assert.equal(r.llmsUrl, r.name === GO ? `https://raw.githubusercontent.com/${GO}/HEAD/llms.txt` : null, r.name);
    }
  });

  it("null fields stay null end to end", async () => {
    const res = await client.search({ query: "zorblax quux frobnicator", limit: 5, filters: { categories: [] } });
    const r = res.results.find((x) => x.name === UNKNOWNS) as SearchResult;
    assert.ok(r);
    assert.deepEqual([r.stars, r.forks, r.language, r.pushedAt, r.isArchived, r.llmsUrl, [...r.topics]], [null, null, null, null, null, null, []]);
    assert.equal(r.url, `https://github.com/${UNKNOWNS}`);
  });

  it("a whitespace-only query is valid and matches nothing, without rerank fields", async () => {
    const res = await client.search({ query: "   ", filters: { language: "go" } });
    assert.deepEqual(res.results, []);
    assert.equal(res.query, "   ");
    assert.equal(res.meta.total, 0);
    assert.ok(!("reranked" in res.meta) && !("rerankMs" in res.meta));
    assert.deepEqual(sortedApplied(res.meta.appliedFilters), sortedApplied(expectedApplied({ language: "go" })));
  });

  it("a query of words nobody uses matches nothing (no arbitrary dense neighbours)", async () => {
    const res = await client.search({ query: "qwxyzzyq", filters: { categories: [] } });
    assert.deepEqual(
      res.results.map((r) => r.name),
      [],
    );
    assert.equal(res.meta.total, 0);
  });

  it("rerank disabled by configuration (default off): no reranked/rerankMs even when the request asks", async () => {
    for (const rerank of [undefined, true, false]) {
      const req: SearchRequest = { query: WORD, ...(rerank !== undefined ? { rerank } : {}) };
      const res = await client.search(req);
      checkResponse(res, req, { dense: denseServed, rerankRan: false });
      assert.ok(!("rerank" in res.meta.methods));
    }
    assert.equal(v1Stats.rerankerId, null);
  });
});

describe("one project, one result (renamed repositories)", () => {
  // Among the dataset's first 2,000 records: react/react and its older name facebook/react (same
  // repository part and description; the older record has stale stars and an old pushedAt).
  it("a search for the old name finds the project, whose result lists the old name among its aliases", async () => {
    const res = await client.search({ query: "facebook/react", limit: 5 });
    // A full name, current or former, is a lookup: that project comes first (promoteNamed).
    const hit = res.results[0]!;
    assert.equal(hit.name, "react/react", res.results.map((r) => r.name).join(", "));
    assert.ok(hit.aliases?.includes("facebook/react"), JSON.stringify(hit.aliases));
    assert.equal(hit.score, 1);
    assert.ok(res.results.every((r) => r.name.toLowerCase() !== "facebook/react"));
  });

  it("excludeRepos with the old name excludes the project", async () => {
    const all = await client.search({ query: "react library for user interfaces", limit: 20 });
    assert.ok(all.results.some((r) => r.name === "react/react"));
    const res = await client.search({ query: "react library for user interfaces", limit: 20, filters: { excludeRepos: ["Facebook/React"] } });
    assert.ok(
      res.results.every((r) => r.name !== "react/react" && r.name.toLowerCase() !== "facebook/react"),
      res.results.map((r) => r.name).join(", "),
    );
    assert.deepEqual(res.meta.appliedFilters.excludeRepos, ["Facebook/React"]);
  });

  it("no result list holds two names of one project", async () => {
    for (const query of ["react", "javascript framework", "next.js react framework", "command line json processor"]) {
      const res = await client.search({ query, limit: 50, filters: { categories: [], excludeArchived: false } });
      const names = res.results.flatMap((r) => [r.name, ...(r.aliases ?? [])].map((n) => n.toLowerCase()));
      assert.equal(new Set(names).size, names.length, `${query}: ${names.join(", ")}`);
    }
  });
});

describe("what Debian says a project is (src/corpus/packages.ts)", () => {
  // Among the dataset's first 2,000 records: git/git, whose own description is a mirror notice
  // ("Git Source Code Mirror - This is a publish-only repository …"), and Debian's git package,
  // "fast, scalable, distributed revision control system", joined by the owner's namesake.
  it("the package description is on the payload, finds the project and is named in its evidence", async () => {
    const [git] = await refStore.retrieve([pointIdFor("git/git")]);
    assert.ok(git, "git/git not indexed");
    assert.doesNotMatch(String(git.description), /revision/i);
    assert.match(String(git.packaged), /distributed revision control system/);
    const res = await client.search({ query: "distributed revision control", limit: 10, filters: { categories: [] } });
    const hit = res.results.find((r) => r.name === "git/git");
    assert.ok(hit, res.results.map((r) => r.name).join(", "));
    const line = hit.evidence.find((e) => e.startsWith("Matched terms in"));
    assert.match(String(line), /its Debian package description \([^)]*\brevision\b/, JSON.stringify(hit.evidence));
  });

  it("a mirror is embedded with its package description: what the project is, not where its code lives", async () => {
    const points = await refStore.scroll({ limit: 100_000, withVectors: true });
    const git = points.find((p) => p.payload.key === "git/git");
    assert.ok(git?.vector, "git/git not indexed with a vector");
    const info = await refStore.info();
    const embedder = await loadQueryEmbedder(loadConfig(coreEnv()), info.embedderId!);
    try {
      const [withPackage, without, query] = await embedder.embed([
        embeddingText(git.payload, { packaged: git.payload.packaged }),
        embeddingText(git.payload),
        "distributed revision control system",
      ]);
      const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
      assert.ok(dot(git.vector, withPackage!) > 0.9999, "the stored vector is the text with the package description");
      assert.ok(dot(git.vector, without!) < 0.99, "and not the mirror notice alone");
      assert.ok(dot(query!, withPackage!) > dot(query!, without!) + 0.1, "which brings the vector nearer to what the project is");
    } finally {
      await embedder.close();
    }
  });
});

describe("dense stage beam (DENSE_EF_SEARCH)", () => {
  it("the engine's dense stage asks the store for DENSE_EF_SEARCH, not the store's own efSearch", async () => {
    const config = loadConfig(coreEnv({ DENSE_EF_SEARCH: "24", HNSW_EF_SEARCH: "200" }));
    const store = await embeddedStoreFromConfig(config);
    const asked: (number | undefined)[] = [];
    // The real store, observed: every dense query's ef is recorded on its way in.
    const observed = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "denseSearch") return (q: DenseQuery) => (asked.push(q.ef), target.denseSearch(q));
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const ecore = await startCore(config, { version: "e2e-test", store: observed });
    const eclient = new CoreClient(ecore.grpc.address, { defaultDeadlineMs: 5_000 });
    try {
      const res = await eclient.search({ query: `${WORD} library`, limit: 5 });
      assert.ok(res.meta.methods.dense!.hits > 0);
      // Two dense queries: the nearest of all, and the nearest popular repositories.
      assert.deepEqual(asked, [24, 24]);
    } finally {
      eclient.close();
      await ecore.close();
    }
  });
});

describe("popular dense candidates (DENSE_POPULAR_CANDIDATES)", () => {
  it("the pool holds the nearest popular repositories under the request's filter, as an exact scan finds them", async () => {
    const config = loadConfig(coreEnv());
    const asked: DenseQuery[] = [];
    const observed = new Proxy(refStore, {
      get(target, prop, receiver) {
        if (prop === "denseSearch") return (q: DenseQuery) => (asked.push(q), target.denseSearch(q));
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const minStars = 1000;
    const engine = SearchEngine.fromConfig(config, observed, {
      candidates: { lexical: 5, dense: 5, popular: null, densePopular: { minStars, limit: 8 } },
    });
    await engine.sync();
    try {
      const query = "library for building web applications";
      const pool = await engine.pool(engine.prepare({ query, filters: { excludeArchived: true } }));
      assert.equal(asked.length, 2);
      const [near, famous] = asked as [DenseQuery, DenseQuery];
      assert.equal(near.limit, 5);
      assert.equal(famous.limit, 8);
      // The reference: an exact scan over the popular rows the request's filter admits.
      const reference = await refStore.denseSearch({ vector: famous.vector, filter: famous.filter, limit: 8, exact: true });
      assert.ok(reference.length > 0, "the fixture index holds popular repositories");
      const inPool = new Set(pool.candidates.map((c) => c.payload.key));
      for (const h of reference) {
        assert.ok(inPool.has(h.payload.key), `${h.payload.key} missing from the pool`);
        assert.ok((h.payload.stars ?? 0) >= minStars && h.payload.isArchived !== true, h.payload.key);
      }
      // Popular candidates beyond the nearest of all are ranked after them in the dense list.
      const popularOnly = pool.candidates.filter((c) => c.denseRank !== null && c.denseRank >= 5);
      assert.ok(popularOnly.every((c) => (c.payload.stars ?? 0) >= minStars));
    } finally {
      await engine.close();
    }
  });
});

describe("searches that arrive together", () => {
  it("run stage by stage (every lexical search, then every embedding, dense search, ranking, evidence) and answer as alone", async () => {
    const order: Stage[] = [];
    const engine = SearchEngine.fromConfig(loadConfig(coreEnv()), refStore, { onStage: (stage) => order.push(stage) });
    await engine.sync();
    const reqs: SearchRequest[] = [
      { query: `${WORD} library`, limit: 5 },
      { query: "http client", limit: 3, filters: { language: "go" } },
      { query: "static site generator", limit: 10, filters: { minStars: 10 } },
      { query: "command line parser", limit: 4 },
    ];
    try {
      const together = await Promise.all(reqs.map((r) => engine.search(r)));
      const n = reqs.length;
      assert.deepEqual(
        order,
        (["lexical", "embed", "dense", "rank", "evidence"] as const).flatMap((s) => Array<Stage>(n).fill(s)),
        "a batch runs one stage at a time (cheaper in CPU: each stage's data stays in cache)",
      );
      const withoutTime = (r: SearchResponse) => ({ ...r, meta: { ...r.meta, timeMs: 0 } });
      for (let i = 0; i < n; i++) {
        assert.ok(together[i]!.results.length > 0, `search ${i} found something`);
        assert.deepEqual(withoutTime(together[i]!), withoutTime(await engine.search(reqs[i]!)), `search ${i}: the same answer alone`);
      }
    } finally {
      await engine.close(); // its embedder; the store is refStore, closed after all tests
    }
  });
});

describe("query embeddings of searches that arrive together", () => {
  it("go to a non-static embedder as one call (QUERY_EMBED_MAX_BATCH), and each search answers as alone", async () => {
    const config = loadConfig(coreEnv());
    const info = await refStore.info();
    const real = await loadQueryEmbedder(config, info.embedderId!);
    // The index's own (static) model, presented under another id so that the engine batches its queries
    // (static ids are never batched); every call is recorded and then embedded by the real model.
    const calls: string[][] = [];
    const recording: Embedder = {
      id: "recording-" + real.id,
      dims: real.dims,
      embed: (texts) => {
        calls.push([...texts]);
        return real.embed(texts);
      },
      close: () => real.close(),
    };
    const batches: number[] = [];
    const engine = new SearchEngine({ store: refStore, loadEmbedder: async () => recording, queryEmbedMaxBatch: 3, onEmbedBatch: (n) => batches.push(n) });
    const unbatched = SearchEngine.fromConfig(config, refStore, { queryEmbedMaxBatch: 1 });
    try {
      // The engine looks its embedder up by the index's id; the recording one answers for it.
      await engine.sync();
      await unbatched.sync();
      const reqs: SearchRequest[] = [
        { query: `${WORD} library`, limit: 5 },
        { query: "http client", limit: 3, filters: { language: "go" } },
        { query: "static site generator", limit: 10 },
        { query: "command line parser", limit: 4 },
      ];
      const together = await Promise.all(reqs.map((r) => engine.search(r)));
      assert.deepEqual(calls, [reqs.slice(0, 3).map((r) => r.query), [reqs[3]!.query]], "one call per 3 queries (maxBatch), in arrival order");
      assert.deepEqual(batches, [3, 1]);
      const withoutTime = (r: SearchResponse) => ({ ...r, meta: { ...r.meta, timeMs: 0 } });
      for (let i = 0; i < reqs.length; i++) {
        assert.deepEqual(withoutTime(together[i]!), withoutTime(await unbatched.search(reqs[i]!)), `search ${i}: the same answer as unbatched`);
      }
    } finally {
      await engine.close();
      await unbatched.close();
    }
  });

  it("are never batched for static embedders, and QUERY_EMBED_MAX_BATCH is validated", () => {
    assert.equal(batchesQueries("static:abc", 32), false);
    assert.equal(batchesQueries("use-lite@0.2.0", 32), true);
    assert.equal(batchesQueries("use-lite@0.2.0", 1), false);
    assert.equal(loadConfig(coreEnv()).embedder.queryMaxBatch, 32);
    assert.throws(() => loadConfig(coreEnv({ QUERY_EMBED_MAX_BATCH: "0" })), /QUERY_EMBED_MAX_BATCH/);
    assert.throws(
      () => new SearchEngine({ store: refStore, loadEmbedder: () => Promise.reject(new Error("never loaded")), queryEmbedMaxBatch: 0 }),
      /queryEmbedMaxBatch/,
    );
  });
});

describe("rerank enabled (RERANKER=local)", () => {
  let rcore: CoreHandle;
  let rclient: CoreClient;
  beforeAll(async () => {
    rcore = await startCore(loadConfig(coreEnv({ RERANKER: "local", RERANK_TIMEOUT_MS: "5000" })), { version: "e2e-test" });
    rclient = new CoreClient(rcore.grpc.address, { defaultDeadlineMs: 5_000 });
  });
  afterAll(async () => {
    rclient?.close();
    await rcore?.close();
  });

  it("reranked and rerankMs present unless the request sets rerank:false", async () => {
    assert.equal((await rclient.stats()).rerankerId, "local:v1");
    for (const rerank of [undefined, true]) {
      const req: SearchRequest = { query: `${WORD} library for go`, limit: 20, ...(rerank !== undefined ? { rerank } : {}) };
      const res = await rclient.search(req);
      checkResponse(res, req, { dense: denseServed, rerankRan: true });
      assert.ok(res.meta.methods.rerank && res.meta.methods.rerank.hits > 0);
    }
    const off: SearchRequest = { query: `${WORD} library for go`, rerank: false };
    const res = await rclient.search(off);
    checkResponse(res, off, { dense: denseServed, rerankRan: false });
    assert.ok(!("rerank" in res.meta.methods));
  });

  it("no rerank fields for a whitespace-only query or an empty candidate pool", async () => {
    const ws = await rclient.search({ query: " \t " });
    assert.deepEqual(ws.results, []);
    assert.ok(!("reranked" in ws.meta) && !("rerankMs" in ws.meta));
    const empty = await rclient.search({ query: WORD, filters: { minStars: 400_000_000 } });
    assert.deepEqual(empty.results, []);
    assert.ok(!("reranked" in empty.meta) && !("rerankMs" in empty.meta));
  });

  it("filters still hold after rerank", async () => {
    const filters: SearchFilters = { language: "GO", excludeArchived: false };
    const res = await rclient.search({ query: WORD, limit: 50, filters });
    assert.equal(res.meta.reranked, true);
    const reference = FIXTURE_NAMES.filter((n) => admits(payloads.get(n)!, filters)).sort();
    assert.deepEqual(
      res.results
        .map((r) => r.name)
        .filter(isFixture)
        .sort(),
      reference,
    );
  });
});

describe("errors over gRPC", () => {
  const invalid: ReadonlyArray<readonly [string, SearchRequest, string]> = [
    ["limit 51", { query: WORD, limit: 51 }, "limit:maximum"],
    ["limit 0", { query: WORD, limit: 0 }, "limit:minimum"],
    ["empty query", { query: "" }, "query:minLength"],
    ["501-character query", { query: "a".repeat(501) }, "query:maxLength"],
    ["unknown category", { query: WORD, filters: { categories: ["bogus" as Category] } }, "filters.categories[0]:enum"],
    ["excludeRepos item without a slash", { query: WORD, filters: { excludeRepos: ["nope"] } }, "filters.excludeRepos[0]:pattern"],
    ["empty topics", { query: WORD, filters: { topics: [] } }, "filters.topics:minItems"],
    ["staleAfterMonths 601", { query: WORD, filters: { staleAfterMonths: 601 } }, "filters.staleAfterMonths:maximum"],
  ];
  for (const [title, req, detail] of invalid) {
    it(`${title} → INVALID_ARGUMENT with VALIDATION_ERROR details`, async () => {
      const err = await expectError(client.search(req));
      assert.equal(err.code, ErrorCode.ValidationError);
      assert.equal(grpcCodeOf(err), grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(
        err.details?.map((d) => `${d.path}:${d.rule}`),
        [detail],
      );
      assert.equal(err.toJSON().error.status, 400);
    });
  }

  it("a 500-character query is accepted", async () => {
    const res = await client.search({ query: `${WORD} ${"b".repeat(492)}` });
    assert.ok(res.results.some((r) => isFixture(r.name)));
  });

  it("a 1 ms deadline → DEADLINE_EXCEEDED", async () => {
    const err = await expectError(client.search({ query: "a fast http router with middleware", limit: 50 }, { deadlineMs: 1 }));
    assert.equal(err.code, ErrorCode.DeadlineExceeded);
    assert.equal(grpcCodeOf(err), grpc.status.DEADLINE_EXCEEDED);
    // The server is fine afterwards.
    assert.ok((await client.search({ query: WORD })).results.length > 0);
  });
});

describe("health, reflection and stats", () => {
  it("health is SERVING for the server and the search service (CoreClient and raw grpc-js)", async () => {
    assert.equal(await client.health(), "SERVING");
    assert.equal(await client.health(SEARCH_SERVICE_NAME), "SERVING");
    assert.equal(await rawHealth(core.grpc.address, ""), "SERVING");
    assert.equal(await rawHealth(core.grpc.address, SEARCH_SERVICE_NAME), "SERVING");
    assert.equal(await client.health("no.such.Service"), "SERVICE_UNKNOWN");
  });

  it("reflection lists reposearch.v1.SearchService", async () => {
    const reflection = reflectionClient(core.grpc.address);
    try {
      const names = await reflection.listServices();
      assert.ok(names.includes(SEARCH_SERVICE_NAME), names.join(","));
      assert.ok(names.includes(HEALTH_SERVICE_NAME), names.join(","));
    } finally {
      reflection.close();
    }
  });

  it("GetIndexStats: version, count of indexed points, embedder, age, methods", async () => {
    const s = await client.stats();
    const disk = await refStore.info();
    assert.match(String(s.version), /^v\d+$/);
    assert.equal(s.version, disk.version);
    // One point per project: records merged into another as its aliases are not points of their own.
    const segment = refStore.currentSegment()!;
    const aliases = segment.payloads.reduce((n, p) => n + p.aliasKeys.length, 0);
    assert.ok(aliases > 0, "the first 2,000 records hold renamed projects");
    assert.equal(s.count, baseRows.length + FIXTURES.length - aliases);
    assert.equal(s.count, disk.count);
    assert.match(String(s.embedderId), /^static:/);
    assert.equal(s.dims, disk.dims);
    assert.ok(s.ageSeconds !== null && s.ageSeconds >= 0);
    assert.equal(s.publishedAt, disk.publishedAt);
    assert.deepEqual([...s.methods].sort(), ["dense", "lexical"]);
  });
});

describe("the real CLI process (serve --role core)", () => {
  it("serves the same index over gRPC and exits 0 on SIGTERM", async () => {
    const { child, done } = startCli(["serve", "--role", "core", "--data-dir", dataDir], coreEnv({ LOG_LEVEL: "info" }));
    let stdout = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    let cli: CoreClient | undefined;
    try {
      assert.ok(await waitUntil(() => /search core \(gRPC\) at (\S+)/.test(stdout), 15_000), `no address printed: ${stdout}`);
      const address = /search core \(gRPC\) at (\S+)/.exec(stdout)![1]!;
      cli = new CoreClient(address, { defaultDeadlineMs: 5_000 });
      assert.ok(await waitUntil(async () => (await cli!.health(SEARCH_SERVICE_NAME).catch(() => "DOWN")) === "SERVING", 10_000), "CLI core never SERVING");
      const req: SearchRequest = { query: WORD, limit: 50, filters: { language: "go" } };
      const res = await cli.search(req);
      checkResponse(res, req, { dense: denseServed, rerankRan: false });
      assert.deepEqual(
        res.results
          .map((r) => r.name)
          .filter(isFixture)
          .sort(),
        [GO, GO_LOWER].sort(),
      );
      assert.deepEqual(await cli.stats().then((s) => [s.version, s.count]), [v1Stats.version, v1Stats.count]);
    } finally {
      cli?.close();
      child.kill("SIGTERM");
    }
    const exit = await done;
    assert.equal(exit.code, 0, exit.stderr.slice(-2000));
  });
});

describe("index swap under load", () => {
  it("a new version published by the real indexer is picked up with zero failed searches", async () => {
    const before = await client.stats();
    const clients = Array.from({ length: 4 }, () => new CoreClient(core.grpc.address, { defaultDeadlineMs: 10_000 }));
    const queries: SearchRequest[] = [
      { query: WORD, limit: 20, filters: { categories: [] } },
      { query: "fast http server framework", limit: 10, includeTree: true },
      { query: "machine learning library for python", filters: { language: "Python", minStars: 10 } },
      { query: `${WORD} newcomer`, filters: { excludeArchived: false, staleAfterMonths: 24 } },
    ];
    let stop = false;
    let ok = 0;
    let newVersion = "";
    const failures: string[] = [];
    const loops = clients.map(async (c, i) => {
      let k = i;
      while (!stop) {
        const req = queries[k++ % queries.length]!;
        try {
          const res = await c.search(req);
          assert.ok(res.results.length <= (req.limit ?? 10));
          ok++;
        } catch (err) {
          failures.push(`${req.query}: ${err instanceof Error ? `${(err as ReposearchError).code ?? ""} ${err.message}` : String(err)}`);
        }
      }
    });
    try {
      await sleep(300); // load is running before the indexer starts
      const ds2 = await writeJsonl(path.join(dataDir, "v2.jsonl"), [...baseRows, ...FIXTURES, NEWCOMER_FIXTURE]);
      const run = await runCli(["index", "--dataset", ds2, "--data-dir", dataDir], testEnv());
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      const rep = lastReport(run.stderr);
      assert.equal(rep.embedded, 1);
      assert.equal(rep.published, true);
      newVersion = String(rep.version);

      const found = await waitUntil(
        async () => {
          const res = await client.search({ query: `${WORD} newcomer`, limit: 50 });
          return res.results.some((r) => r.name === NEWCOMER);
        },
        10_000,
        100,
      );
      assert.ok(found, "the new fixture is searchable after the watcher interval");
      await sleep(300); // keep the load on the new version for a moment
    } finally {
      stop = true;
      await Promise.all(loops);
      for (const c of clients) c.close();
    }
    assert.deepEqual(failures, [], `${failures.length} failed searches during the swap`);
    assert.ok(ok >= 20, `only ${ok} searches ran during the swap`);
    console.log(`${ok} searches by 4 clients during the swap, 0 failed`);

    const after = await client.stats();
    assert.notEqual(after.version, before.version);
    assert.equal(after.version, newVersion);
    assert.equal(after.count, before.count + 1);
    // The run embedded only the newcomer: every other repository keeps its payload object, and with it
    // what the ranker cached for it.
    assert.equal((core.store as EmbeddedStore).currentSegment()!.payloadsShared, before.count);
    assert.ok(after.ageSeconds !== null && after.ageSeconds >= 0);
    assert.deepEqual([...after.methods].sort(), ["dense", "lexical"]);
  });
});

describe("graceful shutdown", () => {
  it("health turns NOT_SERVING as shutdown starts; afterwards searches fail UNAVAILABLE", async () => {
    const watch = loadProtos().healthService.Watch;
    const raw = new grpc.Client(core.grpc.address, grpc.credentials.createInsecure());
    const seen: string[] = [];
    const stream = raw.makeServerStreamRequest(watch!.path, watch!.requestSerialize, watch!.responseDeserialize, { service: SEARCH_SERVICE_NAME });
    stream.on("data", (msg: { status?: string }) => seen.push(msg.status ?? "UNKNOWN"));
    stream.on("error", () => undefined); // CANCELLED once we stop watching
    try {
      assert.ok(await waitUntil(() => seen.includes("SERVING"), 3_000), `seen ${seen.join(",")}`);
      coreClosed = true;
      const closing = core.close();
      assert.ok(await waitUntil(() => seen.at(-1) === "NOT_SERVING", 3_000), `seen ${seen.join(",")}`);
      stream.cancel(); // the watch is an in-flight call; ending it lets shutdown finish gracefully
      const t0 = Date.now();
      await closing;
      assert.ok(Date.now() - t0 < 2_500, "shutdown completed within the grace period");
    } finally {
      raw.close();
    }
    const late = new CoreClient(core.grpc.address, { channelOptions: { "grpc.initial_reconnect_backoff_ms": 50 } });
    try {
      const err = await expectError(late.search({ query: WORD }, { deadlineMs: 1_000 }));
      assert.equal(err.code, ErrorCode.Unavailable);
    } finally {
      late.close();
    }
  });
});
