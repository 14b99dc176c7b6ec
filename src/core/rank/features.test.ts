import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { payload } from "../../../test/support/test-records.js";
import type { RepoPayload } from "../../dataset/record.js";
import { LEXICAL_FIELDS } from "../../store/bm25f.js";
import { analyze } from "../../text/analyzer.js";
import { recordPredecessor } from "../../dataset/payload-lineage.js";
import { saysLanguage } from "../query.js";
import { extractFeatures, FEATURES, selfNamed, type QueryContext, type RankCandidate } from "./features.js";

function context(cosines: number[]): QueryContext {
  const n = cosines.length;
  return {
    text: "tool",
    understanding: { language: null, categories: [], notes: [] },
    explanation: {
      fields: new Float32Array(n * LEXICAL_FIELDS.length),
      coverage: new Float32Array(n),
      terms: [{ term: "tool", idf: 2 }],
      found: new Uint8Array(n),
      dense: Float32Array.from(cosines),
    },
    lexicalTop: 0,
    lexicalTenth: 0,
  };
}

const cand = (p: RepoPayload): RankCandidate => ({ payload: p, lexical: null, lexicalRank: null, denseRank: 0 });
const feature = (rows: Float32Array, row: number, name: (typeof FEATURES)[number]) => rows[row * FEATURES.length + FEATURES.indexOf(name)]!;

describe("ranking features", () => {
  it("freshness is the gap to the pool's most recently pushed candidate, so the same pool gives the same features at any time", () => {
    const p = payload("a/old", "one two three", { pushedAt: "2024-01-01T00:00:00Z", stars: 999 });
    const fresh = payload("a/fresh", "four", { pushedAt: "2025-01-01T00:00:00Z" });
    const fresher = payload("a/fresher", "five", { pushedAt: "2026-01-01T00:00:00Z" });
    const unknown = payload("a/unknown", "six", { pushedAt: null });
    const pool = extractFeatures(context([0.5, 0.5, 0.5]), [cand(p), cand(fresh), cand(unknown)]);
    assert.ok(Math.abs(feature(pool, 0, "pushed_gap") - 366 / 365.25) < 1e-3);
    assert.equal(feature(pool, 1, "pushed_gap"), 0);
    assert.equal(feature(pool, 2, "pushed_gap"), -1);
    const wider = extractFeatures(context([0.5, 0.5]), [cand(p), cand(fresher)]);
    assert.ok(Math.abs(feature(wider, 0, "pushed_gap") - 731 / 365.25) < 1e-3);
    // The payload's own facts are computed once and reused by every search.
    assert.equal(feature(wider, 0, "description_words"), 3);
    assert.ok(Math.abs(feature(wider, 0, "stars") - Math.log(1000)) < 1e-5);
  });

  it("dense_fame_rank ranks by fame the candidates close in meaning (cosine ≥ 0.9 × the best); the others are missing", () => {
    const near = payload("a/near", "a tool", { stars: 10 });
    const famousNear = payload("a/famous-near", "a tool", { stars: 50_000 });
    const famousFar = payload("a/famous-far", "a tool", { stars: 90_000 });
    const rows = extractFeatures(context([0.8, 0.75, 0.3]), [cand(near), cand(famousNear), cand(famousFar)]);
    assert.equal(feature(rows, 1, "dense_fame_rank"), Math.fround(Math.log2(2 + 0)));
    assert.equal(feature(rows, 0, "dense_fame_rank"), Math.fround(Math.log2(2 + 1)));
    assert.equal(feature(rows, 2, "dense_fame_rank"), Math.fround(Math.log2(2 + 256)));
  });

  it("coverage counts the query's words, not the analyser's terms, and a language word is said by a repository in that language", () => {
    // "self-hosted python wiki": the analyser makes self, host and selfhost of one word.
    const terms = [
      { term: "self", idf: 1 },
      { term: "host", idf: 2 },
      { term: "selfhost", idf: 3 },
      { term: "python", idf: 1.5 },
      { term: "wiki", idf: 4 },
    ];
    const onlyWiki = payload("a/wiki", "a wiki", { languageLc: "go" });
    const selfHost = payload("a/host", "self host", { languageLc: "go" });
    const pythonWiki = payload("a/pywiki", "a wiki", { languageLc: "python" });
    // rows × terms: which term each candidate's text holds.
    const found = Uint8Array.from([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
    const ctx = (language: string | null): QueryContext => ({
      ...context([0.5, 0.5, 0.5]),
      text: "self-hosted python wiki",
      understanding: { language, categories: [], notes: [] },
      explanation: { ...context([0.5, 0.5, 0.5]).explanation, terms, found },
    });
    const rows = extractFeatures(ctx("python"), [cand(onlyWiki), cand(selfHost), cand(pythonWiki)]);
    // Words weigh their best term's idf: self-hosted 3, python 1.5, wiki 4 (8.5 in all).
    assert.ok(Math.abs(feature(rows, 0, "coverage") - 4 / 8.5) < 1e-6);
    assert.ok(Math.abs(feature(rows, 1, "coverage") - 3 / 8.5) < 1e-6, "two of self-hosted's three terms: the word is said once");
    assert.ok(Math.abs(feature(rows, 2, "coverage") - 5.5 / 8.5) < 1e-6, "python, by the repository's language");
    assert.ok(Math.abs(feature(rows, 0, "coverage_gap") - 1.5 / 8.5) < 1e-6);
    // Without a language in the query understanding, "python" is only a word to find.
    const plain = extractFeatures(ctx(null), [cand(onlyWiki), cand(selfHost), cand(pythonWiki)]);
    assert.ok(Math.abs(feature(plain, 2, "coverage") - 4 / 8.5) < 1e-6);
  });
  it("a query naming JavaScript is in the language of a TypeScript repository, not the other way round", () => {
    const terms = [
      { term: "javascript", idf: 2 },
      { term: "bundler", idf: 6 },
    ];
    const ts = payload("a/ts", "a bundler", { languageLc: "typescript" });
    const js = payload("a/js", "a bundler", { languageLc: "javascript" });
    const go = payload("a/go", "a bundler", { languageLc: "go" });
    const found = Uint8Array.from([0, 1, 0, 1, 0, 1]);
    const ctx = (text: string, language: string): QueryContext => ({
      ...context([0.5, 0.5, 0.5]),
      text,
      understanding: { language, categories: [], notes: [] },
      explanation: { ...context([0.5, 0.5, 0.5]).explanation, terms, found },
    });
    const rows = extractFeatures(ctx("javascript bundler", "javascript"), [cand(ts), cand(js), cand(go)]);
    assert.deepEqual(
      [0, 1, 2].map((i) => feature(rows, i, "language_match")),
      [1, 1, -1],
    );
    assert.deepEqual(
      [0, 1, 2].map((i) => feature(rows, i, "coverage")),
      [1, 1, 0.75],
    );
    // A query naming TypeScript asks for types: JavaScript does not serve it.
    const typed = extractFeatures(ctx("typescript bundler", "typescript"), [cand(ts), cand(js), cand(go)]);
    assert.deepEqual(
      [0, 1, 2].map((i) => feature(typed, i, "language_match")),
      [1, -1, -1],
    );
  });

  it("a repository whose own words say the query's language is half a match, whatever it is written in", () => {
    const ruff = payload("astral-sh/ruff", "An extremely fast Python linter, written in Rust", { languageLc: "rust" });
    const pylint = payload("pylint-dev/pylint", "It's not just a linter that annoys you!", { languageLc: "python" });
    const clippy = payload("rust-lang/clippy", "A bunch of lints to catch common mistakes", { languageLc: "rust" });
    const unknown = payload("a/unknown", "a linter", { languageLc: null });
    const tagged = payload("a/tagged", "a linter", { languageLc: null, topics: ["python3", "linter"] });
    const rows = extractFeatures(
      { ...context([0.5, 0.5, 0.5, 0.5, 0.5]), text: "python linter", understanding: { language: "python", categories: [], notes: [] } },
      [cand(ruff), cand(pylint), cand(clippy), cand(unknown), cand(tagged)],
    );
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((i) => feature(rows, i, "language_match")),
      [0.5, 1, -1, 0, 0.5],
    );
  });

  it("single_* are fame where the query asks for one thing, and neutral where it asks for many", () => {
    const small = payload("a/small", "a tool", { stars: 10 });
    const famous = payload("a/famous", "a tool", { stars: 50_000 });
    const ctx = (text: string): QueryContext => ({ ...context([0.5, 0.5]), text });
    const one = extractFeatures(ctx("password manager"), [cand(small), cand(famous)]);
    const many = extractFeatures(ctx("Python libraries for passwords"), [cand(small), cand(famous)]);
    for (const row of [0, 1]) {
      assert.equal(feature(one, row, "single_stars_gap"), feature(one, row, "stars_gap"));
      assert.equal(feature(one, row, "single_fame_rank"), feature(one, row, "fame_rank"));
      assert.equal(feature(many, row, "single_stars_gap"), 0);
      assert.equal(feature(many, row, "single_fame_rank"), Math.fround(Math.log2(2 + 256)));
      // The other features do not depend on the query's number.
      assert.equal(feature(many, row, "stars_gap"), feature(one, row, "stars_gap"));
    }
    assert.ok(feature(one, 0, "single_stars_gap") > 8, "the small one is far behind the famous one (log stars)");
  });

  it("head_coverage is the coverage of the words before the query's qualifiers, head_said whether the head noun is said", () => {
    // "relational database for java": an ORM says relational and java, a database server says database.
    const terms = [
      { term: "relational", idf: 2 },
      { term: "databas", idf: 1 },
      { term: "java", idf: 1.5 },
    ];
    const orm = payload("a/orm", "object relational mapper", { languageLc: "java" });
    const server = payload("a/server", "a database", { languageLc: "c" });
    const found = Uint8Array.from([1, 0, 1, 0, 1, 0]);
    const ctx: QueryContext = {
      ...context([0.5, 0.5]),
      text: "relational database for java",
      understanding: { language: "java", categories: [], notes: [] },
      explanation: { ...context([0.5, 0.5]).explanation, terms, found },
    };
    const rows = extractFeatures(ctx, [cand(orm), cand(server)]);
    assert.ok(Math.abs(feature(rows, 0, "coverage") - 3.5 / 4.5) < 1e-6, "the ORM says more of the whole query");
    assert.ok(Math.abs(feature(rows, 1, "coverage") - 1 / 4.5) < 1e-6);
    assert.ok(Math.abs(feature(rows, 0, "head_coverage") - 2 / 3) < 1e-6, "relational, of relational database");
    assert.ok(Math.abs(feature(rows, 1, "head_coverage") - 1 / 3) < 1e-6, "database");
    assert.equal(feature(rows, 0, "head_said"), 0, "the ORM is not a database");
    assert.equal(feature(rows, 1, "head_said"), 1);
  });

  it("self_named: the owner is named after the repository, as a project's own organisation is", () => {
    for (const name of ["kubernetes/kubernetes", "denoland/deno", "nodejs/node", "rust-lang/rust", "gohugoio/hugo", "jqlang/jq", "tortoise/tortoise-orm"])
      assert.equal(selfNamed(name), true, name);
    for (const name of ["facebook/react", "spf13/cobra", "someone/awesome-kubernetes", "google/go-github", "a/b"]) assert.equal(selfNamed(name), false, name);
    const rows = extractFeatures(context([0.5, 0.5]), [cand(payload("denoland/deno", "a runtime")), cand(payload("someone/deno-starter", "a starter"))]);
    assert.equal(feature(rows, 0, "self_named"), 1);
    assert.equal(feature(rows, 1, "self_named"), 0);
  });

  it("phrase: the share of the query's adjacent term pairs said side by side in the description, a topic or the package description", () => {
    // Every candidate holds every query term (explanation.found), so only the order decides.
    const ctx = (text: string, n: number): QueryContext => {
      const terms = [...new Set(analyze(text))].map((term) => ({ term, idf: 2 }));
      const base = context(Array<number>(n).fill(0.5));
      return { ...base, text, explanation: { ...base.explanation, terms, found: new Uint8Array(n * terms.length).fill(1) } };
    };
    const cands = [
      cand(payload("kubernetes/kubernetes", "Production-Grade Container Scheduling and Management", { topics: ["container-orchestration"] })),
      cand(payload("a/swarm", "lightweight multi-agent orchestration for containers")), // both words, not side by side
      cand(payload("postgres/postgres", "Mirror of the official PostgreSQL GIT repository", { packaged: "an object-relational database system" })),
    ];
    const rows = extractFeatures(ctx("container orchestration", 3), cands);
    assert.deepEqual(
      [0, 1, 2].map((i) => feature(rows, i, "phrase")),
      [1, 0, 0],
    );
    // "object-relational" is analysed as object, relational, objectrel: "relational database" is one term apart.
    const db = extractFeatures(ctx("relational database server", 3), cands);
    assert.equal(feature(db, 2, "phrase"), 0.5, "relational database, not database server");
    assert.equal(feature(extractFeatures(ctx("database relational", 3), cands), 2, "phrase"), 0, "in the query's order only");
    assert.equal(feature(extractFeatures(ctx("orchestration", 3), cands), 0, "phrase"), 0, "one term: no pair to say");
    // A candidate the store found without both terms of a pair cannot say it, and its text is not read.
    const absent = ctx("container orchestration", 3);
    const oneTerm = { ...absent, explanation: { ...absent.explanation, found: new Uint8Array([1, 0, 1, 1, 1, 1]) } };
    assert.deepEqual(
      [0, 1, 2].map((i) => feature(extractFeatures(oneTerm, cands), i, "phrase")),
      [0, 0, 0],
    );
  });

  it("a payload loaded over its predecessor (payload-lineage.ts) reads its own text wherever the text changed", () => {
    const ctx = (text: string): QueryContext => {
      const terms = [...new Set(analyze(text))].map((term) => ({ term, idf: 2 }));
      const base = context([0.5]);
      return { ...base, text, explanation: { ...base.explanation, terms, found: new Uint8Array(terms.length).fill(1) } };
    };
    const q = ctx("container orchestration");
    const old = payload("acme/scheduler", "Production-grade scheduling of services", { stars: 100, topics: ["scheduler"] });
    const fresh = (p: RepoPayload) => extractFeatures(q, [cand({ ...p })]); // a copy: no predecessor, nothing cached
    extractFeatures(q, [cand(old)]); // cached for the old payload
    assert.equal(saysLanguage(old, "python"), false);
    const variants: RepoPayload[] = [
      { ...old, stars: 200 }, // only a number moved: the text facts carry over
      { ...old, description: "Container orchestration in Python, for clusters of any size" }, // description
      { ...old, topics: ["container-orchestration"] }, // topics
      { ...old, name: "acme/container-orchestration", aliases: [] }, // name
      { ...old, aliases: ["acme/orchestrator"] }, // an alias
    ];
    for (const v of variants) {
      recordPredecessor(v, old);
      assert.deepEqual(extractFeatures(q, [cand(v)]), fresh(v), JSON.stringify(v));
      assert.equal(saysLanguage(v, "python"), v.description!.includes("Python"));
    }
    // The changes above do change what the features say, so a carried-over fact would have shown.
    assert.notDeepEqual(fresh(variants[1]!), fresh(old));
    assert.notDeepEqual(fresh(variants[2]!), fresh(old));
    assert.notDeepEqual(fresh(variants[3]!), fresh(old));
    assert.notEqual(feature(fresh(variants[0]!), 0, "stars"), feature(fresh(old), 0, "stars"));
  });
});
