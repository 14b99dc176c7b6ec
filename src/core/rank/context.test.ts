import assert from "node:assert/strict";
import { test } from "vitest";
import { CONTEXT_FEATURE_COUNT, CONTEXT_FEATURES, contextRows, firstStageOrder, reorderTop } from "./context.js";
import { FEATURE_COUNT, FEATURES } from "./features.js";

const at = (name: string) => FEATURES.indexOf(name as (typeof FEATURES)[number]);
const ctx = (name: string) => FEATURE_COUNT + CONTEXT_FEATURES.indexOf(name as (typeof CONTEXT_FEATURES)[number]);

/** A pool of candidates given as (log stars, log mentions, coverage, says the head noun). */
function pool(rows: readonly [number, number, number, number][]): Float32Array {
  const f = new Float32Array(rows.length * FEATURE_COUNT);
  rows.forEach(([stars, mentions, coverage, said], i) => {
    f[i * FEATURE_COUNT + at("stars")] = stars;
    f[i * FEATURE_COUNT + at("mentions")] = mentions;
    f[i * FEATURE_COUNT + at("coverage")] = coverage;
    f[i * FEATURE_COUNT + at("head_said")] = said;
  });
  return f;
}

test("context features compare each of the top K with the others of the top K", () => {
  // Candidate 2 is the most starred, but does not say the head noun; candidate 3 is outside the top 3.
  const features = pool([
    [8, 1, 1.0, 1],
    [9, 0, 0.8, 1],
    [11, 0, 0.5, 0],
    [12, 5, 1.0, 1],
  ]);
  const scores = [3, 2.5, 1, 0];
  const top = firstStageOrder(scores).slice(0, 3);
  assert.deepEqual(top, [0, 1, 2]);
  const rows = contextRows(features, scores, top);
  assert.equal(rows.length, 3 * CONTEXT_FEATURE_COUNT);
  const v = (r: number, c: number) => rows[r * CONTEXT_FEATURE_COUNT + c]!;
  /** One context feature of the three rows. */
  const column = (name: string) => [0, 1, 2].map((r) => v(r, ctx(name)));
  // rows are float32
  const rank = (r: number) => Math.fround(Math.log2(2 + r));
  const missing = Math.fround(Math.log2(2 + 256));
  // the FEATURES row is copied first
  assert.equal(v(1, at("stars")), 9);
  assert.deepEqual(column("s1_gap"), [0, 0.5, 2]);
  assert.deepEqual(column("s1_rank"), [rank(0), rank(1), rank(2)]);
  // candidate 3 (12 stars) is not in the top K, so candidate 2 is the most starred of it
  assert.deepEqual(column("top_stars_rank"), [rank(2), rank(1), rank(0)]);
  assert.deepEqual(column("top_stars_gap"), [3, 2, 0]);
  assert.deepEqual(column("top_fame_rank"), [rank(1), rank(2), rank(0)]);
  // among those that say the head noun, candidate 1 is the most starred; candidate 2 is outside the group
  assert.deepEqual(column("top_said_stars_rank"), [rank(1), rank(0), missing]);
  // coverage ≥ 0.75 of the top K's best (1.0): candidates 0 and 1
  assert.deepEqual(column("top_covered_stars_rank"), [rank(1), rank(0), missing]);
});

test("reorderTop re-sorts the top K by the stage's correction and caps the scores below it", () => {
  const features = pool([
    [8, 0, 1, 1],
    [9, 0, 1, 1],
    [11, 0, 1, 1],
    [12, 0, 1, 1],
  ]);
  // One tree: +2.5 for a candidate whose stars rank first among the top K, else 0.
  const split = Math.log2(2.5);
  const stage = {
    k: 3,
    ensemble: {
      featureCount: CONTEXT_FEATURE_COUNT,
      trees: [{ feature: [ctx("top_stars_rank"), -1, -1], threshold: [split, 0, 0], left: [1, 0, 0], right: [2, 0, 0], value: [0, 2.5, 0], gain: [1, 0, 0] }],
    },
  };
  const scores = Float64Array.from([3, 2.5, 1, 0.9]);
  const order = reorderTop(stage, features, scores, firstStageOrder(scores));
  assert.deepEqual(order, [2, 0, 1, 3]);
  assert.deepEqual([...scores], [3, 2.5, 3.5, 0.9]);
  // a candidate below the top K whose first-stage score beats the new lowest of the top K is capped
  const close = Float64Array.from([3, 2.5, 1, 0.99]);
  const stage2 = { ...stage, ensemble: { ...stage.ensemble, trees: [{ ...stage.ensemble.trees[0]!, value: [0, -2.2, 0] }] } };
  assert.deepEqual(reorderTop(stage2, features, close, firstStageOrder(close)), [0, 1, 2, 3]);
  assert.ok(Math.abs(close[2]! - -1.2) < 1e-9 && close[3] === close[2]);
});
