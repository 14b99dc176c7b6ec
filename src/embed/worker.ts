/**
 * One embedding worker thread of an EmbedPool: builds the embedder from the spec in `workerData`, then
 * answers `embed` messages one at a time. Vectors travel back as transferred buffers (no copy).
 */
import { parentPort, workerData } from "node:worker_threads";
import { ConfigError, ReposearchError } from "../common/errors.js";
import { EmbedServiceError } from "./http.js";
import { createEmbedder } from "./factory.js";
import type { ToWorker, WireError, WorkerInit, FromWorker } from "./pool.js";
import type { Embedder } from "./types.js";

function toWire(err: unknown): WireError {
  const e = err instanceof Error ? err : new Error(String(err));
  const wire: { -readonly [K in keyof WireError]: WireError[K] } = { name: e.name, message: e.message };
  if (e instanceof ReposearchError) {
    wire.code = e.code;
    if (e.details) wire.details = [...e.details];
  }
  if (e instanceof EmbedServiceError) wire.http = { status: e.status, attempts: e.attempts };
  if (e instanceof ConfigError) wire.problems = [...e.problems];
  return wire;
}

/** Each vector's buffer, transferred when it is the vector's own; a vector sharing a buffer is copied first. */
function transferable(vectors: Float32Array[]): { vectors: Float32Array[]; buffers: ArrayBuffer[] } {
  const seen = new Set<ArrayBufferLike>();
  const out = vectors.map((v) => {
    const own = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer && !seen.has(v.buffer);
    const w = own ? v : v.slice();
    seen.add(w.buffer);
    return w;
  });
  return { vectors: out, buffers: [...seen] as ArrayBuffer[] };
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error("embed worker must run in a worker thread");
  const post = (msg: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(msg, transfer);
  const init = workerData as WorkerInit;

  let embedder: Embedder;
  try {
    embedder = await createEmbedder(init.spec, init.runtime);
  } catch (err) {
    post({ type: "failed", error: toWire(err) });
    return;
  }

  port.on("message", (msg: ToWorker) => {
    if (msg.type === "close") {
      // process.exit in a worker ends only this thread; some runtimes (tfjs) keep handles open otherwise.
      void embedder.close().finally(() => process.exit(0));
      return;
    }
    embedder.embed(msg.texts).then(
      (vectors) => {
        const t = transferable(vectors);
        post({ type: "done", jobId: msg.jobId, vectors: t.vectors }, t.buffers);
      },
      (err: unknown) => post({ type: "error", jobId: msg.jobId, error: toWire(err) }),
    );
  });
  post({ type: "ready", id: embedder.id, dims: embedder.dims });
}

void main();
