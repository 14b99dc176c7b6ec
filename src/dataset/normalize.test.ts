import { test } from "vitest";
import assert from "node:assert/strict";
import { isNewer, normalizeRecord } from "./normalize.js";

const base = { name: "Spf13/Cobra", description: "A Commander for modern Go CLI interactions", stars: 40000 };

test("normalises key, N/A and empty strings, dates and topics", () => {
  const res = normalizeRecord({
    ...base,
    language: "N/A",
    homepage: "",
    license: "  ",
    topics: ["CLI", "go", "cli", " "],
    pushedAt: "2024-03-01",
    createdAt: "2013-09-03T20:40:26Z",
    isArchived: false,
    llmsTxt: true,
    llmsTxtPaths: ["docs/llms.txt"],
  });
  assert.ok(res.ok);
  const r = res.record;
  assert.equal(r.key, "spf13/cobra");
  assert.equal(r.name, "Spf13/Cobra");
  assert.equal(r.url, "https://github.com/Spf13/Cobra");
  assert.equal(r.language, null);
  assert.equal(r.homepage, null);
  assert.equal(r.license, null);
  assert.deepEqual(r.topics, ["cli", "go"]);
  assert.equal(r.pushedAt, "2024-03-01T00:00:00.000Z");
  assert.equal(r.createdAt, "2013-09-03T20:40:26.000Z");
  assert.deepEqual(r.llmsTxtPaths, ["docs/llms.txt"]);
});

test("unknown fields stay null, known-absent llms.txt becomes []", () => {
  const res = normalizeRecord({ name: "a/b", llmsTxt: false });
  assert.ok(res.ok);
  assert.equal(res.record.stars, null);
  assert.deepEqual(res.record.topics, []);
  assert.deepEqual(res.record.llmsTxtPaths, []);
  const unknown = normalizeRecord({ name: "a/b" });
  assert.ok(unknown.ok && unknown.record.llmsTxtPaths === null);
});

test("rejects records with a reason naming the field", () => {
  const cases: [unknown, RegExp][] = [
    [null, /not a JSON object/],
    [[1, 2], /not a JSON object/],
    [{}, /name: missing/],
    [{ name: "no-slash" }, /name: not an owner\/repo/],
    [{ name: "a/b/c" }, /name: not an owner\/repo/],
    [{ name: "a /b" }, /name: not an owner\/repo/],
    [{ name: "a/b", stars: "many" }, /stars: expected a number/],
    [{ name: "a/b", forks: -1 }, /forks: must be >= 0/],
    [{ name: "a/b", topics: "cli" }, /topics: expected an array/],
    [{ name: "a/b", topics: [1] }, /topics: items must be strings/],
    [{ name: "a/b", pushedAt: "yesterday" }, /pushedAt: not a date/],
    [{ name: "a/b", isArchived: "no" }, /isArchived: expected boolean/],
    [{ name: "a/b", url: "ftp://x" }, /url: not an http/],
  ];
  for (const [raw, re] of cases) {
    const res = normalizeRecord(raw);
    assert.equal(res.ok, false, JSON.stringify(raw));
    if (!res.ok) assert.match(res.reason, re);
  }
});

test("the newest snapshot wins; ties go to the later line", () => {
  const older = normalizeRecord({ name: "a/b", lastSeen: "2025-01-01" });
  const newer = normalizeRecord({ name: "A/b", lastSeen: "2026-01-01" });
  assert.ok(older.ok && newer.ok);
  assert.equal(isNewer(newer.record, older.record), true);
  assert.equal(isNewer(older.record, newer.record), false);
  assert.equal(isNewer(older.record, older.record), true);
});
