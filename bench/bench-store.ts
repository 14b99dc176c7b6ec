/**
 * `npm run bench:store`: load time, RSS, and per-filter latency and recall@10 of the embedded store.
 *
 *   node dist/bench/bench-store.js [--data-dir ./data] [--queries 500] [--out results/bench-store.json]
 *   node dist/bench/bench-store.js --synthetic 20000 [--keep]   # first build a temp index: real payloads, random vectors
 *
 * Query vectors are the dev.jsonl queries embedded with the index's own embedder; when that embedder
 * cannot be loaded, stored vectors of random rows plus noise stand in (and the output says so).
 * Recall@10 compares each HNSW answer with `exact: true` under the same filter.
 */
import { seededRandom } from "../src/common/random.js";
import { spawnSync } from "node:child_process";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createGunzip } from "node:zlib";
import { pointIdFor } from "../src/common/hash.js";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot, type Config } from "../src/config/config.js";
import { CATEGORIES, type Category, type RepoPayload } from "../src/dataset/record.js";
import type { Filter } from "../src/store/filter.js";
import { EmbeddedStore, embeddedStoreOptionsFromConfig } from "../src/store/embedded/store.js";
import type { Segment } from "../src/store/embedded/segment.js";
import type { Point } from "../src/store/types.js";

const { values } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    queries: { type: "string", default: "500" },
    out: { type: "string", default: path.join("results", "bench-store.json") },
    synthetic: { type: "string" },
    dims: { type: "string", default: "256" },
    "eval-file": { type: "string" },
    keep: { type: "boolean", default: false },
    "build-only": { type: "boolean", default: false },
  },
});

const LIMIT = 10;
const DEFAULT_CATEGORIES: Category[] = CATEGORIES.filter((c) => c !== "educational" && c !== "curated-list");

// -- small utilities ----------------------------------------------------------------------------

const rng = seededRandom;
function gaussian(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}
function normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s) || 1;
  for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const mib = (bytes: number) => round(bytes / 2 ** 20, 1);

function evalFile(): string {
  const candidates = [values["eval-file"], path.resolve(projectRoot, "..", "shared", "eval", "dev.jsonl")];
  for (const c of candidates) if (c && existsSync(c)) return c;
  throw new Error("dev.jsonl not found: pass --eval-file");
}

function queryTexts(): string[] {
  return readFileSync(evalFile(), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => (JSON.parse(l) as { query: string }).query);
}

// -- synthetic index (until a real one exists) --------------------------------------------------

function payloadFromRaw(raw: Record<string, unknown>, category: Category | null): RepoPayload {
  const name = String(raw.name);
  const language = (raw.language as string | null) ?? null;
  return {
    key: name.toLowerCase(),
    name,
    url: (raw.url as string | null) ?? null,
    description: (raw.description as string | null) ?? null,
    stars: (raw.stars as number | null) ?? null,
    forks: (raw.forks as number | null) ?? null,
    language,
    topics: [...new Set(((raw.topics as string[] | null) ?? []).map((t) => t.toLowerCase()))],
    pushedAt: (raw.pushedAt as string | null) ?? null,
    isArchived: (raw.isArchived as boolean | null) ?? null,
    homepage: (raw.homepage as string | null) ?? null,
    license: (raw.license as string | null) ?? null,
    createdAt: (raw.createdAt as string | null) ?? null,
    readme: (raw.readme as string | null) ?? null,
    tree: (raw.tree as string[] | null) ?? null,
    llmsTxtPaths: (raw.llmsTxtPaths as string[] | null) ?? null,
    aliases: [],
    aliasKeys: [],
    anchor: null,
    mentions: 0,
    lastSeen: (raw.lastSeen as string | null) ?? null,
    languageLc: language?.toLowerCase() ?? null,
    category,
    hash: `synthetic:${name}`,
  };
}

/** Real payloads (every k-th record of the dataset) with clustered random unit vectors. */
async function buildSynthetic(config: Config, count: number, dims: number): Promise<number> {
  const dataset = config.dataset;
  if (!dataset) throw new Error("--synthetic needs the dataset (DATASET or ../shared/data/repos.jsonl.gz)");
  const total = 204_339;
  const stride = Math.max(1, Math.floor(total / count));
  const r = rng(7);
  const centroids = Array.from({ length: 64 }, () => normalize(new Float32Array(dims).map(() => gaussian(r))));
  const points: Point[] = [];
  const seen = new Set<string>();
  let line = 0;
  const rl = createInterface({ input: createReadStream(dataset).pipe(createGunzip()), crlfDelay: Infinity });
  for await (const text of rl) {
    if (line++ % stride !== 0 || points.length >= count || !text.trim()) continue;
    const raw = JSON.parse(text) as Record<string, unknown>;
    const category = r() < 0.2 ? null : CATEGORIES[Math.floor(r() * CATEGORIES.length)]!;
    const payload = payloadFromRaw(raw, category);
    if (seen.has(payload.key)) continue;
    seen.add(payload.key);
    const c = centroids[Math.floor(r() * centroids.length)]!;
    const v = new Float32Array(dims);
    for (let i = 0; i < dims; i++) v[i] = c[i]! + (1.2 / Math.sqrt(dims)) * gaussian(r);
    points.push({ id: pointIdFor(payload.key), vector: normalize(v), payload });
  }
  const store = await EmbeddedStore.open(embeddedStoreOptionsFromConfig(config));
  const writer = await store.openWriter({ writerId: "bench", dims, embedderId: `synthetic-random:${dims}` });
  const t0 = performance.now();
  for (let i = 0; i < points.length; i += 4096) await writer.upsert(points.slice(i, i + 4096));
  let last = "";
  await writer.commit({
    onProgress: (stage, done, total) => {
      if (stage !== last || done === total) process.stdout.write(`\r  commit: ${stage} ${done}/${total}          `);
      last = stage;
    },
  });
  process.stdout.write("\n");
  await store.close();
  return (performance.now() - t0) / 1000;
}

// -- query vectors ------------------------------------------------------------------------------

async function queryVectors(config: Config, seg: Segment, texts: string[], n: number): Promise<{ vectors: Float32Array[]; source: string }> {
  try {
    const { loadQueryEmbedder } = await import("../src/embed/factory.js");
    const embedder = await loadQueryEmbedder(config, seg.embedderId);
    try {
      const embedded = await embedder.embed(texts);
      if (embedded[0]?.length !== seg.dims) throw new Error(`embedder gives ${embedded[0]?.length} dims, index has ${seg.dims}`);
      return { vectors: Array.from({ length: n }, (_, i) => embedded[i % embedded.length]!), source: `dev.jsonl queries embedded with ${embedder.id}` };
    } finally {
      await embedder.close();
    }
  } catch (err) {
    const r = rng(11);
    const vectors = Array.from({ length: n }, () => {
      const row = Math.floor(r() * seg.count);
      const v = Float32Array.from(seg.vectorOf(row));
      // Noise of norm ~0.75 around a unit vector: cosine ≈ 0.8 to the row it came from.
      for (let i = 0; i < v.length; i++) v[i]! += (0.75 / Math.sqrt(v.length)) * gaussian(r);
      return normalize(v);
    });
    return { vectors, source: `FALLBACK: stored vectors of random rows plus noise (query embedder unavailable: ${(err as Error).message})` };
  }
}

// -- filters ------------------------------------------------------------------------------------

function topValues(seg: Segment, field: "languageLc" | "topics", k: number): string[] {
  const counts = new Map<string, number>();
  for (const p of seg.payloads) {
    const vals = field === "topics" ? p.topics : p.languageLc ? [p.languageLc] : [];
    for (const v of vals) counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([v]) => v);
}

type FilterMaker = (q: number, vector: Float32Array) => Promise<Filter | undefined> | Filter | undefined;

function filterMakers(store: EmbeddedStore, seg: Segment): [string, FilterMaker][] {
  const languages = topValues(seg, "languageLc", 12);
  const topics = topValues(seg, "topics", 30);
  const starBands = [{ gte: 100 }, { gte: 1000 }, { gte: 10_000 }, { gte: 50, lte: 500 }];
  const forkBands = [{ gte: 10 }, { gte: 100 }, { gte: 1000 }];
  const explicit: Category[][] = [["library"], ["tool", "application"], ["ai-ml", "agent"], ["curated-list"], ["frontend", "framework"]];
  const yearAgo = new Date(Date.now() - 365.25 * 24 * 3600 * 1000).toISOString();
  return [
    ["unfiltered", () => undefined],
    ["stars range", (q) => ({ must: [{ key: "stars", range: starBands[q % starBands.length]! }] })],
    ["forks range", (q) => ({ must: [{ key: "forks", range: forkBands[q % forkBands.length]! }] })],
    ["language", (q) => ({ must: [{ key: "languageLc", match: { value: languages[q % languages.length]! } }] })],
    ["topics", (q) => ({ must: [{ key: "topics", match: { any: [topics[q % topics.length]!, topics[(q * 7 + 3) % topics.length]!] } }] })],
    ["categories default", () => ({ should: [{ key: "category", match: { any: [...DEFAULT_CATEGORIES] } }, { is_null: { key: "category" } }] })],
    ["categories explicit", (q) => ({ must: [{ key: "category", match: { any: explicit[q % explicit.length]! } }] })],
    ["isArchived", () => ({ must_not: [{ key: "isArchived", match: { value: true } }] })],
    ["pushedAt 12 months", () => ({ must: [{ key: "pushedAt", datetime_range: { gte: yearAgo } }] })],
    [
      // The 50 nearest repositories excluded: the hardest case for a filtered graph walk.
      "excludeRepos (50)",
      async (_q, vector) => {
        const near = await store.denseSearch({ vector, limit: 50, exact: true });
        return { must_not: [{ key: "key", match: { any: near.map((h) => h.payload.key) } }] };
      },
    ],
  ];
}

// -- main ---------------------------------------------------------------------------------------

interface FilterResult {
  filter: string;
  queries: number;
  matchingAvg: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  meanMs: number;
  recallAt10: number;
}

async function main(): Promise<void> {
  setLogLevel("warn");
  const nQueries = Number(values.queries);
  if (!Number.isInteger(nQueries) || nQueries < 1) throw new Error("--queries must be a positive integer");
  // Like bench:search and eval: --data-dir, else DATA_DIR, else ./data (a synthetic run without --data-dir uses a temp dir).
  let dataDir = path.resolve(values["data-dir"] ?? process.env.DATA_DIR ?? "./data");
  let tempDir: string | null = null;
  let buildSeconds: number | null = null;
  if (values["build-only"]) {
    buildSeconds = await buildSynthetic(loadConfig({ ...process.env, DATA_DIR: dataDir }), Number(values.synthetic), Number(values.dims));
    console.log(`  built in ${buildSeconds.toFixed(1)} s`);
    return;
  }
  if (values.synthetic) {
    const count = Number(values.synthetic);
    if (!Number.isInteger(count) || count < 1) throw new Error("--synthetic must be a positive integer");
    if (!values["data-dir"]) dataDir = tempDir = await mkdtemp(path.join(tmpdir(), "reposearch-bench-store-"));
    console.log(`building a synthetic index of ${count} points in ${dataDir} …`);
    // In a child process, so the load time and RSS measured below start from a clean process.
    const t0 = performance.now();
    const args = [fileURLToPath(import.meta.url), "--build-only", "--synthetic", String(count), "--dims", values.dims!, "--data-dir", dataDir];
    const child = spawnSync(process.execPath, args, { stdio: "inherit" });
    if (child.status !== 0) throw new Error(`synthetic build failed (exit ${child.status})`);
    buildSeconds = (performance.now() - t0) / 1000;
  }
  try {
    const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    const store = await EmbeddedStore.open(embeddedStoreOptionsFromConfig(config));
    const loadMs = performance.now() - t0;
    const rss = process.memoryUsage().rss;
    const info = await store.info();
    const seg = store.currentSegment();
    if (!seg || info.version === null) throw new Error(`no published index under ${dataDir}/index (build one, or pass --synthetic N)`);
    console.log(`loaded ${info.version}: ${info.count} points × ${info.dims} dims (${info.embedderId}) in ${loadMs.toFixed(0)} ms; RSS ${mib(rss)} MiB`);

    const texts = queryTexts();
    const { vectors, source } = await queryVectors(config, seg, texts, nQueries);
    console.log(`query vectors: ${source}`);

    // Warm-up (JIT, page cache) outside the measurements.
    for (let i = 0; i < 20; i++) await store.denseSearch({ vector: vectors[i % vectors.length]!, limit: LIMIT });

    const results: FilterResult[] = [];
    for (const [name, make] of filterMakers(store, seg)) {
      const lat: number[] = [];
      let recallSum = 0;
      let recallN = 0;
      let matching = 0;
      for (let q = 0; q < nQueries; q++) {
        const vector = vectors[q]!;
        const filter = await make(q, vector);
        const t = performance.now();
        const hits = await store.denseSearch({ vector, filter, limit: LIMIT });
        lat.push(performance.now() - t);
        const exact = await store.denseSearch({ vector, filter, limit: LIMIT, exact: true });
        if (exact.length > 0) {
          // As ann-benchmarks counts it: a hit is correct when it is one of the exact top k or scores as
          // high as the k-th of them. Repositories with identical texts have identical vectors, and which
          // of several tied rows fills the last place is arbitrary.
          const truth = new Set(exact.map((h) => h.id));
          const kth = exact[exact.length - 1]!.score - 1e-6;
          recallSum += Math.min(1, hits.filter((h) => truth.has(h.id) || h.score >= kth).length / exact.length);
          recallN++;
        }
        if (q < 50) matching += await store.count(filter);
      }
      lat.sort((a, b) => a - b);
      const row: FilterResult = {
        filter: name,
        queries: nQueries,
        matchingAvg: Math.round(matching / Math.min(50, nQueries)),
        p50Ms: round(percentile(lat, 50)),
        p95Ms: round(percentile(lat, 95)),
        p99Ms: round(percentile(lat, 99)),
        meanMs: round(lat.reduce((s, x) => s + x, 0) / lat.length),
        recallAt10: round(recallN ? recallSum / recallN : 1, 4),
      };
      results.push(row);
      console.log(`  ${name}: p50 ${row.p50Ms} ms, p95 ${row.p95Ms} ms, recall@10 ${row.recallAt10}`);
    }

    const lexLat: number[] = [];
    for (let q = 0; q < Math.max(nQueries, texts.length); q++) {
      const t = performance.now();
      await store.lexicalSearch({ text: texts[q % texts.length]!, limit: LIMIT });
      lexLat.push(performance.now() - t);
    }
    lexLat.sort((a, b) => a - b);
    const lexical = {
      queries: lexLat.length,
      p50Ms: round(percentile(lexLat, 50)),
      p95Ms: round(percentile(lexLat, 95)),
      p99Ms: round(percentile(lexLat, 99)),
      meanMs: round(lexLat.reduce((s, x) => s + x, 0) / lexLat.length),
    };

    console.log("");
    console.log(`| filter | matching (avg) | p50 ms | p95 ms | p99 ms | mean ms | recall@10 |`);
    console.log(`|---|---:|---:|---:|---:|---:|---:|`);
    for (const r of results) {
      console.log(`| ${r.filter} | ${r.matchingAvg} | ${r.p50Ms} | ${r.p95Ms} | ${r.p99Ms} | ${r.meanMs} | ${r.recallAt10} |`);
    }
    console.log(`| lexical (BM25F, unfiltered) | – | ${lexical.p50Ms} | ${lexical.p95Ms} | ${lexical.p99Ms} | ${lexical.meanMs} | – |`);
    console.log(
      `\nload ${loadMs.toFixed(0)} ms, RSS after load ${mib(rss)} MiB (+${mib(rss - rss0)} MiB); efSearch ${config.store.hnswEfSearch}, fullScanThreshold ${config.store.fullScanThreshold}`,
    );

    const out = {
      benchmark: "store",
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? "unknown",
      cores: cpus().length,
      dataDir: tempDir ? null : dataDir,
      synthetic: values.synthetic ? { points: info.count, buildSeconds: buildSeconds && round(buildSeconds, 1) } : null,
      index: info,
      settings: {
        efSearch: config.store.hnswEfSearch,
        fullScanThreshold: config.store.fullScanThreshold,
        m: seg.hnswParams?.m ?? null,
        efConstruction: seg.hnswParams?.efConstruction ?? null,
      },
      loadMs: Math.round(loadMs),
      rssAfterLoadMiB: mib(rss),
      rssLoadDeltaMiB: mib(rss - rss0),
      queryVectors: source,
      limit: LIMIT,
      dense: results,
      lexical,
    };
    const outFile = path.resolve(values.out!);
    await mkdir(path.dirname(outFile), { recursive: true });
    await writeFile(outFile, JSON.stringify(out, null, 2) + "\n");
    console.log(`wrote ${outFile}`);
    await store.close();
  } finally {
    if (tempDir && !values.keep) await rm(tempDir, { recursive: true, force: true });
    else if (tempDir) console.log(`kept the synthetic index in ${tempDir}`);
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
