/**
 * The one behavioural contract of a VectorStore, as vitest tests. Every implementation registers it
 * with a factory of fresh, empty stores: the embedded store (src/store/embedded/contract.test.ts), QdrantStore over
 * `store serve` (test/store-serve.test.ts) and QdrantStore over a real Qdrant (test/store-qdrant.test.ts).
 * Expected answers come from brute force and from the independent filter oracle (filter-testkit.ts),
 * never from another store.
 */
import assert from "node:assert/strict";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ErrorCode, ReposearchError } from "../../src/common/errors.js";
import { pointIdFor } from "../../src/common/hash.js";
import { seededRandom } from "../../src/common/random.js";
import { CATEGORIES, type RepoPayload } from "../../src/dataset/record.js";
import { referenceMatches } from "./filter-testkit.js";
import { skipReason } from "./skip.js";
import type { Filter } from "../../src/store/filter.js";
import type { Point, ScoredPoint, VectorStore } from "../../src/store/types.js";

export interface ContractStore {
  readonly store: VectorStore;
  /** Closes the store and removes whatever it created. */
  dispose(): Promise<void>;
}

export interface ContractOptions {
  /**
   * True when readers see staged writes only after commit (embedded, store serve); false for a real
   * Qdrant, where every write is visible as soon as it is acknowledged.
   */
  readonly atomicPublish: boolean;
  /** Skip the whole suite, with this reason (e.g. no server configured). */
  readonly skip?: string | false | undefined;
}

export const CONTRACT_DIMS = 8;
export const CONTRACT_EMBEDDER = "contract:8";
const N = 48;
const DAY_MS = 86_400_000;
const LANGUAGES = ["Rust", "Go", "Python", "TypeScript"];
const TOPICS = ["cli", "web", "ml", "db"];

function unit(v: Float32Array): Float32Array {
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

function randomVector(seed: number): Float32Array {
  const r = seededRandom(seed);
  return unit(new Float32Array(CONTRACT_DIMS).map(() => r() - 0.5));
}

/** Deterministic points covering every filterable field, with nulls and empty arrays. */
export function contractPoint(i: number, version = 1): Point {
  const key = `org${i % 5}/proj-${i}`;
  const language = i % 9 === 0 ? null : LANGUAGES[i % 4]!;
  const topics = i % 3 === 0 ? [] : [TOPICS[i % 4]!, ...(i % 5 === 0 ? ["tooling"] : []), ...(i === 13 ? ["zygomorph"] : [])];
  const payload: RepoPayload = {
    key,
    name: `Org${i % 5}/Proj-${i}`,
    url: `https://github.com/${key}`,
    description: i === 7 ? `a quaternion toolkit for rotations (v${version})` : `project number ${i}, release ${version}`,
    stars: i % 11 === 0 ? null : i * 10,
    forks: i % 4 === 0 ? null : i * 2,
    language,
    topics,
    pushedAt: i % 7 === 0 ? null : new Date(Date.UTC(2020, 0, 1) + i * 30 * DAY_MS).toISOString(),
    isArchived: i % 6 === 0 ? true : i % 6 === 1 ? null : false,
    homepage: null,
    license: i % 2 === 0 ? "MIT" : null,
    createdAt: null,
    readme: i === 21 ? "# Heading\n\nSome **markdown** readme text." : null,
    tree: i % 8 === 0 ? ["src/", "README.md"] : null,
    llmsTxtPaths: i % 8 === 0 ? [] : null,
    // Point 7 is a project merged from an older name, which other repositories describe.
    aliases: i === 7 ? ["Legacy/quaternion-kit"] : [],
    aliasKeys: i === 7 ? ["legacy/quaternion-kit"] : [],
    anchor: i === 7 ? "rotation math" : null,
    mentions: i === 7 ? 3 : 0,
    lastSeen: "2026-01-01",
    languageLc: language?.toLowerCase() ?? null,
    category: i % 5 === 0 ? null : CATEGORIES[i % CATEGORIES.length]!,
    hash: `h${i}-v${version}`,
  };
  return { id: pointIdFor(key), vector: randomVector(1000 * version + i), payload };
}

const ALL = Array.from({ length: N }, (_, i) => contractPoint(i));
const idOf = (i: number) => ALL[i]!.id;
/** Valid UUIDs that name no point. */
const UNKNOWN_ID = "0badc0de-0000-4000-8000-000000000000";

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

function bruteForce(points: readonly Point[], query: Float32Array, filter?: Filter): { id: string; score: number }[] {
  return points
    .filter((p) => !filter || referenceMatches(filter, p.payload as unknown as Record<string, unknown>, p.id))
    .map((p) => ({ id: p.id, score: dot(p.vector, unit(query)) }))
    .sort((a, b) => b.score - a.score);
}

/** Same ranking up to float32 rounding: position i holds a point with the i-th best score. */
function assertRanking(actual: readonly ScoredPoint[], expected: readonly { id: string; score: number }[], k: number, what: string): void {
  const want = expected.slice(0, k);
  assert.equal(actual.length, want.length, `${what}: ${actual.length} results, expected ${want.length}`);
  const scoreOf = new Map(expected.map((e) => [e.id, e.score]));
  actual.forEach((h, i) => {
    const bf = scoreOf.get(h.id);
    assert.ok(bf !== undefined, `${what}: result ${i} (${h.id}) should not match`);
    assert.ok(Math.abs(h.score - bf) < 1e-4, `${what}: result ${i} score ${h.score}, brute force ${bf}`);
    assert.ok(Math.abs(bf - want[i]!.score) < 1e-5, `${what}: result ${i} is ${h.id} (score ${bf}), expected ${want[i]!.id} (score ${want[i]!.score})`);
    const original = ALL.find((p) => p.id === h.id);
    if (original) assert.deepEqual(h.payload, original.payload, `${what}: result ${i} payload`);
  });
}

async function publish(store: VectorStore, upserts: readonly Point[], deletes: readonly string[] = [], writerId = "main") {
  const w = await store.openWriter({ writerId, dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
  if (upserts.length) await w.upsert(upserts);
  if (deletes.length) await w.delete(deletes);
  return w.commit();
}

const labelNumber = (v: string | null) => Number(/^v(\d{6,})$/.exec(v ?? "")?.[1] ?? NaN);

/** Filters of every condition type the core builds, with names for messages. */
export const CONTRACT_FILTERS: readonly [string, Filter][] = [
  ["stars range", { must: [{ key: "stars", range: { gte: 100, lt: 300 } }] }],
  ["forks range", { must: [{ key: "forks", range: { gt: 20 } }] }],
  ["languageLc match", { must: [{ key: "languageLc", match: { value: "rust" } }] }],
  ["topics any", { must: [{ key: "topics", match: { any: ["web", "db"] } }] }],
  ["category any or null", { should: [{ key: "category", match: { any: ["library", "tool"] } }, { is_null: { key: "category" } }] }],
  ["isArchived must_not", { must_not: [{ key: "isArchived", match: { value: true } }] }],
  ["pushedAt datetime_range", { must: [{ key: "pushedAt", datetime_range: { gte: "2021-01-01T00:00:00Z", lt: "2022-06-01T00:00:00Z" } }] }],
  ["key except", { must: [{ key: "key", match: { except: ["org1/proj-1", "org2/proj-2", "org3/proj-3"] } }] }],
  ["key any", { must: [{ key: "key", match: { any: ["org3/proj-3", "org4/proj-4", "org0/proj-40", "nobody/none"] } }] }],
  ["has_id", { must: [{ has_id: [idOf(5), idOf(6), idOf(30)] }] }],
  ["aliasKeys any (excludeRepos by an old name)", { must_not: [{ key: "aliasKeys", match: { any: ["legacy/quaternion-kit", "nobody/none"] } }] }],
  [
    "nested combination",
    {
      must: [{ key: "stars", range: { gte: 50 } }, { should: [{ key: "languageLc", match: { any: ["go", "python"] } }, { is_empty: { key: "topics" } }] }],
      must_not: [
        { key: "isArchived", match: { value: true } },
        { key: "forks", range: { lt: 30 } },
      ],
    },
  ],
];

export function storeContract(name: string, fresh: () => Promise<ContractStore>, opts: ContractOptions): void {
  describe.skipIf(skipReason(opts.skip, `VectorStore contract: ${name}`))(`VectorStore contract: ${name}`, () => {
    // Read-only tests share one populated store; tests that write get their own.
    let shared: ContractStore | null = null;
    let firstVersion: string | null = null;
    const disposers: ContractStore[] = [];
    const own = async (): Promise<ContractStore> => {
      const s = await fresh();
      disposers.push(s);
      return s;
    };

    beforeAll(async () => {
      shared = await own();
      firstVersion = (await publish(shared.store, ALL)).version;
    });
    afterAll(async () => {
      for (const s of disposers) await s.dispose().catch(() => undefined);
    });
    const store = () => shared!.store;

    it("an empty store reports nothing published and answers empty results", async () => {
      const { store: s } = await own();
      assert.deepEqual(await s.info(), { version: null, count: 0, dims: 0, embedderId: null, publishedAt: null });
      assert.equal(await s.count(), 0);
      assert.deepEqual(await s.denseSearch({ vector: randomVector(1), limit: 5 }), []);
      assert.deepEqual(await s.lexicalSearch({ text: "quaternion", limit: 5 }), []);
      assert.deepEqual(await s.retrieve([idOf(1)]), [null]);
    });

    it("commit publishes a version: info and count", async () => {
      assert.match(String(firstVersion), /^v\d{6,}$/);
      const info = await store().info();
      assert.equal(info.version, firstVersion);
      assert.equal(info.count, N);
      assert.equal(info.dims, CONTRACT_DIMS);
      assert.equal(info.embedderId, CONTRACT_EMBEDDER);
      assert.ok(info.publishedAt !== null && !Number.isNaN(Date.parse(info.publishedAt)), `publishedAt ${info.publishedAt}`);
      assert.equal(await store().count(), N);
      assert.equal(await store().count({}), N);
    });

    it("dense search ranks like brute force (exact, and the index with a wide beam)", async () => {
      for (let q = 0; q < 4; q++) {
        const query = randomVector(500 + q);
        const expected = bruteForce(ALL, query);
        assertRanking(await store().denseSearch({ vector: query, limit: 10, exact: true }), expected, 10, `query ${q} exact`);
        assertRanking(await store().denseSearch({ vector: query, limit: 10, ef: 128 }), expected, 10, `query ${q} hnsw`);
      }
      const all = await store().denseSearch({ vector: randomVector(600), limit: N + 10, exact: true });
      assertRanking(all, bruteForce(ALL, randomVector(600)), N + 10, "limit above count");
      const top = await store().denseSearch({ vector: ALL[17]!.vector, limit: 1 });
      assert.equal(top[0]?.id, idOf(17));
      assert.ok(Math.abs(top[0]!.score - 1) < 1e-4, `self-similarity ${top[0]?.score}`);
    });

    it("every filter type selects what the reference evaluator selects", async () => {
      const query = randomVector(700);
      for (const [what, filter] of CONTRACT_FILTERS) {
        const expected = bruteForce(ALL, query, filter);
        assert.ok(expected.length > 0 && expected.length < N, `${what}: the fixture should select some points (${expected.length})`);
        assert.equal(await store().count(filter), expected.length, `${what}: count`);
        assertRanking(await store().denseSearch({ vector: query, filter, limit: N, exact: true }), expected, N, `${what}: dense exact`);
        assertRanking(await store().denseSearch({ vector: query, filter, limit: 3, ef: 128 }), expected, 3, `${what}: dense top 3`);
        const lexical = await store().lexicalSearch({ text: "project number release quaternion", filter, limit: N });
        const allowed = new Set(expected.map((e) => e.id));
        for (const h of lexical) assert.ok(allowed.has(h.id), `${what}: lexical hit ${h.payload.key} should be filtered out`);
      }
    });

    it("rejects a malformed filter with a validation error", async () => {
      const bad = { must: [{ key: "stars", range: { gte: "many" } }] } as unknown as Filter;
      await assert.rejects(store().count(bad), (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.ValidationError);
      await assert.rejects(
        store().denseSearch({ vector: randomVector(1), filter: bad, limit: 3 }),
        (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.ValidationError,
      );
    });

    it("lexical search finds terms of the description and the topics, best first, and honours filters", async () => {
      const hits = await store().lexicalSearch({ text: "Quaternion rotations", limit: 5 });
      assert.equal(hits[0]?.id, idOf(7));
      assert.ok(hits[0]!.score > 0);
      assert.deepEqual(hits[0]!.payload, ALL[7]!.payload);
      const topic = await store().lexicalSearch({ text: "zygomorph", limit: 5 });
      assert.deepEqual(
        topic.map((h) => h.id),
        [idOf(13)],
      );
      const several = await store().lexicalSearch({ text: "project release", limit: 10 });
      assert.equal(several.length, 10);
      for (let i = 1; i < several.length; i++) assert.ok(several[i - 1]!.score >= several[i]!.score, "scores are non-increasing");
      const filtered = await store().lexicalSearch({ text: "quaternion", filter: { must_not: [{ has_id: [idOf(7)] }] }, limit: 5 });
      assert.ok(!filtered.some((h) => h.id === idOf(7)));
      assert.deepEqual(await store().lexicalSearch({ text: "   ", limit: 5 }), []);
      assert.deepEqual(await store().lexicalSearch({ text: "quaternion", limit: 0 }), []);
      assert.deepEqual(await store().denseSearch({ vector: randomVector(2), limit: 0 }), []);
    });

    it("an alias's owner and the anchor text are searchable", async () => {
      assert.equal((await store().lexicalSearch({ text: "legacy", limit: 3 }))[0]?.id, idOf(7));
      assert.equal((await store().lexicalSearch({ text: "rotation math", limit: 3 }))[0]?.id, idOf(7));
    });

    it("explain: per-field BM25 where the terms are, coverage, the terms found, and exact cosines, for any ids", async () => {
      const query = randomVector(800);
      const ids = [idOf(7), idOf(13), UNKNOWN_ID, idOf(21)];
      for (const payloads of [undefined, ids.map((id) => ALL.find((p) => p.id === id)?.payload ?? null)]) {
        const ex = await store().explain({
          text: "quaternion legacy zygomorph markdown",
          vector: query,
          ids,
          ...(payloads && payloads.every((p) => p !== null) ? { payloads: payloads as RepoPayload[] } : {}),
        });
        const F = 6; // owner, repo, description, topics, readme, anchor
        const positive = (row: number) => Array.from(ex.fields.subarray(row * F, (row + 1) * F), (x) => (x > 0 ? 1 : 0));
        assert.deepEqual(positive(0), [1, 1, 1, 0, 0, 0], "point 7: the alias's owner and repository part, and the description");
        assert.deepEqual(positive(1), [0, 0, 0, 1, 0, 0], "point 13: a topic");
        assert.deepEqual(positive(2), [0, 0, 0, 0, 0, 0], "an unknown id scores nothing");
        assert.deepEqual(positive(3), [0, 0, 0, 0, 1, 0], "point 21: its README");
        assert.deepEqual(
          ex.terms.map((t) => t.term),
          ["quaternion", "legaci", "zygomorph", "markdown"],
        );
        // Each of those terms is in one point of N: the same idf everywhere, so coverage is a share of terms.
        for (const t of ex.terms) assert.ok(Math.abs(t.idf - Math.log(1 + (N - 1 + 0.5) / 1.5)) < 1e-9, `${t.term} idf ${t.idf}`);
        assert.deepEqual(
          Array.from(ex.coverage, (c) => Math.round(c * 100) / 100),
          [0.5, 0.25, 0, 0.25],
        );
        // Which term each id holds (ids × terms).
        assert.deepEqual(Array.from(ex.found), [1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        const cos = (i: number) => dot(ALL[i]!.vector, query);
        assert.ok(ex.dense !== null);
        for (const [row, i] of [
          [0, 7],
          [1, 13],
          [3, 21],
        ] as const)
          assert.ok(Math.abs(ex.dense[row]! - cos(i)) < 1e-4, `cosine of point ${i}: ${ex.dense[row]} vs ${cos(i)}`);
        assert.equal(ex.dense[2], 0);
      }
      const lexicalOnly = await store().explain({ text: "quaternion", vector: null, ids: [idOf(7)] });
      assert.equal(lexicalOnly.dense, null);
    });

    it("retrieve returns full payloads in request order, null for unknown ids", async () => {
      const got = await store().retrieve([idOf(3), UNKNOWN_ID, idOf(21), idOf(3), "not-a-uuid"]);
      assert.deepEqual(got, [ALL[3]!.payload, null, ALL[21]!.payload, ALL[3]!.payload, null]);
      assert.deepEqual(await store().retrieve([]), []);
    });

    it("scroll: points by filter (a lookup by name or former name) with stored vectors, and the most-starred under a filter", async () => {
      const byName = (k: string): Filter => ({
        should: [
          { key: "key", match: { value: k } },
          { key: "aliasKeys", match: { value: k } },
        ],
      });
      const [seven] = await store().scroll({ filter: byName("legacy/quaternion-kit"), limit: 2, withVectors: true });
      assert.equal(seven?.id, idOf(7));
      assert.deepEqual(seven.payload, ALL[7]!.payload);
      assert.ok(seven.vector !== null && dot(seven.vector, ALL[7]!.vector) > 1 - 1e-4, "the stored vector");
      assert.equal((await store().scroll({ filter: byName("org3/proj-13"), limit: 2 }))[0]?.vector, null, "no vector unless asked");
      assert.deepEqual(await store().scroll({ filter: byName("nobody/none"), limit: 2 }), []);

      const filter: Filter = { must: [{ key: "languageLc", match: { value: "go" } }] };
      const expected = ALL.filter((p) => p.payload.languageLc === "go" && p.payload.stars !== null).sort((a, b) => b.payload.stars! - a.payload.stars!);
      const top = await store().scroll({ filter, limit: 4, orderBy: "stars" });
      assert.deepEqual(
        top.map((p) => p.payload.stars),
        expected.slice(0, 4).map((p) => p.payload.stars),
      );
      const all = await store().scroll({ limit: N, orderBy: "stars" });
      assert.equal(all.length, ALL.filter((p) => p.payload.stars !== null).length, "rows without stars are not in an ordered scroll");
      const some = await store().scroll({ filter, limit: 3 });
      assert.equal(some.length, 3);
      assert.ok(some.every((p) => p.payload.languageLc === "go"));
    });

    it("hashes() shows the published points plus the writer's own staged work", async () => {
      const { store: s } = await own();
      await publish(s, ALL.slice(0, 20));
      const w = await s.openWriter({ writerId: "main", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      const before = await w.hashes();
      assert.deepEqual(before, new Map(ALL.slice(0, 20).map((p) => [p.id, p.payload.hash])));
      await w.upsert([contractPoint(2, 2), contractPoint(25)]);
      await w.delete([idOf(4)]);
      const staged = await w.hashes();
      const want = new Map(before);
      want.set(idOf(2), "h2-v2");
      want.set(idOf(25), "h25-v1");
      want.delete(idOf(4));
      assert.deepEqual(staged, want);
      await w.commit();
      const again = await (await s.openWriter({ writerId: "other", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER })).hashes();
      assert.deepEqual(again, want);
    });

    it("staged writes reach readers at commit (or at once, on a store without atomic publish)", async () => {
      const { store: s } = await own();
      await publish(s, ALL.slice(0, 10));
      const w = await s.openWriter({ writerId: "main", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      await w.upsert(ALL.slice(10, 15));
      assert.equal(await s.count(), opts.atomicPublish ? 10 : 15);
      const r = await w.commit();
      assert.equal(r.published, true);
      assert.equal(await s.count(), 15);
      const nothing = await (await s.openWriter({ writerId: "main", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER })).commit();
      assert.equal(nothing.published, false);
      assert.equal(nothing.version, r.version);
      assert.equal((await s.info()).version, r.version);
    });

    it("delete removes points from every read", async () => {
      const { store: s } = await own();
      const v1 = (await publish(s, ALL)).version;
      const gone = [idOf(0), idOf(7), idOf(13), idOf(40), UNKNOWN_ID];
      const r = await publish(s, [], gone);
      assert.equal(r.published, true);
      assert.ok(labelNumber(r.version) > labelNumber(v1), `version ${r.version} after ${v1}`);
      assert.equal(await s.count(), N - 4);
      assert.equal((await s.info()).count, N - 4);
      assert.deepEqual(await s.retrieve(gone.slice(0, 2)), [null, null]);
      assert.equal(await s.count({ must: [{ has_id: gone }] }), 0);
      const rest = ALL.filter((p) => !gone.includes(p.id));
      assertRanking(await s.denseSearch({ vector: randomVector(800), limit: N, exact: true }), bruteForce(rest, randomVector(800)), N, "after delete");
      assert.deepEqual(await s.lexicalSearch({ text: "quaternion zygomorph", limit: 5 }), []);
    });

    it("re-upserting changed points replaces payload, vector and lexical terms", async () => {
      const { store: s } = await own();
      const v1 = (await publish(s, ALL)).version;
      const changed = [contractPoint(7, 2), contractPoint(8, 2), contractPoint(9, 2)];
      const r = await publish(s, changed);
      assert.equal(r.published, true);
      assert.ok(labelNumber(r.version) > labelNumber(v1));
      assert.equal(await s.count(), N);
      assert.deepEqual(
        await s.retrieve(changed.map((p) => p.id)),
        changed.map((p) => p.payload),
      );
      const top = await s.denseSearch({ vector: changed[1]!.vector, limit: 1, exact: true });
      assert.equal(top[0]?.id, changed[1]!.id);
      assert.ok(Math.abs(top[0]!.score - 1) < 1e-4);
      const lex = await s.lexicalSearch({ text: "quaternion", limit: 3 });
      assert.equal(lex[0]?.id, idOf(7));
      assert.equal(lex[0]?.payload.hash, "h7-v2");
      const w = await s.openWriter({ writerId: "main", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      const hashes = await w.hashes();
      assert.equal(hashes.get(idOf(8)), "h8-v2");
      assert.equal(hashes.get(idOf(10)), "h10-v1");
    });

    it("two writers (shards) publish into one store", async () => {
      const { store: s } = await own();
      const even = ALL.filter((_, i) => i % 2 === 0);
      const odd = ALL.filter((_, i) => i % 2 === 1);
      const w0 = await s.openWriter({ writerId: "shard-0-of-2", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      const w1 = await s.openWriter({ writerId: "shard-1-of-2", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      await w0.upsert(even);
      await w1.upsert(odd);
      await w0.commit();
      await w1.commit();
      assert.equal(await s.count(), N);
      assert.deepEqual(await s.retrieve([idOf(1), idOf(2)]), [ALL[1]!.payload, ALL[2]!.payload]);
    });
  });
}
