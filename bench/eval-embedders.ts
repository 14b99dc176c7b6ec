/**
 * `node dist/bench/eval-embedders.js --embedders DIR_OR_ID,...`: dense-only dev.jsonl figures for static
 * models WITHOUT building an index. Every repository of the dataset (deduplicated as the indexer does) is
 * embedded with each model and ranked brute force (exact, 204k × 128 dot products per query):
 *
 *   - "cosine": the pure dense ranking (comparable with plain BM25: no priors), i.e. what `npm run eval`'s
 *     "cosine alone" row measures, minus HNSW's approximation and the service's filters.
 *
 * `--teacher-slice N` also ranks a slice of N repositories (every judged one plus a seeded random fill, as
 * `npm run eval -- --teacher-slice N` picks it) with each model and with the teacher, USE-lite.
 * An entry of --embedders is a model directory or a model id under DATA_DIR/models/static; the default is
 * every model there. Writes results/eval-embedders.json.
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { readUniqueRecords } from "../src/dataset/reader.js";
import type { RepoRecord } from "../src/dataset/record.js";
import { EmbedPool } from "../src/embed/pool.js";
import { embedTokenized, readStaticModel, tokenizeTexts, vocabIndex, type TokenizedTexts } from "../src/embed/train.js";
import { topKDot } from "../src/eval/brute-force.js";
import { loadEvalQueries, meanMetrics, scoreRanking, type QueryMetrics } from "../src/eval/metrics.js";
import { prepareCorpus } from "../src/corpus/prepare.js";
import { embeddingText } from "../src/corpus/doc-text.js";
import { staticModelsRoot } from "../src/indexer/static-model.js";

const { values } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    dataset: { type: "string" },
    queries: { type: "string" },
    embedders: { type: "string" },
    "teacher-slice": { type: "string" },
    out: { type: "string" },
  },
});
const config = loadConfig({
  ...process.env,
  ...(values["data-dir"] ? { DATA_DIR: values["data-dir"] } : {}),
  ...(values.dataset ? { DATASET: values.dataset } : {}),
});
const queriesFile = values.queries ?? path.resolve(projectRoot, "..", "shared", "eval", "dev.jsonl");

interface Row {
  model: string;
  ranking: string;
  corpus: number;
  queries: number;
  metrics: QueryMetrics;
  perList: Record<string, number>;
  seconds: number;
}

const listOf = (id: string) => id.replace(/-\d+$/, "");

async function modelDirs(): Promise<string[]> {
  const root = staticModelsRoot(config.dataDir);
  if (values.embedders) {
    return values.embedders
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => (existsSync(path.join(s, "model.json")) ? s : path.join(root, s)));
  }
  const names = existsSync(root) ? await readdir(root) : [];
  return names
    .filter((n) => existsSync(path.join(root, n, "model.json")))
    .sort()
    .map((n) => path.join(root, n));
}

async function loadRecords(): Promise<readonly RepoRecord[]> {
  if (!config.dataset) throw new Error("no dataset: pass --dataset PATH or set DATASET");
  return prepareCorpus((await readUniqueRecords(config.dataset)).records).records;
}

function fmt(r: Row): string {
  const m = r.metrics;
  return `| ${r.model} | ${r.ranking} | ${m.ndcg10.toFixed(3)} | ${m.recall10.toFixed(3)} | ${m.recall50.toFixed(3)} | ${m.mrr.toFixed(3)} |`;
}

/** Ranks `records` for each query by cosine with vectors `docs`. */
function rank(
  model: string,
  docs: Float32Array,
  dims: number,
  records: readonly RepoRecord[],
  qs: readonly { id: string; query: string; rel: Set<string>; vec: Float32Array }[],
): Row[] {
  const t0 = performance.now();
  const cos: QueryMetrics[] = [];
  const lists = new Map<string, QueryMetrics[]>();
  for (const q of qs) {
    const top = topKDot(docs, dims, q.vec, 50);
    const keys = Array.from(top.rows.subarray(0, 50), (i) => records[i]!.key);
    const mc = scoreRanking(keys, q.rel);
    cos.push(mc);
    const l = listOf(q.id);
    lists.set(l, [...(lists.get(l) ?? []), mc]);
  }
  const seconds = (performance.now() - t0) / 1000;
  const perList = Object.fromEntries([...lists].map(([k, v]) => [k, meanMetrics(v).ndcg10]));
  return [{ model, ranking: "cosine", corpus: records.length, queries: qs.length, metrics: meanMetrics(cos), perList, seconds }];
}

async function main(): Promise<void> {
  const dirs = await modelDirs();
  if (dirs.length === 0) throw new Error(`no static models given or found under ${staticModelsRoot(config.dataDir)}`);
  const t0 = performance.now();
  const records = await loadRecords();
  const texts = records.map((r) => embeddingText(r));
  const present = new Set(records.map((r) => r.key));
  const all = await loadEvalQueries(queriesFile);
  const queries = all.map((q) => ({ ...q, rel: new Set(q.relevant.filter((k) => present.has(k))) })).filter((q) => q.rel.size > 0);
  console.error(`read ${records.length} repositories and ${queries.length} queries in ${((performance.now() - t0) / 1000).toFixed(1)}s`);

  // Slice (optional): every judged repository plus a seeded random fill, picked as bench/eval.ts does.
  const sliceSize = values["teacher-slice"] ? Number(values["teacher-slice"]) : 0;
  let sliceIdx: number[] = [];
  if (sliceSize > 0) {
    const judged = new Set(all.flatMap((q) => q.relevant));
    sliceIdx = records.flatMap((r, i) => (judged.has(r.key) ? [i] : []));
    const rest = records.flatMap((r, i) => (judged.has(r.key) ? [] : [i]));
    let seed = 42;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 1) / 0x80000000;
    const picked = new Set<number>();
    while (sliceIdx.length < sliceSize && picked.size < rest.length) {
      const i = Math.floor(rnd() * rest.length);
      if (!picked.has(i)) {
        picked.add(i);
        sliceIdx.push(rest[i]!);
      }
    }
  }
  const sliceRecords = sliceIdx.map((i) => records[i]!);
  const sliceKeys = new Set(sliceRecords.map((r) => r.key));
  const sliceQueries = all.map((q) => ({ ...q, rel: new Set(q.relevant.filter((k) => sliceKeys.has(k))) })).filter((q) => q.rel.size > 0);

  const rows: Row[] = [];
  const sliceRows: Row[] = [];
  const tokenCache = new Map<string, { docs: TokenizedTexts; queries: TokenizedTexts }>();
  for (const dir of dirs) {
    const te = performance.now();
    const model = await readStaticModel(dir);
    const name = `static:${model.meta.modelId}`;
    const vocabKey = model.vocab.join("\n");
    let tok = tokenCache.get(vocabKey);
    if (!tok) {
      const index = vocabIndex(model.vocab);
      tok = {
        docs: tokenizeTexts(texts, index),
        queries: tokenizeTexts(
          all.map((q) => q.query),
          index,
        ),
      };
      tokenCache.set(vocabKey, tok);
    }
    const d = model.meta.dims;
    const docVecs = embedTokenized(model.vectors, d, tok.docs);
    const qVecs = embedTokenized(model.vectors, d, tok.queries);
    const vecOf = new Map(all.map((q, i) => [q.id, qVecs.subarray(i * d, (i + 1) * d)]));
    const got = rank(
      name,
      docVecs,
      d,
      records,
      queries.map((q) => ({ ...q, vec: vecOf.get(q.id)! })),
    );
    rows.push(...got);
    if (sliceSize > 0) {
      const sliceVecs = new Float32Array(sliceIdx.length * d);
      sliceIdx.forEach((i, k) => sliceVecs.set(docVecs.subarray(i * d, (i + 1) * d), k * d));
      sliceRows.push(
        ...rank(
          name,
          sliceVecs,
          d,
          sliceRecords,
          sliceQueries.map((q) => ({ ...q, vec: vecOf.get(q.id)! })),
        ),
      );
    }
    console.error(`${name}: ${((performance.now() - te) / 1000).toFixed(1)}s`);
    for (const r of got) console.error(fmt(r));
  }
  if (sliceSize > 0) {
    const teacher = await EmbedPool.create({ kind: "use-lite" }, { workers: cpus().length, batchSize: 32 });
    try {
      const d = teacher.dims;
      const flat = (vs: Float32Array[]) => {
        const m = new Float32Array(vs.length * d);
        vs.forEach((v, i) => m.set(v, i * d));
        return m;
      };
      const docVecs = flat(await teacher.embed(sliceRecords.map((r) => embeddingText(r))));
      const qVecs = await teacher.embed(sliceQueries.map((q) => q.query));
      sliceRows.push(
        ...rank(
          `${teacher.id} (teacher)`,
          docVecs,
          d,
          sliceRecords,
          sliceQueries.map((q, i) => ({ ...q, vec: qVecs[i]! })),
        ),
      );
    } finally {
      await teacher.close();
    }
  }

  console.log(`\ndense-only, brute force over all ${records.length.toLocaleString("en-US")} repositories; ${queries.length} dev queries`);
  console.log("| model | ranking | nDCG@10 | Recall@10 | Recall@50 | MRR |\n|---|---|---:|---:|---:|---:|");
  for (const r of rows) console.log(fmt(r));
  if (sliceSize > 0) {
    console.log(`\nsame ${sliceRecords.length}-repository slice (all judged + seeded fill); ${sliceQueries.length} queries`);
    console.log("| model | ranking | nDCG@10 | Recall@10 | Recall@50 | MRR |\n|---|---|---:|---:|---:|---:|");
    for (const r of sliceRows) console.log(fmt(r));
  }
  const out = values.out ?? path.join(projectRoot, "results", "eval-embedders.json");
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(
    out,
    JSON.stringify(
      {
        benchmark: "eval-embedders",
        date: new Date().toISOString(),
        dataset: config.dataset,
        queriesFile,
        models: dirs,
        full: rows,
        slice: sliceSize ? { size: sliceRecords.length, rows: sliceRows } : null,
      },
      null,
      2,
    ) + "\n",
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
