import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { pointIdFor } from "../../common/hash.js";
import type { RepoPayload } from "../../dataset/record.js";
import { Bitset } from "./bitset.js";
import {
  boundedScan,
  denseSearch,
  exactSearch,
  filteredEf,
  TWO_HOP_EF_FACTOR,
  isDensePrepared,
  MAX_FILTERED_EF,
  planDense,
  prepareDense,
  QUANTIZED_SCAN_MIN_ROWS,
  type DenseData,
} from "./dense.js";
import { quantizeInt8Bounded } from "./engine-vec.js";
import { clusteredVectors, seededRandom } from "./engine-synthetic.js";
import { randomFilter, randomPayloads, referenceMatches } from "./filter-testkit.js";
import { HnswGraph } from "./hnsw.js";
import { PayloadIndex } from "./payload-index.js";
import type { Hit } from "./types.js";

const DIMS = 32;
const N = 3000;
const ALL = clusteredVectors(N + 200, DIMS, { clusters: 24, subclusters: 6, noise: 0.8, seed: 21 });
const VECTORS = ALL.subarray(0, N * DIMS);
const queryAt = (i: number) => ALL.subarray((N + i) * DIMS, (N + i + 1) * DIMS);
const GRAPH = HnswGraph.build(VECTORS, DIMS, N, { m: 12, efConstruction: 80, seed: 3 });
const DATA: DenseData = { vectors: VECTORS, dims: DIMS, count: N, graph: GRAPH };
const PAYLOADS = randomPayloads(N, 17);
const IDS = PAYLOADS.map((p) => pointIdFor(p.key as string));
const INDEX = PayloadIndex.build(IDS, PAYLOADS as unknown as RepoPayload[]);

/** Brute force: naive float64 dot products over the rows `allow` accepts, best first, ties by row. */
function reference(q: Float32Array, k: number, allow: (r: number) => boolean): Hit[] {
  const all: Hit[] = [];
  for (let r = 0; r < N; r++) {
    if (!allow(r)) continue;
    let s = 0;
    for (let i = 0; i < DIMS; i++) s += q[i]! * VECTORS[r * DIMS + i]!;
    all.push({ idx: r, score: s });
  }
  all.sort((a, b) => b.score - a.score || a.idx - b.idx);
  return all.slice(0, k);
}

/** Exact equality of rankings; rows may only swap where the scores tie to rounding. */
function assertSameRanking(got: Hit[], want: Hit[], context: string): void {
  assert.equal(got.length, want.length, `${context}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i]!.score - want[i]!.score) < 1e-6, `${context}: score at ${i}`);
    if (got[i]!.idx !== want[i]!.idx) {
      const tie = want.find((w) => w.idx === got[i]!.idx);
      assert.ok(tie !== undefined && Math.abs(tie.score - want[i]!.score) < 1e-6, `${context}: row at ${i}`);
    }
  }
}

function recallOf(got: Hit[], want: Hit[]): number {
  if (want.length === 0) return got.length === 0 ? 1 : 0;
  const w = new Set(want.map((h) => h.idx));
  return got.filter((h) => w.has(h.idx)).length / want.length;
}

describe("exactSearch", () => {
  it("equals brute force, with and without an allow-set", () => {
    const rnd = seededRandom(4);
    const allow = new Bitset(N);
    for (let r = 0; r < N; r++) if (rnd() < 0.1) allow.set(r);
    for (let i = 0; i < 20; i++) {
      assertSameRanking(exactSearch(DATA, queryAt(i), 10, null), reference(queryAt(i), 10, () => true), `q${i}`);
      assertSameRanking(exactSearch(DATA, queryAt(i), 10, allow), reference(queryAt(i), 10, (r) => allow.has(r)), `q${i} filtered`);
    }
  });

  it("returns fewer than k when fewer rows are allowed, and nothing for k = 0", () => {
    const allow = Bitset.fromIndices(N, [5, 77, 2999]);
    assert.deepEqual(exactSearch(DATA, queryAt(0), 10, allow).map((h) => h.idx).sort((a, b) => a - b), [5, 77, 2999]);
    assert.deepEqual(exactSearch(DATA, queryAt(0), 0, null), []);
    assert.deepEqual(exactSearch(DATA, queryAt(0), 10, new Bitset(N)), []);
  });

  it("rejects a query of the wrong dimension as a validation error", () => {
    assert.throws(
      () => exactSearch(DATA, new Float32Array(DIMS - 1), 5, null),
      (e: unknown) => e instanceof ReposearchError && e.code === ErrorCode.ValidationError,
    );
  });
});

describe("boundedScan (int8 first pass, exact re-score)", () => {
  it("returns exactly what the float32 scan returns", () => {
    const q8 = quantizeInt8Bounded(VECTORS, DIMS, N);
    const rnd = seededRandom(12);
    for (let t = 0; t < 150; t++) {
      const density = [0.002, 0.05, 0.3, 0.9][t % 4]!;
      const allow = new Bitset(N);
      for (let r = 0; r < N; r++) if (rnd() < density) allow.set(r);
      const q = queryAt(t % 200);
      const k = [1, 10, 50][t % 3]!;
      assert.deepEqual(boundedScan(DATA, q8, q, k, allow), exactSearch(DATA, q, k, allow));
    }
  });

  it("keeps ties, zero rows and a zero query exact", () => {
    const rows = 300;
    const v = new Float32Array(rows * DIMS);
    v.set(VECTORS.subarray(0, rows * DIMS));
    for (let r = 1; r < 40; r++) v.copyWithin(r * DIMS, 0, DIMS); // rows 0..39 identical: ties
    v.fill(0, 100 * DIMS, 110 * DIMS); // zero rows
    const data: DenseData = { vectors: v, dims: DIMS, count: rows, graph: null };
    const q8 = quantizeInt8Bounded(v, DIMS, rows);
    const all = Bitset.full(rows);
    for (const q of [v.slice(0, DIMS), queryAt(3), new Float32Array(DIMS)]) {
      for (const k of [5, 39, 45]) assert.deepEqual(boundedScan(data, q8, q, k, all), exactSearch(data, q, k, all));
    }
  });

  it("is used by the planner once a segment is prepared, with identical results", () => {
    const data: DenseData = { ...DATA, vectors: VECTORS.slice() }; // own vectors: preparing is per array
    assert.equal(isDensePrepared(data), false);
    const allow = INDEX.evaluate({ must_not: { key: "isArchived", match: { value: true } } });
    assert.ok(allow !== null && allow.count() >= QUANTIZED_SCAN_MIN_ROWS);
    const opts = { k: 10, ef: 16, fullScanThreshold: N };
    const before = denseSearch(data, queryAt(5), allow, opts);
    prepareDense(data);
    prepareDense(data);
    assert.equal(isDensePrepared(data), true);
    assert.deepEqual(planDense(data, allow.count(), opts), { kind: "exact", rows: allow.count() });
    assert.deepEqual(denseSearch(data, queryAt(5), allow, opts), before);
  });
});

describe("planDense", () => {
  // Planning only looks at the row counts, so a full-size segment can be described without vectors.
  const big: DenseData = { ...DATA, count: 204_339 };
  const opts = { k: 10, ef: 64, fullScanThreshold: 5000 };
  it("scans exactly when asked, without a graph, or when the filter leaves few rows", () => {
    assert.deepEqual(planDense(big, null, { ...opts, exact: true }), { kind: "exact", rows: 204_339 });
    assert.deepEqual(planDense({ ...big, graph: null }, null, opts), { kind: "exact", rows: 204_339 });
    assert.deepEqual(planDense(big, 5000, opts), { kind: "exact", rows: 5000 });
    assert.deepEqual(planDense(big, 0, opts), { kind: "empty" });
  });

  it("walks the graph otherwise: 1-hop at or above 20% selectivity, two-hop with a 2.5× beam below", () => {
    assert.deepEqual(planDense(big, null, opts), { kind: "hnsw", ef: 64, selectivity: 1, twoHop: false });
    assert.deepEqual(planDense(big, null, { ...opts, k: 100 }), { kind: "hnsw", ef: 100, selectivity: 1, twoHop: false });
    const half = planDense(big, 102_000, opts);
    assert.ok(half.kind === "hnsw" && half.ef === 64 && !half.twoHop, JSON.stringify(half));
    const fifth = planDense(big, 40_900, opts); // 20%: still the 1-hop walk
    assert.ok(fifth.kind === "hnsw" && fifth.ef === 64 && !fifth.twoHop, JSON.stringify(fifth));
    const twelve = planDense(big, 24_521, opts); // 12%: two-hop, beam 64 × 2.5
    assert.ok(twelve.kind === "hnsw" && twelve.ef === 160 && twelve.twoHop, JSON.stringify(twelve));
    const five = planDense(big, 10_217, opts); // 5%, above the scan threshold: two-hop
    assert.ok(five.kind === "hnsw" && five.twoHop, JSON.stringify(five));
  });

  it("scans instead when the walk would evaluate more vectors than the allowed rows", () => {
    // 25% of a small segment: the 1-hop walk would cost 20 × 64 / 0.25 ≈ 5.1k row-equivalents for 1k rows.
    const small: DenseData = { ...big, count: 4_000 };
    assert.deepEqual(planDense(small, 1_000, { ...opts, fullScanThreshold: 0 }), { kind: "exact", rows: 1_000 });
    assert.deepEqual(planDense(big, 4_000, opts), { kind: "exact", rows: 4_000 }, "at or below fullScanThreshold");
  });

  it("filteredEf keeps the base beam above 10% selectivity, grows below it, and is capped", () => {
    assert.equal(filteredEf(64, 1), 64);
    assert.equal(filteredEf(64, 0.1), 64);
    assert.equal(filteredEf(64, 0.05), 128);
    assert.equal(filteredEf(64, 0.0001), MAX_FILTERED_EF);
    assert.equal(filteredEf(2000, 0.01), 2000, "never below the requested beam");
  });
});

describe("denseSearch property: planner results vs brute force", () => {
  it("is exact on exact paths and keeps recall@10 ≥ 0.99 on filtered HNSW", () => {
    const rnd = seededRandom(8);
    let hnswRecall = 0;
    let hnswQueries = 0;
    let exactQueries = 0;
    let twoHopRecall = 0;
    let twoHopQueries = 0;
    for (let t = 0; t < 120; t++) {
      const filter = randomFilter(rnd, IDS, 2);
      const allow = INDEX.evaluate(filter);
      const q = queryAt(t % 200);
      const want = reference(q, 10, (r) => referenceMatches(filter, PAYLOADS[r]!, IDS[r]!));
      // Forced exact scan: identical ranking.
      assertSameRanking(denseSearch(DATA, q, allow, { k: 10, ef: 32, fullScanThreshold: 0, exact: true }), want, JSON.stringify(filter));
      // The planner: exact below the threshold or when cheaper, HNSW otherwise. A small ef keeps the
      // recall assertion sensitive (this graph reaches 1.0 at ef = 32).
      const plan = planDense(DATA, allow === null ? null : allow.count(), { k: 10, ef: 16, fullScanThreshold: 300 });
      const got = denseSearch(DATA, q, allow, { k: 10, ef: 16, fullScanThreshold: 300 });
      for (const h of got) assert.ok(allow === null || allow.has(h.idx), "results respect the filter");
      if (plan.kind === "exact") {
        exactQueries++;
        assertSameRanking(got, want, JSON.stringify(filter));
      } else if (plan.kind === "hnsw") {
        hnswQueries++;
        hnswRecall += recallOf(got, want);
      }
      // The filtered graph walk on its own, for every filter however selective, with the planner's beam.
      const ef = filteredEf(16, allow === null ? 1 : allow.count() / N);
      const walked = GRAPH.search(VECTORS, DIMS, q, 10, ef, allow);
      for (const h of walked) assert.ok(allow === null || allow.has(h.idx));
      hnswQueries++;
      hnswRecall += recallOf(walked, want);
      // And the two-hop walk (scores allowed rows only) with its planner beam.
      if (allow !== null && allow.count() >= 0.05 * N) {
        const two = GRAPH.search(VECTORS, DIMS, q, 10, Math.ceil(16 * TWO_HOP_EF_FACTOR), allow, true);
        for (const h of two) assert.ok(allow.has(h.idx));
        twoHopQueries++;
        twoHopRecall += recallOf(two, want);
      }
    }
    assert.ok(exactQueries >= 10 && hnswQueries >= 130, `coverage: ${exactQueries} exact, ${hnswQueries} hnsw`);
    assert.ok(hnswRecall / hnswQueries >= 0.99, `average recall@10 ${hnswRecall / hnswQueries}`);
    assert.ok(twoHopQueries >= 40, `two-hop coverage ${twoHopQueries}`);
    assert.ok(twoHopRecall / twoHopQueries >= 0.99, `two-hop average recall@10 ${twoHopRecall / twoHopQueries}`);
  });

  it("works on a segment without a graph", () => {
    const noGraph: DenseData = { ...DATA, graph: null };
    const allow = INDEX.evaluate({ must: { key: "stars", range: { gte: 100 } } });
    assert.ok(allow !== null);
    assertSameRanking(
      denseSearch(noGraph, queryAt(1), allow, { k: 5, ef: 16, fullScanThreshold: 0 }),
      reference(queryAt(1), 5, (r) => allow.has(r)),
      "no graph",
    );
  });
});

describe("excluding a query's nearest rows", () => {
  it("still finds the true top 10 of the rest (unfiltered search for k + excluded, then dropped)", () => {
    let recall = 0;
    const queries = 40;
    for (let i = 0; i < queries; i++) {
      const q = queryAt(i);
      const nearest = reference(q, 50, () => true).map((h) => h.idx);
      const allow = Bitset.full(N);
      for (const r of nearest) allow.clear(r);
      const plan = planDense(DATA, allow.count(), { k: 10, ef: 16, fullScanThreshold: 0 });
      assert.equal(plan.kind, "hnsw-postfilter");
      assert.equal(plan.kind === "hnsw-postfilter" && plan.k, 10 + 50);
      const got = new Set(denseSearch(DATA, q, allow, { k: 10, ef: 16, fullScanThreshold: 0 }).map((h) => h.idx));
      const want = reference(q, 10, (r) => allow.has(r));
      recall += want.filter((h) => got.has(h.idx)).length / want.length;
    }
    assert.ok(recall / queries >= 0.99, `recall@10 ${recall / queries}`);
  });
});
