import assert from "node:assert/strict";
import { test } from "vitest";
import { seededRandom } from "../../common/random.js";
import { averageEnsembles, DEFAULT_LAMBDAMART_PARAMS, featureImportance, ndcgAt, scoreRows, trainLambdaMart, type RankGroup } from "./lambdamart.js";

/**
 * Synthetic queries: 3 features, relevance is decided by feature 0 when feature 2 ("query kind") is low
 * and by feature 1 when it is high, so a good model must learn an interaction, as head vs specific
 * queries need. Feature values are noisy; labels are 0/1.
 */
function groups(count: number, seed: number): RankGroup[] {
  const r = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const n = 40;
    const kind = r() < 0.5 ? 0 : 1;
    const features = new Float32Array(n * 3);
    const labels = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const a = r();
      const b = r();
      features.set([a, b, kind + 0.1 * r()], i * 3);
      labels[i] = (kind === 0 ? a : b) > 0.85 ? 1 : 0;
    }
    return { features, labels };
  });
}

const meanNdcg = (gs: readonly RankGroup[], scores: (g: RankGroup) => ArrayLike<number>) =>
  gs.reduce((s, g) => s + ndcgAt(scores(g), g.labels, 10), 0) / gs.length;

test("learns a ranking that depends on the kind of query, and generalises to unseen queries", () => {
  const train = groups(200, 1);
  const test_ = groups(100, 2);
  const model = trainLambdaMart(train, 3, { params: { trees: 60, minLeafRows: 20 } });
  const learned = meanNdcg(test_, (g) => scoreRows(model, g.features));
  const byA = meanNdcg(test_, (g) => Array.from({ length: g.labels.length }, (_, i) => g.features[i * 3]!));
  assert.ok(learned > 0.9, `held-out nDCG@10 ${learned}`);
  assert.ok(learned > byA + 0.2, `learned ${learned} vs feature 0 alone ${byA}`);
  const imp = featureImportance(model);
  assert.ok(Math.abs(imp.reduce((a, b) => a + b, 0) - 1) < 1e-9);
  assert.ok(imp[2]! > 0.05, "the query-kind feature is used to split");
});

test("training is deterministic: the same data and params give the same trees", () => {
  const data = groups(50, 3);
  const a = trainLambdaMart(data, 3, { params: { trees: 20 } });
  const b = trainLambdaMart(data, 3, { params: { trees: 20 } });
  assert.equal(JSON.stringify(a), JSON.stringify(b));
});

test("stochastic boosting is seeded: the same seed gives the same trees, another seed others, and it still learns", () => {
  const data = groups(200, 5);
  const params = { trees: 60, minLeafRows: 20, subsample: 0.6, featureFraction: 0.7 };
  const a = trainLambdaMart(data, 3, { params: { ...params, seed: 1 } });
  const b = trainLambdaMart(data, 3, { params: { ...params, seed: 1 } });
  const c = trainLambdaMart(data, 3, { params: { ...params, seed: 2 } });
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  assert.notEqual(JSON.stringify(a), JSON.stringify(c));
  const full = trainLambdaMart(data, 3, { params: { trees: 60, minLeafRows: 20 } });
  assert.notEqual(JSON.stringify(a), JSON.stringify(full), "sampling changes the trees");
  const learned = meanNdcg(groups(100, 6), (g) => scoreRows(a, g.features));
  assert.ok(learned > 0.9, `held-out nDCG@10 ${learned}`);
});

test("scores from raw thresholds agree with the training scores (bins and thresholds line up)", () => {
  const data = groups(30, 4);
  let lastTraining: number[] = [];
  const model = trainLambdaMart(data, 3, {
    params: { trees: 10 },
    onTree: (_count, m) => {
      lastTraining = data.flatMap((g) => Array.from(scoreRows(m, g.features)));
    },
  });
  const direct = data.flatMap((g) => Array.from(scoreRows(model, g.features)));
  assert.deepEqual(direct, lastTraining);
  // A model of no information ranks by row order: nDCG of a constant score is the label order's.
  assert.equal(ndcgAt([0, 0, 0], [0, 0, 1], 10), 0.5);
});

test("a query without a relevant candidate contributes no gradient; bad params are refused", () => {
  const empty: RankGroup = { features: new Float32Array([1, 2, 3, 4]), labels: new Float32Array([0, 0]) };
  const model = trainLambdaMart([empty], 2, { params: { trees: 3 } });
  assert.ok(model.trees.every((t) => t.value.every((v) => v === 0)));
  assert.throws(() => trainLambdaMart([empty], 2, { params: { trees: 0 } }), /trees must be a positive integer/);
  assert.throws(() => trainLambdaMart([empty], 2, { params: { bins: 1000 } }), /bins must be an integer in \[2, 256\]/);
  assert.throws(() => trainLambdaMart([empty], 2, { params: { subsample: 0 } }), /subsample must be in \(0, 1\]/);
  assert.throws(() => trainLambdaMart([empty], 2, { params: { featureFraction: 1.5 } }), /featureFraction must be in \(0, 1\]/);
  assert.throws(() => trainLambdaMart([empty], 2, { params: { seed: 0.5 } }), /seed must be an integer/);
  assert.throws(() => trainLambdaMart([empty], 3), /group 0: 4 feature values for 2 rows × 3 features/);
  assert.equal(DEFAULT_LAMBDAMART_PARAMS.truncation, 30);
});

test("averageEnsembles scores the mean of its members' scores", () => {
  const data = groups(100, 9);
  const members = [1, 2, 3].map((seed) => trainLambdaMart(data, 3, { params: { trees: 10, minLeafRows: 10, subsample: 0.7, seed } }));
  const mean = averageEnsembles(members);
  assert.equal(mean.trees.length, 30);
  for (const g of data.slice(0, 5)) {
    const got = scoreRows(mean, g.features);
    const each = members.map((m) => scoreRows(m, g.features));
    for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i]! - (each[0]![i]! + each[1]![i]! + each[2]![i]!) / 3) < 1e-9);
  }
  assert.equal(averageEnsembles([members[0]!]), members[0]);
  assert.throws(() => averageEnsembles([]), RangeError);
  assert.throws(() => averageEnsembles([members[0]!, { featureCount: 4, trees: [] }]), /feature count/);
});
