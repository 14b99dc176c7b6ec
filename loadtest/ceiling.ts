/**
 * The embedding-only ceiling: how many query embeddings per second this machine does with the
 * index's query embedder and nothing around it (no HTTP, no search). The server embeds each query
 * on its main thread, one at a time, so the headline figure is one thread embedding dev.jsonl
 * queries sequentially; the same on two worker threads is reported beside it.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { Config } from "../src/config/config.js";
import { loadQueryEmbedder } from "../src/embed/factory.js";
import { embeddedStoreFromConfig } from "../src/store/embedded/store.js";
import { IndexDir } from "../src/store/embedded/writer.js";

export interface CeilingResult {
  readonly threads: number;
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

/** Embeds queries one at a time, in order, for `seconds` after `warmupSeconds`; returns how many. */
export async function embedFor(embed: (text: string) => Promise<unknown>, queries: readonly string[], seconds: number, warmupSeconds: number): Promise<{ embeddings: number; seconds: number }> {
  let i = 0;
  const warmEnd = performance.now() + warmupSeconds * 1000;
  while (performance.now() < warmEnd) await embed(queries[i++ % queries.length]!);
  let n = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  while (performance.now() < end) {
    await embed(queries[i++ % queries.length]!);
    n++;
  }
  return { embeddings: n, seconds: (performance.now() - t0) / 1000 };
}

export async function singleThreadCeiling(config: Config, embedderId: string, queries: readonly string[], seconds: number): Promise<CeilingResult> {
  const embedder = await loadQueryEmbedder(config, embedderId);
  try {
    const r = await embedFor((t) => embedder.embed([t]), queries, seconds, Math.min(2, seconds / 5));
    return { threads: 1, seconds: r.seconds, embeddings: r.embeddings, perSecond: r.embeddings / r.seconds };
  } finally {
    await embedder.close();
  }
}

/** `threads` worker threads, each embedding sequentially for the same `seconds`, started together. */
export async function multiThreadCeiling(dataDir: string, embedderId: string, queries: readonly string[], seconds: number, threads: number): Promise<CeilingResult> {
  const workers = Array.from({ length: threads }, (_, k) => new Worker(new URL("./embed-worker.js", import.meta.url), { workerData: { dataDir, embedderId, queries, seconds, offset: k * 97 } }));
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
    return { threads, seconds: secs, embeddings, perSecond: done.reduce((s, m) => s + Number(m.embeddings) / Number(m.seconds), 0) };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
