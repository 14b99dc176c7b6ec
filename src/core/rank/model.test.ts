import assert from "node:assert/strict";
import { test } from "vitest";
import { seededRandom } from "../../common/random.js";
import { FEATURE_COUNT, FEATURES } from "./features.js";
import type { RankGroup } from "./lambdamart.js";
import { DEFAULT_LINEAR_PARAMS } from "./linear.js";
import { trainRanker } from "../../eval/train-ranker.js";
import { scoreRows } from "./lambdamart.js";
import { loadRankerModel, RankerModelError, scoreRanker, toModelFile, type RankerModelFile } from "./model.js";
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
  const { linear, ensemble } = trainRanker(data(seed), { linear: DEFAULT_LINEAR_PARAMS, trees: params });
  return JSON.stringify(toModelFile(linear, DEFAULT_LINEAR_PARAMS, ensemble, params, { note: "test" }));
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
