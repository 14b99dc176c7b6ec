/**
 * Where the index's static embedding model comes from: the active model of the data dir when there is one
 * (so incremental runs embed with the same model and unchanged repositories keep their vectors), otherwise
 * a new one distilled from the dataset's texts with the teacher running on every core and then, unless
 * training is off, fine-tuned on the dataset's weak pairs (src/embed/train.ts, docs/embeddings.md).
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../common/logger.js";
import type { RepoRecord } from "../dataset/record.js";
import { distillStaticModel, writeStaticModel } from "../embed/distill.js";
import { EmbedPool } from "../embed/pool.js";
import {
  buildPairSet,
  pairFingerprint,
  pairTexts,
  readStaticModel,
  trainedModelId,
  trainStaticModelInWorker,
  vocabIndex,
  type PairKind,
  type TrainConfig,
  type TrainResult,
} from "../embed/train.js";
import { embeddingText } from "../corpus/doc-text.js";
import type { Progress } from "./progress.js";

export function staticModelsRoot(dataDir: string): string {
  return path.join(dataDir, "models", "static");
}

/** The directory of the active static model, or null. */
export async function activeStaticModel(dataDir: string): Promise<string | null> {
  const pointer = path.join(staticModelsRoot(dataDir), "ACTIVE");
  if (!existsSync(pointer)) return null;
  const { modelId } = JSON.parse(await readFile(pointer, "utf8")) as { modelId: string };
  const dir = path.join(staticModelsRoot(dataDir), modelId);
  return existsSync(path.join(dir, "model.json")) ? dir : null;
}

export async function setActive(dataDir: string, modelId: string): Promise<void> {
  const root = staticModelsRoot(dataDir);
  const tmp = path.join(root, `ACTIVE.tmp-${process.pid}`);
  await writeFile(tmp, JSON.stringify({ modelId }) + "\n");
  await rename(tmp, path.join(root, "ACTIVE"));
}

/** The model a static model was fine-tuned from (its `trainedFrom`), or null for a distilled one. */
export async function trainedFrom(modelDir: string): Promise<string | null> {
  const meta = JSON.parse(await readFile(path.join(modelDir, "model.json"), "utf8")) as { trainedFrom?: unknown };
  return typeof meta.trainedFrom === "string" ? meta.trainedFrom : null;
}

export interface StaticModelOptions {
  readonly dataDir: string;
  /** The whole dataset (not a shard's slice), so every shard derives the very same model. */
  readonly records: readonly RepoRecord[];
  readonly vocabSize: number;
  readonly dims: number;
  readonly workers: number;
  readonly retrain: boolean;
  /**
   * Fine-tune a distilled model before using it (null: use it as distilled). An active model that is
   * already trained is kept as it is, whatever this says, so incremental runs stay incremental.
   */
  readonly train: TrainConfig | null;
  /** Threads for training (TrainOptions.threads). */
  readonly trainThreads?: number;
  readonly logger: Logger;
  readonly progress: Progress;
}

/** The static model to embed with (its directory), distilled and trained first when needed. Activates it. */
export async function ensureStaticModel(o: StaticModelOptions): Promise<string> {
  const active = o.retrain ? null : await activeStaticModel(o.dataDir);
  const base = active ?? (await distill(o));
  if (o.train === null || (await trainedFrom(base)) !== null) return base;
  const { dir, modelId } = await trainModel({
    dataDir: o.dataDir,
    records: o.records,
    initDir: base,
    config: o.train,
    threads: o.trainThreads,
    logger: o.logger,
    progress: o.progress,
  });
  await setActive(o.dataDir, modelId);
  return dir;
}

async function distill(o: StaticModelOptions): Promise<string> {
  const texts = o.records.map((r) => embeddingText(r));
  o.logger.info("distilling a static embedding model from the teacher", { texts: texts.length, vocabSize: o.vocabSize, dims: o.dims, workers: o.workers });
  const teacher = await EmbedPool.create({ kind: "use-lite" }, { workers: o.workers, batchSize: 256 });
  try {
    let stage = "";
    const model = await distillStaticModel(texts, teacher, {
      vocabSize: o.vocabSize,
      dims: o.dims,
      batchSize: 256,
      onProgress: (s, done, total) => {
        if (s !== stage) {
          stage = s;
          o.progress.start(`distill:${s}`, total);
        }
        o.progress.update(done, total);
      },
    });
    o.progress.finish();
    await mkdir(staticModelsRoot(o.dataDir), { recursive: true });
    const dir = await writeStaticModel(staticModelsRoot(o.dataDir), model);
    await setActive(o.dataDir, model.meta.modelId);
    o.logger.info("static model ready", { modelId: model.meta.modelId, vocabSize: model.meta.vocabSize, dims: model.meta.dims });
    return dir;
  } finally {
    await teacher.close();
  }
}

export interface TrainModelOptions {
  readonly dataDir: string;
  readonly records: readonly RepoRecord[];
  /** The model to start from (a distilled one). */
  readonly initDir: string;
  readonly config: TrainConfig;
  /** Threads for training (TrainOptions.threads; default 1). The model does not depend on it. */
  readonly threads?: number | undefined;
  readonly logger: Logger;
  readonly progress: Progress;
}

export interface TrainModelResult {
  readonly dir: string;
  readonly modelId: string;
  readonly initId: string;
  readonly pairs: Record<PairKind, number>;
  /** null when a model with this id (same init, configuration and data) already existed. */
  readonly trained: TrainResult | null;
}

/**
 * Fine-tunes `initDir` on the records' weak pairs and writes the result as a new model directory (not
 * activated). The id is known before training, so an existing model with it is reused, not retrained.
 */
export async function trainModel(o: TrainModelOptions): Promise<TrainModelResult> {
  const t0 = performance.now();
  const init = await readStaticModel(o.initDir);
  const pairs = buildPairSet(pairTexts(o.records, o.config.pairs, o.config.readmeChars), vocabIndex(init.vocab));
  const modelId = trainedModelId(init.meta.modelId, o.config, pairFingerprint(pairs));
  const root = staticModelsRoot(o.dataDir);
  const dir = path.join(root, modelId);
  const base = { dir, modelId, initId: init.meta.modelId, pairs: pairs.perKind };
  if (existsSync(path.join(dir, "model.json"))) return { ...base, trained: null };
  const threads = o.threads ?? 1;
  o.logger.info("training the static model on weak pairs", {
    init: init.meta.modelId,
    modelId,
    pairs: pairs.perKind,
    epochs: o.config.epochs,
    threads,
    seconds: +((performance.now() - t0) / 1000).toFixed(1),
  });
  const cfg = o.config;
  const res = await trainStaticModelInWorker(
    init,
    pairs,
    cfg,
    {
      onStep: (epoch, step, steps) => {
        if (step === 1) o.progress.start(`train:epoch ${epoch}/${cfg.epochs}`, steps);
        o.progress.update(step, steps);
      },
      onEpoch: (s) => {
        o.progress.finish();
        o.logger.info("epoch", {
          epoch: s.epoch,
          loss: +s.loss.toFixed(4),
          heldOutLoss: s.heldOutLoss === null ? null : +s.heldOutLoss.toFixed(4),
          seconds: +s.seconds.toFixed(1),
        });
      },
    },
    { threads },
  );
  await mkdir(root, { recursive: true });
  await writeStaticModel(root, res.model);
  o.logger.info("static model trained", { modelId, epochs: res.history.length, keptEpoch: res.keptEpoch, seconds: +res.seconds.toFixed(1) });
  return { ...base, trained: res };
}
