/**
 * The B×B part of a training batch (./train.ts, batchLoss): the similarity matrix of the batch's two
 * sides, and the gradients it sends back to them. With a batch of 512 and 128 dimensions that is three
 * products of 512 × 512 × 128, most of a training step.
 *
 * `threads` > 1 splits them by rows across helper threads over shared memory, and the result is the same
 * bit for bit: every entry is computed by the same code, summing the same terms in the same order, only
 * on another thread. Similarities are split by row i; the gradient of side A by row i (summing over j in
 * ascending order, as the serial loop does) and that of side B by column j (summing over i in ascending
 * order). The model does not depend on the thread count, so it is not part of the training configuration
 * or the model id.
 *
 * The helpers block in Atomics.wait between batches and are told each phase through a shared control
 * word, so a step costs no message passing. A helper that has not started within `readyTimeoutMs` of the
 * first batch (a missing compiled file, a machine out of threads) is dropped and its rows are computed
 * here: slower, never stuck, and the same model. `close()` ends the helpers; they are unref'd, so they
 * never hold the process open.
 */
import { Worker } from "node:worker_threads";
import { compiledModuleUrl } from "../common/compiled-url.js";

/** Control words: [command, done, B, d, ready]; parameters: [1/τ or the gradient scale]. */
const CMD = 0;
const DONE = 1;
const B_AT = 2;
const D_AT = 3;
const READY = 4;
const CONTROL_WORDS = 5;
const KERNEL_IDLE = 0;
const KERNEL_SIMILARITIES = 1;
const KERNEL_GRADIENTS = 2;
const KERNEL_EXIT = 3;

/** The arrays a batch shares with the helpers, sized for the largest batch. Row-major, stride B. */
export interface KernelBuffers {
  readonly EA: Float64Array;
  readonly EB: Float64Array;
  readonly dEA: Float64Array;
  readonly dEB: Float64Array;
  readonly S: Float64Array;
  readonly PR: Float64Array;
  readonly PC: Float64Array;
  readonly masked: Uint8Array;
  /** The group of each batch row (pairs of one repository are not each other's negatives). */
  readonly groups: Int32Array;
}

function kernelBuffers(maxBatch: number, dims: number, shared: boolean): KernelBuffers {
  const f64 = (n: number) => new Float64Array(shared ? new SharedArrayBuffer(n * 8) : new ArrayBuffer(n * 8));
  const bb = maxBatch * maxBatch;
  return {
    EA: f64(maxBatch * dims),
    EB: f64(maxBatch * dims),
    dEA: f64(maxBatch * dims),
    dEB: f64(maxBatch * dims),
    S: f64(bb),
    PR: f64(bb),
    PC: f64(bb),
    masked: new Uint8Array(shared ? new SharedArrayBuffer(bb) : new ArrayBuffer(bb)),
    groups: new Int32Array(shared ? new SharedArrayBuffer(maxBatch * 4) : new ArrayBuffer(maxBatch * 4)),
  };
}

/** S[i][j] = EA_i·EB_j / τ for rows [i0, i1), and which entries are masked. */
function similarityRows(k: KernelBuffers, B: number, d: number, inv: number, i0: number, i1: number): void {
  const { EA, EB, S, masked, groups } = k;
  for (let i = i0; i < i1; i++) {
    const gi = groups[i]!;
    for (let j = 0; j < B; j++) {
      if (i !== j && groups[j]! === gi) {
        masked[i * B + j] = 1;
        continue;
      }
      masked[i * B + j] = 0;
      let s = 0;
      const oa = i * d;
      const ob = j * d;
      for (let x = 0; x < d; x++) s += EA[oa + x]! * EB[ob + x]!;
      S[i * B + j] = s * inv;
    }
  }
}

/**
 * dL/dEA for rows [r0, r1) and dL/dEB for columns [r0, r1), with dL/dS_ij = (PR + PC − 2·[i = j])·scale.
 * Each entry sums its terms in the serial order: over j ascending for EA, over i ascending for EB.
 */
function gradientRange(k: KernelBuffers, B: number, d: number, scale: number, r0: number, r1: number): void {
  const { EA, EB, dEA, dEB, PR, PC, masked } = k;
  dEA.fill(0, r0 * d, r1 * d);
  dEB.fill(0, r0 * d, r1 * d);
  for (let i = r0; i < r1; i++) {
    const oa = i * d;
    for (let j = 0; j < B; j++) {
      if (masked[i * B + j]) continue;
      const g = (PR[i * B + j]! + PC[i * B + j]! - (i === j ? 2 : 0)) * scale;
      if (g === 0) continue;
      const ob = j * d;
      for (let x = 0; x < d; x++) dEA[oa + x]! += g * EB[ob + x]!;
    }
  }
  for (let i = 0; i < B; i++) {
    const oa = i * d;
    for (let j = r0; j < r1; j++) {
      if (masked[i * B + j]) continue;
      const g = (PR[i * B + j]! + PC[i * B + j]! - (i === j ? 2 : 0)) * scale;
      if (g === 0) continue;
      const ob = j * d;
      for (let x = 0; x < d; x++) dEB[ob + x]! += g * EA[oa + x]!;
    }
  }
}

/** What a helper thread receives. */
export interface KernelWorkerData {
  readonly buffers: KernelBuffers;
  readonly control: Int32Array;
  readonly params: Float64Array;
  /** This helper's share: rows [lo, hi) of B, as fractions of `parts`. */
  readonly part: number;
  readonly parts: number;
}

/** Rows [lo, hi) of part `p` of `parts` in a batch of B: contiguous, sizes differing by at most one. */
export function partRows(B: number, p: number, parts: number): [number, number] {
  return [Math.floor((B * p) / parts), Math.floor((B * (p + 1)) / parts)];
}

/** How long the first batch waits for the helpers to start before computing without them. */
const READY_TIMEOUT_MS = 30_000;

export interface BatchKernelOptions {
  /** How long the first batch waits for the helpers to start (default 30 s). */
  readonly readyTimeoutMs?: number;
  /** The helper's module (default: ./train-kernel-worker.js, compiled). */
  readonly workerUrl?: URL;
}

interface Helper {
  readonly worker: Worker;
  readonly control: Int32Array;
  readonly params: Float64Array;
}

export class BatchKernel {
  readonly buffers: KernelBuffers;
  private readonly helpers: Helper[] = [];
  private readonly parts: number;
  private readonly readyTimeoutMs: number;
  private started = false;

  /** `threads` counts this thread: 1 computes everything here. */
  constructor(maxBatch: number, dims: number, threads: number, opts: BatchKernelOptions = {}) {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`BatchKernel: threads must be a positive integer, got ${threads}`);
    this.readyTimeoutMs = opts.readyTimeoutMs ?? READY_TIMEOUT_MS;
    if (!(this.readyTimeoutMs > 0)) throw new RangeError(`BatchKernel: readyTimeoutMs must be positive, got ${this.readyTimeoutMs}`);
    const workerUrl = opts.workerUrl ?? compiledModuleUrl("./train-kernel-worker.js", import.meta.url);
    this.parts = Math.min(threads, Math.max(1, maxBatch));
    this.buffers = kernelBuffers(maxBatch, dims, this.parts > 1);
    for (let p = 1; p < this.parts; p++) {
      const control = new Int32Array(new SharedArrayBuffer(4 * CONTROL_WORDS));
      const params = new Float64Array(new SharedArrayBuffer(8));
      const data: KernelWorkerData = { buffers: this.buffers, control, params, part: p, parts: this.parts };
      const worker = new Worker(workerUrl, { workerData: data });
      worker.unref();
      // A helper that fails to load never says it is ready; the first batch then goes on without it.
      worker.on("error", () => {});
      this.helpers.push({ worker, control, params });
    }
  }

  /** Threads that share the work: this one and the helpers still running. */
  get threads(): number {
    return this.helpers.length + 1;
  }

  similarities(B: number, d: number, inv: number): void {
    this.run(KERNEL_SIMILARITIES, B, d, inv, (lo, hi) => similarityRows(this.buffers, B, d, inv, lo, hi));
  }

  gradients(B: number, d: number, scale: number): void {
    this.run(KERNEL_GRADIENTS, B, d, scale, (lo, hi) => gradientRange(this.buffers, B, d, scale, lo, hi));
  }

  /** Waits (blocking, once) for the helpers to start; drops them all if one does not in time. */
  private awaitHelpers(): void {
    this.started = true;
    const deadline = performance.now() + this.readyTimeoutMs;
    for (const h of this.helpers) {
      while (Atomics.load(h.control, READY) === 0) {
        const left = deadline - performance.now();
        if (left <= 0 || Atomics.wait(h.control, READY, 0, left) === "timed-out") {
          void this.close();
          return;
        }
      }
    }
  }

  /** Ends the helper threads; the kernel still works afterwards, on this thread alone. */
  async close(): Promise<void> {
    const helpers = this.helpers.splice(0);
    for (const h of helpers) {
      Atomics.store(h.control, CMD, KERNEL_EXIT);
      Atomics.notify(h.control, CMD);
    }
    await Promise.all(helpers.map((h) => h.worker.terminate()));
  }

  private run(cmd: number, B: number, d: number, param: number, mine: (lo: number, hi: number) => void): void {
    if (!this.started) this.awaitHelpers();
    const parts = this.helpers.length + 1;
    for (const h of this.helpers) {
      h.params[0] = param;
      Atomics.store(h.control, B_AT, B);
      Atomics.store(h.control, D_AT, d);
      Atomics.store(h.control, DONE, 0);
      Atomics.store(h.control, CMD, cmd);
      Atomics.notify(h.control, CMD);
    }
    const [lo, hi] = partRows(B, 0, parts);
    mine(lo, hi);
    for (const h of this.helpers) {
      while (Atomics.load(h.control, DONE) === 0) Atomics.wait(h.control, DONE, 0);
      const failed = Atomics.load(h.control, CMD);
      if (failed !== KERNEL_IDLE) throw new Error("training helper thread failed");
    }
  }
}

/** The helper's loop (./train-kernel-worker.ts): wait for a phase, compute its rows, report done. */
export function serveKernel(data: KernelWorkerData): void {
  const { buffers, control, params, part, parts } = data;
  Atomics.store(control, READY, 1);
  Atomics.notify(control, READY);
  for (;;) {
    Atomics.wait(control, CMD, KERNEL_IDLE);
    const cmd = Atomics.load(control, CMD);
    if (cmd === KERNEL_EXIT) return;
    const B = Atomics.load(control, B_AT);
    const d = Atomics.load(control, D_AT);
    const [lo, hi] = partRows(B, part, parts);
    let ok = true;
    try {
      if (cmd === KERNEL_SIMILARITIES) similarityRows(buffers, B, d, params[0]!, lo, hi);
      else if (cmd === KERNEL_GRADIENTS) gradientRange(buffers, B, d, params[0]!, lo, hi);
      else ok = false;
    } catch {
      ok = false;
    }
    // The command word doubles as the status: IDLE after a good phase, the command itself after a failed
    // one, which also ends this helper.
    if (ok) Atomics.store(control, CMD, KERNEL_IDLE);
    Atomics.store(control, DONE, 1);
    Atomics.notify(control, DONE);
    if (!ok) return;
  }
}
