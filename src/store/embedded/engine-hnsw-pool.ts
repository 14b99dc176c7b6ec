/**
 * Worker threads that plan HNSW inserts in parallel (see engine-hnsw-build.ts). The coordinating
 * thread stays synchronous: it hands out a batch through the shared control block of a lockstep pool
 * (../../common/lockstep.ts), plans its own share, and blocks until the workers are done.
 */
import { compiledModuleUrl } from "../../common/compiled-url.js";
import { LOCKSTEP_SLOTS, LockstepPool } from "../../common/lockstep.js";
import { logger } from "../../common/logger.js";
import type { BuildState, InsertPlanner } from "./engine-hnsw-build.js";

/** This pool's slots of the shared control block, after the lockstep pool's own. */
export const CTL = { START: LOCKSTEP_SLOTS, END: LOCKSTEP_SLOTS + 1, ENTRY: LOCKSTEP_SLOTS + 2, MAX_LEVEL: LOCKSTEP_SLOTS + 3 } as const;
const CTL_SLOTS = 4;

export interface WorkerInit {
  readonly state: BuildState;
  readonly ctrl: Int32Array;
  /** This worker plans rows start + index, start + index + threads, … (the caller is index 0). */
  readonly index: number;
  readonly threads: number;
}

const log = logger.child({ component: "hnsw-build" });

export class PlanPool {
  private constructor(private readonly pool: LockstepPool) {}

  get threads(): number {
    return this.pool.threads;
  }

  /** Starts threads - 1 workers; null when they cannot start (the caller then plans alone). */
  static start(state: BuildState, threads: number): PlanPool | null {
    const pool = LockstepPool.start(
      compiledModuleUrl("./engine-hnsw-worker.js", import.meta.url),
      threads,
      CTL_SLOTS,
      (ctrl, index): WorkerInit => ({ state, ctrl, index, threads }),
      {
        name: "HNSW build",
        onWorkerError: (err) => log.warn("HNSW build worker failed", { err }),
        onUnavailable: (err) => log.warn("HNSW build workers unavailable, building on one thread", { err }),
      },
    );
    return pool && new PlanPool(pool);
  }

  /** Plans rows [start, end) into their batch slots: this thread takes every threads-th row from start. */
  planBatch(start: number, end: number, entryPoint: number, maxLevel: number, planner: InsertPlanner): void {
    const c = this.pool.ctrl;
    Atomics.store(c, CTL.START, start);
    Atomics.store(c, CTL.END, end);
    Atomics.store(c, CTL.ENTRY, entryPoint);
    Atomics.store(c, CTL.MAX_LEVEL, maxLevel);
    this.pool.phase(() => {
      for (let q = start; q < end; q += this.threads) planner.plan(q, q - start, entryPoint, maxLevel);
    });
  }

  close(): void {
    this.pool.close();
  }
}
