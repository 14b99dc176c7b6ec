import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { Bitset, popcount32 } from "./bitset.js";
import { seededRandom } from "../../../test/support/engine-synthetic.js";

function randomSet(size: number, density: number, rnd: () => number): Set<number> {
  const s = new Set<number>();
  for (let i = 0; i < size; i++) if (rnd() < density) s.add(i);
  return s;
}

function members(b: Bitset): number[] {
  const out: number[] = [];
  b.forEach((i) => out.push(i));
  return out;
}

describe("Bitset", () => {
  it("sets, clears and tests single bits, including word edges", () => {
    const b = new Bitset(100);
    for (const i of [0, 31, 32, 63, 64, 99]) b.set(i);
    assert.deepEqual(members(b), [0, 31, 32, 63, 64, 99]);
    assert.equal(b.has(31), true);
    assert.equal(b.has(30), false);
    assert.equal(b.has(100), false, "out of range reads are false");
    assert.equal(b.has(-1), false);
    b.clear(31);
    assert.equal(b.has(31), false);
    assert.equal(b.count(), 5);
  });

  it("rejects out-of-range writes and mismatched sizes", () => {
    const b = new Bitset(10);
    assert.throws(() => b.set(10), RangeError);
    assert.throws(() => b.set(-1), RangeError);
    assert.throws(() => b.and(new Bitset(11)), RangeError);
    assert.throws(() => new Bitset(-1), RangeError);
    assert.throws(() => new Bitset(40, new Uint32Array(1)), RangeError);
  });

  it("full() and not() never set bits past size", () => {
    for (const size of [0, 1, 31, 32, 33, 64, 65, 1000]) {
      assert.equal(Bitset.full(size).count(), size);
      assert.equal(new Bitset(size).not().count(), size);
      assert.equal(Bitset.full(size).not().count(), 0);
      assert.deepEqual(
        members(Bitset.full(size)),
        Array.from({ length: size }, (_, i) => i),
      );
    }
  });

  it("and / or / andNot / not agree with set algebra on random sets", () => {
    const rnd = seededRandom(3);
    for (const size of [1, 37, 64, 500, 4097]) {
      for (const density of [0.01, 0.3, 0.9]) {
        const a = randomSet(size, density, rnd);
        const b = randomSet(size, density, rnd);
        const A = Bitset.fromIndices(size, a);
        const B = Bitset.fromIndices(size, b);
        const all = Array.from({ length: size }, (_, i) => i);
        assert.deepEqual(
          members(A.clone().and(B)),
          all.filter((i) => a.has(i) && b.has(i)),
        );
        assert.deepEqual(
          members(A.clone().or(B)),
          all.filter((i) => a.has(i) || b.has(i)),
        );
        assert.deepEqual(
          members(A.clone().andNot(B)),
          all.filter((i) => a.has(i) && !b.has(i)),
        );
        assert.deepEqual(
          members(A.clone().not()),
          all.filter((i) => !a.has(i)),
        );
        assert.equal(A.count(), a.size);
        assert.deepEqual(
          Array.from(A.toArray()),
          [...a].sort((x, y) => x - y),
        );
        const rows = new Int32Array(a.size + 1).fill(-1);
        assert.equal(A.writeRows(rows), a.size);
        assert.deepEqual(
          Array.from(rows.subarray(0, a.size)),
          [...a].sort((x, y) => x - y),
        );
        assert.equal(rows[a.size], -1, "nothing written past the set rows");
      }
    }
  });

  it("operations are in place and return this; clone is independent", () => {
    const a = Bitset.fromIndices(10, [1, 2]);
    const c = a.clone();
    assert.equal(a.or(Bitset.fromIndices(10, [5])), a);
    assert.deepEqual(members(a), [1, 2, 5]);
    assert.deepEqual(members(c), [1, 2]);
    assert.equal(c.equals(Bitset.fromIndices(10, [2, 1])), true);
    assert.equal(c.equals(a), false);
  });

  it("setRange covers partial and whole words", () => {
    for (const [from, to] of [
      [0, 0],
      [3, 9],
      [0, 32],
      [5, 70],
      [31, 33],
      [64, 130],
    ] as const) {
      const b = new Bitset(130);
      b.setRange(from, to);
      assert.deepEqual(
        members(b),
        Array.from({ length: to - from }, (_, i) => from + i),
      );
    }
    assert.throws(() => new Bitset(10).setRange(5, 11), RangeError);
  });

  it("isEmpty and popcount32", () => {
    assert.equal(new Bitset(70).isEmpty(), true);
    assert.equal(Bitset.fromIndices(70, [69]).isEmpty(), false);
    assert.equal(popcount32(0), 0);
    assert.equal(popcount32(0xffffffff), 32);
    assert.equal(popcount32(0x80000001), 2);
    assert.equal(popcount32(0x0f0f0f0f), 16);
  });
});
