/**
 * The embedding-only ceiling: how many query embeddings per second this machine does with the
 * index's query embedder and nothing around it (no HTTP, no search). Each serving process embeds on
 * its main thread, so the headline figure is one thread embedding dev.jsonl queries; the same on two
 * worker threads is reported beside it. Queries go to the model the way the core sends them: one at a
 * time for static embedders, in calls of QUERY_EMBED_MAX_BATCH for the others (core/engine.ts,
 * batchesQueries), so a core that batches is compared with a ceiling that batches too.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { compiledModuleUrl } from "../src/common/compiled-url.js";
import type { Config } from "../src/config/config.js";
import { batchesQueries } from "../src/core/engine.js";
import { loadQueryEmbedder } from "../src/embed/factory.js";
import { embeddedStoreFromConfig } from "../src/store/embedded/store.js";
import { IndexDir } from "../src/store/embedded/writer.js";

export interface CeilingResult {
  readonly threads: number;
  /** Queries per call to the embedder. */
  readonly batch: number;
  readonly seconds: number;
  readonly embeddings: number;
  readonly perSecond: number;
}

/** The published index's embedder id: from its manifest (cheap), else by opening the store. */
export async function indexEmbedderId(config: Config): Promise<string> {
  const dir = new IndexDir(config.dataDir);
  try {
    const label = await dir.readCurrent();
    if (label) {
      const m = JSON.parse(await readFile(path.join(dir.versionDir(label), "manifest.json"), "utf8")) as { embedderId?: unknown };
      if (typeof m.embedderId === "string" && m.embedderId) return m.embedderId;
    }
  } catch {
    // fall through to the store
  }
  const store = await embeddedStoreFromConfig(config);
  try {
    const id = (await store.info()).embedderId;
    if (!id) throw new Error(`no published index in ${config.dataDir}`);
    return id;
  } finally {
    await store.close();
  }
}

/** Queries per call in the ceiling: as many as the core would send the model in one call. */
export function ceilingBatch(config: Config, embedderId: string): number {
  return batchesQueries(embedderId, config.embedder.queryMaxBatch) ? config.embedder.queryMaxBatch : 1;
}

/** Embeds queries in order, `batch` per call, for `seconds` after `warmupSeconds`; returns how many. */
export async function embedFor(
  embed: (texts: string[]) => Promise<unknown>,
  queries: readonly string[],
  seconds: number,
  warmupSeconds: number,
  batch = 1,
): Promise<{ embeddings: number; seconds: number }> {
  let i = 0;
  const next = (): string[] => Array.from({ length: batch }, () => queries[i++ % queries.length]!);
  const warmEnd = performance.now() + warmupSeconds * 1000;
  while (performance.now() < warmEnd) await embed(next());
  let n = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (performance.now() < end) {
    await embed(next());
    n += batch;
  }
  return { embeddings: n, seconds: (performance.now() - t0) / 1000 };
}

export async function singleThreadCeiling(config: Config, embedderId: string, queries: readonly string[], seconds: number): Promise<CeilingResult> {
  const embedder = await loadQueryEmbedder(config, embedderId);
  const batch = ceilingBatch(config, embedderId);
  try {
    const r = await embedFor((t) => embedder.embed(t), queries, seconds, Math.min(2, seconds / 5), batch);
    return { threads: 1, batch, seconds: r.seconds, embeddings: r.embeddings, perSecond: r.embeddings / r.seconds };
  } finally {
    await embedder.close();
  }
}

/** `threads` worker threads, each embedding sequentially for the same `seconds`, started together. */
export async function multiThreadCeiling(
  config: Config,
  embedderId: string,
  queries: readonly string[],
  seconds: number,
  threads: number,
): Promise<CeilingResult> {
  const batch = ceilingBatch(config, embedderId);
  const workerData = { dataDir: config.dataDir, embedderId, queries, seconds, batch };
  const workers = Array.from(
    { length: threads },
    (_, k) => new Worker(compiledModuleUrl("./embed-worker.js", import.meta.url), { workerData: { ...workerData, offset: k * 97 } }),
  );
  const message = (w: Worker, type: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const onMsg = (m: Record<string, unknown>) => {
        if (m.type === "error") reject(new Error(String(m.message)));
        else if (m.type === type) {
          w.off("message", onMsg);
          resolve(m);
        }
      };
      w.on("message", onMsg);
      w.once("error", reject);
    });
  try {
    await Promise.all(workers.map((w) => message(w, "ready")));
    const results = workers.map((w) => message(w, "done"));
    for (const w of workers) w.postMessage("go");
    const done = await Promise.all(results);
    const embeddings = done.reduce((s, m) => s + Number(m.embeddings), 0);
    const secs = Math.max(...done.map((m) => Number(m.seconds)));
    return { threads, batch, seconds: secs, embeddings, perSecond: done.reduce((s, m) => s + Number(m.embeddings) / Number(m.seconds), 0) };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
