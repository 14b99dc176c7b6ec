import assert from "node:assert/strict";
import { test } from "vitest";
import { seededRandom } from "../../common/random.js";
import { FEATURE_COUNT, FEATURES } from "./features.js";
import type { RankGroup } from "./lambdamart.js";
import { DEFAULT_LINEAR_PARAMS } from "./linear.js";
import { trainContext, trainRanker, type JudgedPool } from "../../eval/train-ranker.js";
import { CONTEXT_FEATURE_COUNT } from "./context.js";
import { scoreRows } from "./lambdamart.js";
import { loadRankerModel, rankerModel, RankerModelError, rankOrder, scoreRanker, toModelFile, type RankerModelFile } from "./model.js";
import shipped from "./ranker-model.json" with { type: "json" };

function data(seed: number): RankGroup[] {
  const r = seededRandom(seed);
  return Array.from({ length: 30 }, () => {
    const features = Float32Array.from({ length: 20 * FEATURE_COUNT }, () => r());
    const labels = Float32Array.from({ length: 20 }, (_, i) => (features[i * FEATURE_COUNT]! > 0.8 ? 1 : 0));
    return { features, labels };
  });
}

const fileOf = (seed: number) => {
  const params = {
    trees: 15,
    learningRate: 0.1,
    maxDepth: 3,
    minLeafRows: 10,
    l2: 1,
    bins: 32,
    truncation: 30,
    pairWeight: "ndcg" as const,
    subsample: 0.8,
    featureFraction: 0.8,
    seed: 7,
  };
  const groups = data(seed);
  const { linear, ensemble } = trainRanker(groups, { linear: DEFAULT_LINEAR_PARAMS, trees: params });
  // The second stage learns from first-stage scores (held out in `npm run eval -- --tune`; in sample here).
  const first = rankerModel(linear, ensemble.trees);
  const pools: JudgedPool[] = groups.map((g, i) => ({ ...g, id: `q${i}`, fold: "f", set: "dev", keys: [], relevant: new Set() }));
  const scores = new Map(pools.map((p) => [p.id, scoreRanker(first, p.features)]));
  const stage = trainContext(pools, scores, { ...params, minLeafRows: 5 }, { k: 8, trees: 5 });
  return JSON.stringify(toModelFile(linear, DEFAULT_LINEAR_PARAMS, ensemble, params, { note: "test" }, stage));
};

test("a rebuild from the same data is byte-identical", () => {
  assert.equal(fileOf(1), fileOf(1));
  assert.notEqual(fileOf(1), fileOf(2));
});

test("the shipped model loads and matches the core's features", () => {
  const m = loadRankerModel(shipped);
  assert.deepEqual(m.features, [...FEATURES]);
  assert.ok(m.linear.weights.some((w) => w !== 0));
});

test("a model trained on other features is refused, naming the first difference", () => {
  const good = JSON.parse(fileOf(1)) as { features: string[] };
  assert.doesNotThrow(() => loadRankerModel(good));
  const swapped = { ...good, features: [good.features[1], good.features[0], ...good.features.slice(2)] };
  assert.throws(
    () => loadRankerModel(swapped, "m.json"),
    (e: unknown) => e instanceof RankerModelError && /m\.json: .*first difference at 0: model "q_idf_mean", core "q_terms"/.test(e.message),
  );
  const fewer = { ...good, features: good.features.slice(1) };
  assert.throws(() => loadRankerModel(fewer), /trained on \d+ features that are not the core's \d+/);
  assert.throws(() => loadRankerModel({ ...good, format: "other" }), /format is "other"/);
  assert.throws(() => loadRankerModel({ ...good, formatVersion: 99 }), /format version 99/);
});

test("the two parts add up: a model's score is its linear score plus its trees'", () => {
  const doc = JSON.parse(fileOf(1)) as RankerModelFile;
  const both = loadRankerModel(doc);
  const linearOnly = loadRankerModel({ ...doc, trees: [] });
  const rows = data(3)[0]!.features;
  const s = scoreRanker(both, rows);
  const l = scoreRanker(linearOnly, rows);
  const t = scoreRows({ featureCount: FEATURE_COUNT, trees: doc.trees }, rows);
  for (let i = 0; i < s.length; i++) assert.ok(Math.abs(s[i]! - (l[i]! + t[i]!)) < 1e-9);
  assert.ok(
    s.some((v, i) => v !== l[i]),
    "the trees change some score",
  );
  const imp = both.importance.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(imp - 1) < 1e-9);
});

test("a linear part of the wrong length or scale is refused", () => {
  const doc = JSON.parse(fileOf(1)) as RankerModelFile;
  assert.throws(
    () => loadRankerModel({ ...doc, linear: { ...doc.linear, weights: doc.linear.weights.slice(1) } }),
    /linear\.weights must be \d+ finite numbers/,
  );
  assert.throws(() => loadRankerModel({ ...doc, linear: { ...doc.linear, scale: doc.linear.scale.map(() => 0) } }), /linear\.scale must be positive/);
});

test("a damaged tree is refused before it can misroute a walk", () => {
  const good = JSON.parse(fileOf(1)) as { trees: { feature: number[]; left: number[] }[] };
  const outOfRange = structuredClone(good);
  outOfRange.trees[0]!.feature[0] = FEATURE_COUNT;
  assert.throws(() => loadRankerModel(outOfRange), /tree 0 node 0: feature \d+ out of range/);
  const cycle = structuredClone(good);
  cycle.trees[0]!.left[0] = 0;
  assert.throws(() => loadRankerModel(cycle), /children out of order/);
});

test("a second stage of other features, a K below 2 or a damaged tree is refused; a file without one must say so", () => {
  const good = JSON.parse(fileOf(1)) as RankerModelFile & { context: { k: number; features: string[]; trees: { feature: number[] }[] } };
  assert.ok(good.context.trees.length > 0);
  assert.doesNotThrow(() => loadRankerModel(good));
  assert.doesNotThrow(() => loadRankerModel({ ...good, context: null }));
  assert.throws(() => loadRankerModel({ ...good, context: undefined }), /context is missing/);
  assert.throws(() => loadRankerModel({ ...good, context: { ...good.context, features: good.context.features.slice(1) } }), /context trained on features/);
  assert.throws(() => loadRankerModel({ ...good, context: { ...good.context, k: 1 } }), /context\.k must be an integer ≥ 2/);
  const bad = structuredClone(good);
  bad.context.trees[0]!.feature[0] = CONTEXT_FEATURE_COUNT;
  assert.throws(() => loadRankerModel(bad), /context tree 0 node 0: feature \d+ out of range/);
});

test("the second stage re-orders the first stage's top K and nothing below it, and scores never rise down the list", () => {
  const doc = JSON.parse(fileOf(1)) as RankerModelFile;
  const both = loadRankerModel(doc);
  const first = loadRankerModel({ ...doc, context: null });
  const k = doc.context!.k;
  let moved = 0;
  for (const g of data(5)) {
    const a = rankOrder(first, g.features).order;
    const { order, scores } = rankOrder(both, g.features);
    assert.deepEqual(
      [...order.slice(0, k)].sort((x, y) => x - y),
      [...a.slice(0, k)].sort((x, y) => x - y),
    );
    assert.deepEqual(order.slice(k), a.slice(k));
    for (let r = 1; r < order.length; r++) assert.ok(scores[order[r]!]! <= scores[order[r - 1]!]!);
    if (order.some((i, r) => i !== a[r])) moved++;
  }
  assert.ok(moved > 0, "the second stage changes some order");
});
