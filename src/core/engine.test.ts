import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { BootstrapStore } from "../store/embedded/bootstrap.js";
import { rankPool, SearchEngine, shippedRanker, type CandidatePool } from "./engine.js";
import { FEATURES } from "./rank/features.js";
import { rankerModel, type RankerModel } from "./rank/model.js";

/** A ranker that scores by one feature (a single split), to make orderings predictable. */
function byFeature(name: (typeof FEATURES)[number], sign = 1): RankerModel {
  const f = FEATURES.indexOf(name);
  const tree = { feature: [f, -1, -1], threshold: [0.5, 0, 0], left: [1, -1, -1], right: [2, -1, -1], value: [0, 0, sign], gain: [1, 0, 0] };
  const zeros = FEATURES.map(() => 0);
  return rankerModel({ mean: zeros, scale: FEATURES.map(() => 1), weights: zeros }, [tree]);
}

const line = (name: string, description: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name, description, stars: 500, lastSeen: "2026-08-01", ...extra });

describe("search engine over a lexical-only store", () => {
  let dir: string;
  let store: BootstrapStore;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "reposearch-engine-"));
    const file = path.join(dir, "repos.jsonl");
    await writeFile(
      file,
      [
        line("jqlang/jq", "Command-line JSON processor for shell pipelines", { stars: 35_000, lastSeen: "2026-08-22" }),
        line("stedolan/jq", "Command-line JSON processor for shell pipelines", { stars: 24_000, lastSeen: "2023-05-28" }),
        line("acme/json-tool", "A JSON processor"),
        line("acme/yaml-tool", "A YAML processor"),
      ].join("\n") + "\n",
    );
    store = await BootstrapStore.build(file);
  });
  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const engine = (ranker: RankerModel) => new SearchEngine({ store, loadEmbedder: () => Promise.reject(new Error("no embedder")), ranker });

  it("one project, one result: an old name finds the project, which lists it among its aliases", async () => {
    const res = await engine(shippedRanker()).search({ query: "stedolan/jq", limit: 5, filters: { categories: [] } });
    assert.equal(res.results[0]!.name, "jqlang/jq");
    assert.deepEqual(res.results[0]!.aliases, ["stedolan/jq"]);
    assert.ok(res.results.every((r) => r.name !== "stedolan/jq"));
    assert.ok(
      res.results.slice(1).every((r) => r.aliases === undefined),
      "aliases only where a project has other names",
    );
  });

  it("excludeRepos with an old name excludes the project", async () => {
    const res = await engine(shippedRanker()).search({ query: "json processor", limit: 5, filters: { categories: [], excludeRepos: ["Stedolan/JQ"] } });
    const names = res.results.map((r) => r.name);
    assert.ok(names.includes("acme/json-tool") && !names.includes("jqlang/jq"), names.join(", "));
    const all = await engine(shippedRanker()).search({ query: "json processor", limit: 5, filters: { categories: [] } });
    assert.ok(
      all.results.some((r) => r.name === "jqlang/jq"),
      "found without the exclusion",
    );
    assert.deepEqual(res.meta.appliedFilters.excludeRepos, ["Stedolan/JQ"]);
  });

  it("ranks by the model's score; scores are exp(s − best), 1 for the first", async () => {
    const res = await engine(byFeature("name_match")).search({ query: "yaml tool", limit: 5, filters: { categories: [] } });
    assert.equal(res.results[0]!.name, "acme/yaml-tool");
    assert.equal(res.results[0]!.score, 1);
    assert.ok(
      res.results.slice(1).every((r) => Math.abs(r.score - Math.exp(-1)) < 1e-4),
      JSON.stringify(res.results.map((r) => r.score)),
    );
    // meta.methods' weight is a retriever's features' share of the model: naming features are neither's.
    assert.deepEqual(res.meta.methods.lexical, { hits: 2, weight: 0 });
  });

  it("prepare reads a request as search ranks it, and its pool ranks as search does", async () => {
    const ranker = byFeature("name_match");
    const e = engine(ranker);
    const request = { query: "what is the best json processor stars:<1000", filters: { categories: [] } };
    const prepared = e.prepare(request);
    assert.equal(prepared.text, "json processor", "framing words and qualifiers leave the text");
    assert.equal(prepared.applied.maxStars, 999);
    assert.deepEqual(
      prepared.qualifiers.map((q) => q.qualifier),
      ["stars:<1000"],
    );
    assert.equal(prepared.understanding.notes[0], "qualifiers stars:<1000");
    const pooled = rankPool(await e.pool(prepared), ranker).map((c) => c.payload.key);
    const res = await e.search(request);
    assert.deepEqual(
      res.results.map((r) => r.name),
      pooled,
    );
    assert.ok(pooled.length > 0 && !pooled.includes("jqlang/jq"), "the qualifier's filter applies to the pool");
    assert.equal(res.meta.queryText, "json processor");
    assert.throws(() => e.prepare({ query: "x", limit: 0 }), /limit/);
  });

  it("ties in the model's score break by key", () => {
    const payload = (key: string) => ({ key }) as unknown as CandidatePool["candidates"][number]["payload"];
    const cand = (key: string) => ({ payload: payload(key), lexical: null, lexicalRank: null, denseRank: null, dense: null, score: 0 });
    const pool: CandidatePool = {
      candidates: [cand("b/x"), cand("a/x"), cand("c/x")],
      features: new Float32Array(3 * FEATURES.length),
      lexicalHits: 3,
      denseHits: null,
      featureSeconds: 0,
    };
    assert.deepEqual(
      rankPool(pool, shippedRanker()).map((c) => c.payload.key),
      ["a/x", "b/x", "c/x"],
    );
  });
});
