import { test } from "vitest";
import assert from "node:assert/strict";
import { meanMetrics, scoreRanking } from "./metrics.js";

test("perfect ranking scores 1 everywhere", () => {
  const m = scoreRanking(["a", "b", "x"], new Set(["a", "b"]));
  assert.equal(m.ndcg10, 1);
  assert.equal(m.mrr, 1);
  assert.equal(m.recall10, 1);
});

test("nDCG and MRR follow their definitions", () => {
  const m = scoreRanking(["x", "a", "y", "b"], new Set(["a", "b", "c"]));
  const dcg = 1 / Math.log2(3) + 1 / Math.log2(5);
  const idcg = 1 + 1 / Math.log2(3) + 1 / Math.log2(4);
  assert.ok(Math.abs(m.ndcg10 - dcg / idcg) < 1e-12);
  assert.equal(m.mrr, 0.5);
  assert.ok(Math.abs(m.recall10 - 2 / 3) < 1e-12);
  const miss = scoreRanking(["x"], new Set(["a"]));
  assert.deepEqual(miss, { ndcg10: 0, recall10: 0, recall50: 0, mrr: 0 });
  assert.equal(meanMetrics([m, miss]).mrr, 0.25);
});
