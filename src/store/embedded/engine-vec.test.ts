import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { seededRandom } from "../../../test/support/engine-synthetic.js";
import { quantizeInt8, roundHalfUp } from "./engine-vec.js";

describe("roundHalfUp", () => {
  it("is Math.round, halves and the values just below them included", () => {
    const below = (x: number) => x - Math.max(Number.MIN_VALUE, Math.abs(x) * Number.EPSILON) / 2;
    const cases = [0, -0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 127, -127, 0.49999999999999994, -0.49999999999999994];
    for (const h of [0.5, 1.5, 2.5, 63.5, 126.5]) cases.push(below(h), -below(h), h + h * Number.EPSILON, -(h + h * Number.EPSILON));
    const rnd = seededRandom(3);
    for (let i = 0; i < 100_000; i++) cases.push((rnd() * 2 - 1) * 128, Math.round((rnd() * 2 - 1) * 128) + 0.5);
    // Math.round(-0.4) is -0; both are stored as code 0, so compare as numbers.
    for (const x of cases) assert.ok(roundHalfUp(x) === Math.round(x), `roundHalfUp(${x}) = ${roundHalfUp(x)}, Math.round gives ${Math.round(x)}`);
  });
});

describe("quantizeInt8", () => {
  it("gives each row scale max|x| / 127 and codes round(x / scale), zero rows included", () => {
    const dims = 32;
    const count = 200;
    const rnd = seededRandom(9);
    const vectors = new Float32Array(count * dims).map(() => rnd() * 2 - 1);
    vectors.fill(0, 5 * dims, 6 * dims);
    const { codes, scales } = quantizeInt8(vectors, dims, count);
    for (let r = 0; r < count; r++) {
      let max = 0;
      for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(vectors[r * dims + i]!));
      assert.equal(scales[r], Math.fround(max / 127));
      for (let i = 0; i < dims; i++) {
        const want = max === 0 ? 0 : Math.round(vectors[r * dims + i]! * (127 / max)) + 0; // an Int8Array holds -0 as 0
        assert.equal(codes[r * dims + i], want, `row ${r}, dim ${i}`);
      }
    }
  });
});
