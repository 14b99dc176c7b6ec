import { test } from "vitest";
import assert from "node:assert/strict";
import { Bitset } from "./bitset.js";
import { DEFAULT_LEXICAL_PARAMS, LEXICAL_FORMAT_VERSION, LexicalIndex, type LexicalDoc, type LexicalParams } from "./lexical.js";

const doc = (name: string, description: string | null, topics: string[] = [], readme: string | null = null): LexicalDoc => ({
  name,
  description,
  topics,
  readme,
});

/** Bits set through `words` (bit i = bit i & 31 of word i >>> 5), the Bitset layout contract. */
function allowOnly(size: number, rows: number[]): Bitset {
  const b = new Bitset(size);
  for (const r of rows) b.words[r >>> 5]! |= 1 << (r & 31);
  return b;
}

function params(k1: number, fields: Partial<Record<keyof LexicalParams["fields"], { weight: number; b: number }>>): LexicalParams {
  return { k1, fields: { ...DEFAULT_LEXICAL_PARAMS.fields, ...fields } };
}

// Words chosen so that stemming leaves them unchanged, apart from "engine" → "engin" on both sides.
const corpus = [
  doc("acme/rocket", "fast rocket engine"), //      repo: rocket (1)          desc: fast rocket engin (3)
  doc("beta/engine-kit", "engine parts", ["rocket"]), // repo: engin kit enginekit (3) desc: engin part (2) topics: rocket (1)
  doc("gamma/tools", "misc tools for gardens"), // repo: tool (1)            desc: misc tool garden (3)
];
const handParams = params(1.2, {
  owner: { weight: 0, b: 0 },
  repo: { weight: 3, b: 0.5 },
  description: { weight: 1, b: 0.75 },
  topics: { weight: 2, b: 0.5 },
  readme: { weight: 0.5, b: 0.75 },
});

test("BM25F scores match hand-computed values", () => {
  const index = LexicalIndex.build(corpus, handParams);
  assert.equal(index.docCount, 3);
  // Average lengths over non-empty fields: repo (1+3+1)/3, description (3+2+3)/3, topics 1/1.
  const avgRepo = 5 / 3;
  const avgDesc = 8 / 3;
  const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5)); // "rocket" and "engin" both have df = 2 of N = 3
  const bm25 = (tf: number) => (idf * tf * 2.2) / (1.2 + tf);

  const rocket0 = (3 * 1) / (1 - 0.5 + (0.5 * 1) / avgRepo) + 1 / (1 - 0.75 + (0.75 * 3) / avgDesc);
  const rocket1 = (2 * 1) / (1 - 0.5 + (0.5 * 1) / 1);
  const hits = index.search("rocket", 10, null);
  assert.deepEqual(
    hits.map((h) => h.idx),
    [0, 1],
  );
  assert.ok(Math.abs(hits[0]!.score - bm25(rocket0)) < 1e-5, `${hits[0]!.score} vs ${bm25(rocket0)}`);
  assert.ok(Math.abs(hits[1]!.score - bm25(rocket1)) < 1e-5, `${hits[1]!.score} vs ${bm25(rocket1)}`);

  // Two query terms add up; "engines" is stemmed like the indexed "engine".
  const engine0 = 1 / (1 - 0.75 + (0.75 * 3) / avgDesc);
  const engine1 = (3 * 1) / (1 - 0.5 + (0.5 * 3) / avgRepo) + 1 / (1 - 0.75 + (0.75 * 2) / avgDesc);
  const both = index.search("Rocket engines", 10, null);
  const expected = [bm25(rocket0) + bm25(engine0), bm25(rocket1) + bm25(engine1)];
  const order = expected[0]! > expected[1]! ? [0, 1] : [1, 0];
  assert.deepEqual(
    both.map((h) => h.idx),
    order,
  );
  for (const h of both) assert.ok(Math.abs(h.score - expected[h.idx]!) < 1e-5, `row ${h.idx}: ${h.score} vs ${expected[h.idx]}`);

  // A query term repeated counts twice; unknown terms add nothing.
  const twice = index.search("garden garden zzzunknown", 10, null);
  const idfGarden = Math.log(1 + (3 - 1 + 0.5) / (1 + 0.5));
  const tfGarden = 1 / (1 - 0.75 + (0.75 * 3) / avgDesc);
  assert.deepEqual(
    twice.map((h) => h.idx),
    [2],
  );
  assert.ok(Math.abs(twice[0]!.score - (2 * idfGarden * tfGarden * 2.2) / (1.2 + tfGarden)) < 1e-5);
  assert.equal(index.docFreq("engin"), 2);
  assert.equal(index.docFreq("engine"), 0); // terms are stored analysed
});

test("field weights change the order as expected", () => {
  const docs = [doc("x/parser", "a small library"), doc("y/toolkit", "a parser for config files")];
  const nameHeavy = params(1.2, { repo: { weight: 3, b: 0.5 }, description: { weight: 1, b: 0.75 } });
  const descHeavy = params(1.2, { repo: { weight: 0.2, b: 0.5 }, description: { weight: 3, b: 0.75 } });
  assert.deepEqual(
    LexicalIndex.build(docs, nameHeavy)
      .search("parser", 10, null)
      .map((h) => h.idx),
    [0, 1],
  );
  assert.deepEqual(
    LexicalIndex.build(docs, descHeavy)
      .search("parser", 10, null)
      .map((h) => h.idx),
    [1, 0],
  );
  // A field weighted 0 contributes nothing: the name-only match disappears.
  const noRepo = params(1.2, { owner: { weight: 0, b: 0 }, repo: { weight: 0, b: 0.5 } });
  assert.deepEqual(
    LexicalIndex.build(docs, noRepo)
      .search("parser", 10, null)
      .map((h) => h.idx),
    [1],
  );
  // The defaults rank a name match above a description match.
  assert.deepEqual(
    LexicalIndex.build(docs)
      .search("parser", 10, null)
      .map((h) => h.idx),
    [0, 1],
  );
});

test("longer fields are normalised down (b)", () => {
  const docs = [doc("a/one", "graph tools"), doc("b/two", "graph tools and many other unrelated words about nothing in particular")];
  const hits = LexicalIndex.build(docs).search("graph", 10, null);
  assert.deepEqual(
    hits.map((h) => h.idx),
    [0, 1],
  );
  assert.ok(hits[0]!.score > hits[1]!.score);
  const flat = params(1.2, { description: { weight: 1, b: 0 } });
  const same = LexicalIndex.build(docs, flat).search("graph", 10, null);
  assert.equal(same[0]!.score, same[1]!.score);
  assert.deepEqual(
    same.map((h) => h.idx),
    [0, 1],
  ); // ties: lower row first
});

/** A deterministic corpus with varied term frequencies, for top-k and filter checks. */
function syntheticCorpus(n: number): LexicalDoc[] {
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 1000;
  const docs: LexicalDoc[] = [];
  for (let i = 0; i < n; i++) {
    const len = 3 + (next() % 12);
    const desc: string[] = [];
    for (let j = 0; j < len; j++) desc.push(words[next() % words.length]!);
    docs.push(doc(`owner${i % 7}/repo${i}`, desc.join(" "), next() % 3 === 0 ? [words[next() % 10]!] : []));
  }
  return docs;
}

test("top-k returns the best k, best first, equal to the head of the full ranking", () => {
  const docs = syntheticCorpus(400);
  const index = LexicalIndex.build(docs);
  for (const q of ["alpha", "bravo delta", "golf hotel india juliet"]) {
    const all = index.search(q, docs.length, null);
    assert.ok(all.length > 50, `${q}: ${all.length}`);
    for (let i = 1; i < all.length; i++) {
      const a = all[i - 1]!;
      const b = all[i]!;
      assert.ok(a.score > b.score || (a.score === b.score && a.idx < b.idx), "best first, ties by row");
    }
    assert.ok(all.every((h) => h.score > 0));
    for (const k of [1, 5, 37]) assert.deepEqual(index.search(q, k, null), all.slice(0, k));
  }
  // Reusing the accumulator across calls does not leak scores between queries.
  const first = index.search("echo", 10, null);
  index.search("foxtrot golf", 10, null);
  assert.deepEqual(index.search("echo", 10, null), first);
});

test("the filter bitset is respected and does not change scores", () => {
  const docs = syntheticCorpus(300);
  const index = LexicalIndex.build(docs);
  const allowed = [3, 17, 64, 65, 128, 200, 299];
  const allow = allowOnly(docs.length, allowed);
  const full = new Map(index.search("charlie echo", docs.length, null).map((h) => [h.idx, h.score]));
  const hits = index.search("charlie echo", 100, allow);
  assert.ok(hits.length > 0);
  for (const h of hits) {
    assert.ok(allowed.includes(h.idx), `row ${h.idx} is not allowed`);
    assert.equal(h.score, full.get(h.idx));
  }
  assert.deepEqual(
    hits.map((h) => h.idx).sort((a, b) => a - b),
    allowed.filter((r) => full.has(r)),
  );
  assert.deepEqual(index.search("charlie echo", 10, new Bitset(docs.length)), []);
  assert.throws(() => index.search("charlie", 10, new Bitset(docs.length + 1)), /bitset has size 301, index has 300 rows/);
});

test("identifier forms find each other", () => {
  const docs = [doc("tiangolo/fastapi", null), doc("someone/fast-api", null), doc("other/FastAPI", null), doc("x/fast", null)];
  const index = LexicalIndex.build(docs);
  for (const q of ["fastapi", "FastAPI", "fast-api", "fast_api"]) {
    const rows = index.search(q, 10, null).map((h) => h.idx);
    for (const r of [0, 1, 2]) assert.ok(rows.includes(r), `${q} misses row ${r}: ${rows}`);
  }
  // The owner is searchable too.
  assert.deepEqual(
    index.search("tiangolo", 10, null).map((h) => h.idx),
    [0],
  );
});

test("a hyphenated query word counts once, not once per term the analyser makes of it", () => {
  // self, host and selfhost share the weight of "self-hosted"; each term is in one document, so
  // every term has the same idf and only the weighting decides the order.
  const docs = [doc("a/photos", "Self-hosted photos"), doc("b/notes", "wiki for notes and pages"), doc("c/x", "unrelated"), doc("d/y", "other")];
  const index = LexicalIndex.build(docs);
  assert.deepEqual(
    index.search("self-hosted wiki", 10, null).map((h) => h.idx),
    [1, 0],
  );
  const [photos, notes] = index.search("self-hosted wiki", 10, null).sort((a, b) => a.idx - b.idx);
  // Three terms of a third each, in a description one term longer: a little below the one full term.
  assert.ok(photos!.score < notes!.score && photos!.score > 0.7 * notes!.score, `${photos!.score} vs ${notes!.score}`);
});

test("Chinese descriptions are searchable", () => {
  const docs = [doc("a/ml", "一个简单的机器学习框架"), doc("b/web", "轻量级网页框架"), doc("c/en", "machine learning toolkit")];
  const index = LexicalIndex.build(docs);
  assert.deepEqual(
    index.search("机器学习", 10, null).map((h) => h.idx),
    [0],
  );
  assert.deepEqual(
    index
      .search("框架", 10, null)
      .map((h) => h.idx)
      .sort(),
    [0, 1],
  );
});

test("README markup noise is not indexed, README prose is", () => {
  const readme =
    '[![CI](https://img.shields.io/badge/build-passing-green.svg)](https://ci.example.org)\n<img src="logo.png">\nTurns spreadsheets into dashboards.';
  const index = LexicalIndex.build([doc("a/b", "a tool", [], readme), doc("c/d", "another tool")]);
  for (const noise of ["shields", "badge", "passing", "svg", "img", "logo png", "example org"]) {
    assert.deepEqual(index.search(noise, 10, null), [], noise);
  }
  assert.deepEqual(
    index.search("spreadsheet dashboards", 10, null).map((h) => h.idx),
    [0],
  );
});

test("serialize/deserialize round-trips to identical results", () => {
  const docs = [...syntheticCorpus(250), ...corpus, doc("z/中文", "命令行工具 CLI", ["cli"], "# Usage\nRun it.")];
  const index = LexicalIndex.build(docs, handParams);
  const bytes = index.serialize();
  assert.deepEqual([...bytes.subarray(0, 4)], [0x52, 0x53, 0x4c, 0x58]); // "RSLX"
  // Also from a misaligned view, which is copied once.
  const shifted = new Uint8Array(bytes.length + 1);
  shifted.set(bytes, 1);
  for (const loaded of [LexicalIndex.deserialize(bytes), LexicalIndex.deserialize(shifted.subarray(1))]) {
    assert.equal(loaded.docCount, index.docCount);
    assert.equal(loaded.termCount, index.termCount);
    assert.equal(loaded.postingCount, index.postingCount);
    assert.deepEqual(loaded.params, handParams);
    for (const q of ["alpha", "bravo india", "rocket engine", "命令行", "cli usage", "tools"]) {
      assert.deepEqual(loaded.search(q, 50, null), index.search(q, 50, null), q);
    }
    assert.deepEqual(loaded.serialize(), bytes);
  }
  // Parameters can be overridden at load time.
  const reweighted = LexicalIndex.deserialize(bytes, DEFAULT_LEXICAL_PARAMS);
  assert.deepEqual(reweighted.search("alpha", 20, null), LexicalIndex.build(docs).search("alpha", 20, null));
});

test("deserialize rejects foreign, truncated and corrupted data with a clear message", () => {
  const bytes = LexicalIndex.build(corpus).serialize();
  assert.throws(() => LexicalIndex.deserialize(new Uint8Array(10)), /too short/);
  const badMagic = bytes.slice();
  badMagic[0] = 0x58;
  assert.throws(() => LexicalIndex.deserialize(badMagic), /bad magic/);
  const badVersion = bytes.slice();
  new DataView(badVersion.buffer).setUint32(4, 99, true);
  assert.throws(() => LexicalIndex.deserialize(badVersion), new RegExp(`format version 99, expected ${LEXICAL_FORMAT_VERSION}`));
  assert.throws(() => LexicalIndex.deserialize(bytes.subarray(0, bytes.length - 8)), /header implies/);
  // A posting that points past the last row.
  const badDoc = bytes.slice();
  const dv = new DataView(badDoc.buffer);
  const terms = dv.getUint32(16, true);
  const docsAt = Math.ceil((256 + 4 * (terms + 1)) / 8) * 8; // after the 256-byte header
  const postingsAt = Math.ceil((docsAt + 4 * (terms + 1)) / 8) * 8;
  dv.setUint32(postingsAt, 1000, true);
  assert.throws(() => LexicalIndex.deserialize(badDoc), /not ascending row ids below 3/);
});

test("empty, whitespace and stop-word-only queries return [] without error", () => {
  const index = LexicalIndex.build(corpus);
  for (const q of ["", "   ", "\n\t", "the of and to", "?!.,", "zzzunknownterm"]) assert.deepEqual(index.search(q, 10, null), [], JSON.stringify(q));
  assert.deepEqual(index.search("rocket", 0, null), []);
  assert.throws(() => index.search("rocket", -1, null), /k must be a non-negative integer/);
  assert.throws(() => index.search("rocket", 1.5, null), /k must be a non-negative integer/);
  const empty = LexicalIndex.build([]);
  assert.equal(empty.docCount, 0);
  assert.deepEqual(empty.search("rocket", 10, null), []);
  assert.deepEqual(LexicalIndex.deserialize(empty.serialize()).search("rocket", 10, null), []);
});

test("documents with missing fields are indexed", () => {
  const index = LexicalIndex.build([doc("noslash", null, [], null), doc("o/r", "", [], "")]);
  assert.deepEqual(
    index.search("noslash", 10, null).map((h) => h.idx),
    [0],
  );
  assert.deepEqual(
    index.search("r", 10, null).map((h) => h.idx),
    [1],
  );
});

test("invalid parameters fail fast", () => {
  assert.throws(() => LexicalIndex.build(corpus, params(-1, {})), /k1 must be a finite number/);
  assert.throws(() => LexicalIndex.build(corpus, params(1, { description: { weight: 1, b: 1.5 } })), /fields\.description\.b must be in \[0, 1\]/);
  assert.throws(() => LexicalIndex.build(corpus, params(1, { repo: { weight: Number.NaN, b: 0.5 } })), /fields\.repo\.weight/);
  const zero = { weight: 0, b: 0.5 };
  assert.throws(
    () => LexicalIndex.build(corpus, params(1, { owner: zero, repo: zero, description: zero, topics: zero, readme: zero, anchor: zero })),
    /at least one field weight/,
  );
  assert.throws(() => LexicalIndex.deserialize(LexicalIndex.build(corpus).serialize(), params(Number.POSITIVE_INFINITY, {})), /k1/);
});

test("top k: best first, ties by row, and every k a prefix of the full ranking", () => {
  // Many identical documents make many equal scores, so the tie order matters.
  const words = ["alpha", "beta", "gamma", "delta"];
  const docs: LexicalDoc[] = Array.from({ length: 300 }, (_, i) => ({
    name: words[i % 4]!,
    description: `${words[(i * 7) % 4]} ${words[(i * 3) % 4]} ${i % 5 === 0 ? "alpha" : ""}`,
    topics: [],
    readme: null,
  }));
  const index = LexicalIndex.build(docs);
  const all = index.search("alpha beta", 300, null);
  assert.ok(all.length > 100);
  for (let i = 1; i < all.length; i++) {
    const [a, b] = [all[i - 1]!, all[i]!];
    assert.ok(a.score > b.score || (a.score === b.score && a.idx < b.idx), `rank ${i}: ${JSON.stringify(a)} before ${JSON.stringify(b)}`);
  }
  for (const k of [1, 2, 7, 64, 150]) assert.deepEqual(index.search("alpha beta", k, null), all.slice(0, k));
});

test("explain scores each field on its own and reports coverage and the terms found, for any rows", () => {
  const docs = [
    { name: "acme/rocket", description: "fast rocket engine", topics: [], readme: null },
    { name: "beta/kit", description: "parts", topics: ["rocket"], readme: null, aliases: ["old/rocketkit"], anchor: "launch tooling" },
    { name: "gamma/tools", description: "misc tools", topics: [], readme: null },
  ];
  const index = LexicalIndex.build(docs);
  const ex = index.explain("rocket launch", [1, 0, 2]);
  const F = 6;
  const idfRocket = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
  const idfLaunch = Math.log(1 + (3 - 1 + 0.5) / (1 + 0.5));
  assert.deepEqual(
    ex.terms.map((t) => t.term),
    ["rocket", "launch"],
  );
  assert.ok(Math.abs(ex.terms[0]!.idf - idfRocket) < 1e-12);
  const k1 = DEFAULT_LEXICAL_PARAMS.k1;
  const sat = (x: number) => (x * (k1 + 1)) / (k1 + x);
  // Row 1 (first asked): "rocket" in topics (length 1, the only non-empty topics field) and "launch" in the anchor.
  assert.ok(Math.abs(ex.fields[0 * F + 3]! - idfRocket * sat(1)) < 1e-5, `topics ${ex.fields[3]}`);
  assert.ok(Math.abs(ex.fields[0 * F + 5]! - idfLaunch * sat(1)) < 1e-5, `anchor ${ex.fields[5]}`);
  // The alias's repo part ("rocketkit") is indexed under the repo field, not "rocket" itself.
  assert.equal(ex.fields[0 * F + 1], 0);
  assert.ok(Math.abs(ex.coverage[0]! - 1) < 1e-6);
  // Row 0: "rocket" in the repo name and the description; no "launch".
  assert.ok(ex.fields[1 * F + 1]! > 0 && ex.fields[1 * F + 2]! > 0);
  assert.ok(Math.abs(ex.coverage[1]! - idfRocket / (idfRocket + idfLaunch)) < 1e-6);
  // Row 2 matches nothing.
  assert.deepEqual(Array.from(ex.fields.subarray(2 * F, 3 * F)), [0, 0, 0, 0, 0, 0]);
  assert.equal(ex.coverage[2], 0);
  // Which term each row holds (rows × terms): row 1 both, row 0 only "rocket", row 2 neither.
  assert.deepEqual(Array.from(ex.found), [1, 1, 1, 0, 0, 0]);
  // An old name finds the project through the owner field.
  assert.deepEqual(
    index.search("old", 5, null).map((h) => h.idx),
    [1],
  );
});
