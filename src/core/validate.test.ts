import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { CATEGORIES } from "../dataset/record.js";
import type { SearchFilters, SearchRequest } from "./types.js";
import { validateRepositoryRequest, validateSearchRequest, validateSimilarRequest } from "./validate.js";

/** Runs the validator on an unchecked object, the way a raw JSON body or a decoded proto arrives. */
function validate(req: unknown): SearchRequest {
  return validateSearchRequest(req as SearchRequest);
}

function problems(req: unknown): ErrorDetail[] {
  try {
    validate(req);
  } catch (err) {
    assert.ok(err instanceof ReposearchError);
    assert.equal(err.code, ErrorCode.ValidationError);
    assert.equal(err.grpcStatus, 3);
    assert.equal(err.httpStatus, 400);
    assert.ok(err.details && err.details.length > 0);
    return [...err.details];
  }
  assert.fail(`expected a validation error for ${JSON.stringify(req)}`);
}

function rejects(req: unknown, path: string, rule: string): void {
  const found = problems(req);
  assert.ok(
    found.some((d) => d.path === path && d.rule === rule),
    `expected ${path}/${rule}, got ${JSON.stringify(found)}`,
  );
}

const withFilters = (filters: unknown): unknown => ({ query: "q", filters });
const accepts = (req: unknown): SearchRequest => validate(req);

describe("validateSearchRequest", () => {
  it("accepts the minimal request and keeps absent fields absent", () => {
    const out = accepts({ query: "q" });
    assert.deepEqual(out, { query: "q" });
    assert.ok(!("limit" in out) && !("filters" in out) && !("rerank" in out));
  });

  it("drops undefined keys and copies arrays (normalised), keeping presence", () => {
    const categories = ["library"] as const;
    const out = accepts({ query: "q", limit: undefined, filters: { categories, topics: undefined } });
    assert.deepEqual(out, { query: "q", filters: { categories: ["library"] } });
    assert.notEqual(out.filters?.categories, categories);
    assert.deepEqual(accepts({ query: "q", filters: { categories: [] } }).filters, { categories: [] });
    assert.deepEqual(accepts({ query: "q", filters: {} }).filters, {});
  });

  it("query: required string of 1 to 500 characters (code points)", () => {
    rejects({}, "query", "required");
    rejects({ query: 5 }, "query", "type");
    rejects({ query: "" }, "query", "minLength");
    accepts({ query: "a" });
    accepts({ query: "a".repeat(500) });
    rejects({ query: "a".repeat(501) }, "query", "maxLength");
    // 500 emoji are 1000 UTF-16 units but 500 characters, as JSON Schema counts them.
    accepts({ query: "😀".repeat(500) });
    rejects({ query: "😀".repeat(501) }, "query", "maxLength");
    // Whitespace-only is valid (the spec describes its behaviour).
    accepts({ query: "   " });
  });

  it("limit: integer 1 to 50", () => {
    rejects({ query: "q", limit: 0 }, "limit", "minimum");
    accepts({ query: "q", limit: 1 });
    accepts({ query: "q", limit: 50 });
    rejects({ query: "q", limit: 51 }, "limit", "maximum");
    rejects({ query: "q", limit: 2.5 }, "limit", "type");
    rejects({ query: "q", limit: "10" }, "limit", "type");
    rejects({ query: "q", limit: Number.NaN }, "limit", "type");
  });

  it("includeTree and rerank: booleans", () => {
    rejects({ query: "q", includeTree: "yes" }, "includeTree", "type");
    rejects({ query: "q", rerank: 1 }, "rerank", "type");
    assert.deepEqual(accepts({ query: "q", includeTree: false, rerank: false }), { query: "q", includeTree: false, rerank: false });
  });

  it("rejects unknown top-level properties and a non-object body", () => {
    rejects({ query: "q", extra: 1 }, "extra", "additionalProperties");
    rejects(null, "", "type");
    rejects("q", "", "type");
    rejects({ query: "q", filters: [] }, "filters", "type");
  });

  it("star and fork bounds: integers >= 0", () => {
    for (const key of ["minStars", "maxStars", "minForks", "maxForks"] as const) {
      assert.equal(accepts(withFilters({ [key]: 0 })).filters?.[key], 0);
      accepts(withFilters({ [key]: 1_000_000 }));
      rejects(withFilters({ [key]: -1 }), `filters.${key}`, "minimum");
      rejects(withFilters({ [key]: 1.5 }), `filters.${key}`, "type");
      // Beyond a safe integer: the contract's bound, the same rule the REST schema reports.
      rejects(withFilters({ [key]: 2 ** 60 }), `filters.${key}`, "maximum");
    }
  });

  it("language: 1 to 100 characters", () => {
    rejects(withFilters({ language: "" }), "filters.language", "minLength");
    accepts(withFilters({ language: "G" }));
    accepts(withFilters({ language: "x".repeat(100) }));
    rejects(withFilters({ language: "x".repeat(101) }), "filters.language", "maxLength");
    rejects(withFilters({ language: 3 }), "filters.language", "type");
  });

  it("excludeRepos: at most 50 owner/repo items", () => {
    const repos = (n: number): string[] => Array.from({ length: n }, (_, i) => `owner/repo${i}`);
    accepts(withFilters({ excludeRepos: [] }));
    accepts(withFilters({ excludeRepos: repos(50) }));
    rejects(withFilters({ excludeRepos: repos(51) }), "filters.excludeRepos", "maxItems");
    accepts(withFilters({ excludeRepos: ["a/b", "facebook/react", "x.y-z/a_b"] }));
    for (const bad of ["ab", "a/", "/b", "a/b/c", "a b/c", "a/b c", "a//b", "", " a/b"]) {
      rejects(withFilters({ excludeRepos: ["ok/fine", bad] }), "filters.excludeRepos[1]", "pattern");
    }
    rejects(withFilters({ excludeRepos: [1] }), "filters.excludeRepos[0]", "type");
    rejects(withFilters({ excludeRepos: "a/b" }), "filters.excludeRepos", "type");
  });

  it("categories: each one of the 13 taxonomy values; [] allowed", () => {
    assert.equal(CATEGORIES.length, 13);
    accepts(withFilters({ categories: [...CATEGORIES] }));
    accepts(withFilters({ categories: [] }));
    rejects(withFilters({ categories: ["library", "Library"] }), "filters.categories[1]", "enum");
    rejects(withFilters({ categories: ["libraries"] }), "filters.categories[0]", "enum");
    rejects(withFilters({ categories: "library" }), "filters.categories", "type");
  });

  it("topics: at least 1 item, each at least 1 character", () => {
    rejects(withFilters({ topics: [] }), "filters.topics", "minItems");
    accepts(withFilters({ topics: ["a"] }));
    rejects(withFilters({ topics: ["a", ""] }), "filters.topics[1]", "minLength");
    rejects(withFilters({ topics: [7] }), "filters.topics[0]", "type");
  });

  it("excludeArchived: boolean", () => {
    assert.equal(accepts(withFilters({ excludeArchived: false })).filters?.excludeArchived, false);
    rejects(withFilters({ excludeArchived: "false" }), "filters.excludeArchived", "type");
  });

  it("staleAfterMonths: integer greater than 0, at most 600", () => {
    rejects(withFilters({ staleAfterMonths: 0 }), "filters.staleAfterMonths", "exclusiveMinimum");
    accepts(withFilters({ staleAfterMonths: 1 }));
    accepts(withFilters({ staleAfterMonths: 600 }));
    rejects(withFilters({ staleAfterMonths: 601 }), "filters.staleAfterMonths", "maximum");
    rejects(withFilters({ staleAfterMonths: 1.5 }), "filters.staleAfterMonths", "type");
  });

  it("strings must be valid Unicode: an unpaired surrogate is named, never passed on", () => {
    rejects({ query: "x\ud800y" }, "query", "unicode");
    rejects(withFilters({ topics: ["ok", "\udc00"] }), "filters.topics[1]", "unicode");
    accepts({ query: "a pair is fine: \ud83d\ude00" });
  });

  it("reports every problem at once, with a message naming the first", () => {
    try {
      validate({ query: "", limit: 99, filters: { topics: [], staleAfterMonths: 0 } });
      assert.fail("expected a validation error");
    } catch (err) {
      assert.ok(err instanceof ReposearchError);
      assert.deepEqual(
        err.details?.map((d) => `${d.path}:${d.rule}`),
        ["query:minLength", "limit:maximum", "filters.topics:minItems", "filters.staleAfterMonths:exclusiveMinimum"],
      );
      assert.match(err.message, /^invalid search request: query must be at least 1 character long \(and 3 more\)$/);
      assert.equal(err.toJSON().error.details?.length, 4);
    }
  });

  it("returns every filter it accepted", () => {
    const filters: SearchFilters = {
      minStars: 1,
      maxStars: 2,
      minForks: 3,
      maxForks: 4,
      language: "Go",
      excludeRepos: ["a/b"],
      categories: ["tool", "ai-ml"],
      topics: ["cli"],
      excludeArchived: false,
      staleAfterMonths: 12,
    };
    assert.deepEqual(accepts({ query: "q", limit: 5, includeTree: true, rerank: true, filters }), {
      query: "q",
      limit: 5,
      includeTree: true,
      rerank: true,
      filters,
    });
  });
});

describe("validateSimilarRequest and validateRepositoryRequest: the contract's repository requests", () => {
  const detailsOf = (fn: () => unknown): [string, string][] => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof ReposearchError && err.code === ErrorCode.ValidationError);
      return (err.details ?? []).map((d) => [d.path, d.rule]);
    }
    assert.fail("accepted");
  };

  it("accepts a valid request and drops undefined keys", () => {
    assert.deepEqual(validateSimilarRequest({ repo: "a/b", limit: undefined, filters: { language: "Go", topics: undefined } }), {
      repo: "a/b",
      filters: { language: "Go" },
    });
    assert.deepEqual(validateRepositoryRequest({ repo: "a/b" }), { repo: "a/b" });
  });

  it("reports every problem with dotted paths", () => {
    assert.deepEqual(
      detailsOf(() => validateSimilarRequest({ repo: "nope", limit: 0, filters: { minStars: -1 } })),
      [
        ["repo", "pattern"],
        ["limit", "minimum"],
        ["filters.minStars", "minimum"],
      ],
    );
    assert.deepEqual(
      detailsOf(() => validateRepositoryRequest({ repo: "a/b", extra: 1 } as never)),
      [["extra", "additionalProperties"]],
    );
    assert.deepEqual(
      detailsOf(() => validateRepositoryRequest({} as never)),
      [["repo", "required"]],
    );
  });
});
