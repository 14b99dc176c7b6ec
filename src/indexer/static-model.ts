/**
 * Where the index's static embedding model comes from: the active model of the data dir when there is one
 * (so incremental runs embed with the same model and unchanged repositories keep their vectors), otherwise
 * a new one distilled from the dataset's texts with the teacher running on every core.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../common/logger.js";
import { distillStaticModel, writeStaticModel } from "../embed/distill.js";
import { EmbedPool } from "../embed/pool.js";
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

export interface StaticModelOptions {
  readonly dataDir: string;
  readonly texts: readonly string[];
  readonly vocabSize: number;
  readonly dims: number;
  readonly workers: number;
  readonly retrain: boolean;
  readonly logger: Logger;
  readonly progress: Progress;
}

export async function ensureStaticModel(o: StaticModelOptions): Promise<string> {
  if (!o.retrain) {
    const active = await activeStaticModel(o.dataDir);
    if (active) return active;
  }
  o.logger.info("distilling a static embedding model from the teacher", { texts: o.texts.length, vocabSize: o.vocabSize, dims: o.dims, workers: o.workers });
  const teacher = await EmbedPool.create({ kind: "use-lite" }, { workers: o.workers, batchSize: 256 });
  try {
    let stage = "";
    const model = await distillStaticModel(o.texts, teacher, {
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
