import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { pointIdFor } from "../../common/hash.js";
import type { RepoPayload } from "../../dataset/record.js";
import { Bitset } from "./bitset.js";
import {
  boundedScan,
  coverOf,
  denseSearch,
  exactSearch,
  filteredEf,
  FILTERED_EF_FACTOR,
  TWO_HOP_EF_FACTOR,
  isDensePrepared,
  MAX_FILTERED_EF,
  planDense,
  prepareDense,
  QUANTIZED_SCAN_MIN_ROWS,
  SIMD_SCAN_COST,
  TWO_HOP_WALK_COST,
  usesSimdScans,
  type DenseData,
} from "./dense.js";
import { gatherInt8Rows, quantizeInt8Bounded } from "./engine-vec.js";
import { clusteredVectors, seededRandom } from "../../../test/support/engine-synthetic.js";
import { randomFilter, randomPayloads, referenceMatches } from "../../../test/support/filter-testkit.js";
import { HnswGraph } from "./hnsw.js";
import { PayloadIndex } from "./payload-index.js";
import { buildSubgraphs, deserializeSubgraphs, gatherRows, materializeSubgraphs, serializeSubgraphs, SUBGRAPH_FIELDS } from "./subgraphs.js";
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
      assertSameRanking(
        exactSearch(DATA, queryAt(i), 10, null),
        reference(queryAt(i), 10, () => true),
        `q${i}`,
      );
      assertSameRanking(
        exactSearch(DATA, queryAt(i), 10, allow),
        reference(queryAt(i), 10, (r) => allow.has(r)),
        `q${i} filtered`,
      );
    }
  });

  it("returns fewer than k when fewer rows are allowed, and nothing for k = 0", () => {
    const allow = Bitset.fromIndices(N, [5, 77, 2999]);
    assert.deepEqual(
      exactSearch(DATA, queryAt(0), 10, allow)
        .map((h) => h.idx)
        .sort((a, b) => a - b),
      [5, 77, 2999],
    );
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

  it("gathers a subset's codes and bounds equal to quantising the gathered subset", () => {
    const q8 = quantizeInt8Bounded(VECTORS, DIMS, N);
    const rows = Int32Array.from({ length: N }, (_, i) => i).filter((r) => r % 7 === 3 || r === N - 1);
    const direct = quantizeInt8Bounded(gatherRows(VECTORS, DIMS, rows), DIMS, rows.length);
    assert.deepEqual(gatherInt8Rows(q8, DIMS, rows), direct);
    assert.throws(() => gatherInt8Rows(q8, DIMS, rows, new Int8Array(DIMS)), /destination has/);
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

  it("answers the same in the SIMD kernel and in the JavaScript loop", () => {
    const simd: DenseData = { ...DATA, vectors: VECTORS.slice() };
    const js: DenseData = { ...DATA, vectors: VECTORS.slice() };
    prepareDense(simd);
    prepareDense(js, { simd: false });
    assert.equal(usesSimdScans(simd), true, "this runtime has WebAssembly SIMD");
    assert.equal(usesSimdScans(js), false);
    const rnd = seededRandom(44);
    for (let t = 0; t < 40; t++) {
      const allow = new Bitset(N);
      for (let r = 0; r < N; r++) if (rnd() < 0.8) allow.set(r);
      const q = queryAt(t);
      const opts = { k: [1, 10, 50][t % 3]!, ef: 16, fullScanThreshold: 0, exact: true };
      const want = exactSearch(DATA, q, opts.k, allow);
      assert.deepEqual(denseSearch(simd, q, allow, opts), want, `simd, query ${t}`);
      assert.deepEqual(denseSearch(js, q, allow, opts), want, `js, query ${t}`);
    }
  });
});

describe("walks scored by the SIMD kernel", () => {
  it("keep the recall of the JavaScript walks, unfiltered, filtered (1-hop) and two-hop", () => {
    const simd: DenseData = { ...DATA, vectors: VECTORS.slice() };
    const js: DenseData = { ...DATA, vectors: VECTORS.slice() };
    prepareDense(simd);
    prepareDense(js, { simd: false });
    assert.equal(usesSimdScans(simd), true);
    const rnd = seededRandom(61);
    const tenth = new Bitset(N);
    for (let r = 0; r < N; r++) if (rnd() < 0.1) tenth.set(r);
    const most = new Bitset(N);
    for (let r = 0; r < N; r++) if (rnd() < 0.9) most.set(r);
    const filters = [
      null,
      most, // 90%: 1-hop (with a narrow beam, as a SIMD scan of this small segment would be cheaper than a wide one)
      tenth, // 10%: two-hop
    ];
    for (const allow of filters) {
      const opts = { k: 10, ef: allow === most ? 10 : 32, fullScanThreshold: 0 };
      const plan = planDense(simd, allow === null ? null : allow.count(), opts);
      assert.ok(plan.kind === "hnsw" && plan.twoHop === (allow === tenth), JSON.stringify(plan));
      let recallSimd = 0;
      let recallJs = 0;
      const queries = 60;
      for (let i = 0; i < queries; i++) {
        const q = queryAt(i);
        const want = new Set(reference(q, 10, (r) => allow === null || allow.has(r)).map((h) => h.idx));
        recallSimd += denseSearch(simd, q, allow, opts).filter((h) => want.has(h.idx)).length / want.size;
        recallJs += denseSearch(js, q, allow, opts).filter((h) => want.has(h.idx)).length / want.size;
      }
      const label = allow === null ? "unfiltered" : `${allow.count()} rows`;
      assert.ok(recallSimd / queries >= 0.9, `${label}: SIMD recall@10 ${recallSimd / queries}`);
      assert.ok(recallSimd >= recallJs - 0.01 * queries, `${label}: SIMD ${recallSimd / queries} vs JS ${recallJs / queries}`);
    }
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

  it("walks the graph otherwise: 1-hop at or above 20% selectivity, two-hop with a 2× beam below; below 50% from a reduced base", () => {
    assert.deepEqual(planDense(big, null, opts), { kind: "hnsw", ef: 64, selectivity: 1, twoHop: false });
    assert.deepEqual(planDense(big, null, { ...opts, k: 100 }), { kind: "hnsw", ef: 100, selectivity: 1, twoHop: false });
    const most = planDense(big, 150_000, opts); // 73%: the whole beam
    assert.ok(most.kind === "hnsw" && most.ef === 64 && !most.twoHop, JSON.stringify(most));
    const half = planDense(big, 100_000, opts); // 49%: FILTERED_EF_FACTOR × 64
    assert.ok(half.kind === "hnsw" && half.ef === Math.round(64 * FILTERED_EF_FACTOR) && !half.twoHop, JSON.stringify(half));
    const fifth = planDense(big, 40_900, opts); // 20%: still the 1-hop walk
    const reduced = Math.round(64 * FILTERED_EF_FACTOR);
    assert.ok(fifth.kind === "hnsw" && fifth.ef === reduced && !fifth.twoHop, JSON.stringify(fifth));
    const twelve = planDense(big, 24_521, opts); // 12%: two-hop, beam reduced × 2.5
    assert.ok(twelve.kind === "hnsw" && twelve.ef === Math.ceil(reduced * TWO_HOP_EF_FACTOR) && twelve.twoHop, JSON.stringify(twelve));
    const five = planDense(big, 10_217, opts); // 5%, above the scan threshold: two-hop
    assert.ok(five.kind === "hnsw" && five.twoHop, JSON.stringify(five));
  });

  it("scans instead when the walk would evaluate more vectors than the allowed rows", () => {
    // 25% of a small segment: the 1-hop walk would cost 20 × 64 / 0.25 ≈ 5.1k row-equivalents for 1k rows.
    const small: DenseData = { ...big, count: 4_000 };
    assert.deepEqual(planDense(small, 1_000, { ...opts, fullScanThreshold: 0 }), { kind: "exact", rows: 1_000 });
    assert.deepEqual(planDense(big, 4_000, opts), { kind: "exact", rows: 4_000 }, "at or below fullScanThreshold");
  });

  it("with the SIMD kernel, scans exactly where a two-hop walk would cost more (TWO_HOP_WALK_COST × ef vs SIMD_SCAN_COST × rows)", () => {
    // Planning reads the prepared state by vector array and the size from count: prepared small arrays stand in for the full index.
    const simd: DenseData = { ...DATA, vectors: VECTORS.slice() };
    const js: DenseData = { ...DATA, vectors: VECTORS.slice() };
    prepareDense(simd);
    prepareDense(js, { simd: false });
    const bigSimd: DenseData = { ...simd, count: 204_339 };
    const bigJs: DenseData = { ...js, count: 204_339 };
    // 12%: the two-hop beam is 64 (32 × 2), 150 × 64 = 9600 ≥ 0.2 × 24,521.
    assert.ok(TWO_HOP_WALK_COST * 64 >= SIMD_SCAN_COST * 24_521);
    assert.deepEqual(planDense(bigSimd, 24_521, opts), { kind: "exact", rows: 24_521 });
    const walked = planDense(bigJs, 24_521, opts);
    assert.ok(walked.kind === "hnsw" && walked.twoHop, `without SIMD the two-hop walk stays: ${JSON.stringify(walked)}`);
    // A narrower beam (32, from ef 32) makes the walk the cheaper one: 4800 < 4904.
    const narrow = planDense(bigSimd, 24_521, { ...opts, ef: 32 });
    assert.ok(narrow.kind === "hnsw" && narrow.twoHop && narrow.ef === 32, JSON.stringify(narrow));
    // 1-hop range (30%): the walk's 20 × 32 / 0.3 ≈ 2.1k rows beats scanning 61k rows at 0.2.
    const wide = planDense(bigSimd, 61_302, opts);
    assert.ok(wide.kind === "hnsw" && !wide.twoHop, JSON.stringify(wide));
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

describe("payload subgraphs (per-value graphs of category and language)", () => {
  // Categories correlated with the embedding, as the classifier's are: each row gets the category of
  // its nearest of eight random directions. A query near one category's region, filtered to another,
  // is the case a filtered walk of the main graph handles worst.
  const rnd = seededRandom(31);
  const centroids = Array.from({ length: 8 }, () => Float32Array.from({ length: DIMS }, () => rnd() - 0.5));
  const cats = ["library", "tool", "application", "framework", "plugin", "data", "frontend", "agent"];
  const payloads = PAYLOADS.map((p, r) => {
    let best = 0;
    let bestS = -Infinity;
    centroids.forEach((c, i) => {
      let s = 0;
      for (let j = 0; j < DIMS; j++) s += c[j]! * VECTORS[r * DIMS + j]!;
      if (s > bestS) [best, bestS] = [i, s];
    });
    return { ...p, category: cats[best]! };
  });
  const index = PayloadIndex.build(IDS, payloads as unknown as RepoPayload[]);
  const subs = buildSubgraphs(
    payloads as unknown as RepoPayload[],
    VECTORS,
    DIMS,
    { m: 12, efConstruction: 80, seed: 3 },
    { fields: SUBGRAPH_FIELDS, minRows: 100 },
  );
  const data: DenseData = { ...DATA, subgraphs: materializeSubgraphs(subs, VECTORS, DIMS, N) };
  const opts = { k: 10, ef: 16, fullScanThreshold: 100 };

  it("copies the subgraphs' int8 codes from a prepared segment, with the same answers", () => {
    const parent: DenseData = { ...DATA, vectors: VECTORS.slice() };
    prepareDense(parent);
    const copied: DenseData = { ...parent, subgraphs: materializeSubgraphs(subs, parent.vectors, DIMS, N, parent) };
    for (const f of copied.subgraphs!) for (const s of f.subs) assert.ok(isDensePrepared(s.data));
    cats.forEach((c, i) => {
      const allow = index.evaluate({ must: [{ key: "category", match: { value: c } }] });
      assert.ok(allow !== null);
      const q = queryAt(i);
      assert.deepEqual(denseSearch(copied, q, allow, opts), denseSearch(data, q, allow, opts));
    });
  });

  it("builds one graph per frequent value and round-trips through serialisation", () => {
    assert.ok(subs.some((s) => s.field === "category") && subs.some((s) => s.field === "languageLc"));
    for (const s of subs) assert.ok(s.rows.length >= 100 && s.graph.count === s.rows.length);
    const back = deserializeSubgraphs(serializeSubgraphs(subs), N, DIMS);
    assert.deepEqual(
      back.map((s) => [s.field, s.value, Array.from(s.rows)]),
      subs.map((s) => [s.field, s.value, Array.from(s.rows)]),
    );
    assert.deepEqual(back[0]!.graph.serialize(), subs[0]!.graph.serialize());
    const bytes = serializeSubgraphs(subs);
    assert.throws(() => deserializeSubgraphs(bytes.subarray(0, bytes.length - 8), N, DIMS), /subgraphs: /);
    assert.throws(() => deserializeSubgraphs(bytes, 10, DIMS), /rows out of range/);
  });

  it("answers category and language filters from the value graphs, with recall@10 ≥ 0.99 where the main walk falls short", () => {
    let coverRecall = 0;
    let mainRecall = 0;
    let covered = 0;
    const filters: unknown[] = [];
    for (const a of cats) for (const b of cats) if (a < b) filters.push({ must: [{ key: "category", match: { any: [a, b] } }] });
    for (const c of cats) filters.push({ must: [{ key: "category", match: { value: c } }] });
    for (const [i, f] of filters.entries()) {
      const allow = index.evaluate(f as Parameters<typeof index.evaluate>[0]);
      assert.ok(allow !== null);
      const plan = planDense(data, allow.count(), opts);
      if (plan.kind !== "hnsw") continue;
      assert.ok(coverOf(data, allow) !== null, `${JSON.stringify(f)} is covered by the category graphs`);
      for (let qi = 0; qi < 8; qi++) {
        const q = queryAt((i * 8 + qi) % 200);
        const want = reference(q, 10, (r) => allow.has(r));
        const got = denseSearch(data, q, allow, opts);
        for (const h of got) assert.ok(allow.has(h.idx), "results respect the filter");
        coverRecall += recallOf(got, want);
        mainRecall += recallOf(denseSearch(DATA, q, allow, opts), want);
        covered++;
      }
    }
    assert.ok(covered >= 80, `covered queries ${covered}`);
    assert.ok(coverRecall / covered >= 0.99, `recall@10 from subgraphs ${coverRecall / covered} (main graph ${mainRecall / covered})`);
  });

  it("covers only filters whose rows lie within one field's graphs; everything else walks the main graph, same results as without subgraphs", () => {
    const stars = index.evaluate({ must: [{ key: "stars", range: { gte: 10 } }] });
    assert.ok(stars !== null && coverOf(data, stars) === null, "a stars range spans every category and language");
    // Nearly all rows of one category plus a few stragglers: the stragglers are scanned exactly.
    const some = index.evaluate({
      should: [
        { key: "category", match: { value: "library" } },
        { key: "key", match: { any: PAYLOADS.slice(0, 5).map((p) => String(p.key)) } },
      ],
    });
    assert.ok(some !== null);
    const cover = coverOf(data, some);
    if (cover !== null) {
      const q = queryAt(3);
      const got = denseSearch(data, q, some, { ...opts, fullScanThreshold: 0 });
      for (const h of got) assert.ok(some.has(h.idx));
      assert.ok(
        recallOf(
          got,
          reference(q, 10, (r) => some.has(r)),
        ) >= 0.9,
      );
    }
    const rnd2 = seededRandom(44);
    for (let t = 0; t < 60; t++) {
      const filter = randomFilter(rnd2, IDS, 2);
      const allow = index.evaluate(filter);
      if (allow === null || coverOf(data, allow) !== null) continue;
      const q = queryAt(t % 200);
      assert.deepEqual(denseSearch(data, q, allow, opts), denseSearch(DATA, q, allow, opts), JSON.stringify(filter));
    }
  });
});
