import assert from "node:assert/strict";
import { test } from "vitest";
import { Logger } from "../common/logger.js";
import { emptyResponse } from "../../test/support/core-testkit.js";
import { createMemoryQueryCache, createQueryCache, queryCacheKey } from "./query-cache.js";

test("queryCacheKey: defaults made explicit and key order ignored; any real difference changes the key", () => {
  const base = queryCacheKey({ query: "q" });
  assert.match(base, /^[0-9a-f]{64}$/);
  assert.equal(queryCacheKey({ query: "q", limit: 10, includeTree: false, filters: { excludeArchived: true } }), base);
  assert.equal(
    queryCacheKey({ query: "q", filters: { minStars: 1, language: "Go" } }),
    queryCacheKey({ filters: { language: "Go", minStars: 1 }, query: "q" }),
  );
  for (const other of [
    { query: "q " },
    { query: "q", limit: 11 },
    { query: "q", includeTree: true },
    { query: "q", filters: { excludeArchived: false } },
    { query: "q", filters: { categories: [] } },
  ]) {
    assert.notEqual(queryCacheKey(other), base, JSON.stringify(other));
  }
  // [] (all categories) and omitted (default list) must not share an entry
  assert.notEqual(queryCacheKey({ query: "q", filters: { categories: [] } }), queryCacheKey({ query: "q", filters: {} }));
});

test("memory cache: TTL expiry and LRU eviction", async () => {
  const c = createMemoryQueryCache({ ttlMs: 50, maxEntries: 2 });
  await c.set("a", emptyResponse("a"));
  await c.set("b", emptyResponse("b"));
  assert.equal((await c.get("a"))?.query, "a"); // a becomes most recent
  await c.set("c", emptyResponse("c")); // evicts b
  assert.equal(await c.get("b"), undefined);
  assert.equal((await c.get("a"))?.query, "a");
  assert.equal((await c.get("c"))?.query, "c");
  await new Promise((r) => setTimeout(r, 70));
  assert.equal(await c.get("a"), undefined);
});

test("createQueryCache: off at TTL 0, memory without redis", () => {
  const logger = new Logger();
  assert.equal(createQueryCache({ gateway: { queryCacheTtlMs: 0, queryCacheSize: 10 } }, { redis: null }, logger), null);
  assert.ok(createQueryCache({ gateway: { queryCacheTtlMs: 1000, queryCacheSize: 10 } }, { redis: null }, logger));
});
