/**
 * The batch indexer: dataset → validate/normalise → dedupe keys → one record per project and its corpus
 * evidence (src/corpus) → shard slice → diff against the store by content hash → embed + classify only
 * what changed → durable upserts (checkpoints) → deletes → atomic publish. Re-running after a kill
 * resumes from the store writer's checkpoints.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { ReposearchError, ErrorCode } from "../common/errors.js";
import { fnv1a32, pointIdFor, sha256Hex } from "../common/hash.js";
import type { Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { createClassifier } from "../classify/classifier.js";
import { openSource, readUniqueRecords } from "../dataset/reader.js";
import type { RepoRecord } from "../dataset/record.js";
import { CORPUS_RECIPE, evidenceOf, prepareCorpus, toPayload, type CorpusEvidence } from "../corpus/prepare.js";
import { EmbedPool } from "../embed/pool.js";
import { specFromConfig } from "../embed/factory.js";
import type { Embedder } from "../embed/types.js";
import type { Point, VectorStore } from "../store/types.js";
import { DOC_TEXT_VERSION, embeddingText } from "../corpus/doc-text.js";
import type { Progress } from "./progress.js";
import { DEFAULT_TRAIN_CONFIG } from "../embed/train.js";
import { ensureStaticModel } from "./static-model.js";

export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** Parses "I/N" (0 ≤ I < N). */
export function parseShard(s: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(s.trim());
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || !(count >= 1) || !(index >= 0) || index >= count) {
    throw new ReposearchError(ErrorCode.ValidationError, `--shard must be I/N with 0 <= I < N (got ${JSON.stringify(s)})`);
  }
  return { index, count };
}

/**
 * Deterministic slice: a repository belongs to exactly one shard, on every machine and every run. It is
 * decided on the point id (itself a hash of the key), so a shard can tell which stored points are its own
 * without reading their payloads.
 */
export function inShard(pointId: string, shard: Shard | null): boolean {
  return shard === null || fnv1a32(pointId) % shard.count === shard.index;
}

export interface IndexOptions {
  readonly config: Config;
  readonly store: VectorStore;
  readonly dataset: string;
  readonly limit?: number | undefined;
  readonly shard?: Shard | null | undefined;
  /** Distil a new static model even when one is active (re-embeds everything). */
  readonly retrainEmbedder?: boolean | undefined;
  readonly logger: Logger;
  readonly progress: Progress;
}

export interface Reject {
  readonly line: number;
  readonly reason: string;
}

export interface IndexReport {
  readonly dataset: string;
  readonly shard: string | null;
  readonly linesRead: number;
  readonly valid: number;
  readonly rejected: number;
  readonly rejects: readonly Reject[];
  readonly duplicates: number;
  /** Records merged into another project's record as its aliases (renamed, moved, mirrored). */
  readonly aliasesMerged: number;
  /** Projects with corpus evidence (an anchor text). */
  readonly projectsWithAnchors: number;
  readonly inSlice: number;
  readonly unchanged: number;
  readonly embedded: number;
  readonly deleted: number;
  readonly embedderId: string;
  readonly classifierId: string;
  readonly version: string | null;
  readonly published: boolean;
  readonly seconds: Record<string, number>;
  readonly reportFile: string;
}

const REJECTS_KEPT_IN_REPORT = 1000;

/**
 * Everything that determines a point: the record, its corpus evidence (which other records change), how
 * its text is built, classified and embedded.
 */
export function contentHash(r: RepoRecord, evidence: CorpusEvidence, classifierId: string, embedderId: string): string {
  return sha256Hex(JSON.stringify([DOC_TEXT_VERSION, CORPUS_RECIPE, classifierId, embedderId, r, evidence]));
}

export async function runIndex(o: IndexOptions): Promise<IndexReport> {
  const { config, logger, progress } = o;
  const shard = o.shard ?? null;
  const seconds: Record<string, number> = {};
  const t0 = Date.now();
  let lap = t0;
  const mark = (name: string) => {
    const now = Date.now();
    seconds[name] = (now - lap) / 1000;
    lap = now;
  };

  // 1. Read, validate, normalise, dedupe keys (newest snapshot wins).
  const source = await openSource(o.dataset);
  const rejects: Reject[] = [];
  let rejected = 0;
  let linesRead = 0;
  let valid = 0;
  progress.start("read", source.totalBytes ?? 0);
  const { records: unique, duplicates } = await readUniqueRecords(source, {
    limit: o.limit,
    onItem: (item) => {
      linesRead = item.line;
      if (item.kind === "reject") {
        rejected++;
        if (rejects.length < REJECTS_KEPT_IN_REPORT) rejects.push({ line: item.line, reason: item.reason });
      } else if ((++valid & 4095) === 0) progress.update(source.bytesRead());
    },
  });
  progress.update(source.bytesRead(), source.bytesRead());
  progress.finish();
  if (rejected > 0) {
    logger.warn("dataset lines rejected", { rejected, first: rejects.slice(0, 10).map((r) => `line ${r.line}: ${r.reason}`) });
  }
  mark("read");
  const corpus = prepareCorpus(unique);
  const all = corpus.records;
  const records = all.filter((r) => inShard(pointIdFor(r.key), shard));
  mark("corpus");
  logger.info("dataset read", { linesRead, valid, rejected, duplicates, unique: unique.length, projects: all.length, inSlice: records.length });
  logger.info("corpus prepared", { ...corpus.stats, seconds: seconds.corpus });

  // 2. The embedder. A static model is distilled from the whole dataset (not just this shard's slice),
  //    so every shard derives the very same model and their vectors share one space.
  const ek = config.embedder;
  let staticDir: string | undefined;
  if (ek.kind === "static") {
    staticDir = await ensureStaticModel({
      dataDir: config.dataDir,
      records: all,
      vocabSize: ek.staticVocabSize,
      dims: ek.staticDims,
      workers: ek.workers,
      retrain: Boolean(o.retrainEmbedder),
      train: ek.staticTrainEpochs > 0 ? { ...DEFAULT_TRAIN_CONFIG, epochs: ek.staticTrainEpochs, patience: ek.staticTrainPatience } : null,
      trainThreads: ek.staticTrainThreads,
      logger,
      progress,
    });
  }
  mark("model");
  const spec = specFromConfig(config, staticDir);
  // http embedders parallelise on the server side; everything else runs on a local worker pool.
  const embedder: Embedder =
    spec.kind === "http"
      ? await (await import("../embed/factory.js")).createEmbedder(spec)
      : await EmbedPool.create(spec, { workers: ek.workers, batchSize: ek.batchSize });
  try {
    const classifier = await createClassifier(embedder);

    // 3. Diff against what the store (published + this writer's checkpoints) already holds.
    const writerId = shard ? `shard-${shard.index}-of-${shard.count}` : "main";
    const writer = await o.store.openWriter({ writerId, dims: embedder.dims, embedderId: embedder.id });
    const existing = await writer.hashes();
    const wanted = new Map<string, { r: RepoRecord; hash: string }>();
    for (const r of records) wanted.set(pointIdFor(r.key), { r, hash: contentHash(r, evidenceOf(corpus, r.key), classifier.id, embedder.id) });
    const todo: { r: RepoRecord; hash: string }[] = [];
    let unchanged = 0;
    for (const [id, w] of wanted) {
      if (existing.get(id) === w.hash) unchanged++;
      else todo.push(w);
    }
    const toDelete: string[] = [];
    for (const id of existing.keys()) {
      // Another shard's point is not ours to delete.
      if (!wanted.has(id) && inShard(id, shard)) toDelete.push(id);
    }
    mark("diff");
    logger.info("diff", { unchanged, toEmbed: todo.length, toDelete: toDelete.length });

    // 4. Embed + classify what changed, one durable checkpoint per chunk.
    progress.start("embed", todo.length);
    const chunk = config.indexer.checkpointEvery;
    let embedded = 0;
    for (let i = 0; i < todo.length; i += chunk) {
      const part = todo.slice(i, i + chunk);
      const evidence = part.map((w) => evidenceOf(corpus, w.r.key));
      const vectors = await embedder.embed(part.map((w, k) => embeddingText(w.r, { packaged: evidence[k]!.packaged })));
      const points: Point[] = part.map((w, k) => {
        const c = classifier.classify(w.r, vectors[k]);
        return { id: pointIdFor(w.r.key), vector: vectors[k]!, payload: toPayload(w.r, evidence[k]!, c.category, w.hash) };
      });
      await writer.upsert(points);
      embedded += part.length;
      progress.update(embedded);
    }
    progress.finish();
    if (toDelete.length) await writer.delete(toDelete);
    mark("embed");

    // 5. Publish atomically.
    let stage = "";
    const result = await writer.commit({
      onProgress: (s, done, total) => {
        if (s !== stage) {
          stage = s;
          progress.start(`publish:${s}`, total);
        }
        progress.update(done, total);
      },
    });
    progress.finish();
    mark("publish");
    seconds.total = (Date.now() - t0) / 1000;

    const report: Omit<IndexReport, "reportFile"> = {
      dataset: o.dataset,
      shard: shard ? `${shard.index}/${shard.count}` : null,
      linesRead,
      valid,
      rejected,
      rejects,
      duplicates,
      aliasesMerged: corpus.stats.merged,
      projectsWithAnchors: corpus.stats.projects,
      inSlice: records.length,
      unchanged,
      embedded,
      deleted: toDelete.length,
      embedderId: embedder.id,
      classifierId: classifier.id,
      version: result.version,
      published: result.published,
      seconds,
    };
    const reportFile = await writeReport(config.dataDir, report);
    logger.info("index run finished", { ...report, rejects: undefined, reportFile });
    return { ...report, reportFile };
  } finally {
    await embedder.close();
  }
}

async function writeReport(dataDir: string, report: Omit<IndexReport, "reportFile">): Promise<string> {
  const dir = path.join(dataDir, "reports");
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `index-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  await writeFile(file, JSON.stringify(report, null, 2) + "\n");
  return file;
}
