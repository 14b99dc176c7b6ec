import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { averageEnsembles } from "../core/rank/lambdamart.js";
import { FEATURE_COUNT } from "../core/rank/features.js";
import { balanceSets, crossValidate, trainRanker, type JudgedPool } from "./train-ranker.js";

const pool = (id: string, set: string): JudgedPool => ({
  id,
  set,
  fold: "fold00",
  keys: ["a/a"],
  relevant: new Set(["a/a"]),
  features: new Float32Array(0),
  labels: Float32Array.of(1),
});

/**
 * Query `q` of a synthetic set for the learners: `n` candidates, two features, relevance following
 * feature 0 with noise (so the trees have something to learn), in fold q mod `folds`.
 */
const synthetic = (q: number, n: number, folds: number): JudgedPool => {
  const features = new Float32Array(n * FEATURE_COUNT);
  const labels = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const a = ((q * 31 + i * 17) % 97) / 97;
    features[i * FEATURE_COUNT] = a;
    features[i * FEATURE_COUNT + 1] = ((q * 7 + i * 13) % 89) / 89;
    labels[i] = a > 0.8 ? 1 : 0;
  }
  return { id: `q${q}`, set: "dev", fold: `fold${q % folds}`, keys: [], relevant: new Set<string>(), features, labels };
};

describe("balanceSets", () => {
  const pools = [pool("d1", "dev"), pool("d2", "dev"), pool("d3", "dev"), pool("h1", "head")];
  const total = (ps: readonly JudgedPool[], set: string) => ps.filter((p) => p.set === set).reduce((s, p) => s + p.weight!, 0);

  it("gives each set the same total weight, whatever its size", () => {
    const w = balanceSets(pools);
    assert.ok(Math.abs(total(w, "dev") - 2) < 1e-9);
    assert.equal(total(w, "head"), 2);
    assert.equal(w[0]!.weight, w[1]!.weight);
  });

  it("a set's factor multiplies its share (--head-weight)", () => {
    const w = balanceSets(pools, { head: 2 });
    assert.ok(Math.abs(total(w, "dev") - 2) < 1e-9);
    assert.equal(total(w, "head"), 4);
  });
});

describe("trainRanker and crossValidate with a bag of tree ensembles (--bag)", () => {
  const pools: JudgedPool[] = Array.from({ length: 40 }, (_, q) => synthetic(q, 20, 4));
  const params = { linear: { epochs: 5 }, trees: { trees: 8, maxDepth: 2, minLeafRows: 10, subsample: 0.6, seed: 3 } };

  it("a bag of one is the plain ranker; a bag of N holds N ensembles, seeds seed … seed + N − 1, averaged", () => {
    const one = trainRanker(pools, params);
    assert.equal(one.ensemble.trees.length, 8);
    const bag = trainRanker(pools, params, undefined, 3);
    assert.equal(bag.ensemble.trees.length, 24);
    assert.deepEqual(bag.linear, one.linear);
    // The first member is the plain ranker's trees (seed 3), each leaf worth a third.
    assert.deepEqual(
      bag.ensemble.trees.slice(0, 8).map((t) => t.value),
      one.ensemble.trees.map((t) => t.value.map((v) => v / 3)),
    );
    const seeds = [3, 4, 5].map((seed) => trainRanker(pools, { ...params, trees: { ...params.trees, seed } }).ensemble);
    assert.equal(JSON.stringify(bag.ensemble), JSON.stringify(averageEnsembles(seeds)));
    assert.throws(() => trainRanker(pools, params, undefined, 0), /bag must be a positive integer/);
  });

  it("held-out scores of a bag are the mean of its members' held-out scores", () => {
    const bagged = crossValidate(pools, params, [0, 8], undefined, 2).get(8)!;
    const a = crossValidate(pools, params, [8]).get(8)!;
    const b = crossValidate(pools, { ...params, trees: { ...params.trees, seed: 4 } }, [8]).get(8)!;
    assert.equal(bagged.size, pools.length);
    for (const [id, s] of bagged) for (let i = 0; i < s.length; i++) assert.ok(Math.abs(s[i]! - (a.get(id)![i]! + b.get(id)![i]!) / 2) < 1e-9);
    assert.equal(JSON.stringify([...crossValidate(pools, params, [0], undefined, 2).get(0)!]), JSON.stringify([...crossValidate(pools, params, [0]).get(0)!]));
  });
});

describe("a pool of weight 0 is measured, not trained on", () => {
  const pools = Array.from({ length: 30 }, (_, q) => synthetic(q, 12, 3));
  // Labels that would pull the ranker the other way, were they trained on.
  const flipped = (q: number): JudgedPool => {
    const p = synthetic(q, 12, 3);
    return { ...p, id: `x${q}`, weight: 0, labels: Float32Array.from(p.labels, (l) => 1 - l) };
  };
  const extra = [flipped(100), flipped(101), flipped(102)];
  const params = { linear: { epochs: 5 }, trees: { trees: 6, maxDepth: 2, minLeafRows: 5, subsample: 0.7, seed: 2 } };

  it("trains the same ranker as without it", () => {
    assert.equal(JSON.stringify(trainRanker([...pools, ...extra], params)), JSON.stringify(trainRanker(pools, params)));
    // With a weight, the same pools do change the ranker: the comparison above can fail.
    const weighted = extra.map((p) => ({ ...p, weight: 1 }));
    assert.notEqual(JSON.stringify(trainRanker([...pools, ...weighted], params)), JSON.stringify(trainRanker(pools, params)));
  });

  it("gets held-out scores, and leaves every other query's as they were", () => {
    const without = crossValidate(pools, params, [0, 6]);
    const withExtra = crossValidate([...pools, ...extra], params, [0, 6]);
    for (const count of [0, 6]) {
      for (const p of extra) assert.equal(withExtra.get(count)!.get(p.id)!.length, 12);
      for (const p of pools) assert.deepEqual([...withExtra.get(count)!.get(p.id)!], [...without.get(count)!.get(p.id)!]);
    }
  });
});
