import assert from "node:assert/strict";
import { test } from "vitest";
import type { Category, RepoPayload } from "../../dataset/record.js";
import { PackedRankColumns } from "./rank-columns.js";

function payload(i: number, stars: number | null, languageLc: string | null, category: string | null): RepoPayload {
  const key = `o/r${i}`;
  return {
    key,
    name: key,
    url: null,
    description: null,
    stars,
    forks: null,
    language: languageLc,
    topics: [],
    pushedAt: null,
    isArchived: null,
    homepage: null,
    license: null,
    createdAt: null,
    readme: null,
    tree: null,
    llmsTxtPaths: null,
    aliases: [],
    aliasKeys: [],
    anchor: null,
    mentions: 0,
    lastSeen: null,
    languageLc,
    category: category as Category | null,
    hash: `h${i}`,
  };
}

test("rank columns: stars, and one code per distinct language and category, -1 for null, -2 for absent values", () => {
  const rows = [
    payload(0, 12, "rust", "library"),
    payload(1, null, "go", null),
    payload(2, 0, null, "cli-tool"),
    payload(3, -5, "rust", "cli-tool"),
    payload(4, 0xffff_ffff, "python", "library"),
  ];
  const c = PackedRankColumns.build(rows);
  assert.ok(c);
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((r) => c.stars(r)),
    [12, 0, 0, 0, 0xffff_ffff],
  );
  assert.equal(c.language(0), c.language(3));
  assert.notEqual(c.language(0), c.language(1));
  assert.equal(c.language(2), -1);
  assert.equal(c.language(4), c.languageCode("python"));
  assert.equal(c.languageCode("rust"), c.language(0));
  assert.equal(c.languageCode("haskell"), -2);
  assert.equal(c.category(0), c.categoryCode("library"));
  assert.equal(c.category(2), c.categoryCode("cli-tool"));
  assert.equal(c.category(2), c.category(3));
  assert.equal(c.category(1), -1);
  assert.equal(c.categoryCode("game"), -2);
});

test("rank columns: none when a value cannot be packed exactly (the caller then reads payloads)", () => {
  assert.equal(PackedRankColumns.build([payload(0, 1.5, "rust", null)]), null);
  assert.equal(PackedRankColumns.build([payload(0, 2 ** 32, "rust", null)]), null);
  const many = (n: number) => Array.from({ length: n }, (_, i) => payload(i, i, null, `kind-${i}`));
  assert.ok(PackedRankColumns.build(many(255)), "255 distinct categories fit (codes 0–254)");
  assert.equal(PackedRankColumns.build(many(256)), null);
  assert.ok(PackedRankColumns.build([]));
});
