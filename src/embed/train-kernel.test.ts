import { afterEach, test } from "vitest";
import assert from "node:assert/strict";
import { seededRandom } from "../common/random.js";
import { BatchKernel, partRows } from "./train-kernel.js";

const open: BatchKernel[] = [];
afterEach(() => {
  for (const k of open.splice(0)) k.close();
});

function kernel(maxBatch: number, dims: number, threads: number, opts?: ConstructorParameters<typeof BatchKernel>[3]): BatchKernel {
  const k = new BatchKernel(maxBatch, dims, threads, opts);
  open.push(k);
  return k;
}

/** One batch's inputs, the same for every kernel: random sides, some rows sharing a group, softmax-like P. */
function fill(k: BatchKernel, B: number, d: number, seed: number): void {
  const rnd = seededRandom(seed);
  const b = k.buffers;
  for (let i = 0; i < B * d; i++) {
    b.EA[i] = rnd() - 0.5;
    b.EB[i] = rnd() - 0.5;
  }
  for (let i = 0; i < B; i++) b.groups[i] = i % 7 === 3 ? i - 1 : i;
  for (let i = 0; i < B * B; i++) {
    b.PR[i] = rnd() / B;
    b.PC[i] = rnd() / B;
  }
}

function run(k: BatchKernel, B: number, d: number): { S: number[]; masked: number[]; dEA: number[]; dEB: number[] } {
  k.similarities(B, d, 1 / 0.2);
  k.gradients(B, d, 0.5 / B / 0.2);
  const b = k.buffers;
  return {
    S: Array.from(b.S.subarray(0, B * B)).map((x, i) => (b.masked[i] ? 0 : x)),
    masked: Array.from(b.masked.subarray(0, B * B)),
    dEA: Array.from(b.dEA.subarray(0, B * d)),
    dEB: Array.from(b.dEB.subarray(0, B * d)),
  };
}

/** The products written the plain way, one term at a time, skipping masked and zero terms: the kernel's oracle. */
function reference(k: BatchKernel, B: number, d: number, inv: number, scale: number): { S: number[]; dEA: number[]; dEB: number[] } {
  const { EA, EB, PR, PC, groups } = k.buffers;
  const S = new Array<number>(B * B).fill(0);
  const masked = (i: number, j: number) => i !== j && groups[j] === groups[i];
  for (let i = 0; i < B; i++)
    for (let j = 0; j < B; j++) {
      if (masked(i, j)) continue;
      let s = 0;
      for (let x = 0; x < d; x++) s += EA[i * d + x]! * EB[j * d + x]!;
      S[i * B + j] = s * inv;
    }
  const dEA = new Array<number>(B * d).fill(0);
  const dEB = new Array<number>(B * d).fill(0);
  for (let i = 0; i < B; i++)
    for (let j = 0; j < B; j++) {
      if (masked(i, j)) continue;
      const g = (PR[i * B + j]! + PC[i * B + j]! - (i === j ? 2 : 0)) * scale;
      if (g === 0) continue;
      for (let x = 0; x < d; x++) {
        dEA[i * d + x]! += g * EB[j * d + x]!;
        dEB[j * d + x]! += g * EA[i * d + x]!;
      }
    }
  return { S, dEA, dEB };
}

test("the unrolled products equal one-term-at-a-time sums bit for bit, masked and zero terms included", () => {
  const d = 24;
  for (const [B, seed] of [
    [64, 11],
    [37, 12],
    [6, 13],
  ] as const) {
    const k = kernel(64, d, 1);
    fill(k, B, d, seed);
    // Terms whose gradient is exactly zero (PR + PC = 0 off the diagonal), which the oracle skips.
    for (let i = 0; i < B; i += 5) k.buffers.PR[i * B + ((i + 2) % B)] = k.buffers.PC[i * B + ((i + 2) % B)] = 0;
    const got = run(k, B, d);
    const want = reference(k, B, d, 1 / 0.2, 0.5 / B / 0.2);
    assert.deepEqual(got.S, want.S);
    assert.deepEqual(got.dEA, want.dEA);
    assert.deepEqual(got.dEB, want.dEB);
  }
});

test("partRows: contiguous shares of a batch that cover every row once", () => {
  for (const B of [1, 2, 7, 512, 513])
    for (const parts of [1, 2, 3, 8]) {
      let next = 0;
      for (let p = 0; p < parts; p++) {
        const [lo, hi] = partRows(B, p, parts);
        assert.equal(lo, next);
        assert.ok(hi - lo >= Math.floor(B / parts) && hi - lo <= Math.ceil(B / parts));
        next = hi;
      }
      assert.equal(next, B);
    }
});

test("helper threads give the same similarities, masks and gradients bit for bit, batch after batch", () => {
  const d = 16;
  const serial = kernel(64, d, 1);
  const parallel = kernel(64, d, 3);
  assert.equal(parallel.threads, 3);
  // A full batch, then a shorter last batch (its stride differs), then a full one again.
  for (const [B, seed] of [
    [64, 1],
    [37, 2],
    [64, 3],
  ] as const) {
    fill(serial, B, d, seed);
    fill(parallel, B, d, seed);
    const a = run(serial, B, d);
    const b = run(parallel, B, d);
    assert.ok(
      a.masked.some((m) => m === 1),
      "some entries are masked",
    );
    assert.ok(a.dEB.some((x) => x !== 0));
    assert.deepEqual(b, a);
  }
});

test("a helper that cannot start is dropped after readyTimeoutMs, and the batch is computed here, the same", () => {
  const d = 8;
  const serial = kernel(20, d, 1);
  const broken = kernel(20, d, 2, { readyTimeoutMs: 300, workerUrl: new URL("./no-such-helper.js", import.meta.url) });
  fill(serial, 20, d, 5);
  fill(broken, 20, d, 5);
  assert.deepEqual(run(broken, 20, d), run(serial, 20, d));
  assert.equal(broken.threads, 1);
});

test("threads must be a positive integer and readyTimeoutMs positive", () => {
  assert.throws(() => new BatchKernel(8, 4, 0), RangeError);
  assert.throws(() => new BatchKernel(8, 4, 1.5), RangeError);
  assert.throws(() => new BatchKernel(8, 4, 2, { readyTimeoutMs: 0 }), RangeError);
});
