/**
 * `reposearch train`: contrastive fine-tuning of the static embedding on weak pairs from the dataset
 * (src/embed/train.ts; method and measurements in docs/embeddings.md). The trained model is a new model
 * directory under DATA_DIR/models/static/<id>; `--activate` points ACTIVE at it, so the next
 * `reposearch index` embeds with it (and re-embeds every repository, since the embedder id changes).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { prepareCorpus } from "../corpus/prepare.js";
import { readUniqueRecords } from "../dataset/reader.js";
import type { RepoRecord } from "../dataset/record.js";
import { DEFAULT_TRAIN_CONFIG, PAIR_KINDS, type PairKind, type TrainConfig } from "../embed/train.js";
import { Progress } from "../indexer/progress.js";
import { activeStaticModel, ensureStaticModel, setActive, staticModelsRoot, trainedFrom, trainModel } from "../indexer/static-model.js";
import type { Command, CommandContext } from "./command.js";

const USAGE =
  "reposearch train [--data-dir DIR] [--dataset PATH_OR_URL] [--epochs N] [--patience N] [--min-improvement F] [--activate] [--init MODEL_ID] " +
  "[--pairs name,readme,doc] [--temperature T] [--lr LR] [--batch-size N] [--l2-to-init L] [--batch-clusters K] [--seed N]";

function num(values: CommandContext["values"], flag: string, fallback: number, ok: (n: number) => boolean): number {
  const v = values[flag];
  if (v === undefined) return fallback;
  const n = Number(v);
  if (typeof v !== "string" || v.trim() === "" || !Number.isFinite(n) || !ok(n)) {
    throw new ReposearchError(ErrorCode.ValidationError, `--${flag}: invalid value ${JSON.stringify(v)}`);
  }
  return n;
}

function trainConfig(values: CommandContext["values"]): TrainConfig {
  const d = DEFAULT_TRAIN_CONFIG;
  let pairs = d.pairs;
  if (typeof values.pairs === "string") {
    const kinds = values.pairs
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = kinds.filter((k) => !PAIR_KINDS.includes(k as PairKind));
    if (kinds.length === 0 || bad.length)
      throw new ReposearchError(ErrorCode.ValidationError, `--pairs: expected a comma list of ${PAIR_KINDS.join(", ")} (got ${JSON.stringify(values.pairs)})`);
    // Canonical order, so the same set of kinds always gives the same model id.
    pairs = PAIR_KINDS.filter((k) => kinds.includes(k));
  }
  return {
    ...d,
    pairs,
    epochs: num(values, "epochs", d.epochs, (n) => Number.isInteger(n) && n >= 1 && n <= 100),
    patience: num(values, "patience", d.patience, (n) => Number.isInteger(n) && n >= 0 && n <= 100),
    minImprovement: num(values, "min-improvement", d.minImprovement, (n) => n >= 0 && n < 1),
    temperature: num(values, "temperature", d.temperature, (n) => n > 0 && n <= 10),
    lr: num(values, "lr", d.lr, (n) => n > 0 && n < 1),
    batchSize: num(values, "batch-size", d.batchSize, (n) => Number.isInteger(n) && n >= 2 && n <= 4096),
    l2ToInit: num(values, "l2-to-init", d.l2ToInit, (n) => n >= 0),
    batchClusters: num(values, "batch-clusters", d.batchClusters, (n) => Number.isInteger(n) && n >= 0 && n <= 65536),
    seed: num(values, "seed", d.seed, (n) => Number.isInteger(n) && n >= 0),
  };
}

/** The dataset's records as the indexer sees them: one per key, then one per project (src/corpus). */
async function readRecords(dataset: string): Promise<readonly RepoRecord[]> {
  return prepareCorpus((await readUniqueRecords(dataset)).records).records;
}

/**
 * The model to start from: --init, else the active model's own init when the active model was itself
 * trained (so re-running `train` restarts from the distilled model and reproduces the same id), else the
 * active model; with no model at all, one is distilled first, exactly as `reposearch index` would.
 */
async function initModelDir(config: Config, values: CommandContext["values"], records: readonly RepoRecord[], progress: Progress): Promise<string> {
  const root = staticModelsRoot(config.dataDir);
  if (typeof values.init === "string") {
    const id = values.init.trim();
    const dir = path.join(root, id);
    if (!id || id !== path.basename(id) || !existsSync(path.join(dir, "model.json")))
      throw new ReposearchError(ErrorCode.ValidationError, `--init: no static model ${JSON.stringify(id)} under ${root}`);
    return dir;
  }
  const active = await activeStaticModel(config.dataDir);
  if (active) {
    const from = await trainedFrom(active);
    if (from !== null && existsSync(path.join(root, from, "model.json"))) return path.join(root, from);
    return active;
  }
  const ek = config.embedder;
  return ensureStaticModel({
    dataDir: config.dataDir,
    records,
    vocabSize: ek.staticVocabSize,
    dims: ek.staticDims,
    workers: ek.workers,
    retrain: false,
    train: null,
    logger: logger.child({ component: "train" }),
    progress,
  });
}

async function run({ config, values }: CommandContext): Promise<number> {
  if (!config.dataset) throw new ReposearchError(ErrorCode.ValidationError, "no dataset: pass --dataset PATH_OR_URL or set DATASET");
  const cfg = trainConfig(values);
  const log = logger.child({ component: "train" });
  const progress = new Progress({ logger: log, stream: process.stderr, intervalMs: config.indexer.progressIntervalMs });
  const t0 = performance.now();
  const records = await readRecords(config.dataset);
  const initDir = await initModelDir(config, values, records, progress);
  const res = await trainModel({ dataDir: config.dataDir, records, initDir, config: cfg, threads: config.embedder.staticTrainThreads, logger: log, progress });
  const lines = [
    `init           static:${res.initId} (${initDir})`,
    `pairs          ${Object.entries(res.pairs)
      .filter(([k]) => cfg.pairs.includes(k as PairKind))
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}`,
  ];
  if (res.trained === null) {
    lines.push(`model          static:${res.modelId} (already trained with this configuration and data: ${res.dir})`);
  } else {
    const t = res.trained;
    lines.push(
      `config         ${JSON.stringify(cfg)}`,
      `held-out loss  ${t.initialHeldOutLoss?.toFixed(4) ?? "–"} before, ${t.history.map((h) => h.heldOutLoss?.toFixed(4) ?? "–").join(" → ")} after each epoch`,
      `train loss     ${t.history.map((h) => h.loss.toFixed(4)).join(" → ")}`,
      `model          static:${res.modelId} (${res.dir})`,
      `time           training ${t.seconds.toFixed(1)}s, total ${((performance.now() - t0) / 1000).toFixed(1)}s`,
    );
  }
  if (values.activate) {
    await setActive(config.dataDir, res.modelId);
    lines.push(`active         yes: the next \`reposearch index --data-dir ${config.dataDir}\` re-embeds every repository with it`);
  } else {
    lines.push(`active         no (rerun with --activate, or compare first: node dist/bench/eval-embedders.js --data-dir ${config.dataDir})`);
  }
  console.log(lines.join("\n"));
  return 0;
}

export const trainCommands: Record<string, Command> = {
  train: {
    summary: "fine-tune the static embedding on weak pairs from the dataset (contrastive); --activate to index with it",
    usage: USAGE,
    options: {
      dataset: { type: "string" },
      epochs: { type: "string" },
      patience: { type: "string" },
      "min-improvement": { type: "string" },
      activate: { type: "boolean" },
      init: { type: "string" },
      pairs: { type: "string" },
      temperature: { type: "string" },
      lr: { type: "string" },
      "batch-size": { type: "string" },
      "l2-to-init": { type: "string" },
      "batch-clusters": { type: "string" },
      seed: { type: "string" },
    },
    run,
  },
};
