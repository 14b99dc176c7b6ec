import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { pointIdFor } from "../../common/hash.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Filter } from "../filter.js";
import { seededRandom } from "../../../test/support/engine-synthetic.js";
import { parseDatetimeMs } from "./filter-datetime.js";
import { randomFilter, randomPayloads, referenceMatches } from "../../../test/support/filter-testkit.js";
import { FILTER_CACHE_ENTRIES, INDEXED_FIELDS, PayloadIndex } from "./payload-index.js";

type Row = Record<string, unknown>;

/** A small corpus with every interesting shape: nulls, missing keys, [] and multi-valued topics. */
const ROWS: Row[] = [
  {
    key: "a/one",
    languageLc: "python",
    topics: ["cli", "ml"],
    category: "tool",
    stars: 10,
    forks: 2,
    pushedAt: "2025-06-01T00:00:00.000Z",
    isArchived: false,
    license: "MIT",
  },
  { key: "b/two", languageLc: "rust", topics: [], category: null, stars: null, forks: null, pushedAt: null, isArchived: null, license: null },
  {
    key: "c/three",
    languageLc: null,
    topics: ["ml"],
    category: "library",
    stars: 5000,
    forks: null,
    pushedAt: "2023-01-15T12:00:00.000Z",
    isArchived: true,
    license: "MIT",
  },
  {
    key: "d/four",
    languageLc: "python",
    topics: ["web"],
    category: "ai-ml",
    stars: 100,
    forks: 50,
    pushedAt: "2026-01-01T00:00:00.000Z",
    isArchived: null,
    license: "Apache-2.0",
  },
  { key: "e/five", languageLc: "go", topics: ["cli"], category: null, stars: 0, forks: 0, pushedAt: null, isArchived: false, license: null },
  // Row 5 misses topics, category and forks entirely (missing ≠ null).
  { key: "f/six", languageLc: "go", stars: 99, pushedAt: "2025-01-01", isArchived: null },
];
const IDS = ROWS.map((r) => pointIdFor(r.key as string));
const index = PayloadIndex.build(IDS, ROWS as unknown as RepoPayload[]);

/** Matching rows, with null meaning "every row". */
function rows(filter: Filter | null | undefined, idx = index): number[] | null {
  const b = idx.evaluate(filter);
  return b === null ? null : Array.from(b.toArray());
}

function validationError(filter: unknown): ReposearchError {
  try {
    index.evaluate(filter as Filter);
  } catch (e) {
    assert.ok(e instanceof ReposearchError, `expected ReposearchError, got ${String(e)}`);
    assert.equal(e.code, ErrorCode.ValidationError);
    assert.ok(e.details !== undefined && e.details.length > 0, "details name the problem");
    return e;
  }
  assert.fail(`expected a validation error for ${JSON.stringify(filter)}`);
}

describe("PayloadIndex semantics", () => {
  it("indexes every filterable field of well-typed payloads", () => {
    assert.deepEqual(index.indexedKeys().sort(), Object.keys(INDEXED_FIELDS).sort());
  });

  it("returns null when nothing constrains", () => {
    assert.equal(rows(undefined), null);
    assert.equal(rows(null), null);
    assert.equal(rows({}), null);
    assert.equal(rows({ must: [], should: [], must_not: [] }), null);
    assert.equal(rows({ must: [{}] }), null, "an empty nested filter is no constraint");
    assert.equal(rows({ must: null }), null);
    // A real condition that happens to keep every row is also "no constraint".
    assert.equal(rows({ must_not: { key: "key", match: { value: "zzz" } } }), null);
  });

  it("stars and forks ranges never match null or missing values", () => {
    assert.deepEqual(rows({ must: { key: "stars", range: { gte: 100 } } }), [2, 3]);
    assert.deepEqual(rows({ must: { key: "stars", range: { lt: 100 } } }), [0, 4, 5]);
    assert.deepEqual(rows({ must: { key: "stars", range: { gt: 10, lte: 100 } } }), [3, 5]);
    assert.deepEqual(rows({ must: { key: "stars", range: { gte: 100, lt: 100 } } }), []);
    assert.deepEqual(rows({ must: { key: "forks", range: { gte: 0 } } }), [0, 3, 4]);
    assert.deepEqual(rows({ must: { key: "stars", range: { gte: null, lt: 11 } } }), [0, 4], "null bounds are absent");
    // Negating a range keeps the rows where the field is unknown.
    assert.deepEqual(rows({ must_not: { key: "forks", range: { gte: 1 } } }), [1, 2, 4, 5]);
    assert.deepEqual(rows({ must: { key: "stars", match: { value: 0 } } }), [4]);
    assert.deepEqual(rows({ must: { key: "stars", match: { any: [10, 5000, 7] } } }), [0, 2]);
    assert.deepEqual(rows({ must: { key: "forks", match: { except: [0] } } }), [0, 3], "except skips null and missing");
  });

  it("language match is exact and typed", () => {
    assert.deepEqual(rows({ must: { key: "languageLc", match: { value: "python" } } }), [0, 3]);
    assert.deepEqual(rows({ must: { key: "languageLc", match: { value: "Python" } } }), []);
    assert.deepEqual(rows({ must: { key: "languageLc", match: { any: ["go", "rust"] } } }), [1, 4, 5]);
    assert.deepEqual(rows({ must: { key: "languageLc", match: { any: [1, 2] } } }), [], "integers never equal keywords");
    assert.deepEqual(rows({ must: { key: "stars", match: { value: "10" } } }), [], "a keyword never equals a number");
  });

  it("topics match any element of the array", () => {
    assert.deepEqual(rows({ must: { key: "topics", match: { value: "ml" } } }), [0, 2]);
    assert.deepEqual(rows({ must: { key: "topics", match: { any: ["cli", "web"] } } }), [0, 3, 4]);
    assert.deepEqual(
      rows({
        must: [
          { key: "topics", match: { value: "cli" } },
          { key: "topics", match: { value: "ml" } },
        ],
      }),
      [0],
    );
    // except holds when some element is outside the list; [] and missing have no element.
    assert.deepEqual(rows({ must: { key: "topics", match: { except: ["ml"] } } }), [0, 3, 4]);
    assert.deepEqual(rows({ must: { key: "topics", match: { except: ["ml", "cli"] } } }), [3]);
    assert.deepEqual(rows({ must_not: { key: "topics", match: { any: ["ml"] } } }), [1, 3, 4, 5]);
  });

  it("categories, with is_null for uncategorized", () => {
    assert.deepEqual(rows({ must: { key: "category", match: { any: ["tool", "library"] } } }), [0, 2]);
    assert.deepEqual(rows({ must: { is_null: { key: "category" } } }), [1, 4], "missing is not null");
    assert.deepEqual(rows({ should: [{ key: "category", match: { any: ["tool", "library"] } }, { is_null: { key: "category" } }] }), [0, 1, 2, 4]);
    assert.deepEqual(rows({ must: { is_empty: { key: "category" } } }), [1, 4, 5], "missing and null are empty");
  });

  it("isArchived: must_not true keeps false and unknown", () => {
    assert.deepEqual(rows({ must_not: { key: "isArchived", match: { value: true } } }), [0, 1, 3, 4, 5]);
    assert.deepEqual(rows({ must: { key: "isArchived", match: { value: false } } }), [0, 4]);
    assert.deepEqual(rows({ must: { key: "isArchived", match: { value: 1 } } }), [], "1 is not true");
    assert.deepEqual(rows({ must: { key: "isArchived", match: { except: ["x"] } } }), [0, 2, 4], "a bool differs from any keyword list");
    assert.deepEqual(rows({ must: { is_null: { key: "isArchived" } } }), [1, 3, 5]);
  });

  it("pushedAt datetime_range compares instants and excludes null", () => {
    assert.deepEqual(rows({ must: { key: "pushedAt", datetime_range: { gte: "2025-01-01T00:00:00Z" } } }), [0, 3, 5]);
    assert.deepEqual(rows({ must: { key: "pushedAt", datetime_range: { gt: "2025-01-01T00:00:00Z" } } }), [0, 3]);
    // 02:00 at +02:00 is midnight UTC: the same instant as row 0.
    assert.deepEqual(rows({ must: { key: "pushedAt", datetime_range: { gte: "2025-06-01T02:00:00+02:00", lt: "2025-06-01T00:00:00.001Z" } } }), [0]);
    assert.deepEqual(rows({ must: { key: "pushedAt", datetime_range: { lt: "2024-01-01" } } }), [2]);
    assert.deepEqual(rows({ must_not: { key: "pushedAt", datetime_range: { gte: "2024-01-01T00:00:00Z" } } }), [1, 2, 4]);
    assert.deepEqual(rows({ must: { key: "pushedAt", range: { gte: 0 } } }), [], "a numeric range never matches strings");
  });

  it("key except and must_not match any exclude repositories", () => {
    const exclude = ["a/one", "c/three", "nope/none"];
    assert.deepEqual(rows({ must_not: { key: "key", match: { any: exclude } } }), [1, 3, 4, 5]);
    assert.deepEqual(rows({ must: { key: "key", match: { except: exclude } } }), [1, 3, 4, 5]);
    assert.deepEqual(rows({ must: { key: "key", match: { value: "d/four" } } }), [3]);
  });

  it("has_id matches point ids in any UUID spelling", () => {
    assert.deepEqual(rows({ must: { has_id: [IDS[2]!, IDS[4]!] } }), [2, 4]);
    assert.deepEqual(rows({ must: { has_id: [IDS[1]!.toUpperCase()] } }), [1]);
    assert.deepEqual(rows({ must: { has_id: [IDS[3]!.replace(/-/g, "")] } }), [3]);
    assert.deepEqual(rows({ must: { has_id: [] } }), []);
    assert.deepEqual(rows({ must_not: { has_id: [IDS[0]!] } }), [1, 2, 3, 4, 5]);
    // Numeric ids match points whose id is that integer.
    const numeric = PayloadIndex.build(["7", "8"], [ROWS[0], ROWS[1]] as unknown as RepoPayload[]);
    assert.deepEqual(rows({ must: { has_id: [8] } }, numeric), [1]);
  });

  it("nested should / must_not compose like Qdrant", () => {
    const f: Filter = {
      must: [
        {
          should: [
            { key: "languageLc", match: { value: "python" } },
            { key: "languageLc", match: { value: "go" } },
          ],
        },
        { must_not: [{ key: "stars", range: { lt: 50 } }] },
      ],
    };
    assert.deepEqual(rows(f), [3, 5]);
    // should combines with must as AND: must narrows, should needs one hit.
    assert.deepEqual(
      rows({
        must: { key: "languageLc", match: { value: "python" } },
        should: [
          { key: "topics", match: { value: "web" } },
          { key: "stars", range: { lt: 0 } },
        ],
      }),
      [3],
    );
    // A single condition instead of an array is accepted in every clause.
    assert.deepEqual(rows({ must_not: { must: { key: "languageLc", match: { value: "go" } } } }), [0, 1, 2, 3]);
  });

  it("empty arrays: [] is empty but not null; empty lists match nothing or everything", () => {
    assert.deepEqual(rows({ must: { is_empty: { key: "topics" } } }), [1, 5]);
    assert.deepEqual(rows({ must: { is_null: { key: "topics" } } }), []);
    assert.deepEqual(rows({ must: { key: "topics", match: { any: [] } } }), []);
    assert.deepEqual(rows({ must: { key: "languageLc", match: { except: [] } } }), [0, 1, 3, 4, 5], "except [] holds for every present value");
    assert.equal(rows({ should: [] }), null, "an empty should places no constraint");
    assert.deepEqual(rows({ must: { is_empty: { key: "no-such-field" } } }), null, "a missing key is empty everywhere");
  });

  it("conditions on unindexed keys are evaluated per row", () => {
    assert.deepEqual(rows({ must: { key: "license", match: { value: "MIT" } } }), [0, 2]);
    assert.deepEqual(rows({ must: { is_null: { key: "license" } } }), [1, 4]);
    assert.deepEqual(rows({ must: { is_empty: { key: "license" } } }), [1, 4, 5]);
    assert.deepEqual(rows({ must: { key: "license", match: { except: ["MIT"] } } }), [3]);
  });

  it("a field with values of an unexpected type falls back to a correct scan", () => {
    const odd = ROWS.map((r, i) => (i === 1 ? { ...r, stars: "many", topics: ["x", 3] } : r));
    const idx = PayloadIndex.build(IDS, odd as unknown as RepoPayload[]);
    assert.ok(!idx.indexedKeys().includes("stars"));
    assert.ok(!idx.indexedKeys().includes("topics"));
    assert.deepEqual(rows({ must: { key: "stars", range: { gte: 100 } } }, idx), [2, 3]);
    assert.deepEqual(rows({ must: { key: "stars", match: { value: "many" } } }, idx), [1]);
    assert.deepEqual(rows({ must: { key: "topics", match: { any: [3] } } }, idx), [1]);
    assert.deepEqual(rows({ must: { key: "topics", match: { except: ["x"] } } }, idx), [0, 1, 2, 3, 4]);
  });

  it("rejects duplicate ids and mismatched inputs at build", () => {
    assert.throws(() => PayloadIndex.build(["a", "a"], [ROWS[0], ROWS[1]] as unknown as RepoPayload[]), /duplicate point id/);
    assert.throws(() => PayloadIndex.build(["a"], [] as RepoPayload[]), /1 ids but 0 payloads/);
  });
});

describe("PayloadIndex validation", () => {
  it("rejects malformed filters with VALIDATION_ERROR and a path", () => {
    assert.equal(validationError({ must: [{ foo: 1 }] }).details![0]!.path, "filter.must[0]");
    assert.equal(validationError({ must: { key: "stars", range: { gte: "10" } } }).details![0]!.path, "filter.must.range.gte");
    assert.equal(validationError({ must: { key: "pushedAt", datetime_range: { gte: "yesterday" } } }).details![0]!.rule, "format");
    validationError({ must: { key: "pushedAt", datetime_range: { lt: "2024-02-30T00:00:00Z" } } });
    validationError({ must: { key: "stars" } });
    validationError({ must: { key: "stars", match: { value: 1.5 } } });
    validationError({ must: { key: "stars", match: { value: 1, any: [1] } } });
    validationError({ must: { key: "stars", match: { text: "x" } } });
    validationError({ must: { key: "topics", match: { any: ["a", 1] } } });
    validationError({ must: { key: "topics", values_count: { gt: 1 } } });
    validationError({ must: { has_id: [{}] } });
    validationError({ must: { has_id: "abc" } });
    validationError({ must: { is_null: "category" } });
    validationError({ min_should: { conditions: [], min_count: 1 } });
    validationError([]);
    validationError({ must: [1] });
    validationError({ must: { key: "", match: { value: "x" } } });
    validationError({ must: { key: "stars", range: { between: [1, 2] } } });
  });

  it("lists every problem, not just the first", () => {
    const e = validationError({ must: [{ key: "stars", range: { gte: "a", lt: "b" } }], should: { foo: 1 } });
    assert.equal(e.details!.length, 3);
  });
});

describe("parseDatetimeMs", () => {
  it("accepts RFC 3339 and Qdrant's relaxed forms", () => {
    assert.equal(parseDatetimeMs("2024-03-01T10:20:30Z"), Date.UTC(2024, 2, 1, 10, 20, 30));
    assert.equal(parseDatetimeMs("2024-03-01T10:20:30.123456Z"), Date.UTC(2024, 2, 1, 10, 20, 30, 123));
    assert.equal(parseDatetimeMs("2024-03-01T10:20:30-05:30"), Date.UTC(2024, 2, 1, 15, 50, 30));
    assert.equal(parseDatetimeMs("2024-03-01 10:20"), Date.UTC(2024, 2, 1, 10, 20));
    assert.equal(parseDatetimeMs("2024-03-01"), Date.UTC(2024, 2, 1));
    assert.equal(parseDatetimeMs("2024-02-29T00:00:00Z"), Date.UTC(2024, 1, 29));
  });

  it("rejects impossible dates and junk", () => {
    for (const s of ["2023-02-29", "2024-13-01", "2024-01-01T24:00:00Z", "2024-01-01T10:61:00Z", "01/02/2024", "", "2024-01-01T10:00:00+25:00", "2024-1-1"]) {
      assert.equal(parseDatetimeMs(s), null, s);
    }
  });
});

describe("PayloadIndex property: indexes agree with a naive evaluator", () => {
  it("matches the reference on random payloads and random filters", () => {
    const payloads = randomPayloads(700, 11, { extras: true });
    const ids = payloads.map((p) => pointIdFor(p.key as string));
    const idx = PayloadIndex.build(ids, payloads as unknown as RepoPayload[]);
    const rnd = seededRandom(99);
    let nonTrivial = 0;
    for (let t = 0; t < 400; t++) {
      const filter = randomFilter(rnd, ids, 2, true);
      const got = idx.evaluate(filter);
      const expected = payloads.map((p, r) => (referenceMatches(filter, p, ids[r]!) ? r : -1)).filter((r) => r >= 0);
      if (got === null) {
        assert.equal(expected.length, payloads.length, `null result must mean every row: ${JSON.stringify(filter)}`);
      } else {
        assert.deepEqual(Array.from(got.toArray()), expected, JSON.stringify(filter));
        if (expected.length > 0) nonTrivial++;
      }
    }
    assert.ok(nonTrivial > 100, `the generator should produce selective, non-empty filters (got ${nonTrivial})`);
  });
});

describe("PayloadIndex filter cache", () => {
  it("answers a repeated filter (in any equivalent spelling) with the same bitset, and recomputes it exactly after eviction", () => {
    const payloads = randomPayloads(700, 12, { extras: true });
    const ids = payloads.map((p) => pointIdFor(p.key as string));
    const idx = PayloadIndex.build(ids, payloads as unknown as RepoPayload[]);
    const f: Filter = { must: [{ key: "languageLc", match: { value: "python" } }] };
    const first = idx.evaluate(f);
    assert.ok(first !== null);
    assert.equal(idx.evaluate({ must: [{ key: "languageLc", match: { value: "python" } }] }), first, "a cache hit is the same object");
    assert.equal(idx.evaluate({ must: { key: "languageLc", match: { value: "python" } } } as Filter), first, "one condition or a list of one compile alike");
    const rnd = seededRandom(5);
    const filters = Array.from({ length: FILTER_CACHE_ENTRIES * 2 }, () => randomFilter(rnd, ids, 2, true));
    const before = filters.map((x) => idx.evaluate(x)?.toArray() ?? null);
    // Every earlier entry, `f` included, has been evicted by now: results are recomputed and still equal.
    assert.notEqual(idx.evaluate(f), first);
    assert.deepEqual(idx.evaluate(f)!.toArray(), first.toArray());
    filters.forEach((x, i) => assert.deepEqual(idx.evaluate(x)?.toArray() ?? null, before[i], JSON.stringify(x)));
  });
});
