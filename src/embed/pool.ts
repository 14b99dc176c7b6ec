/**
 * An Embedder that runs the real embedder in N worker threads, so embedding uses every core while the
 * main thread keeps reading, classifying and writing. Texts are split into batches that idle workers pull
 * from one queue (a slow batch never holds up the others); results are reassembled in input order.
 */
import { availableParallelism } from "node:os";
import { Worker, type ResourceLimits } from "node:worker_threads";
import { compiledModuleUrl } from "../common/compiled-url.js";
import { ConfigError, ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { logger } from "../common/logger.js";
import type { EmbedderRuntime } from "./factory.js";
import { EmbedServiceError } from "./http.js";
import type { Embedder, EmbedderSpec } from "./types.js";

const log = logger.child({ component: "embed-pool" });

// ---- the message protocol with worker.ts ----
export interface WorkerInit {
  readonly spec: EmbedderSpec;
  readonly runtime: EmbedderRuntime;
}
export type ToWorker = { readonly type: "embed"; readonly jobId: number; readonly texts: readonly string[] } | { readonly type: "close" };
export type FromWorker =
  | { readonly type: "ready"; readonly id: string; readonly dims: number }
  | { readonly type: "failed"; readonly error: WireError }
  | { readonly type: "done"; readonly jobId: number; readonly vectors: Float32Array[] }
  | { readonly type: "error"; readonly jobId: number; readonly error: WireError };
/** An error flattened for postMessage, so the typed error can be rebuilt on this side. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code?: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly http?: { readonly status: number | null; readonly attempts: number };
  readonly problems?: string[];
}

function fromWire(e: WireError): Error {
  if (e.http) return new EmbedServiceError(e.message, e.http);
  if (e.problems) return new ConfigError(e.problems);
  if (e.code) return new ReposearchError(e.code, e.message, { details: e.details });
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

export interface EmbedPoolOptions {
  /** Worker threads; default one per core. */
  readonly workers?: number;
  /** Texts per message to a worker. */
  readonly batchSize: number;
  /**
   * Per-worker V8 heap limits: a worker whose heap grows past them is terminated and reported as crashed.
   * Not a hard guarantee: one single oversized allocation (e.g. a giant JSON array) can still abort the process.
   */
  readonly resourceLimits?: ResourceLimits;
  /** How long close() waits for a worker to release its embedder before terminating it. */
  readonly closeGraceMs?: number;
}

interface Job {
  readonly id: number;
  readonly texts: readonly string[];
  readonly call: { failed: boolean };
  resolve(vectors: Float32Array[]): void;
  reject(err: Error): void;
}

interface Slot {
  readonly index: number;
  readonly worker: Worker;
  job: Job | null;
  alive: boolean;
  /** The last 'error' event, reported when the thread then exits. */
  lastError: Error | null;
}

export class EmbedPool implements Embedder {
  readonly workerCount: number;
  private readonly queue: Job[] = [];
  private nextJobId = 1;
  private closing: Promise<void> | null = null;

  private constructor(
    readonly id: string,
    readonly dims: number,
    private readonly slots: Slot[],
    private readonly batchSize: number,
    private readonly closeGraceMs: number,
  ) {
    this.workerCount = slots.length;
    for (const slot of slots) this.watch(slot);
  }

  /** Starts the workers and waits until each has built its embedder; any failure rejects with that worker's error. */
  static async create(spec: EmbedderSpec, opts: EmbedPoolOptions): Promise<EmbedPool> {
    const workers = opts.workers ?? availableParallelism();
    if (!Number.isInteger(workers) || workers < 1 || workers > 256) throw new RangeError(`workers must be an integer in 1..256, got ${workers}`);
    if (!Number.isInteger(opts.batchSize) || opts.batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${opts.batchSize}`);
    const closeGraceMs = opts.closeGraceMs ?? 2_000;
    if (!(closeGraceMs >= 0)) throw new RangeError(`closeGraceMs must be >= 0, got ${closeGraceMs}`);

    // N workers × onnxruntime's default of one thread per core would oversubscribe the CPU N-fold.
    const runtime: EmbedderRuntime = { intraOpThreads: Math.max(1, Math.floor(availableParallelism() / workers)) };
    const init: WorkerInit = { spec, runtime };
    const started = Array.from({ length: workers }, (_, index) => {
      const worker = new Worker(compiledModuleUrl("./worker.js", import.meta.url), { workerData: init, resourceLimits: opts.resourceLimits });
      const slot: Slot = { index, worker, job: null, alive: true, lastError: null };
      return { slot, ready: EmbedPool.awaitReady(slot) };
    });
    const outcomes = await Promise.allSettled(started.map((s) => s.ready));
    const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (failure) {
      await Promise.all(started.map((s) => s.slot.worker.terminate()));
      throw failure.reason;
    }
    const infos = outcomes.map((o) => (o as PromiseFulfilledResult<{ id: string; dims: number }>).value);
    const { id, dims } = infos[0]!;
    if (infos.some((i) => i.id !== id || i.dims !== dims)) {
      await Promise.all(started.map((s) => s.slot.worker.terminate()));
      throw new ReposearchError(ErrorCode.Internal, `embed workers disagree on the embedder: ${infos.map((i) => `${i.id}/${i.dims}`).join(", ")}`);
    }
    log.debug("embed pool started", { embedder: id, workers });
    return new EmbedPool(
      id,
      dims,
      started.map((s) => s.slot),
      opts.batchSize,
      closeGraceMs,
    );
  }

  private static awaitReady(slot: Slot): Promise<{ id: string; dims: number }> {
    return new Promise((resolve, reject) => {
      const w = slot.worker;
      const cleanup = () => {
        w.off("message", onMessage);
        w.off("error", onError);
        w.off("exit", onExit);
      };
      const onMessage = (msg: FromWorker) => {
        cleanup();
        if (msg.type === "ready") resolve({ id: msg.id, dims: msg.dims });
        else if (msg.type === "failed") reject(fromWire(msg.error));
        else reject(new ReposearchError(ErrorCode.Internal, `embed worker ${slot.index} sent ${msg.type} before ready`));
      };
      const onError = (err: Error) => {
        cleanup();
        reject(new ReposearchError(ErrorCode.Internal, `embed worker ${slot.index} failed to start: ${err.message}`, { cause: err }));
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new ReposearchError(ErrorCode.Internal, `embed worker ${slot.index} exited with code ${code} while starting`));
      };
      w.on("message", onMessage);
      w.on("error", onError);
      w.on("exit", onExit);
    });
  }

  private watch(slot: Slot): void {
    slot.worker.on("message", (msg: FromWorker) => {
      const job = slot.job;
      if ((msg.type !== "done" && msg.type !== "error") || !job || job.id !== msg.jobId) return;
      slot.job = null;
      if (msg.type === "done") job.resolve(msg.vectors);
      else job.reject(fromWire(msg.error));
      this.pump();
    });
    slot.worker.on("error", (err) => {
      slot.lastError = err;
    });
    slot.worker.on("exit", (code) => {
      slot.alive = false;
      if (this.closing) return;
      const reason = slot.lastError ? slot.lastError.message : `exited with code ${code}`;
      log.error("embed worker crashed", { worker: slot.index, reason });
      const crashed = new ReposearchError(ErrorCode.Internal, `embed worker ${slot.index} crashed: ${reason}`, { cause: slot.lastError });
      slot.job?.reject(crashed);
      slot.job = null;
      if (!this.slots.some((s) => s.alive)) {
        // Nobody is left to take the queue: fail it now rather than leave callers waiting forever.
        for (const job of this.queue.splice(0)) job.reject(new ReposearchError(ErrorCode.Unavailable, `all embed workers crashed (last: ${reason})`));
      }
      this.pump();
    });
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.closing) throw new ReposearchError(ErrorCode.Unavailable, "embed pool is closed");
    if (!this.slots.some((s) => s.alive)) throw new ReposearchError(ErrorCode.Unavailable, "all embed workers crashed");
    if (texts.length === 0) return [];
    // Batch texts of similar length: models pad a batch to its longest text, so one README-sized text in a
    // batch of names multiplies its cost (USE-lite: 83 ms -> 4 s of CPU for 64 texts). Longest batches go
    // first so the short ones fill the workers' idle time at the end. Results go back to input order.
    const order = texts.map((_, i) => i).sort((a, b) => texts[b]!.length - texts[a]!.length);
    const out = new Array<Float32Array>(texts.length);
    const call = { failed: false };
    const parts: Promise<void>[] = [];
    for (let start = 0; start < order.length; start += this.batchSize) {
      const idx = order.slice(start, start + this.batchSize);
      parts.push(
        new Promise<Float32Array[]>((resolve, reject) => {
          this.queue.push({ id: this.nextJobId++, texts: idx.map((i) => texts[i]!), call, resolve, reject });
        }).then((vectors) => idx.forEach((i, k) => (out[i] = vectors[k]!))),
      );
    }
    this.pump();
    try {
      await Promise.all(parts);
      return out;
    } catch (err) {
      // The call has failed: its batches still queued would be wasted work.
      call.failed = true;
      throw err;
    }
  }

  /** Hands queued batches to idle live workers. */
  private pump(): void {
    for (const slot of this.slots) {
      if (!slot.alive || slot.job) continue;
      let job = this.queue.shift();
      while (job?.call.failed) {
        job.reject(new ReposearchError(ErrorCode.Internal, "batch skipped: another batch of the same call failed"));
        job = this.queue.shift();
      }
      if (!job) return;
      slot.job = job;
      slot.worker.postMessage({ type: "embed", jobId: job.id, texts: job.texts } satisfies ToWorker);
    }
  }

  /** Rejects pending work, lets each worker release its embedder, and terminates stragglers. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const closed = new ReposearchError(ErrorCode.Unavailable, "embed pool is closed");
    for (const job of this.queue.splice(0)) job.reject(closed);
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.job?.reject(closed);
        slot.job = null;
        if (!slot.alive) return;
        const exited = new Promise<void>((resolve) => slot.worker.once("exit", () => resolve()));
        slot.worker.postMessage({ type: "close" } satisfies ToWorker);
        const timer = setTimeout(() => void slot.worker.terminate(), this.closeGraceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
