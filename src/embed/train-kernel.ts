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
 * The helpers are a lockstep pool (../common/lockstep.ts): they block between phases and are told each
 * one through a shared control block, so a step costs no message passing. When they cannot all start
 * within `readyTimeoutMs` (a missing compiled file, a machine out of threads) the kernel computes every
 * row on this thread: slower, never stuck, and the same model.
 */
import { compiledModuleUrl } from "../common/compiled-url.js";
import { LOCKSTEP_SLOTS, LockstepPool, serveLockstep } from "../common/lockstep.js";

/** The kernel's slots of the control block: the phase and the batch's shape; `params` holds 1/τ or the gradient scale. */
const CMD = LOCKSTEP_SLOTS;
const B_AT = LOCKSTEP_SLOTS + 1;
const D_AT = LOCKSTEP_SLOTS + 2;
const CTL_SLOTS = 3;
const KERNEL_SIMILARITIES = 1;
const KERNEL_GRADIENTS = 2;

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

export interface BatchKernelOptions {
  /** How long the kernel waits for the helpers to start (default 30 s). */
  readonly readyTimeoutMs?: number;
  /** The helper's module (default: ./train-kernel-worker.js, compiled). */
  readonly workerUrl?: URL;
}

export class BatchKernel {
  readonly buffers: KernelBuffers;
  private readonly params: Float64Array;
  private pool: LockstepPool | null;

  /** `threads` counts this thread: 1 computes everything here. Blocks until the helpers are ready. */
  constructor(maxBatch: number, dims: number, threads: number, opts: BatchKernelOptions = {}) {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`BatchKernel: threads must be a positive integer, got ${threads}`);
    if (opts.readyTimeoutMs !== undefined && !(opts.readyTimeoutMs > 0))
      throw new RangeError(`BatchKernel: readyTimeoutMs must be positive, got ${opts.readyTimeoutMs}`);
    const parts = Math.min(threads, Math.max(1, maxBatch));
    this.buffers = kernelBuffers(maxBatch, dims, parts > 1);
    this.params = new Float64Array(parts > 1 ? new SharedArrayBuffer(8) : new ArrayBuffer(8));
    const buffers = this.buffers;
    const params = this.params;
    this.pool =
      parts > 1
        ? LockstepPool.start(
            opts.workerUrl ?? compiledModuleUrl("./train-kernel-worker.js", import.meta.url),
            parts,
            CTL_SLOTS,
            (control, part): KernelWorkerData => ({ buffers, control, params, part, parts }),
            { name: "static model training", startTimeoutMs: opts.readyTimeoutMs },
          )
        : null;
  }

  /** Threads that share the work: this one and the helpers. */
  get threads(): number {
    return this.pool?.threads ?? 1;
  }

  similarities(B: number, d: number, inv: number): void {
    this.run(KERNEL_SIMILARITIES, B, d, inv, (lo, hi) => similarityRows(this.buffers, B, d, inv, lo, hi));
  }

  gradients(B: number, d: number, scale: number): void {
    this.run(KERNEL_GRADIENTS, B, d, scale, (lo, hi) => gradientRange(this.buffers, B, d, scale, lo, hi));
  }

  /** Ends the helper threads; the kernel still works afterwards, on this thread alone. */
  close(): void {
    this.pool?.close();
    this.pool = null;
  }

  private run(cmd: number, B: number, d: number, param: number, share: (lo: number, hi: number) => void): void {
    const pool = this.pool;
    if (pool === null) {
      share(0, B);
      return;
    }
    this.params[0] = param;
    Atomics.store(pool.ctrl, CMD, cmd);
    Atomics.store(pool.ctrl, B_AT, B);
    Atomics.store(pool.ctrl, D_AT, d);
    pool.phase(() => share(...partRows(B, 0, pool.threads)));
  }
}

/** The helper's side (./train-kernel-worker.ts): each phase, its rows of the batch. */
export function serveKernel(data: KernelWorkerData): void {
  const { buffers, control, params, part, parts } = data;
  serveLockstep(control, () => () => {
    const B = Atomics.load(control, B_AT);
    const d = Atomics.load(control, D_AT);
    const [lo, hi] = partRows(B, part, parts);
    const cmd = Atomics.load(control, CMD);
    if (cmd === KERNEL_SIMILARITIES) similarityRows(buffers, B, d, params[0]!, lo, hi);
    else if (cmd === KERNEL_GRADIENTS) gradientRange(buffers, B, d, params[0]!, lo, hi);
    else throw new Error(`static model training: unknown phase ${cmd}`);
  });
}
