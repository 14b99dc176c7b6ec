import assert from "node:assert/strict";
import { test } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { ceilingBatch, embedFor } from "./ceiling.js";

test("the ceiling sends queries in the core's batches: one per call for static embedders, QUERY_EMBED_MAX_BATCH otherwise", () => {
  const config = loadConfig({ DATA_DIR: "/tmp/unused" });
  assert.equal(ceilingBatch(config, "static:0123456789abcdef"), 1);
  assert.equal(ceilingBatch(config, "use-lite@0.2.0"), 32);
  assert.equal(ceilingBatch(loadConfig({ DATA_DIR: "/tmp/unused", QUERY_EMBED_MAX_BATCH: "8" }), "http:127.0.0.1:8081/"), 8);
  assert.equal(ceilingBatch(loadConfig({ DATA_DIR: "/tmp/unused", QUERY_EMBED_MAX_BATCH: "1" }), "use-lite@0.2.0"), 1);
});

test("embedFor counts queries, not calls, and cycles through the queries in order", async () => {
  const calls: string[][] = [];
  const embed = async (texts: string[]) => {
    calls.push(texts);
    await new Promise((r) => setImmediate(r));
  };
  const r = await embedFor(embed, ["a", "b", "c"], 0.05, 0, 4);
  assert.ok(calls.length > 1);
  assert.ok(calls.every((c) => c.length === 4));
  assert.equal(r.embeddings, 4 * calls.length);
  assert.deepEqual(calls.slice(0, 2), [
    ["a", "b", "c", "a"],
    ["b", "c", "a", "b"],
  ]);
});
