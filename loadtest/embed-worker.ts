/** A worker thread of the multi-thread embedding ceiling (see ceiling.ts): load, report ready, wait for "go", embed, report. */
import { parentPort, workerData } from "node:worker_threads";
import { loadConfig } from "../src/config/config.js";
import { loadQueryEmbedder } from "../src/embed/factory.js";
import { embedFor } from "./ceiling.js";

interface Data {
  readonly dataDir: string;
  readonly embedderId: string;
  readonly queries: readonly string[];
  readonly seconds: number;
  readonly batch: number;
  readonly offset: number;
}

async function main(): Promise<void> {
  const d = workerData as Data;
  const port = parentPort!;
  const embedder = await loadQueryEmbedder(loadConfig({ ...process.env, DATA_DIR: d.dataDir }), d.embedderId);
  const go = new Promise<void>((resolve) => port.once("message", () => resolve()));
  port.postMessage({ type: "ready" });
  await go;
  const queries = [...d.queries.slice(d.offset % d.queries.length), ...d.queries.slice(0, d.offset % d.queries.length)];
  const r = await embedFor((t) => embedder.embed(t), queries, d.seconds, Math.min(2, d.seconds / 5), d.batch);
  await embedder.close();
  port.postMessage({ type: "done", ...r });
}

main().catch((e: unknown) => parentPort?.postMessage({ type: "error", message: (e as Error).message }));
