import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "vitest";
import { pathToFileURL } from "node:url";
import { projectRoot } from "../../config/config.js";
import { dotInt8 } from "./engine-vec.js";
import { seededRandom } from "../../../test/support/engine-synthetic.js";
import { INT8_KERNEL_WASM_BASE64, Int8Scanner, int8KernelAvailable } from "./int8-kernel.js";

describe("int8 SIMD kernel", () => {
  it("is the compiled int8-kernel.wat (run node scripts/build-wasm.mjs after editing it)", async () => {
    const { compileKernel } = (await import(pathToFileURL(path.join(projectRoot, "scripts", "build-wasm.mjs")).href)) as { compileKernel(): Promise<string> };
    assert.equal(INT8_KERNEL_WASM_BASE64, await compileKernel());
  });

  it("runs here (Node ≥ 20 has WebAssembly SIMD)", () => {
    assert.equal(int8KernelAvailable(), true);
  });

  it("computes the same integer dot products as the JavaScript loop, extremes included", () => {
    const rnd = seededRandom(7);
    for (const dims of [16, 48, 128, 256]) {
      const count = 300;
      const scanner = Int8Scanner.create(count, dims);
      assert.ok(scanner !== null);
      const codes = scanner.codes;
      for (let i = 0; i < codes.length; i++) codes[i] = Math.floor(rnd() * 256) - 128;
      codes.fill(-128, 0, dims); // row 0: the most negative code everywhere
      codes.fill(127, dims, 2 * dims); // row 1: the most positive
      const q = new Int8Array(dims);
      for (let i = 0; i < dims; i++) q[i] = Math.floor(rnd() * 256) - 128;
      q[0] = -128;
      // Every row once, in a scrambled order.
      const order = Array.from({ length: count }, (_, r) => r).sort(() => rnd() - 0.5);
      const n = count;
      order.forEach((r, i) => (scanner.rows[i] = r));
      scanner.load(q);
      scanner.dots(n);
      for (let i = 0; i < n; i++) {
        const r: number = scanner.rows[i]!;
        assert.equal(scanner.out[i], dotInt8(q, 0, codes, r * dims, dims), `dims ${dims}, row ${r}`);
      }
      scanner.dots(0); // an empty scan is fine
    }
  });

  it("takes one of its own rows as the query code", () => {
    const rnd = seededRandom(11);
    const dims = 64;
    const count = 50;
    const scanner = Int8Scanner.create(count, dims)!;
    const codes = scanner.codes;
    for (let i = 0; i < codes.length; i++) codes[i] = Math.floor(rnd() * 256) - 128;
    codes.fill(-128, 3 * dims, 4 * dims);
    for (const q of [0, 3, count - 1]) {
      scanner.loadRow(q);
      for (let r = 0; r < count; r++) scanner.rows[r] = r;
      scanner.dots(count);
      for (let r = 0; r < count; r++) assert.equal(scanner.out[r], dotInt8(codes, q * dims, codes, r * dims, dims), `query row ${q}, row ${r}`);
    }
    assert.throws(() => scanner.loadRow(count), /row must be in \[0, 50\)/);
  });

  it("declines what it cannot serve, so scans keep the JavaScript loop", () => {
    assert.equal(Int8Scanner.create(10, 8), null, "fewer than 16 dims");
    assert.equal(Int8Scanner.create(10, 40), null, "not a multiple of 16");
    assert.equal(Int8Scanner.create(-1, 16), null);
    const s = Int8Scanner.create(4, 16)!;
    assert.throws(() => s.load(new Int8Array(8)), /query code has 8 dims/);
    assert.throws(() => s.dots(5), /n must be in \[0, 4\]/);
  });
});
