import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { pointIdFor } from "../../common/hash.js";
import { BOOTSTRAP_VERSION, BootstrapStore, FallbackStore } from "./bootstrap.js";
import { CONTRACT_DIMS, CONTRACT_EMBEDDER, contractPoint } from "../../../test/support/store-contract.js";
import { EmbeddedStore } from "./store.js";

const rows = [
  { name: "acme/feedreader", description: "A self-hosted RSS feed reader", stars: 1200, language: "Go", topics: ["rss", "self-hosted"], isArchived: false },
  { name: "acme/old-reader", description: "An RSS reader, archived", stars: 50, language: "Python", isArchived: true },
  { name: "acme/awesome-rss", description: "A curated list of awesome RSS tools", stars: 300, topics: ["awesome", "awesome-list"] },
  { name: "acme/unrelated", description: "Image compression library", stars: 10, language: "Rust" },
];

let dir: string;
let dataset: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "reposearch-bootstrap-"));
  dataset = path.join(dir, "repos.jsonl");
  await writeFile(dataset, rows.map((r) => JSON.stringify(r)).join("\n") + "\nnot json\n");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("BootstrapStore", () => {
  it("answers lexical searches under filters, has no dense side, skips bad lines", async () => {
    const s = await BootstrapStore.build(dataset);
    const info = await s.info();
    assert.equal(info.version, BOOTSTRAP_VERSION);
    assert.equal(info.embedderId, null);
    assert.equal(info.count, 4);
    const all = await s.lexicalSearch({ text: "rss reader", limit: 10 });
    assert.deepEqual(new Set(all.map((h) => h.payload.key)), new Set(["acme/feedreader", "acme/old-reader", "acme/awesome-rss"]));
    const live = await s.lexicalSearch({ text: "rss reader", limit: 10, filter: { must_not: [{ key: "isArchived", match: { value: true } }] } });
    assert.ok(!live.some((h) => h.payload.key === "acme/old-reader"));
    assert.equal((await s.lexicalSearch({ text: "rss", limit: 10, filter: { must: [{ key: "languageLc", match: { value: "go" } }] } })).length, 1);
    assert.deepEqual(await s.denseSearch({ vector: new Float32Array(4), limit: 5 }), []);
    assert.equal(await s.count({ must: [{ key: "stars", range: { gte: 100 } }] }), 2);
    const [p, missing] = await s.retrieve([pointIdFor("acme/awesome-rss"), pointIdFor("nobody/none")]);
    assert.equal(p?.category, "curated-list", "rule-based categories");
    assert.equal(missing, null);
    await assert.rejects(() => s.openWriter(), /read-only/);
  });
});

describe("FallbackStore", () => {
  it("serves the fallback until the real store publishes, then the real store for good", async () => {
    const primary = await EmbeddedStore.open({
      dataDir: path.join(dir, "data"),
      hnsw: { m: 8, efConstruction: 32 },
      efSearch: 32,
      fullScanThreshold: 1000,
      keepVersions: 2,
    });
    let switched = 0;
    const f = new FallbackStore(primary, await BootstrapStore.build(dataset), () => switched++);
    assert.equal((await f.info()).version, BOOTSTRAP_VERSION);
    assert.ok((await f.lexicalSearch({ text: "rss", limit: 5 })).length > 0);
    const w = await primary.openWriter({ writerId: "t", dims: CONTRACT_DIMS, embedderId: CONTRACT_EMBEDDER });
    await w.upsert([contractPoint(1), contractPoint(2)]);
    await w.commit();
    await primary.refresh();
    const info = await f.info();
    assert.notEqual(info.version, BOOTSTRAP_VERSION);
    assert.equal(info.count, 2);
    assert.deepEqual(await f.lexicalSearch({ text: "rss", limit: 5 }), [], "the real store answers now");
    assert.equal(switched, 1);
    await f.close();
  });
});
