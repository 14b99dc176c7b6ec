import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { similarRequestSchema } from "../contract/repository-requests.js";
import { searchRequestSchema } from "../contract/search-request.js";
import { UsageError } from "./command.js";
import { checkRequest, filtersFromFlags, limitFromFlags } from "./search-flags.js";

const usage = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof UsageError, String(err));
    return err.message;
  }
  return assert.fail("no UsageError");
};

describe("search flags", () => {
  it("each flag becomes its filter; list flags repeat or take commas", () => {
    assert.deepEqual(
      filtersFromFlags({
        language: " Go ",
        stars: ">100",
        forks: "10..50",
        topic: ["cli", "tui,terminal"],
        category: ["library"],
        "include-archived": true,
        "stale-after-months": "12",
        exclude: ["a/b,c/d"],
      }),
      {
        language: "Go",
        minStars: 101,
        minForks: 10,
        maxForks: 50,
        topics: ["cli", "tui", "terminal"],
        categories: ["library"],
        excludeArchived: false,
        staleAfterMonths: 12,
        excludeRepos: ["a/b", "c/d"],
      },
    );
    assert.deepEqual(filtersFromFlags({ stars: "<=5" }), { maxStars: 5 });
    assert.deepEqual(filtersFromFlags({ stars: "100" }), { minStars: 100, maxStars: 100 });
    assert.equal(filtersFromFlags({}), undefined);
    assert.equal(limitFromFlags({ limit: "5" }), 5);
  });

  it("a malformed value is named by its flag", () => {
    assert.match(
      usage(() => filtersFromFlags({ stars: ">abc" })),
      /^--stars: .*abc/,
    );
    assert.match(
      usage(() => filtersFromFlags({ forks: "> 5" })),
      /^--forks takes one range/,
    );
    assert.match(
      usage(() => filtersFromFlags({ "stale-after-months": "soon" })),
      /^--stale-after-months must be a whole number/,
    );
    assert.match(
      usage(() => limitFromFlags({ limit: "ten" })),
      /^--limit must be a whole number/,
    );
  });

  it("the contract's rules are checked before anything runs, each problem named by its flag", () => {
    const msg = usage(() =>
      checkRequest(searchRequestSchema, { query: "q", limit: 500, filters: { categories: ["nope"], excludeRepos: ["not-a-repo"], staleAfterMonths: 0 } }),
    );
    assert.match(msg, /^--limit: must be <= 50$/m);
    assert.match(msg, /^--category: must be one of: library, /m);
    assert.match(msg, /^--exclude: must be owner\/repo/m);
    assert.match(msg, /^--stale-after-months: /m);
    assert.match(
      usage(() => checkRequest(similarRequestSchema, { repo: "no-slash" })),
      /^OWNER\/REPO: must be owner\/repo/,
    );
    checkRequest(searchRequestSchema, { query: "q", limit: 5, filters: filtersFromFlags({ stars: ">100", topic: ["cli"] }) });
  });
});
