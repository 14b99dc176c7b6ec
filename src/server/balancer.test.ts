import assert from "node:assert/strict";
import { test } from "node:test";
import { balancesConnections, leastLoaded } from "./balancer.js";

test("leastLoaded picks the smallest count", () => {
  assert.equal(leastLoaded([3, 1, 2], 0), 1);
  assert.equal(leastLoaded([0, 5], 1), 0);
  assert.equal(leastLoaded([7], 0), 0);
  assert.equal(leastLoaded([], 0), -1);
});

test("leastLoaded breaks ties from the turn onwards, so equal workers alternate", () => {
  assert.equal(leastLoaded([2, 2, 2], 0), 0);
  assert.equal(leastLoaded([2, 2, 2], 1), 1);
  assert.equal(leastLoaded([2, 2, 2], 2), 2);
  // Cyclic: from index 2 the next tie is index 0.
  assert.equal(leastLoaded([1, 3, 4, 1], 2), 3);
  assert.equal(leastLoaded([1, 3, 4, 2], 2), 0);
});

test("a burst of connections splits evenly when each goes to the least loaded", () => {
  const counts = [0, 0];
  let turn = 0;
  for (let c = 0; c < 51; c++) {
    const i = leastLoaded(counts, turn);
    counts[i]!++;
    turn = (i + 1) % counts.length;
  }
  assert.deepEqual(counts, [26, 25]);
});

test("the balancer runs only for a cluster that serves REST, under least-connections", () => {
  const cfg = (processes: number, balancing: "least-connections" | "round-robin") => ({ server: { processes, balancing } });
  assert.equal(balancesConnections(cfg(2, "least-connections"), "all"), true);
  assert.equal(balancesConnections(cfg(2, "least-connections"), "gateway"), true);
  assert.equal(balancesConnections(cfg(2, "least-connections"), "core"), false);
  assert.equal(balancesConnections(cfg(1, "least-connections"), "all"), false);
  assert.equal(balancesConnections(cfg(4, "round-robin"), "all"), false);
});
