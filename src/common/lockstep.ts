/**
 * Helper threads that work in lockstep with a synchronous coordinator: the HNSW build's insert planning
 * (store/embedded/engine-hnsw-pool.ts) and the static model's batch products (embed/train-kernel.ts).
 *
 * The coordinator writes a phase's parameters into its own slots of one shared control block, bumps a
 * generation counter, does its own share, and blocks on Atomics until every helper has counted itself
 * done. Atomics give the happens-before edges, so plain typed-array writes on either side are visible
 * after each handshake, and a phase costs no message passing. Helpers that do not all start within
 * `startTimeoutMs` are given up (`start` returns null and the caller works alone); a helper that throws
 * sets the failed slot, and a phase not done within `phaseTimeoutMs` means a helper is gone: either throws
 * in the coordinator rather than hanging it.
 */
import { Worker } from "node:worker_threads";

/** The pool's slots of the control block; the caller's own slots start at LOCKSTEP_SLOTS. */
const GEN = 0;
const DONE = 1;
const READY = 2;
const FAILED = 3;
const STOP = 4;
export const LOCKSTEP_SLOTS = 5;
const START_TIMEOUT_MS = 30_000;
const PHASE_TIMEOUT_MS = 10 * 60_000;

export interface LockstepOptions {
  /** What the helpers do, for error messages: "HNSW build" → "HNSW build worker failed". */
  readonly name: string;
  /** How long `start` waits for every helper to be ready (default 30 s). */
  readonly startTimeoutMs?: number | undefined;
  /** How long a phase may take before the coordinator gives up on the helpers (default 10 min: a phase is seconds at most, so minutes mean a helper is gone). */
  readonly phaseTimeoutMs?: number | undefined;
  /** A helper's uncaught error (it has also set the failed slot, when it got that far). */
  readonly onWorkerError?: (err: unknown) => void;
  /** Why the helpers could not be started, when `start` returns null because of an exception. */
  readonly onUnavailable?: (err: unknown) => void;
}

export class LockstepPool {
  private constructor(
    private readonly workers: Worker[],
    /** The control block: the pool's slots, then the caller's. */
    readonly ctrl: Int32Array,
    /** Threads that share each phase, the coordinator included. */
    readonly threads: number,
    private readonly phaseTimeoutMs: number,
    private readonly name: string,
  ) {}

  /**
   * Starts threads − 1 helpers from `url`, helper i (1 … threads − 1) given `init(ctrl, i)` as its
   * workerData, and waits until all are ready; null when they cannot all start.
   */
  static start(url: URL, threads: number, callerSlots: number, init: (ctrl: Int32Array, index: number) => unknown, opts: LockstepOptions): LockstepPool | null {
    const ctrl = new Int32Array(new SharedArrayBuffer((LOCKSTEP_SLOTS + callerSlots) * 4));
    const workers: Worker[] = [];
    const pool = new LockstepPool(workers, ctrl, threads, opts.phaseTimeoutMs ?? PHASE_TIMEOUT_MS, opts.name);
    try {
      for (let index = 1; index < threads; index++) {
        const w = new Worker(url, { workerData: init(ctrl, index) });
        w.unref();
        w.on("error", (err) => opts.onWorkerError?.(err));
        workers.push(w);
      }
      const deadline = Date.now() + (opts.startTimeoutMs ?? START_TIMEOUT_MS);
      for (;;) {
        const ready = Atomics.load(ctrl, READY);
        if (ready >= threads - 1) return pool;
        if (Atomics.load(ctrl, FAILED) !== 0 || Date.now() > deadline) break;
        Atomics.wait(ctrl, READY, ready, 100);
      }
    } catch (err) {
      opts.onUnavailable?.(err);
    }
    pool.close();
    return null;
  }

  /** One phase: wakes the helpers (the caller has written its slots), runs `mine`, waits for every helper. */
  phase(mine: () => void): void {
    const c = this.ctrl;
    Atomics.store(c, DONE, 0);
    Atomics.add(c, GEN, 1);
    Atomics.notify(c, GEN);
    mine();
    const deadline = Date.now() + this.phaseTimeoutMs;
    for (;;) {
      const done = Atomics.load(c, DONE);
      if (Atomics.load(c, FAILED) !== 0) throw new Error(`${this.name} worker failed`);
      if (done >= this.threads - 1) return;
      if (Date.now() > deadline) throw new Error(`${this.name} workers stopped responding`);
      Atomics.wait(c, DONE, done, 1000);
    }
  }

  /** Tells the helpers to stop and terminates them. */
  close(): void {
    Atomics.store(this.ctrl, STOP, 1);
    Atomics.add(this.ctrl, GEN, 1);
    Atomics.notify(this.ctrl, GEN);
    for (const w of this.workers) void w.terminate();
  }
}

/**
 * A helper's side: `setup` once (its result is the phase function), then one call per phase until the
 * pool closes. An exception sets the failed slot, wakes the coordinator and is rethrown.
 */
export function serveLockstep(ctrl: Int32Array, setup: () => () => void): void {
  try {
    const step = setup();
    Atomics.add(ctrl, READY, 1);
    Atomics.notify(ctrl, READY);
    let gen = 0;
    for (;;) {
      Atomics.wait(ctrl, GEN, gen);
      // A wait also ends on a notify of a generation this helper has already served: the coordinator
      // bumps the generation, then notifies, and a helper that saw the bump without waiting can be
      // back in wait, its step done, before that notify. Stepping again would count it done twice and
      // let the phase end before another helper's rows are written.
      const next = Atomics.load(ctrl, GEN);
      if (next === gen) continue;
      gen = next;
      if (Atomics.load(ctrl, STOP) !== 0) return;
      step();
      Atomics.add(ctrl, DONE, 1);
      Atomics.notify(ctrl, DONE);
    }
  } catch (err) {
    Atomics.store(ctrl, FAILED, 1);
    Atomics.notify(ctrl, DONE);
    Atomics.notify(ctrl, READY);
    throw err;
  }
}
