/**
 * QdrantStore against `reposearch store serve`: the VectorStore contract through an in-process server on
 * port 0, the server's Qdrant wire shapes, and two indexer shards (real CLI processes) building one index
 * through a real `store serve` process.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { setLogLevel } from "../src/common/logger.js";
import { inShard } from "../src/indexer/indexer.js";
import { CONTRACT_DIMS, CONTRACT_EMBEDDER, contractPoint, storeContract } from "./support/store-contract.js";
import { EmbeddedStore } from "../src/store/embedded/store.js";
import { QdrantStore } from "../src/store/qdrant/store.js";
import { StoreServer } from "../src/store/embedded/serve/server.js";
import { datasetLines, lastReport, runCli, shareModel, startCli, tempDir, testEnv, writeJsonl } from "./helpers.js";

setLogLevel("warn");

async function serveFresh(): Promise<{ qdrant: QdrantStore; server: StoreServer; embedded: EmbeddedStore; dispose(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rs-serve-"));
  const embedded = await EmbeddedStore.open({
    dataDir,
    hnsw: { m: 8, efConstruction: 32 },
    efSearch: 32,
    fullScanThreshold: 20,
    keepVersions: 2,
    lockPollIntervalMs: 5,
  });
  const server = await StoreServer.start({ store: embedded, port: 0 });
  const qdrant = await QdrantStore.open({ url: server.url, hnsw: { m: 8, efConstruction: 32 }, efSearch: 32, timeoutMs: 10_000 });
  return {
    qdrant,
    server,
    embedded,
    async dispose() {
      await qdrant.close();
      await server.close();
      await embedded.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

storeContract(
  "QdrantStore → store serve",
  async () => {
    const s = await serveFresh();
    return { store: s.qdrant, dispose: () => s.dispose() };
  },
  { atomicPublish: true },
);

describe("store serve: Qdrant wire format", () => {
  let s: Awaited<ReturnType<typeof serveFresh>>;
  beforeAll(async () => {
    s = await serveFresh();
  });
  afterAll(async () => {
    await s?.dispose();
  });
  const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${s.server.url}${p}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("answers with Qdrant's envelopes: result/status/time, and {status: {error}} with 4xx", async () => {
    const root = await call("GET", "/");
    assert.equal(root.status, 200);
    assert.equal(root.body.status, "ok");
    assert.equal(typeof root.body.time, "number");
    assert.deepEqual((await call("GET", "/collections/repos/exists")).body.result, { exists: false });
    const missing = await call("GET", "/collections/repos");
    assert.equal(missing.status, 404);
    assert.match(String((missing.body.status as { error: string }).error), /Collection `repos` doesn't exist/);
    assert.equal((await call("POST", "/collections/repos/points/count", {})).status, 404);
    for (const method of ["PUT", "POST", "DELETE"]) {
      const bare = await call(method, "/collections", {});
      assert.equal(bare.status, 404, `${method} /collections`);
      assert.doesNotMatch(String((bare.body.status as { error: string }).error), /undefined/);
    }
    assert.equal((await call("PUT", "/collections/other", { vectors: { dense: { size: 4, distance: "Cosine" } } })).status, 400);
    assert.equal((await call("PUT", "/collections/repos", { vectors: { size: 4, distance: "Cosine" } })).status, 400, "an unnamed vector is refused");
    assert.equal((await call("PUT", "/collections/repos", { vectors: { dense: { size: 4, distance: "Euclid" } } })).status, 400);
    const created = await call("PUT", "/collections/repos", {
      vectors: { dense: { size: 4, distance: "Cosine" } },
      sparse_vectors: { lexical: { modifier: "idf" } },
    });
    assert.deepEqual(created.body.result, true);
    assert.equal((await call("PUT", "/collections/repos", { vectors: { dense: { size: 4, distance: "Cosine" } } })).status, 409);
    const info = await call("GET", "/collections/repos");
    assert.deepEqual((info.body.result as { config: { params: { vectors: unknown } } }).config.params.vectors, { dense: { size: 4, distance: "Cosine" } });
    const bad = await call("POST", "/collections/repos/points/count", "{not json");
    assert.equal(bad.status, 400);
    assert.ok(typeof (bad.body.status as { error?: unknown }).error === "string");
  });

  it("stages writes per writer header, publishes on the meta upsert, pages scrolls by id", async () => {
    const payload = (i: number) => ({ key: `o/r${i}`, name: `o/r${i}`, description: `repo ${i}`, topics: [], readme: null, hash: `h${i}` });
    const id = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
    const points = [1, 2, 3, 4, 5].map((i) => ({ id: id(i), vector: { dense: [i, 1, 0, 0] }, payload: payload(i) }));
    const up = await call("PUT", "/collections/repos/points?wait=true", { points }, { "x-reposearch-writer": "w1", "x-reposearch-embedder": "e%3A1" });
    assert.deepEqual(up.body.result, { operation_id: (up.body.result as { operation_id: number }).operation_id, status: "completed" });
    // Staged: invisible to plain reads, visible to the writer's own scroll.
    assert.deepEqual((await call("POST", "/collections/repos/points/count", {})).body.result, { count: 0 });
    const view = await call(
      "POST",
      "/collections/repos/points/scroll",
      { limit: 2, with_payload: ["hash"] },
      { "x-reposearch-writer": "w1", "x-reposearch-embedder": "e%3A1" },
    );
    assert.deepEqual(view.body.result, {
      points: [
        { id: id(1), payload: { hash: "h1" } },
        { id: id(2), payload: { hash: "h2" } },
      ],
      next_page_offset: id(3),
    });
    assert.deepEqual((await call("POST", "/collections/repos/points/scroll", { limit: 2 })).body.result, { points: [], next_page_offset: null });
    // A lexical vector that is not the payload's is refused rather than silently replaced.
    const wrong = await call("PUT", "/collections/repos/points", {
      points: [{ ...points[0], vector: { dense: [1, 0, 0, 0], lexical: { indices: [1], values: [0.5] } } }],
    });
    assert.equal(wrong.status, 400);
    assert.equal((await call("PUT", "/collections/repos/points", { points: [{ ...points[0], vector: { dense: [1, 0, 0] } }] })).status, 400);
    assert.equal((await call("PUT", "/collections/repos/points", { points: [{ ...points[0], id: 7 }] })).status, 400);

    const commit = await call(
      "PUT",
      "/collections/repos_meta/points?wait=true",
      { points: [{ id: "00000000-0000-4000-8000-000000000001", vector: {}, payload: {} }] },
      { "x-reposearch-writer": "w1", "x-reposearch-embedder": "e%3A1" },
    );
    assert.equal(commit.status, 200);
    assert.deepEqual((await call("POST", "/collections/repos/points/count", { exact: true })).body.result, { count: 5 });
    const meta = await call("POST", "/collections/repos_meta/points", { ids: ["00000000-0000-4000-8000-000000000001"], with_payload: true });
    const metaPayload = (meta.body.result as { payload: Record<string, unknown> }[])[0]!.payload;
    assert.equal(metaPayload.embedderId, "e:1");
    assert.equal(metaPayload.count, 5);
    assert.match(String(metaPayload.version), /^v\d{6}$/);

    const page1 = await call("POST", "/collections/repos/points/scroll", {
      limit: 3,
      with_payload: { include: ["key"] },
      filter: { must_not: [{ has_id: [id(2)] }] },
    });
    assert.deepEqual(page1.body.result, {
      points: [id(1), id(3), id(4)].map((x, k) => ({ id: x, payload: { key: `o/r${[1, 3, 4][k]}` } })),
      next_page_offset: id(5),
    });
    const page2 = await call("POST", "/collections/repos/points/scroll", { limit: 3, offset: id(5), with_payload: false });
    assert.deepEqual(page2.body.result, { points: [{ id: id(5), payload: null }], next_page_offset: null });

    const q = await call("POST", "/collections/repos/points/query", { query: [5, 1, 0, 0], using: "dense", limit: 2, with_payload: true });
    const hits = (q.body.result as { points: { id: string; score: number; version: number; payload: { key: string } }[] }).points;
    assert.deepEqual(
      hits.map((h) => h.id),
      [id(5), id(4)],
    );
    assert.ok(Math.abs(hits[0]!.score - 1) < 1e-6);
    assert.equal(hits[0]!.payload.key, "o/r5");
    const sparse = await call("POST", "/collections/repos/points/query", { query: { indices: [1], values: [1] }, using: "dense", limit: 2 });
    assert.equal(sparse.status, 400, "a sparse query must name the sparse vector");
    const retrieved = await call("POST", "/collections/repos/points", { ids: [id(3), id(9)], with_vector: true });
    const recs = retrieved.body.result as { id: string; vector: { dense: number[] } }[];
    assert.deepEqual(
      recs.map((r) => r.id),
      [id(3)],
    );
    assert.ok(Math.abs(Math.hypot(...recs[0]!.vector.dense) - 1) < 1e-6, "Cosine vectors are stored normalised");

    const del = await call("POST", "/collections/repos/points/delete?wait=true", { points: [id(1)] });
    assert.equal(del.status, 200);
    await call("PUT", "/collections/repos_meta/points", { points: [{ id: "00000000-0000-4000-8000-000000000001", vector: {}, payload: {} }] });
    assert.deepEqual((await call("POST", "/collections/repos/points/count", {})).body.result, { count: 4 });
    assert.deepEqual((await call("DELETE", "/collections/repos")).body.result, true);
    assert.deepEqual((await call("GET", "/collections/repos/exists")).body.result, { exists: false });
    assert.equal((await s.embedded.info()).count, 0, "dropping publishes an empty version");
  });
});

describe("store serve: a writer killed before commit resumes from its checkpoints", () => {
  it("keeps staged work across a client and a server restart, and publishes it at the next commit", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "rs-serve-resume-"));
    const opts = { hnsw: { m: 8, efConstruction: 32 }, efSearch: 32 };
    try {
      let embedded = await EmbeddedStore.open({ dataDir, ...opts, fullScanThreshold: 20, keepVersions: 2 });
      let server = await StoreServer.start({ store: embedded, port: 0 });
      let q = QdrantStore.create({ url: server.url, ...opts });
      const w = await q.openWriter({ writerId: "shard-0-of-1", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      const pts = Array.from({ length: 12 }, (_, i) => contractPoint(i));
      await w.upsert(pts.slice(0, 8));
      await w.delete([pts[3]!.id]);
      // The indexer dies here; later the server restarts too.
      await server.close();
      await embedded.close();
      embedded = await EmbeddedStore.open({ dataDir, ...opts, fullScanThreshold: 20, keepVersions: 2 });
      server = await StoreServer.start({ store: embedded, port: 0 });
      q = QdrantStore.create({ url: server.url, ...opts });
      assert.equal(await q.count(), 0, "nothing was published");
      const again = await q.openWriter({ writerId: "shard-0-of-1", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      const hashes = await again.hashes();
      assert.deepEqual(
        [...hashes.keys()].sort(),
        pts
          .slice(0, 8)
          .filter((_, i) => i !== 3)
          .map((p) => p.id)
          .sort(),
      );
      await again.upsert(pts.slice(8));
      const r = await again.commit();
      assert.equal(r.published, true);
      assert.equal(await q.count(), 11);
      assert.deepEqual(await q.retrieve([pts[0]!.id, pts[3]!.id]), [pts[0]!.payload, null]);
      // Another writer id saw none of it before the commit and all of it after.
      const other = await q.openWriter({ writerId: "shard-1-of-2", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
      assert.equal((await other.hashes()).size, 11);
      await server.close();
      await embedded.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("two indexer shards build one index through a real `store serve` process", () => {
  it("each shard embeds only its slice; together they publish every repository; a re-run changes nothing", async () => {
    const rows = await datasetLines(400);
    const modelDir = await tempDir("serve-model");
    const serveDir = await tempDir("serve-data");
    const dirs = [await tempDir("serve-shard0"), await tempDir("serve-shard1")];
    const ds = await writeJsonl(path.join(modelDir, "ds.jsonl"), rows);
    // Distil the static model once (on the embedded store) and give both shards a copy, as a deployment
    // would ship one model to every machine.
    const base = await runCli(["index", "--dataset", ds, "--data-dir", modelDir], testEnv());
    assert.equal(base.code, 0, base.stderr.slice(-2000));
    const total = Number(lastReport(base.stderr).inSlice);
    for (const d of dirs) await shareModel(modelDir, d);

    const served = startCli(["store", "serve", "--data-dir", serveDir, "--port", "0"], testEnv({ LOG_LEVEL: "warn" }));
    try {
      const url = await firstLineUrl(served.child);
      const env = testEnv({ VECTOR_STORE: "qdrant", QDRANT_URL: url, EMBED_WORKERS: "1" });
      const [a, b] = await Promise.all(dirs.map((d, i) => runCli(["index", "--dataset", ds, "--data-dir", d, "--shard", `${i}/2`], env)));
      assert.equal(a!.code, 0, a!.stderr.slice(-3000));
      assert.equal(b!.code, 0, b!.stderr.slice(-3000));
      const ra = lastReport(a!.stderr);
      const rb = lastReport(b!.stderr);
      assert.equal(Number(ra.embedded) + Number(rb.embedded), total);
      assert.equal(Number(ra.inSlice), Number(ra.embedded));
      assert.ok(Number(ra.embedded) > total / 4 && Number(rb.embedded) > total / 4, `slices ${ra.embedded}/${rb.embedded}`);

      const q = QdrantStore.create({ url, hnsw: { m: 16, efConstruction: 100 }, efSearch: 64 });
      assert.equal(await q.count(), total);
      const info = await q.info();
      assert.equal(info.count, total);
      assert.match(String(info.embedderId), /^static:/);
      // The same points as the unsharded build, with the same payloads and content hashes.
      const reference = await EmbeddedStore.open({
        dataDir: modelDir,
        hnsw: { m: 16, efConstruction: 100 },
        efSearch: 64,
        fullScanThreshold: 10_000,
        keepVersions: 2,
      });
      const seg = reference.currentSegment()!;
      const hashes = await (await q.openWriter({ writerId: "probe", dims: info.dims, embedderId: String(info.embedderId) })).hashes();
      assert.deepEqual(new Map([...hashes].sort()), new Map(seg.ids.map((id, row): [string, string] => [id, seg.payloads[row]!.hash]).sort()));
      assert.deepEqual(await q.retrieve(seg.ids.slice(0, 20)), seg.payloads.slice(0, 20));
      await reference.close();
      // Each shard wrote exactly its own slice.
      assert.equal([...hashes.keys()].filter((id) => inShard(id, { index: 0, count: 2 })).length, Number(ra.embedded));
      const lexical = await q.lexicalSearch({ text: String(rows[0]!.description ?? rows[0]!.name), limit: 5 });
      assert.ok(lexical.length > 0);

      // The embedded store on the server's data dir holds the same published version.
      const local = await EmbeddedStore.open({
        dataDir: serveDir,
        hnsw: { m: 16, efConstruction: 100 },
        efSearch: 64,
        fullScanThreshold: 10_000,
        keepVersions: 2,
      });
      assert.equal((await local.info()).count, total);
      await local.close();

      const again = await runCli(["index", "--dataset", ds, "--data-dir", dirs[0]!, "--shard", "0/2"], env);
      assert.equal(again.code, 0, again.stderr.slice(-3000));
      const rep = lastReport(again.stderr);
      assert.equal(rep.embedded, 0);
      assert.equal(rep.deleted, 0, "a shard never deletes the other shard's points");
      assert.equal(rep.published, false);
      assert.equal(await q.count(), total);
    } finally {
      served.child.kill("SIGTERM");
      const end = await served.done;
      assert.equal(end.code, 0, end.stderr.slice(-2000));
      for (const d of [modelDir, serveDir, ...dirs]) await rm(d, { recursive: true, force: true });
    }
  });
});

/** The URL `store serve` prints on its first stdout line. */
function firstLineUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`store serve did not start: ${out}`)), 30_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once("exit", (code) => reject(new Error(`store serve exited with ${code}: ${out}`)));
  });
}
