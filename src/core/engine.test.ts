import assert from "node:assert/strict";
import { test } from "node:test";
import { pointIdFor } from "../common/hash.js";
import { seededRandom } from "../common/random.js";
import { CATEGORIES, type Category, type RepoPayload } from "../dataset/record.js";
import { PackedRankColumns } from "../store/embedded/rank-columns.js";
import type { ScoredPoint } from "../store/types.js";
import { fuse, type FusionWeights } from "./engine.js";
import type { QueryUnderstanding } from "./query.js";

const LANGUAGES = ["rust", "go", "python", "c++", null] as const;
const WEIGHTS: FusionWeights = { lexical: 0.5, dense: 0.4, stars: 0.05, language: 0.03, category: 0.02 };

function corpus(n: number, seed: number): RepoPayload[] {
  const r = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => {
    const key = `o/r${i}`;
    const languageLc = LANGUAGES[Math.floor(r() * LANGUAGES.length)]!;
    const stars = r() < 0.2 ? null : Math.floor(r() ** 4 * 900_000);
    const category = r() < 0.3 ? null : CATEGORIES[Math.floor(r() * CATEGORIES.length)]!;
    return {
      key, name: key, url: null, description: null, stars, forks: null, language: languageLc, topics: [], pushedAt: null,
      isArchived: null, homepage: null, license: null, createdAt: null, readme: null, tree: null, llmsTxtPaths: null,
      lastSeen: null, languageLc, category, hash: `h${i}`,
    };
  });
}

/** `count` distinct rows, best first, as hits with or without the rank columns. */
function hits(payloads: readonly RepoPayload[], rows: readonly number[], r: () => number, columns: PackedRankColumns | null): ScoredPoint[] {
  const scores = rows.map(() => r()).sort((a, b) => b - a);
  return rows.map((row, i) => {
    const base = { id: pointIdFor(payloads[row]!.key), score: scores[i]!, payload: payloads[row]! };
    return columns ? { ...base, row, columns } : base;
  });
}

function sample(n: number, count: number, r: () => number): number[] {
  const picked = new Set<number>();
  while (picked.size < count) picked.add(Math.floor(r() * n));
  return [...picked];
}

test("fuse ranks the same by rank columns as by payloads (row join, stars, language, category)", () => {
  const payloads = corpus(2_000, 1);
  const columns = PackedRankColumns.build(payloads);
  assert.ok(columns);
  for (let q = 0; q < 200; q++) {
    const r = seededRandom(100 + q);
    const lexRows = sample(payloads.length, 1 + Math.floor(r() * 200), r);
    // Dense shares some rows with lexical, as real lists do.
    const denseRows = [...new Set([...lexRows.slice(0, Math.floor(r() * 20)), ...sample(payloads.length, 30, r)])];
    const u: QueryUnderstanding = {
      language: r() < 0.3 ? null : r() < 0.9 ? LANGUAGES[Math.floor(r() * 4)]! : "cobol",
      categories: sample(CATEGORIES.length, Math.floor(r() * 3), r).map((i) => CATEGORIES[i]! as Category),
      notes: [],
    };
    const seed = 1_000 + q;
    const byPayload = fuse(hits(payloads, lexRows, seededRandom(seed), null), hits(payloads, denseRows, seededRandom(seed + 1), null), u, WEIGHTS);
    const byColumns = fuse(hits(payloads, lexRows, seededRandom(seed), columns), hits(payloads, denseRows, seededRandom(seed + 1), columns), u, WEIGHTS);
    assert.deepEqual(
      byColumns.map((c) => [c.payload.key, c.fused, c.lexical, c.dense]),
      byPayload.map((c) => [c.payload.key, c.fused, c.lexical, c.dense]),
    );
    assert.ok(byColumns.every((c) => c.row >= 0) && byPayload.every((c) => c.row === -1));
  }
});

test("fuse joins by key when the hits come from two index versions", () => {
  const payloads = corpus(50, 2);
  const v1 = PackedRankColumns.build(payloads)!;
  const v2 = PackedRankColumns.build(payloads)!;
  const r = seededRandom(3);
  const lex = hits(payloads, [1, 2, 3], r, v1);
  // The same repositories under other rows, as after a rebuild: rows must not be trusted across versions.
  const dense = hits(payloads, [3, 4], r, v2).map((h, i) => ({ ...h, row: [40, 41][i]! }));
  const out = fuse(lex, dense, { language: null, categories: [], notes: [] }, WEIGHTS);
  assert.deepEqual(out.map((c) => c.payload.key).sort(), ["o/r1", "o/r2", "o/r3", "o/r4"]);
  const both = out.find((c) => c.payload.key === "o/r3")!;
  assert.ok(both.lexical !== null && both.dense !== null);
  assert.ok(out.every((c) => c.row === -1));
});
