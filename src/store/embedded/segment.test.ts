import { seededRandom } from "../../common/random.js";
import assert from "node:assert/strict";
import { isAscii } from "node:buffer";
import { mkdir, mkdtemp, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { pointIdFor } from "../../common/hash.js";
import { predecessorOf } from "../../dataset/payload-lineage.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Point } from "../types.js";
import { exactSearch } from "./dense.js";
import { setLexicalFormat } from "../../../test/support/segment-files.js";
import { LEXICAL_FORMAT_VERSION, lexicalFormatOf } from "./lexical.js";
import { IndexFormatError, Segment, SEGMENT_FILES } from "./segment.js";

const DIMS = 16;

const rng = seededRandom;

function payload(i: number): RepoPayload {
  const key = `owner${i % 7}/repo-${i}`;
  const language = i % 2 ? "TypeScript" : "Python";
  return {
    key,
    name: key,
    url: `https://github.com/${key}`,
    description: i === 4 ? "向量数据库 🚀 café\u007f" : `project ${i} ${i % 3 === 0 ? "vector database" : "web framework"}`,
    stars: i * 10,
    forks: null,
    language,
    topics: i % 5 === 0 ? ["search"] : [],
    pushedAt: null,
    isArchived: null,
    homepage: null,
    license: null,
    createdAt: null,
    readme: i === 3 ? "# Zanzibar\nauthorization system" : null,
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
}

function points(n: number, seed = 1): Point[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const v = new Float32Array(DIMS).map(() => r() - 0.5);
    const norm = Math.hypot(...v);
    const p = payload(i);
    return { id: pointIdFor(p.key), vector: v.map((x) => x / norm), payload: p };
  });
}

// Subgraphs for values with ≥ 100 rows: here languageLc python and typescript (150 rows each of 300).
const params = {
  version: "v000001",
  dims: DIMS,
  embedderId: "test:16",
  hnsw: { m: 8, efConstruction: 32 },
  subgraphs: { fields: ["category", "languageLc"], minRows: 100 },
};

let root: string;
let n = 0;
const freshDir = async (): Promise<string> => {
  const d = path.join(root, `seg${n++}`);
  await mkdir(d);
  return d;
};
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "rs-segment-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("Segment", () => {
  it("round-trips through disk: ids, payloads, vectors, graph, lexical and payload index", async () => {
    const pts = points(300);
    const stages = new Set<string>();
    const seg = Segment.build(pts, params, (stage) => stages.add(stage));
    assert.deepEqual([...stages], ["hnsw", "subgraphs", "lexical", "payload-index"]);
    const dir = await freshDir();
    const manifest = await seg.writeTo(dir);
    assert.equal(manifest.count, 300);
    assert.equal(manifest.files["vectors.f32"].bytes, 300 * DIMS * 4);

    const loaded = await Segment.load(dir, { expectVersion: "v000001" });
    assert.equal(loaded.version, "v000001");
    assert.equal(loaded.embedderId, "test:16");
    assert.equal(loaded.createdAt, seg.createdAt);
    assert.deepEqual(
      loaded.ids,
      pts.map((p) => p.id),
    );
    assert.deepEqual(
      loaded.payloads,
      pts.map((p) => p.payload),
    );
    assert.ok(isAscii(await readFile(path.join(dir, "payloads.json"))), "non-ASCII text is escaped, so loading can decode as latin1");
    assert.deepEqual(loaded.vectorOf(42), pts[42]!.vector);
    assert.equal(loaded.rowOf(pts[7]!.id), 7);
    assert.equal(loaded.rowOf("nope"), undefined);

    // The loaded indexes answer the same queries as the built ones.
    const q = pts[5]!.vector;
    assert.equal(loaded.graph!.search(loaded.vectors, DIMS, q, 1, 32, null)[0]!.idx, 5);
    assert.deepEqual(exactSearch(loaded.dense, q, 5, null), exactSearch(seg.dense, q, 5, null));
    assert.equal(loaded.lexical!.search("zanzibar", 3, null)[0]!.idx, 3);
    assert.equal(loaded.payloadIndex.evaluate({ must: [{ key: "languageLc", match: { value: "python" } }] })!.count(), 150);
    // Per-value graphs: one per language (categories are all null here), with their rows.
    const subs = loaded.dense.subgraphs!.flatMap((f) => f.subs.map((x) => [x.field, x.value, Array.from(x.rows)]));
    assert.deepEqual(subs, [
      ["languageLc", "python", pts.flatMap((p, i) => (p.payload.languageLc === "python" ? [i] : []))],
      ["languageLc", "typescript", pts.flatMap((p, i) => (p.payload.languageLc === "typescript" ? [i] : []))],
    ]);
    const py = loaded.dense.subgraphs![0]!.subs[0]!;
    assert.deepEqual(py.data.vectors.subarray(0, DIMS), loaded.vectorOf(py.rows[0]!), "a subgraph's vectors are its rows' vectors");
  });

  it("still loads a format-1 version (before subgraphs), without subgraphs", async () => {
    const dir = await freshDir();
    await Segment.build(points(200), params).writeTo(dir);
    const manifest = JSON.parse(await readFile(path.join(dir, "manifest.json"), "utf8")) as { formatVersion: number; files: Record<string, unknown> };
    assert.equal(manifest.formatVersion, 2);
    manifest.formatVersion = 1;
    delete manifest.files["subgraphs.bin"];
    await rm(path.join(dir, "subgraphs.bin"));
    await writeFile(path.join(dir, "manifest.json"), JSON.stringify(manifest));
    const loaded = await Segment.load(dir);
    assert.equal(loaded.count, 200);
    assert.deepEqual(loaded.dense.subgraphs, []);
  });

  it("re-analyses a lexical index written by an older analyzer instead of refusing the version", async () => {
    const dir = await freshDir();
    const built = Segment.build(points(200), params);
    await built.writeTo(dir);
    assert.equal((await Segment.load(dir)).lexicalReanalysed, false);
    // The same files with lexical.bin's header saying the previous format (and a manifest to match).
    assert.equal(lexicalFormatOf(await readFile(path.join(dir, "lexical.bin"))), LEXICAL_FORMAT_VERSION);
    await setLexicalFormat(dir, LEXICAL_FORMAT_VERSION - 1);
    const loaded = await Segment.load(dir);
    assert.equal(loaded.lexicalReanalysed, true);
    const hits = loaded.lexical!.search("vector database", 10, null);
    assert.equal(hits.length, 10);
    assert.deepEqual(hits, built.lexical!.search("vector database", 10, null));
    // A newer format than this build knows is still refused.
    await setLexicalFormat(dir, LEXICAL_FORMAT_VERSION + 1);
    await assert.rejects(Segment.load(dir), (err: unknown) => err instanceof IndexFormatError && /format version/.test(err.message));
  });

  it("load() with the previous version shares its payload objects where id and content are equal, hash and fields alike", async () => {
    const pts = points(50);
    const v1 = await freshDir();
    await Segment.build(pts, params).writeTo(v1);
    const previous = await Segment.load(v1);
    assert.equal(previous.payloadsShared, 0);
    // Row 3: another hash. Row 4: the same hash over other content (a version no writer of this store
    // makes, but a file can say it). Row 5: a field removed. Rows 0–2 and 6–49: as they were.
    const edited = pts.map((p, i) => {
      if (i === 3) return { ...p, payload: { ...p.payload, hash: "other" } };
      if (i === 4) return { ...p, payload: { ...p.payload, topics: [...p.payload.topics, "extra"] } };
      if (i === 5) return { ...p, payload: { ...p.payload, anchor: undefined } as unknown as RepoPayload };
      return p;
    });
    const v2 = await freshDir();
    await Segment.build(edited, params).writeTo(v2);
    const next = await Segment.load(v2, { previous });
    assert.equal(next.payloadsShared, 47);
    for (let i = 0; i < 50; i++) {
      const row = previous.rowOf(pts[i]!.id)!;
      const same = next.payloads[next.rowOf(pts[i]!.id)!] === previous.payloads[row];
      assert.equal(same, i < 3 || i > 5, `row ${i}`);
    }
    assert.deepEqual(next.payloads[next.rowOf(pts[4]!.id)!]!.topics, [...pts[4]!.payload.topics, "extra"]);
    // A changed payload knows the one it replaced (the ranker carries over what its unchanged text gave).
    for (const i of [3, 4, 5]) assert.equal(predecessorOf(next.payloads[next.rowOf(pts[i]!.id)!]!), previous.payloads[previous.rowOf(pts[i]!.id)!]);
    assert.equal(predecessorOf(next.payloads[next.rowOf(pts[0]!.id)!]!), undefined);
    // A third version that keeps row 3's payload as the second had it: no link back to the first remains.
    const third = await Segment.load(v2, { previous: next });
    assert.equal(third.payloadsShared, 50);
    assert.equal(predecessorOf(third.payloads[third.rowOf(pts[3]!.id)!]!), undefined);
    const fresh = await Segment.load(v2);
    assert.deepEqual(next.payloads, fresh.payloads, "the same content either way");
    assert.deepEqual(next.lexical!.search("vector database", 10, null), fresh.lexical!.search("vector database", 10, null));
  });

  it("handles an empty segment", async () => {
    const seg = Segment.build([], params);
    const dir = await freshDir();
    await seg.writeTo(dir);
    const loaded = await Segment.load(dir);
    assert.equal(loaded.count, 0);
    assert.equal(loaded.graph, null);
    assert.equal(loaded.lexical, null);
  });

  it("rejects bad input to build", () => {
    const pts = points(3);
    assert.throws(() => Segment.build([pts[0]!, pts[0]!], params), /duplicate point id/);
    assert.throws(() => Segment.build([{ ...pts[0]!, vector: new Float32Array(3) }], params), /3 dims, expected 16/);
  });

  describe("load fails clearly on a damaged version", () => {
    let good: string;
    const damaged = async (fn: (dir: string) => Promise<void>): Promise<string> => {
      const dir = await freshDir();
      for (const f of [...SEGMENT_FILES, "manifest.json"]) await writeFile(path.join(dir, f), await readFile(path.join(good, f)));
      await fn(dir);
      return dir;
    };
    const rejectsWith = (dir: string, re: RegExp) =>
      assert.rejects(Segment.load(dir), (err: unknown) => {
        assert.ok(err instanceof IndexFormatError, String(err));
        assert.match(err.message, re);
        assert.ok(err.message.includes(dir));
        return true;
      });

    beforeAll(async () => {
      good = await freshDir();
      await Segment.build(points(50), params).writeTo(good);
    });

    it("truncated file", async () => {
      const dir = await damaged((d) => truncate(path.join(d, "vectors.f32"), 100));
      await rejectsWith(dir, /vectors\.f32 is 100 bytes but the manifest says 3200 \(truncated or corrupted\)/);
    });

    it("flipped byte", async () => {
      const dir = await damaged(async (d) => {
        const f = path.join(d, "payloads.json");
        const b = await readFile(f);
        b[b.length >> 1]! ^= 0x01;
        await writeFile(f, b);
      });
      await rejectsWith(dir, /payloads\.json checksum mismatch/);
    });

    it("missing manifest (an incomplete build)", async () => {
      const dir = await damaged((d) => rm(path.join(d, "manifest.json")));
      await rejectsWith(dir, /no manifest\.json/);
    });

    it("missing data file", async () => {
      const dir = await damaged((d) => rm(path.join(d, "hnsw.bin")));
      await rejectsWith(dir, /missing hnsw\.bin/);
    });

    it("unknown format version", async () => {
      const dir = await damaged(async (d) => {
        const f = path.join(d, "manifest.json");
        const m = JSON.parse(await readFile(f, "utf8"));
        await writeFile(f, JSON.stringify({ ...m, formatVersion: 99 }));
      });
      await rejectsWith(dir, /format version 99 is not supported/);
    });

    it("truncated manifest", async () => {
      const dir = await damaged((d) => truncate(path.join(d, "manifest.json"), 20));
      await rejectsWith(dir, /manifest\.json is not valid JSON/);
    });

    it("a manifest that belongs to another version", async () => {
      await assert.rejects(Segment.load(good, { expectVersion: "v000002" }), /manifest says version v000001, expected v000002/);
    });
  });
});
