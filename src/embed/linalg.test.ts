import { test } from "vitest";
import assert from "node:assert/strict";
import { fitPca, pcaProject, symmetricEigen } from "./linalg.js";

test("symmetricEigen recovers A·v = λ·v on a random symmetric matrix", () => {
  const n = 12;
  const a = new Float64Array(n * n);
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) a[i * n + j] = a[j * n + i] = rnd();
  const { values, vectors } = symmetricEigen(a, n);
  for (let k = 0; k < n; k++) {
    for (let i = 0; i < n; i++) {
      let av = 0;
      for (let j = 0; j < n; j++) av += a[i * n + j]! * vectors[j * n + k]!;
      assert.ok(Math.abs(av - values[k]! * vectors[i * n + k]!) < 1e-9);
    }
  }
});

test("fitPca finds the dominant axis of elongated data", () => {
  const count = 500;
  const rows = new Float32Array(count * 3);
  for (let r = 0; r < count; r++) {
    const t = (r / count - 0.5) * 10;
    rows[r * 3] = t;
    rows[r * 3 + 1] = t + 0.01 * Math.sin(r);
    rows[r * 3 + 2] = 0.05 * Math.cos(r * 1.7);
  }
  const p = fitPca(rows, count, 3, 1);
  const axis = [p.components[0]!, p.components[1]!, p.components[2]!];
  assert.ok(Math.abs(Math.abs(axis[0]!) - Math.SQRT1_2) < 0.01, `axis ${axis}`);
  assert.ok(p.explained > 0.99);
  const out = new Float32Array(1);
  pcaProject(p, Float32Array.of(1, 1, 0), 0, out, 0);
  assert.ok(Math.abs(Math.abs(out[0]!) - Math.SQRT2) < 0.05);
});

test("fitPca's blocked covariance is the row-by-row sum to the bit, whatever the count's remainder by four", () => {
  const inDims = 9;
  for (const count of [4, 9, 10, 11, 13]) {
    const rows = new Float32Array(count * inDims);
    let seed = count;
    for (let i = 0; i < rows.length; i++) rows[i] = (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
    const p = fitPca(rows, count, inDims, inDims);
    // The reference: the mean, then each row's outer product added in row order.
    const mean = new Float64Array(inDims);
    for (let r = 0; r < count; r++) for (let j = 0; j < inDims; j++) mean[j]! += rows[r * inDims + j]!;
    for (let j = 0; j < inDims; j++) mean[j]! /= count;
    const cov = new Float64Array(inDims * inDims);
    for (let r = 0; r < count; r++) {
      for (let i = 0; i < inDims; i++) {
        for (let j = i; j < inDims; j++) cov[i * inDims + j]! += (rows[r * inDims + i]! - mean[i]!) * (rows[r * inDims + j]! - mean[j]!);
      }
    }
    for (let i = 0; i < inDims; i++) for (let j = i; j < inDims; j++) cov[j * inDims + i] = cov[i * inDims + j]! /= count;
    const { values, vectors } = symmetricEigen(cov, inDims);
    const order = [...values.keys()].sort((a, b) => values[b]! - values[a]!);
    const expected = new Float64Array(inDims * inDims);
    for (let c = 0; c < inDims; c++) for (let j = 0; j < inDims; j++) expected[c * inDims + j] = vectors[j * inDims + order[c]!]!;
    assert.deepEqual(p.components, expected, `count ${count}`);
  }
});

test("pcaProject gives the plain loop's values to the bit, for axis counts that are not a multiple of four", () => {
  const inDims = 11;
  const count = 40;
  const rows = new Float32Array(count * inDims);
  let seed = 3;
  for (let i = 0; i < rows.length; i++) rows[i] = (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
  for (const dims of [1, 4, 7, 11]) {
    const p = fitPca(rows, count, inDims, dims);
    for (let r = 0; r < count; r++) {
      const out = new Float32Array(dims);
      pcaProject(p, rows, r * inDims, out, 0);
      const expected = new Float32Array(dims);
      for (let c = 0; c < dims; c++) {
        let s = 0;
        for (let j = 0; j < inDims; j++) s += (rows[r * inDims + j]! - p.mean[j]!) * p.components[c * inDims + j]!;
        expected[c] = s;
      }
      assert.deepEqual(out, expected, `dims ${dims}, row ${r}`);
    }
  }
});
