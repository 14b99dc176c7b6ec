import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { ReposearchError } from "../common/errors.js";
import { applyFilterDefaults, toStoreFilter } from "./filters.js";
import { mergeQualifierFilters, parseQualifiers } from "./qualifiers.js";

/** The details of the VALIDATION_ERROR `query` throws. */
function problems(query: string): { path: string; rule: string; message: string }[] {
  try {
    parseQualifiers(query);
  } catch (err) {
    assert.ok(err instanceof ReposearchError);
    assert.equal(err.code, "VALIDATION_ERROR");
    return [...(err.details ?? [])];
  }
  assert.fail(`"${query}" was accepted`);
}

describe("parseQualifiers: every accepted form", () => {
  const cases: [string, Record<string, unknown>][] = [
    ["language:go", { language: "go" }],
    ['language:"Jupyter Notebook"', { language: "Jupyter Notebook" }],
    ["Language:Rust", { language: "Rust" }],
    ["stars:>1000", { minStars: 1001 }],
    ["stars:>=1000", { minStars: 1000 }],
    ["stars:<50", { maxStars: 49 }],
    ["stars:<=50", { maxStars: 50 }],
    ["stars:10..20", { minStars: 10, maxStars: 20 }],
    ["stars:10..*", { minStars: 10 }],
    ["stars:*..20", { maxStars: 20 }],
    ["stars:42", { minStars: 42, maxStars: 42 }],
    ["forks:>5", { minForks: 6 }],
    ["forks:1..3", { minForks: 1, maxForks: 3 }],
    ["forks:<=0", { maxForks: 0 }],
    ["topic:CLI", { topics: ["cli"] }],
    ['topic:"machine learning"', { topics: ["machine-learning"] }],
    ["topic:a topic:b topic:a", { topics: ["a", "b"] }],
    ["category:library", { categories: ["library"] }],
    ["category:Agent category:ai-ml", { categories: ["agent", "ai-ml"] }],
    ["archived:true", { excludeArchived: false }],
    ["archived:FALSE", { excludeArchived: true }],
    ["pushed:>2024-01-31", { pushedAfter: "2024-02-01T00:00:00.000Z" }],
    ["pushed:>=2024-01-31", { pushedAfter: "2024-01-31T00:00:00.000Z" }],
    ["pushed:<2024-03-01", { pushedBefore: "2024-03-01T00:00:00.000Z" }],
    ["pushed:<=2024-02-29", { pushedBefore: "2024-03-01T00:00:00.000Z" }],
    ["pushed:2024-02-29", { pushedAfter: "2024-02-29T00:00:00.000Z", pushedBefore: "2024-03-01T00:00:00.000Z" }],
    ["pushed:2023-12-01..2023-12-31", { pushedAfter: "2023-12-01T00:00:00.000Z", pushedBefore: "2024-01-01T00:00:00.000Z" }],
    ["stars:>10 stars:<100 stars:>=50", { minStars: 50, maxStars: 99 }],
    ["language:go language:Go", { language: "go" }],
  ];
  for (const [query, filters] of cases) {
    it(query, () => {
      const parsed = parseQualifiers(`${query} http router`);
      assert.deepEqual(parsed.filters, filters);
      assert.equal(parsed.text, "http router");
    });
  }

  it("strips qualifiers anywhere, keeps every other token (unknown keys, URLs, colons inside words) as text", () => {
    const parsed = parseQualifiers("  cli  language:go framework foo:bar stars:>1000 https://example.com a:b:c topics:3 ");
    assert.equal(parsed.text, "cli framework foo:bar https://example.com a:b:c topics:3");
    assert.deepEqual(
      parsed.qualifiers.map((q) => [q.qualifier, q.fields]),
      [
        ["language:go", ["language"]],
        ["stars:>1000", ["minStars"]],
      ],
    );
  });

  it("a query without qualifiers comes back unchanged, whitespace included", () => {
    const parsed = parseQualifiers("  self-hosted  RSS reader ");
    assert.deepEqual(parsed, { text: "  self-hosted  RSS reader ", filters: {}, qualifiers: [] });
  });

  it("a query of qualifiers only leaves empty text", () => {
    assert.equal(parseQualifiers("language:go stars:>100").text, "");
  });
});

describe("parseQualifiers: every malformed form is a VALIDATION_ERROR naming the token", () => {
  const bad: [string, RegExp][] = [
    ["stars:>abc", /"stars:>abc".*not a whole number/],
    ["stars:", /"stars:".*needs a value/],
    ["stars:1.5", /not a whole number/],
    ["stars:20..10", /range is empty/],
    ["stars:*..*", /at least one bound/],
    ["stars:<0", /fewer than 0/],
    ["stars:99999999999999999999", /too large/],
    ["forks:>=-1", /not a whole number/],
    ["archived:maybe", /"archived:maybe".*archived:true or archived:false/],
    ["category:nope", /"category:nope".*not a category/],
    ["pushed:>2024-13-45", /"pushed:>2024-13-45".*not a calendar date/],
    ["pushed:>2023-02-29", /not a calendar date/],
    ["pushed:yesterday", /YYYY-MM-DD/],
    ["pushed:2024-02-01..2024-01-01", /range is empty/],
    ['topic:"machine learning', /no closing quote/],
    ['language:""', /needs a value/],
    ["-language:go", /"-language:go".*negated/],
    ["language:go language:rust", /only one language/],
    ["archived:true archived:false", /contradict/],
    [`language:${"x".repeat(101)}`, /at most 100 characters/],
  ];
  for (const [query, message] of bad) {
    it(query.length > 40 ? `${query.slice(0, 40)}…` : query, () => {
      const details = problems(`cli ${query}`);
      assert.equal(details.length, 1, JSON.stringify(details));
      assert.equal(details[0]!.path, "query");
      assert.equal(details[0]!.rule, "qualifier");
      assert.match(details[0]!.message, message);
    });
  }

  it("reports every malformed qualifier, not only the first", () => {
    const details = problems("stars:>abc archived:maybe language:go category:nope");
    assert.deepEqual(
      details.map((d) => /"([^"]+)"/.exec(d.message)![1]),
      ["stars:>abc", "archived:maybe", "category:nope"],
    );
  });
});

describe("mergeQualifierFilters: explicit filters win, field by field", () => {
  it("fills what the request left unset and reports overridden fields", () => {
    const parsed = parseQualifiers("language:go stars:10..20 topic:cli cli");
    const merged = mergeQualifierFilters({ language: "Rust", minStars: 5, excludeArchived: false }, parsed);
    assert.deepEqual(merged.filters, { language: "Rust", minStars: 5, maxStars: 20, topics: ["cli"], excludeArchived: false });
    assert.deepEqual(merged.applied, [
      { qualifier: "language:go", fields: ["language"], overridden: ["language"] },
      { qualifier: "stars:10..20", fields: ["minStars", "maxStars"], overridden: ["minStars"] },
      { qualifier: "topic:cli", fields: ["topics"], overridden: [] },
    ]);
  });

  it("an explicit empty category list (all categories) still wins over category:", () => {
    const merged = mergeQualifierFilters({ categories: [] }, parseQualifiers("category:library x"));
    assert.deepEqual(merged.filters, { categories: [] });
    assert.deepEqual(merged.applied[0]!.overridden, ["categories"]);
  });

  it("without qualifiers the request's filters pass through as they are", () => {
    const f = { minStars: 3 };
    assert.equal(mergeQualifierFilters(f, parseQualifiers("plain words")).filters, f);
  });

  it("pushed: reaches appliedFilters and the store filter as a datetime range", () => {
    const merged = mergeQualifierFilters(undefined, parseQualifiers("pushed:2024-01-01..2024-06-30 x"));
    const applied = applyFilterDefaults(merged.filters);
    assert.equal(applied.pushedAfter, "2024-01-01T00:00:00.000Z");
    assert.equal(applied.pushedBefore, "2024-07-01T00:00:00.000Z");
    const filter = toStoreFilter(applied);
    assert.ok(JSON.stringify(filter).includes('"datetime_range":{"gte":"2024-01-01T00:00:00.000Z","lt":"2024-07-01T00:00:00.000Z"}'));
    assert.ok(!("pushedAfter" in applyFilterDefaults(undefined)), "absent unless a qualifier set it");
  });
});
