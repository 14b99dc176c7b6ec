import { seededRandom } from "../../common/random.js";
import assert from "node:assert/strict";
import { mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ReposearchError } from "../../common/errors.js";
import { pointIdFor } from "../../common/hash.js";
import { Logger, setLogSink, type LogSink } from "../../common/logger.js";
import { loadConfig } from "../../config/config.js";
import { predecessorOf } from "../../dataset/payload-lineage.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Point } from "../types.js";
import { IndexFormatError } from "./segment.js";
import { EmbeddedStore, embeddedStoreFromConfig, type EmbeddedStoreOptions } from "./store.js";

const DIMS = 16;
const EMB = "test:16";

const rng = seededRandom;

function point(i: number): Point {
  const r = rng(i + 1);
  const v = new Float32Array(DIMS).map(() => r() - 0.5);
  const norm = Math.hypot(...v);
  const key = `owner/repo-${i}`;
  const language = ["Rust", "Go", "Python"][i % 3]!;
  const payload: RepoPayload = {
    key,
    name: key,
    url: null,
    description: i === 11 ? "a quaternion toolkit" : `project number ${i}`,
    stars: i,
    forks: null,
    language,
    topics: [],
    pushedAt: null,
    isArchived: null,
    homepage: null,
    license: null,
    createdAt: null,
    readme: null,
    tree: null,
    llmsTxtPaths: null,
    aliases: [],
    aliasKeys: [],
    anchor: null,
    mentions: 0,
    lastSeen: null,
    languageLc: language.toLowerCase(),
    category: null,
    hash: `h${i}`,
  };
  return { id: pointIdFor(key), vector: v.map((x) => x / norm), payload };
}
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => point(from + k));
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

let root: string;
let n = 0;
let prevSink: LogSink;
const logs: string[] = [];
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "rs-store-"));
  prevSink = setLogSink((line) => logs.push(line));
});
afterAll(async () => {
  setLogSink(prevSink);
  await rm(root, { recursive: true, force: true });
});
const freshDataDir = () => path.join(root, `data${n++}`);

const baseOptions = (dataDir: string): EmbeddedStoreOptions => ({
  dataDir,
  hnsw: { m: 8, efConstruction: 32 },
  efSearch: 32,
  fullScanThreshold: 20,
  keepVersions: 2,
  lockPollIntervalMs: 5,
  logger: new Logger({ test: "store" }),
});
const openStore = (dataDir: string, extra: Partial<EmbeddedStoreOptions> = {}) => EmbeddedStore.open({ ...baseOptions(dataDir), ...extra });

async function publish(store: EmbeddedStore, upserts: Point[], deletes: Point[] = []): Promise<string | null> {
  const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
  if (upserts.length) await w.upsert(upserts);
  if (deletes.length) await w.delete(deletes.map((p) => p.id));
  return (await w.commit()).version;
}

describe("EmbeddedStore", () => {
  it("validates its options with clear messages", async () => {
    await assert.rejects(EmbeddedStore.open({ ...baseOptions(""), hnsw: { m: 0, efConstruction: 10 }, keepVersions: 0, lineageTtlMs: -1 }), (err: unknown) => {
      assert.ok(err instanceof ReposearchError);
      assert.match(err.message, /dataDir must be a non-empty path/);
      assert.match(err.message, /lineageTtlMs must be an integer in \[0, \d+\] \(got -1\)/);
      assert.match(err.message, /hnsw\.m must be an integer in \[2, 128\] \(got 0\)/);
      assert.match(err.message, /keepVersions must be an integer in \[1, 1000\] \(got 0\)/);
      return true;
    });
  });

  it("answers empty results when nothing is published, and still rejects bad input", async () => {
    const store = await openStore(freshDataDir());
    assert.deepEqual(await store.info(), { version: null, count: 0, dims: 0, embedderId: null, publishedAt: null });
    assert.deepEqual(await store.denseSearch({ vector: new Float32Array(DIMS), limit: 5 }), []);
    assert.deepEqual(await store.lexicalSearch({ text: "anything", limit: 5 }), []);
    assert.equal(await store.count(), 0);
    assert.deepEqual(await store.retrieve(["x"]), [null]);
    assert.equal(await store.refresh(), false);
    await assert.rejects(store.denseSearch({ vector: new Float32Array(DIMS), limit: -1 }), /limit must be a non-negative integer/);
    await assert.rejects(store.count({ must: [{ key: "stars", range: { gte: "x" as unknown as number } }] }), { code: "VALIDATION_ERROR" });
  });

  it("round-trips write → commit → reopen, and serves dense, lexical, count and retrieve", async () => {
    const dataDir = freshDataDir();
    const pts = range(0, 200);
    const writerStore = await openStore(dataDir);
    assert.equal(await publish(writerStore, pts), "v000001");
    await writerStore.close();

    const store = await openStore(dataDir);
    const info = await store.info();
    assert.equal(info.version, "v000001");
    assert.equal(info.count, 200);
    assert.equal(info.dims, DIMS);
    assert.equal(info.embedderId, EMB);
    assert.ok(info.publishedAt && !Number.isNaN(Date.parse(info.publishedAt)));

    const q = pts[42]!.vector;
    const [top] = await store.denseSearch({ vector: q, limit: 1 });
    assert.equal(top!.id, pts[42]!.id);
    assert.ok(Math.abs(top!.score - 1) < 1e-5);
    assert.deepEqual(top!.payload, pts[42]!.payload);

    // exact: true is the brute-force answer, best first.
    const expected = pts
      .map((p) => ({ id: p.id, s: dot(p.vector, q) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10)
      .map((x) => x.id);
    assert.deepEqual(
      (await store.denseSearch({ vector: q, limit: 10, exact: true })).map((h) => h.id),
      expected,
    );

    const rust = { must: [{ key: "languageLc", match: { value: "rust" } }] };
    const filtered = await store.denseSearch({ vector: q, limit: 10, filter: rust });
    assert.equal(filtered.length, 10);
    assert.ok(filtered.every((h) => h.payload.languageLc === "rust"));
    assert.equal(await store.count(rust), 67);
    assert.equal(await store.count(), 200);

    const lex = await store.lexicalSearch({ text: "quaternion", limit: 3 });
    assert.equal(lex[0]!.id, pts[11]!.id);
    assert.equal((await store.lexicalSearch({ text: "quaternion", limit: 3, filter: rust })).length, 0);

    assert.deepEqual(await store.retrieve([pts[3]!.id, "missing", pts[199]!.id.toUpperCase()]), [pts[3]!.payload, null, pts[199]!.payload]);
    await assert.rejects(store.denseSearch({ vector: new Float32Array(3), limit: 1 }), /vector has 3 dims, the index has 16/);
  });

  it("refresh() swaps in a new version while in-flight and concurrent searches keep working", async () => {
    const dataDir = freshDataDir();
    const pts = range(0, 120);
    const writer = await openStore(dataDir, { keepVersions: 1 });
    await publish(writer, pts.slice(0, 60));
    const reader = await openStore(dataDir, { keepVersions: 1 });
    assert.equal((await reader.info()).version, "v000001");

    // v2 drops points 0..29 and adds 60..119; keepVersions 1 deletes v1's files from disk.
    await publish(writer, pts.slice(60), pts.slice(0, 30));
    const q = pts[0]!.vector;
    const inFlight = reader.denseSearch({ vector: q, limit: 1 });
    const refreshing = reader.refresh();
    // Searches keep being answered while the new version loads.
    let done = false;
    void refreshing.finally(() => (done = true));
    let during = 0;
    while (!done) {
      const hits = await reader.denseSearch({ vector: q, limit: 1 });
      assert.equal(hits.length, 1);
      during++;
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(await refreshing, true);
    assert.ok(during > 0);
    assert.equal((await inFlight)[0]!.id, pts[0]!.id, "the search started before the swap saw the old version");

    assert.equal((await reader.info()).version, "v000002");
    assert.notEqual((await reader.denseSearch({ vector: q, limit: 1 }))[0]!.id, pts[0]!.id);
    assert.equal(await reader.count(), 90);
    assert.equal(await reader.refresh(), false);
  });

  it("watch() follows CURRENT, survives a broken version, and stops on close()", async () => {
    const dataDir = freshDataDir();
    const writer = await openStore(dataDir);
    await publish(writer, range(0, 30));
    const reader = await openStore(dataDir);
    reader.watch(20);
    await publish(writer, range(30, 40));
    const waitFor = async (cond: () => Promise<boolean>) => {
      for (let i = 0; i < 200 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(await cond());
    };
    await waitFor(async () => (await reader.info()).version === "v000002");

    const warnings = logs.length;
    await writeFile(path.join(dataDir, "index", "CURRENT"), JSON.stringify({ version: "v000099" }));
    await waitFor(async () => logs.slice(warnings).some((l) => l.includes("index refresh failed")));
    assert.equal((await reader.info()).version, "v000002");
    assert.equal(await reader.count(), 40);

    await reader.close();
    await assert.rejects(reader.info(), (err: unknown) => err instanceof ReposearchError && err.code === "UNAVAILABLE");
  });

  it("a new version keeps the served version's payload object wherever the payload is unchanged", async () => {
    const dataDir = freshDataDir();
    const writer = await openStore(dataDir);
    const pts = range(0, 30);
    await publish(writer, pts);
    const reader = await openStore(dataDir, { lineageTtlMs: 100 });
    const [kept, changed] = await reader.retrieve([pts[0]!.id, pts[5]!.id]);
    // v2: point 5's stars change, 30..34 are new, everything else is as it was.
    const moved = { ...pts[5]!, payload: { ...pts[5]!.payload, stars: 12_345, hash: "changed" } };
    await publish(writer, [moved, ...range(30, 35)]);
    assert.equal(await reader.refresh(), true);
    const [kept2, changed2, added] = await reader.retrieve([pts[0]!.id, pts[5]!.id, point(30).id]);
    assert.equal(kept2, kept, "the same object");
    assert.notEqual(changed2, changed);
    assert.equal(changed2!.stars, 12_345);
    assert.equal(added!.name, point(30).payload.name);
    assert.equal(reader.currentSegment()!.payloadsShared, 29);
    // The changed payload's link to the one it replaced lasts lineageTtlMs, then goes with what it kept alive.
    assert.equal(predecessorOf(changed2!), changed);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(predecessorOf(changed2!), undefined);
    await reader.close();
  });

  it("fails to open with a clear error when the published version is damaged", async () => {
    const dataDir = freshDataDir();
    const writer = await openStore(dataDir);
    await publish(writer, range(0, 10));
    await truncate(path.join(dataDir, "index", "versions", "v000001", "vectors.f32"), 7);
    await assert.rejects(openStore(dataDir), (err: unknown) => {
      assert.ok(err instanceof IndexFormatError);
      assert.match(err.message, /v000001: vectors\.f32 is 7 bytes but the manifest says 640 \(truncated or corrupted\)/);
      return true;
    });
    await writeFile(path.join(dataDir, "index", "CURRENT"), "{");
    await assert.rejects(openStore(dataDir), /CURRENT is malformed/);
  });

  it("embeddedStoreFromConfig uses the configured data dir and settings", async () => {
    const dataDir = freshDataDir();
    const store = await embeddedStoreFromConfig(loadConfig({ DATA_DIR: dataDir }));
    assert.equal((await store.info()).version, null);
    assert.equal(store.dir.root, path.join(dataDir, "index"));
    await store.close();
  });
});
