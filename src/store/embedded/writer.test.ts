import { seededRandom } from "../../common/random.js";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { pointIdFor } from "../../common/hash.js";
import { Logger, setLogSink, type LogSink } from "../../common/logger.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Point } from "../types.js";
import { setLexicalFormat } from "../../../test/support/segment-files.js";
import { EmbeddedStore } from "./store.js";
import { LEXICAL_FORMAT_VERSION, lexicalFormatOf } from "./lexical.js";
import { decodeChunk, encodeChunk } from "./writer.js";

const DIMS = 16;
const EMB = "test:16";

const rng = seededRandom;

function point(i: number, opts: { dims?: number; hash?: string } = {}): Point {
  const dims = opts.dims ?? DIMS;
  const r = rng(i + 1);
  const v = new Float32Array(dims).map(() => r() - 0.5);
  const norm = Math.hypot(...v);
  const key = `owner/repo-${i}`;
  const payload: RepoPayload = {
    key,
    name: key,
    url: null,
    description: `project number ${i}`,
    stars: i,
    forks: null,
    language: null,
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
    languageLc: null,
    category: null,
    hash: opts.hash ?? `h${i}`,
  };
  return { id: pointIdFor(key), vector: v.map((x) => x / norm), payload };
}
const range = (from: number, to: number, opts?: { dims?: number; hash?: string }) => Array.from({ length: to - from }, (_, k) => point(from + k, opts));

let root: string;
let n = 0;
let prevSink: LogSink;
const logs: string[] = [];
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "rs-writer-"));
  prevSink = setLogSink((line) => logs.push(line));
});
afterAll(async () => {
  setLogSink(prevSink);
  await rm(root, { recursive: true, force: true });
});
const freshDataDir = () => path.join(root, `data${n++}`);

const openStore = (dataDir: string, keepVersions = 2) =>
  EmbeddedStore.open({
    dataDir,
    hnsw: { m: 8, efConstruction: 32 },
    efSearch: 32,
    fullScanThreshold: 20,
    keepVersions,
    lockPollIntervalMs: 5,
    logger: new Logger({ test: "writer" }),
  });
const versionsOf = async (dataDir: string) => (await readdir(path.join(dataDir, "index", "versions"))).sort();
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe("checkpoint chunks", () => {
  it("round-trip, and report truncation and corruption instead of throwing", () => {
    const pts = range(0, 3);
    const vectors = new Float32Array(3 * DIMS);
    pts.forEach((p, i) => vectors.set(p.vector, i * DIMS));
    const buf = encodeChunk({ kind: "upsert", ids: pts.map((p) => p.id), payloads: pts.map((p) => p.payload), vectors, dims: DIMS });
    const op = decodeChunk(buf);
    assert.ok(typeof op !== "string" && op.kind === "upsert");
    assert.deepEqual(
      op.ids,
      pts.map((p) => p.id),
    );
    assert.deepEqual(
      op.payloads,
      pts.map((p) => p.payload),
    );
    assert.deepEqual(op.vectors, vectors);

    assert.deepEqual(decodeChunk(encodeChunk({ kind: "delete", ids: ["a", "b"] })), { kind: "delete", ids: ["a", "b"] });
    assert.match(decodeChunk(buf.subarray(0, buf.length - 5)) as string, /truncated/);
    assert.match(decodeChunk(buf.subarray(0, 10)) as string, /truncated header/);
    const bad = Buffer.from(buf);
    bad[bad.length - 1]! ^= 0xff;
    assert.equal(decodeChunk(bad), "checksum mismatch");
  });
});

describe("EmbeddedWriter", () => {
  it("validates its options and inputs", async () => {
    const store = await openStore(freshDataDir());
    await assert.rejects(store.openWriter({ writerId: "../x", dims: DIMS, embedderId: EMB }), /writerId must match/);
    await assert.rejects(store.openWriter({ writerId: "w", dims: 0, embedderId: "" }), /dims must be a positive integer.*embedderId must be/);
    const w = await store.openWriter({ writerId: "w", dims: DIMS, embedderId: EMB });
    await assert.rejects(w.upsert([point(1, { dims: 4 })]), /vector must be a Float32Array of 16 dims \(got 4\)/);
  });

  it("resumes an abandoned writer from its checkpoints, dropping a torn last chunk and temp files", async () => {
    const dataDir = freshDataDir();
    const first = await openStore(dataDir);
    const w = await first.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w.upsert(range(0, 30));
    await w.upsert(range(30, 60));
    await w.delete([point(5).id]);
    await w.upsert(range(60, 90));
    // Abandon `w` (no commit), then damage the staging area as a crash mid-write would.
    const staging = path.join(dataDir, "index", "staging", "main");
    assert.deepEqual((await readdir(staging)).sort(), ["000001.chunk", "000002.chunk", "000003.chunk", "000004.chunk", "writer.json"]);
    const last = path.join(staging, "000004.chunk");
    await truncate(last, (await stat(last)).size - 100);
    await writeFile(path.join(staging, "000005.chunk.tmp-0a1b2c"), "half-written");

    const second = await openStore(dataDir); // a fresh process
    const w2 = await second.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    const hashes = await w2.hashes();
    assert.equal(hashes.size, 59);
    assert.equal(hashes.get(point(7).id), "h7");
    assert.equal(hashes.has(point(5).id), false, "the replayed delete applies");
    assert.equal(hashes.has(point(60).id), false, "the torn chunk is not replayed");
    assert.deepEqual((await readdir(staging)).sort(), ["000001.chunk", "000002.chunk", "000003.chunk", "writer.json"]);

    await w2.upsert(range(60, 90)); // only the lost work is redone
    const res = await w2.commit();
    assert.deepEqual(res, { version: "v000001", upserted: 89, deleted: 0, published: true });
    assert.equal(await second.count(), 89);
    assert.equal(await exists(staging), false, "staging is removed after publish");
    assert.ok(logs.some((l) => l.includes("dropping damaged checkpoint chunks")));
  });

  it("two writers with different ids committing concurrently both survive", async () => {
    const dataDir = freshDataDir();
    const [a, b] = await Promise.all([openStore(dataDir), openStore(dataDir)]); // as two processes
    const wa = await a.openWriter({ writerId: "shard-0-of-2", dims: DIMS, embedderId: EMB });
    const wb = await b.openWriter({ writerId: "shard-1-of-2", dims: DIMS, embedderId: EMB });
    await wa.upsert(range(0, 40));
    await wb.upsert(range(40, 80));
    const [ra, rb] = await Promise.all([wa.commit(), wb.commit()]);
    assert.deepEqual([ra.version, rb.version].sort(), ["v000001", "v000002"]);
    assert.ok(ra.published && rb.published);

    const c = await openStore(dataDir);
    assert.equal((await c.info()).version, "v000002");
    assert.equal(await c.count(), 80);
    const got = await c.retrieve(range(0, 80).map((p) => p.id));
    assert.ok(got.every((p) => p !== null));
    assert.equal(await exists(path.join(dataDir, "index", "LOCK")), false);
  });

  it("publishes a version whose lexical index an older analyzer wrote, even when no point changed", async () => {
    const dataDir = freshDataDir();
    const store = await openStore(dataDir, 5);
    const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w.upsert(range(0, 20));
    assert.equal((await w.commit()).version, "v000001");
    await store.close();
    // v000001's lexical.bin now says the previous format, as an index from before an analyzer change would.
    await setLexicalFormat(path.join(dataDir, "index", "versions", "v000001"), LEXICAL_FORMAT_VERSION - 1);

    const reopened = await openStore(dataDir, 5);
    assert.equal((await reopened.info()).count, 20, "the old version is served, re-analysed");
    assert.ok(logs.some((l) => l.includes("written by an older analyzer")));
    const w2 = await reopened.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w2.upsert(range(0, 20)); // same hashes
    assert.deepEqual(await w2.commit(), { version: "v000002", upserted: 0, deleted: 0, published: true });
    const fresh = await readFile(path.join(dataDir, "index", "versions", "v000002", "lexical.bin"));
    assert.equal(lexicalFormatOf(fresh), LEXICAL_FORMAT_VERSION);
    assert.equal(reopened.currentSegment()?.lexicalReanalysed, false);
    // From then on an unchanged run publishes nothing again.
    const w3 = await reopened.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w3.upsert(range(0, 20));
    assert.equal((await w3.commit()).published, false);
    await reopened.close();
  });

  it("publishes nothing when nothing changes, and counts real changes", async () => {
    const dataDir = freshDataDir();
    const store = await openStore(dataDir, 5);
    const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w.upsert(range(0, 20));
    assert.equal((await w.commit()).version, "v000001");

    const w2 = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w2.upsert(range(0, 20)); // same hashes
    await w2.delete([point(999).id]); // not there
    assert.deepEqual(await w2.commit(), { version: "v000001", upserted: 0, deleted: 0, published: false });
    assert.deepEqual(await versionsOf(dataDir), ["v000001"]);
    assert.equal(await exists(path.join(dataDir, "index", "staging", "main")), false);

    await w2.upsert([point(3, { hash: "changed" }), point(20)]);
    await w2.delete([point(4).id]);
    assert.deepEqual(await w2.commit(), { version: "v000002", upserted: 2, deleted: 1, published: true });
    const [p3, p4] = await store.retrieve([point(3).id, point(4).id]);
    assert.equal(p3?.hash, "changed");
    assert.equal(p4, null);
    assert.equal(await store.count(), 20);
  });

  it("treats a published version with another embedder as empty and replaces it completely", async () => {
    const dataDir = freshDataDir();
    const store = await openStore(dataDir);
    const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w.upsert(range(0, 20));
    await w.commit();
    // Staged work of the old embedder, abandoned, must not leak into the new one.
    await w.upsert(range(20, 25));

    const w2 = await store.openWriter({ writerId: "main", dims: 8, embedderId: "other:8" });
    assert.equal((await w2.hashes()).size, 0);
    await w2.upsert(range(0, 5, { dims: 8 }));
    const res = await w2.commit();
    assert.deepEqual(res, { version: "v000002", upserted: 5, deleted: 0, published: true });
    assert.deepEqual({ ...(await store.info()), publishedAt: null }, { version: "v000002", count: 5, dims: 8, embedderId: "other:8", publishedAt: null });
  });

  it("garbage-collects old versions and crashed builds, keeping keepVersions", async () => {
    const dataDir = freshDataDir();
    const store = await openStore(dataDir, 2);
    const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    const stages = new Set<string>();
    for (let i = 0; i < 4; i++) {
      await w.upsert([point(i)]);
      if (i === 2) await mkdir(path.join(dataDir, "index", "versions", "v000004.tmp-deadbeef")); // a crashed build
      await w.commit({ onProgress: (s) => stages.add(s) });
    }
    assert.deepEqual(await versionsOf(dataDir), ["v000003", "v000004"]);
    const current = JSON.parse(await readFile(path.join(dataDir, "index", "CURRENT"), "utf8"));
    assert.deepEqual(current, { version: "v000004" });
    assert.deepEqual([...stages], ["lock", "merge", "hnsw", "subgraphs", "lexical", "payload-index", "write", "publish", "gc"]);
  });

  it("abort drops staged work", async () => {
    const dataDir = freshDataDir();
    const store = await openStore(dataDir);
    const w = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    await w.upsert(range(0, 5));
    await w.abort();
    const w2 = await store.openWriter({ writerId: "main", dims: DIMS, embedderId: EMB });
    assert.equal((await w2.hashes()).size, 0);
    assert.equal((await w2.commit()).published, false);
  });
});
