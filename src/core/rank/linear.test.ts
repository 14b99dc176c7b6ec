import assert from "node:assert/strict";
import { test } from "vitest";
import { seededRandom } from "../../common/random.js";
import { ndcgAt, type RankGroup } from "./lambdamart.js";
import { scoreLinear, trainLinear } from "./linear.js";

/** Relevance follows 2·a − b on noisy features; feature 2 is noise on a much larger scale. */
function groups(count: number, seed: number): RankGroup[] {
  const r = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const n = 30;
    const features = new Float32Array(n * 3);
    const labels = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const a = r();
      const b = r();
      features.set([a, b, 1000 * r()], i * 3);
      labels[i] = 2 * a - b + 0.2 * r() > 1.2 ? 1 : 0;
    }
    return { features, labels };
  });
}

const scores = (m: ReturnType<typeof trainLinear>, g: RankGroup) => Array.from({ length: g.labels.length }, (_, i) => scoreLinear(m, g.features, i * 3));
const meanNdcg = (m: ReturnType<typeof trainLinear>, gs: readonly RankGroup[]) => gs.reduce((s, g) => s + ndcgAt(scores(m, g), g.labels, 10), 0) / gs.length;

test("learns the direction of relevance on standardised features, and it holds on unseen queries", () => {
  const m = trainLinear(groups(100, 1), 3);
  const [wa, wb, wn] = m.weights;
  assert.ok(wa! > 0 && wb! < 0, `signs follow 2a − b (got ${m.weights.join(", ")})`);
  assert.ok(Math.abs(wn!) < Math.abs(wb!) / 3, "the large-scale noise feature gets little weight");
  const heldOut = groups(50, 2);
  const zero = { ...m, weights: [0, 0, 0] };
  assert.ok(meanNdcg(m, heldOut) > meanNdcg(zero, heldOut) + 0.2, "far better than no model on held-out queries");
});

test("deterministic, and a query's weight moves the fit", () => {
  assert.deepEqual(trainLinear(groups(40, 3), 3), trainLinear(groups(40, 3), 3));
  const gs = groups(40, 3);
  const heavy = gs.map((g, i) => (i === 0 ? { ...g, weight: 50 } : g));
  assert.notDeepEqual(trainLinear(heavy, 3).weights, trainLinear(gs, 3).weights);
});
