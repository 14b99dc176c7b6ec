/**
 * Worker threads that plan HNSW inserts in parallel (see engine-hnsw-build.ts). The coordinating
 * thread stays synchronous: it hands out a batch through a shared control block, plans its own
 * share, and blocks on Atomics until the workers are done. Atomics give the happens-before edges,
 * so plain typed-array writes on either side are visible after each handshake.
 */
import { Worker } from "node:worker_threads";
import { compiledModuleUrl } from "../../common/compiled-url.js";
import { logger } from "../../common/logger.js";
import type { BuildState, InsertPlanner } from "./engine-hnsw-build.js";

/** Slots of the shared control block. */
export const CTL = { GEN: 0, START: 1, END: 2, ENTRY: 3, MAX_LEVEL: 4, DONE: 5, READY: 6, FAILED: 7 } as const;
const CTL_SLOTS = 8;
const START_TIMEOUT_MS = 30_000;
/** A batch is at most a few hundred inserts; minutes without progress means a worker is gone. */
const BATCH_TIMEOUT_MS = 10 * 60_000;

export interface WorkerInit {
  readonly state: BuildState;
  readonly ctrl: Int32Array;
  /** This worker plans rows start + index, start + index + threads, … (the caller is index 0). */
  readonly index: number;
  readonly threads: number;
}

const log = logger.child({ component: "hnsw-build" });

export class PlanPool {
  private constructor(
    private readonly workers: Worker[],
    private readonly ctrl: Int32Array,
    readonly threads: number,
  ) {}

  /** Starts threads - 1 workers; null when they cannot start (the caller then plans alone). */
  static start(state: BuildState, threads: number): PlanPool | null {
    const ctrl = new Int32Array(new SharedArrayBuffer(CTL_SLOTS * 4));
    const workers: Worker[] = [];
    const pool = new PlanPool(workers, ctrl, threads);
    try {
      for (let index = 1; index < threads; index++) {
        const init: WorkerInit = { state, ctrl, index, threads };
        const w = new Worker(compiledModuleUrl("./engine-hnsw-worker.js", import.meta.url), { workerData: init });
        w.unref();
        w.on("error", (err) => log.warn("HNSW build worker failed", { err }));
        workers.push(w);
      }
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        const ready = Atomics.load(ctrl, CTL.READY);
        if (ready >= threads - 1) return pool;
        if (Atomics.load(ctrl, CTL.FAILED) !== 0 || Date.now() > deadline) break;
        Atomics.wait(ctrl, CTL.READY, ready, 100);
      }
    } catch (err) {
      log.warn("HNSW build workers unavailable, building on one thread", { err });
    }
    pool.close();
    return null;
  }

  /** Plans rows [start, end) into their batch slots: this thread takes every threads-th row from start. */
  planBatch(start: number, end: number, entryPoint: number, maxLevel: number, planner: InsertPlanner): void {
    const c = this.ctrl;
    Atomics.store(c, CTL.START, start);
    Atomics.store(c, CTL.END, end);
    Atomics.store(c, CTL.ENTRY, entryPoint);
    Atomics.store(c, CTL.MAX_LEVEL, maxLevel);
    Atomics.store(c, CTL.DONE, 0);
    Atomics.add(c, CTL.GEN, 1);
    Atomics.notify(c, CTL.GEN);
    for (let q = start; q < end; q += this.threads) planner.plan(q, q - start, entryPoint, maxLevel);
    const deadline = Date.now() + BATCH_TIMEOUT_MS;
    for (;;) {
      const done = Atomics.load(c, CTL.DONE);
      if (Atomics.load(c, CTL.FAILED) !== 0) throw new Error("HNSW build worker failed while planning");
      if (done >= this.threads - 1) return;
      if (Date.now() > deadline) throw new Error("HNSW build workers stopped responding");
      Atomics.wait(c, CTL.DONE, done, 1000);
    }
  }

  close(): void {
    Atomics.store(this.ctrl, CTL.START, -1);
    Atomics.add(this.ctrl, CTL.GEN, 1);
    Atomics.notify(this.ctrl, CTL.GEN);
    for (const w of this.workers) void w.terminate();
  }
}
