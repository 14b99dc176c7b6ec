import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { Bitset } from "./bitset.js";
import { clusteredVectors, seededRandom } from "../../../test/support/engine-synthetic.js";
import { HnswGraph } from "./hnsw.js";
import type { Hit } from "./types.js";

const DIMS = 32;
const N = 2500;
const ALL = clusteredVectors(N + 100, DIMS, { clusters: 20, subclusters: 6, noise: 0.8, seed: 5 });
const VECTORS = ALL.subarray(0, N * DIMS);
const queryAt = (i: number) => ALL.subarray((N + i) * DIMS, (N + i + 1) * DIMS);
const GRAPH = HnswGraph.build(VECTORS, DIMS, N, { m: 12, efConstruction: 80, seed: 7 });

function naiveDot(a: Float32Array, b: Float32Array, bo: number): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[bo + i]!;
  return s;
}

function bruteForce(q: Float32Array, k: number, allow: (r: number) => boolean = () => true): number[] {
  const scored: Hit[] = [];
  for (let r = 0; r < N; r++) if (allow(r)) scored.push({ idx: r, score: naiveDot(q, VECTORS, r * DIMS) });
  scored.sort((a, b) => b.score - a.score || a.idx - b.idx);
  return scored.slice(0, k).map((h) => h.idx);
}

function recall(got: Hit[], truth: number[]): number {
  if (truth.length === 0) return 1;
  const t = new Set(truth);
  return got.filter((h) => t.has(h.idx)).length / truth.length;
}

describe("HnswGraph", () => {
  it("finds the true nearest neighbours (recall@10 ≥ 0.98 at ef=64)", () => {
    let sum = 0;
    for (let i = 0; i < 100; i++) sum += recall(GRAPH.search(VECTORS, DIMS, queryAt(i), 10, 64, null), bruteForce(queryAt(i), 10));
    assert.ok(sum / 100 >= 0.98, `recall ${sum / 100}`);
  });

  it("returns hits best first with their true dot products", () => {
    const hits = GRAPH.search(VECTORS, DIMS, queryAt(0), 20, 40, null);
    assert.equal(hits.length, 20);
    for (let i = 0; i < hits.length; i++) {
      assert.ok(Math.abs(hits[i]!.score - naiveDot(queryAt(0), VECTORS, hits[i]!.idx * DIMS)) < 1e-5);
      if (i > 0) assert.ok(hits[i - 1]!.score >= hits[i]!.score);
    }
    assert.equal(new Set(hits.map((h) => h.idx)).size, 20, "no duplicates");
  });

  it("has the HNSW structure: degree caps, level distribution, valid links, connected layer 0", () => {
    const m = 12;
    let upper = 0;
    for (let r = 0; r < N; r++) {
      const lv = GRAPH.levelOf(r);
      if (lv > 0) upper++;
      for (let l = 0; l <= lv; l++) {
        const nb = GRAPH.neighbors(r, l);
        assert.ok(nb.length <= (l === 0 ? 2 * m : m), `degree cap at layer ${l}`);
        assert.equal(new Set(nb).size, nb.length, "no duplicate links");
        for (const e of nb) {
          assert.notEqual(e, r, "no self links");
          assert.ok(GRAPH.levelOf(e) >= l, "links stay within the layer");
        }
      }
    }
    // P(level ≥ 1) = exp(-1/mL) = 1/m with mL = 1/ln(m).
    assert.ok(Math.abs(upper / N - 1 / m) < 0.03, `upper-layer share ${upper / N}`);
    assert.equal(GRAPH.levelOf(GRAPH.entryPoint), GRAPH.maxLevel);
    const seen = new Uint8Array(N);
    const stack = [GRAPH.entryPoint];
    seen[GRAPH.entryPoint] = 1;
    let reached = 1;
    while (stack.length > 0) {
      for (const e of GRAPH.neighbors(stack.pop()!, 0)) {
        if (seen[e] === 0) {
          seen[e] = 1;
          reached++;
          stack.push(e);
        }
      }
    }
    assert.ok(reached >= N * 0.999, `layer 0 reaches ${reached} of ${N}`);
  });

  it("is deterministic for a seed", () => {
    const small = VECTORS.subarray(0, 600 * DIMS);
    const a = HnswGraph.build(small, DIMS, 600, { m: 8, efConstruction: 40, seed: 1 }).serialize();
    const b = HnswGraph.build(small, DIMS, 600, { m: 8, efConstruction: 40, seed: 1 }).serialize();
    const c = HnswGraph.build(small, DIMS, 600, { m: 8, efConstruction: 40, seed: 2 }).serialize();
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
  });

  it("builds the same graph on worker threads as on one thread", () => {
    // Past the sequential prefix (1024 rows), so inserts are planned in batches across threads.
    const rows = 2000;
    const one = HnswGraph.build(VECTORS, DIMS, rows, { m: 8, efConstruction: 40, seed: 7, threads: 1 });
    const two = HnswGraph.build(VECTORS, DIMS, rows, { m: 8, efConstruction: 40, seed: 7, threads: 2 });
    const three = HnswGraph.build(VECTORS, DIMS, rows, { m: 8, efConstruction: 40, seed: 7, threads: 3 });
    assert.deepEqual(two.serialize(), one.serialize());
    assert.deepEqual(three.serialize(), one.serialize());
  });

  it("builds the same graph with the SIMD kernel as with the JavaScript loop, on one thread or several", () => {
    const rows = 2000;
    const params = { m: 8, efConstruction: 40, seed: 7 };
    const js = HnswGraph.build(VECTORS, DIMS, rows, { ...params, threads: 1, simd: false }).serialize();
    assert.deepEqual(HnswGraph.build(VECTORS, DIMS, rows, { ...params, threads: 1, simd: true }).serialize(), js);
    assert.deepEqual(HnswGraph.build(VECTORS, DIMS, rows, { ...params, threads: 2, simd: true }).serialize(), js);
  });

  it("builds with float32 similarities too, at the same quality", () => {
    const g = HnswGraph.build(VECTORS, DIMS, 1000, { m: 12, efConstruction: 60, seed: 7, buildPrecision: "float32" });
    let sum = 0;
    for (let i = 0; i < 50; i++) {
      const truth = bruteForce(queryAt(i), 10, (r) => r < 1000);
      sum += recall(g.search(VECTORS, DIMS, queryAt(i), 10, 64, null), truth);
    }
    assert.ok(sum / 50 >= 0.98, `recall ${sum / 50}`);
  });

  it("filtered search returns only allowed rows, and finds them even when they are few", () => {
    const rnd = seededRandom(3);
    for (const density of [0.002, 0.02, 0.3]) {
      const allow = new Bitset(N);
      for (let r = 0; r < N; r++) if (rnd() < density) allow.set(r);
      let sum = 0;
      for (let i = 0; i < 30; i++) {
        const hits = GRAPH.search(VECTORS, DIMS, queryAt(i), 10, 64, allow);
        for (const h of hits) assert.ok(allow.has(h.idx), "only allowed rows");
        sum += recall(
          hits,
          bruteForce(queryAt(i), 10, (r) => allow.has(r)),
        );
      }
      assert.ok(sum / 30 >= 0.97, `density ${density}: recall ${sum / 30}`);
    }
    const one = Bitset.fromIndices(N, [1234]);
    assert.deepEqual(
      GRAPH.search(VECTORS, DIMS, queryAt(0), 10, 16, one).map((h) => h.idx),
      [1234],
    );
    assert.deepEqual(GRAPH.search(VECTORS, DIMS, queryAt(0), 10, 16, new Bitset(N)), []);
  });

  it("serialize / deserialize round-trips to identical search results", () => {
    const bytes = GRAPH.serialize();
    const copy = HnswGraph.deserialize(bytes);
    // Also from a buffer at an odd offset (as inside a larger file): arrays are copied, not viewed.
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    const unaligned = HnswGraph.deserialize(shifted.subarray(1));
    const allow = Bitset.fromIndices(
      N,
      Array.from({ length: N / 2 }, (_, i) => i * 2),
    );
    for (let i = 0; i < 40; i++) {
      const q = queryAt(i);
      const expected = GRAPH.search(VECTORS, DIMS, q, 10, 32, i % 2 === 0 ? null : allow);
      assert.deepEqual(copy.search(VECTORS, DIMS, q, 10, 32, i % 2 === 0 ? null : allow), expected);
      assert.deepEqual(unaligned.search(VECTORS, DIMS, q, 10, 32, i % 2 === 0 ? null : allow), expected);
    }
    assert.deepEqual(copy.serialize(), bytes);
    assert.equal(copy.entryPoint, GRAPH.entryPoint);
    assert.equal(copy.maxLevel, GRAPH.maxLevel);
  });

  it("rejects corrupt or foreign bytes", () => {
    const bytes = GRAPH.serialize();
    const bad = (mutate: (b: Uint8Array) => Uint8Array, re: RegExp) => assert.throws(() => HnswGraph.deserialize(mutate(bytes.slice())), re);
    bad((b) => ((b[0] = 0x00), b), /bad magic/);
    bad((b) => ((b[8] = 99), b), /unsupported format version 99/);
    bad((b) => b.subarray(0, b.length - 4), /expected/);
    bad((b) => b.subarray(0, 10), /truncated header/);
    // Node 0's first layer-0 link sits after the 48-byte header, the levels (1 byte per node) and
    // the layer-0 counts (2 bytes per node); every node has at least one link.
    const firstLink = 48 + N + 2 * N;
    bad((b) => (new DataView(b.buffer).setInt32(firstLink, N + 5, true), b), /out of range/);
    bad((b) => (new DataView(b.buffer).setInt32(firstLink, 0, true), b), /self link/);
    bad((b) => (new DataView(b.buffer).setUint16(48 + N, 1000, true), b), /links on layer 0/);
  });

  it("handles empty and single-node graphs", () => {
    const empty = HnswGraph.build(new Float32Array(0), DIMS, 0, { m: 8, efConstruction: 16 });
    assert.deepEqual(empty.search(new Float32Array(0), DIMS, queryAt(0), 5, 16, null), []);
    assert.deepEqual(HnswGraph.deserialize(empty.serialize()).search(new Float32Array(0), DIMS, queryAt(0), 5, 16, null), []);
    const one = HnswGraph.build(VECTORS, DIMS, 1, { m: 8, efConstruction: 16 });
    assert.deepEqual(
      one.search(VECTORS, DIMS, queryAt(0), 5, 16, null).map((h) => h.idx),
      [0],
    );
  });

  it("validates parameters and inputs", () => {
    assert.throws(() => HnswGraph.build(VECTORS, DIMS, N, { m: 1, efConstruction: 10 }), /m must be/);
    assert.throws(() => HnswGraph.build(VECTORS, DIMS, N, { m: 8, efConstruction: 0 }), /efConstruction/);
    assert.throws(() => HnswGraph.build(VECTORS, DIMS, N + 1000, { m: 8, efConstruction: 10 }), /vectors hold/);
    assert.throws(() => HnswGraph.build(VECTORS, DIMS, N, { m: 8, efConstruction: 10, threads: 0 }), /threads must be/);
    assert.throws(() => GRAPH.search(VECTORS, DIMS, new Float32Array(DIMS + 1), 5, 16, null), /query has/);
    assert.throws(() => GRAPH.search(VECTORS, DIMS, queryAt(0), 5, 16, new Bitset(N - 1)), /allow has size/);
  });

  it("reports build progress up to the total", () => {
    const seen: number[] = [];
    HnswGraph.build(VECTORS, DIMS, 300, { m: 8, efConstruction: 16 }, (done, total) => {
      assert.equal(total, 300);
      seen.push(done);
    });
    assert.equal(seen.at(-1), 300);
  });
});
