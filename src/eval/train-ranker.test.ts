import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { balanceSets, type JudgedPool } from "./train-ranker.js";

const pool = (id: string, set: string): JudgedPool => ({
  id,
  set,
  fold: "fold00",
  keys: ["a/a"],
  relevant: new Set(["a/a"]),
  features: new Float32Array(0),
  labels: Float32Array.of(1),
});

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
