import assert from "node:assert/strict";
import { test } from "vitest";
import { seededRandom } from "../../common/random.js";
import { MinHeap } from "./engine-heap.js";

test("MinHeap as a bounded top-k: the k best by score, ties to the lower id, drained best first", () => {
  for (let trial = 0; trial < 200; trial++) {
    const r = seededRandom(trial + 1);
    const n = 1 + Math.floor(r() * 300);
    const k = 1 + Math.floor(r() * 40);
    // Few distinct scores, so ties are common and decide membership and order.
    const items = Array.from({ length: n }, (_, id) => ({ id, score: Math.floor(r() * 12) / 4 }));
    const order = [...items].sort(() => r() - 0.5);
    const heap = new MinHeap(2);
    for (const { id, score } of order) heap.offer(id, score, k);
    const expected = [...items].sort((a, b) => b.score - a.score || a.id - b.id).slice(0, k);
    assert.deepEqual(
      heap.drainHits(),
      expected.map(({ id, score }) => ({ idx: id, score })),
      `trial ${trial}`,
    );
    assert.equal(heap.size, 0);
  }
});
