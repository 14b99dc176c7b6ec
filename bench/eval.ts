/**
 * `npm run eval`: dev.jsonl through the published index. Prints nDCG@10, Recall@10, Recall@50 and MRR for
 * lexical-only (BM25F) and dense-only retrieval, searched with no filters (all categories, archived
 * included, as the eval README prescribes), and writes results/eval.json.
 *
 * `--teacher-slice N` also compares the index's embedder with its teacher (USE-lite) on the same slice of
 * N repositories (every judged repository plus a seeded random fill), because the teacher is far too slow
 * to embed the whole dataset (see README, "Embedders").
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { openSource, readDataset } from "../src/dataset/reader.js";
import type { RepoRecord } from "../src/dataset/record.js";
import { loadQueryEmbedder } from "../src/embed/factory.js";
import { EmbedPool } from "../src/embed/pool.js";
import type { Embedder } from "../src/embed/types.js";
import { loadEvalQueries, meanMetrics, scoreRanking, type QueryMetrics } from "../src/eval/metrics.js";
import { embeddingText } from "../src/indexer/doc-text.js";
import { embeddedStoreFromConfig } from "../src/store/embedded/store.js";
import type { ScoredPoint } from "../src/store/types.js";
import { DENSE_CANDIDATES, fuse, fusionProfileFor, fusionWeights, LEXICAL_CANDIDATES, SearchEngine, type FusionProfile, type FusionWeights } from "../src/core/engine.js";
import { understandQuery } from "../src/core/query.js";
import { createReranker } from "../src/core/rerank/factory.js";
import { createLocalReranker } from "../src/core/rerank/local.js";
import type { Reranker } from "../src/core/rerank/types.js";

const { values } = parseArgs({
  options: { "data-dir": { type: "string" }, queries: { type: "string" }, "teacher-slice": { type: "string" }, tune: { type: "boolean" }, "write-fusion": { type: "boolean" } },
});
const config = loadConfig({ ...process.env, ...(values["data-dir"] ? { DATA_DIR: values["data-dir"] } : {}) });
const queriesFile = values.queries ?? path.resolve(projectRoot, "..", "shared", "eval", "dev.jsonl");

interface Row {
  method: string;
  metrics: QueryMetrics;
  p50Ms: number;
  p99Ms?: number;
  queries: number;
}

/** The curated list a dev query was judged by: its id without the trailing counter. */
function listOf(id: string): string {
  return id.replace(/-\d+$/, "");
}

function engineFor(retrievers: { lexical: boolean; dense: boolean }, fusion: FusionWeights, reranker: Reranker | null, understanding = true): SearchEngine {
  return SearchEngine.fromConfig(config, storeRef!, { retrievers, fusion, reranker, rerankTimeoutMs: 10_000, understanding });
}
let storeRef: Awaited<ReturnType<typeof embeddedStoreFromConfig>> | null = null;


/**
 * Fusion-weight search with leave-one-list-out cross-validation: for each curated list, weights are
 * fitted on the other lists' queries and scored on the held-out list, so no list judges its own fit.
 */
async function tune(store: Awaited<ReturnType<typeof embeddedStoreFromConfig>>, embedder: Embedder, profile: FusionProfile, queries: { id: string; query: string; rel: Set<string> }[]): Promise<void> {
  const cached = [] as { list: string; rel: Set<string>; lex: ScoredPoint[]; dense: ScoredPoint[]; u: ReturnType<typeof understandQuery> }[];
  for (const q of queries) {
    const [v] = await embedder.embed([q.query]);
    cached.push({
      list: listOf(q.id),
      rel: q.rel,
      lex: await store.lexicalSearch({ text: q.query, limit: LEXICAL_CANDIDATES }),
      dense: await store.denseSearch({ vector: v!, limit: DENSE_CANDIDATES }),
      u: understandQuery(q.query),
    });
  }
  const grid: FusionWeights[] = [];
  for (const dense of [0, 0.03, 0.06, 0.1, 0.15, 0.25, 0.35, 0.5])
    for (const stars of [0.2, 0.3, 0.45, 0.6])
      for (const language of [0.05, 0.1, 0.2])
        for (const category of [0, 0.05]) grid.push({ lexical: 1, dense, stars, language, category });
  const score = (w: FusionWeights, subset: typeof cached) =>
    meanMetrics(subset.map((c) => scoreRanking(fuse(c.lex, c.dense, c.u, w).slice(0, 50).map((x) => x.payload.key), c.rel)));
  const lists = [...new Set(cached.map((c) => c.list))];
  const heldOut: QueryMetrics[] = [];
  for (const list of lists) {
    const train = cached.filter((c) => c.list !== list);
    let best = grid[0]!;
    let bestN = -1;
    for (const w of grid) {
      const n = score(w, train).ndcg10;
      if (n > bestN) [best, bestN] = [w, n];
    }
    const test = cached.filter((c) => c.list === list);
    const m = score(best, test);
    for (const _ of test) heldOut.push(m);
    console.log(`  held-out ${list}: nDCG@10 ${m.ndcg10.toFixed(3)} with ${JSON.stringify(best)}`);
  }
  let best = grid[0]!;
  let bestN = -1;
  for (const w of grid) {
    const n = score(w, cached).ndcg10;
    if (n > bestN) [best, bestN] = [w, n];
  }
  const heldOutN = meanMetrics(heldOut).ndcg10;
  console.log(`tune: leave-one-list-out nDCG@10 ${heldOutN.toFixed(3)} (query-weighted); fit on all: ${bestN.toFixed(3)} with ${JSON.stringify(best)}; current ${profile} profile ${score(fusionWeights(profile), cached).ndcg10.toFixed(3)}`);
  if (values["write-fusion"]) {
    const file = path.join(projectRoot, "src", "core", "fusion-weights.json");
    const info = await store.info();
    // Only the profile of this index's embedder is refitted; the other keeps its own fit.
    const doc = JSON.parse(await readFile(file, "utf8")) as { profiles: Record<string, Record<string, unknown>> };
    doc.profiles[profile] = {
      ...doc.profiles[profile],
      fittedOn: `${path.relative(projectRoot, queriesFile)} (${queries.length} queries, ${lists.length} curated lists), ${info.count.toLocaleString("en-US")}-repository index, embedder ${info.embedderId}`,
      fittedAt: new Date().toISOString().slice(0, 10),
      heldOutNdcg10: Math.round(heldOutN * 1000) / 1000,
      weights: best,
    };
    await writeFile(file, JSON.stringify(doc, null, 2) + "\n");
    console.log(`wrote profile ${profile} of ${path.relative(process.cwd(), file)} (rebuild to use it)`);
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

function printTable(title: string, rows: Row[]): void {
  console.log(`\n${title}\n| method | nDCG@10 | Recall@10 | Recall@50 | MRR | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|`);
  for (const r of rows) {
    const m = r.metrics;
    console.log(`| ${r.method} | ${m.ndcg10.toFixed(3)} | ${m.recall10.toFixed(3)} | ${m.recall50.toFixed(3)} | ${m.mrr.toFixed(3)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms?.toFixed(2) ?? "–"} |`);
  }
}

/** Brute-force dense ranking over a small in-memory slice. */
async function sliceEval(name: string, embedder: Embedder, slice: RepoRecord[], queries: { query: string; rel: Set<string> }[]): Promise<Row> {
  const docVecs = await embedder.embed(slice.map((r) => embeddingText(r)));
  const qVecs = await embedder.embed(queries.map((q) => q.query));
  const per: QueryMetrics[] = [];
  for (let qi = 0; qi < queries.length; qi++) {
    const q = qVecs[qi]!;
    const scored = docVecs.map((d, i) => {
      let s = 0;
      for (let j = 0; j < d.length; j++) s += d[j]! * q[j]!;
      return [s, i] as const;
    });
    scored.sort((a, b) => b[0] - a[0]);
    per.push(scoreRanking(scored.slice(0, 50).map(([, i]) => slice[i]!.key), queries[qi]!.rel));
  }
  return { method: name, metrics: meanMetrics(per), p50Ms: 0, queries: queries.length };
}

async function main(): Promise<void> {
  const store = await embeddedStoreFromConfig(config);
  storeRef = store;
  const info = await store.info();
  if (!info.version || !info.embedderId) throw new Error(`no published index in ${config.dataDir}: run \`npm start\` or \`npx reposearch index\` first`);
  const all = await loadEvalQueries(queriesFile);
  // Only judged repositories present in the index count (eval README).
  const present = new Set<string>();
  const judged = [...new Set(all.flatMap((q) => q.relevant))];
  const { pointIdFor } = await import("../src/common/hash.js");
  const payloads = await store.retrieve(judged.map((k) => pointIdFor(k)));
  payloads.forEach((p, i) => p && present.add(judged[i]!));
  const queries = all.map((q) => ({ ...q, rel: new Set(q.relevant.filter((k) => present.has(k))) })).filter((q) => q.rel.size > 0);

  const embedder = await loadQueryEmbedder(config, info.embedderId);
  // Searched as the eval prescribes: every category, archived included.
  const evalFilters = { categories: [], excludeArchived: false } as const;
  // The weights the server would use for this index: the fitted profile of its embedder.
  const profile = fusionProfileFor(embedder);
  const fusion = fusionWeights(profile);
  console.log(`fusion profile ${profile}: ${JSON.stringify(fusion)}`);
  // The server's reranker when one is configured; otherwise the in-process one, so the ablation
  // always shows what rerank would do (it is off by default because it does not raise nDCG@10).
  const reranker = (await createReranker(config, { local: async () => createLocalReranker() })) ?? createLocalReranker();
  const engines: [string, SearchEngine][] = [
    ["lexical-only (BM25F + priors)", engineFor({ lexical: true, dense: false }, fusion, null)],
    [`dense-only (${info.embedderId})`, engineFor({ lexical: false, dense: true }, fusion, null)],
    ["hybrid − query understanding", engineFor({ lexical: true, dense: true }, fusion, null, false)],
    ["hybrid (default)", engineFor({ lexical: true, dense: true }, fusion, null)],
  ];
  if (reranker) engines.push([`hybrid + rerank (${reranker.id})`, engineFor({ lexical: true, dense: true }, fusion, reranker)]);
  const rows: Row[] = [];
  const perList: Record<string, Record<string, number>> = {};
  for (const [name, engine] of engines) {
    await engine.sync();
    const per: QueryMetrics[] = [];
    const times: number[] = [];
    const lists = new Map<string, QueryMetrics[]>();
    for (const q of queries) {
      const t0 = performance.now();
      const res = await engine.search({ query: q.query, limit: 50, filters: evalFilters });
      times.push(performance.now() - t0);
      const m = scoreRanking(res.results.map((r) => r.name.toLowerCase()), q.rel);
      per.push(m);
      const list = listOf(q.id);
      lists.set(list, [...(lists.get(list) ?? []), m]);
    }
    for (const [list, ms] of lists) (perList[list] ??= {})[name] = meanMetrics(ms).ndcg10;
    rows.push({ method: name, metrics: meanMetrics(per), p50Ms: pct(times, 50), p99Ms: pct(times, 99), queries: queries.length });
  }
  console.log("\nper-list nDCG@10");
  const names = engines.map(([n]) => n);
  console.log(`| list | ${names.join(" | ")} |\n|---|${names.map(() => "---:").join("|")}|`);
  for (const [list, byName] of Object.entries(perList)) console.log(`| ${list} | ${names.map((n) => (byName[n] ?? 0).toFixed(3)).join(" | ")} |`);
  if (values.tune) await tune(store, embedder, profile, queries);
  printTable(`dev.jsonl on ${info.count.toLocaleString("en-US")} repositories (index ${info.version}, ${info.embedderId}); ${queries.length} queries with judged repositories in the index`, rows);

  let sliceRows: Row[] = [];
  const sliceSize = values["teacher-slice"] ? Number(values["teacher-slice"]) : 0;
  if (sliceSize > 0) {
    const records: RepoRecord[] = [];
    for await (const it of readDataset(await openSource(config.dataset!))) if (it.kind === "record") records.push(it.record);
    const rel = new Set(judged);
    const slice = records.filter((r) => rel.has(r.key));
    const rest = records.filter((r) => !rel.has(r.key));
    let seed = 42;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 1) / 0x80000000;
    const picked = new Set<number>();
    while (slice.length < sliceSize && picked.size < rest.length) {
      const i = Math.floor(rnd() * rest.length);
      if (!picked.has(i)) {
        picked.add(i);
        slice.push(rest[i]!);
      }
    }
    const keys = new Set(slice.map((r) => r.key));
    const sq = all.map((q) => ({ query: q.query, rel: new Set(q.relevant.filter((k) => keys.has(k))) })).filter((q) => q.rel.size > 0);
    sliceRows.push(await sliceEval(`dense ${embedder.id}`, embedder, slice, sq));
    const teacher = await EmbedPool.create({ kind: "use-lite" }, { workers: cpus().length, batchSize: 32 });
    sliceRows.push(await sliceEval(`dense ${teacher.id} (teacher)`, teacher, slice, sq));
    await teacher.close();
    printTable(`same-slice comparison: ${slice.length} repositories (all judged ones + seeded random fill), ${sq.length} queries`, sliceRows);
  }
  await embedder.close();
  await store.close();

  const result = { benchmark: "eval", date: new Date().toISOString(), index: info, queriesFile, fusion, full: rows, perList, teacherSlice: sliceSize ? { size: sliceSize, rows: sliceRows } : null };
  await mkdir(path.join(projectRoot, "results"), { recursive: true });
  await writeFile(path.join(projectRoot, "results", "eval.json"), JSON.stringify(result, null, 2) + "\n");
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
