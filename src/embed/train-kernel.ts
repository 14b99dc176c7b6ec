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

/**
 * S[i][j] = EA_i·EB_j / τ for rows [i0, i1), and which entries are masked.
 *
 * Eight columns at a time: each dot product still sums its d terms in order (so every S_ij is the same
 * double as a one-at-a-time loop's), but eight independent sums keep the floating-point adder busy where
 * one sum waits on its previous add; a masked entry is computed and not stored.
 */
function similarityRows(k: KernelBuffers, B: number, d: number, inv: number, i0: number, i1: number): void {
  const { EA, EB, groups } = k;
  for (let i = i0; i < i1; i++) {
    const gi = groups[i]!;
    const oa = i * d;
    const row = i * B;
    let j = 0;
    for (; j + 8 <= B; j += 8) {
      const o0 = j * d;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let s4 = 0;
      let s5 = 0;
      let s6 = 0;
      let s7 = 0;
      for (let x = 0; x < d; x++) {
        const a = EA[oa + x]!;
        const e = o0 + x;
        s0 += a * EB[e]!;
        s1 += a * EB[e + d]!;
        s2 += a * EB[e + 2 * d]!;
        s3 += a * EB[e + 3 * d]!;
        s4 += a * EB[e + 4 * d]!;
        s5 += a * EB[e + 5 * d]!;
        s6 += a * EB[e + 6 * d]!;
        s7 += a * EB[e + 7 * d]!;
      }
      storeSimilarity(k, row, i, gi, j, s0, inv);
      storeSimilarity(k, row, i, gi, j + 1, s1, inv);
      storeSimilarity(k, row, i, gi, j + 2, s2, inv);
      storeSimilarity(k, row, i, gi, j + 3, s3, inv);
      storeSimilarity(k, row, i, gi, j + 4, s4, inv);
      storeSimilarity(k, row, i, gi, j + 5, s5, inv);
      storeSimilarity(k, row, i, gi, j + 6, s6, inv);
      storeSimilarity(k, row, i, gi, j + 7, s7, inv);
    }
    for (; j < B; j++) {
      const ob = j * d;
      let s = 0;
      for (let x = 0; x < d; x++) s += EA[oa + x]! * EB[ob + x]!;
      storeSimilarity(k, row, i, gi, j, s, inv);
    }
  }
}

/** Pairs of one group (other than the diagonal) are masked: not each other's negatives. */
function storeSimilarity(k: KernelBuffers, row: number, i: number, gi: number, j: number, s: number, inv: number): void {
  if (i !== j && k.groups[j]! === gi) {
    k.masked[row + j] = 1;
    return;
  }
  k.masked[row + j] = 0;
  k.S[row + j] = s * inv;
}

/** dL/dS_ij, or 0 for a masked entry. */
function gradAt(k: KernelBuffers, B: number, i: number, j: number, scale: number): number {
  const at = i * B + j;
  return k.masked[at] ? 0 : (k.PR[at]! + k.PC[at]! - (i === j ? 2 : 0)) * scale;
}

/**
 * dL/dEA for rows [r0, r1) and dL/dEB for columns [r0, r1), with dL/dS_ij = (PR + PC − 2·[i = j])·scale.
 * Each entry sums its terms in the serial order: over j ascending for EA, over i ascending for EB.
 *
 * Eight terms per pass over an output row: dE[x] + g0·E0[x] + … + g7·E7[x], added left
 * to right, is the same double as eight passes that each add one term, with an eighth of the loads and
 * stores of dE. A masked entry's g is 0, and adding 0·E[x] (±0) leaves a sum that started at +0 as it
 * was (it can never be −0, and E is finite), so it is the same as skipping the entry.
 */
function gradientRange(k: KernelBuffers, B: number, d: number, scale: number, r0: number, r1: number): void {
  const { EA, EB, dEA, dEB } = k;
  dEA.fill(0, r0 * d, r1 * d);
  dEB.fill(0, r0 * d, r1 * d);
  for (let i = r0; i < r1; i++) {
    const oa = i * d;
    let j = 0;
    for (; j + 8 <= B; j += 8) {
      const g0 = gradAt(k, B, i, j, scale);
      const g1 = gradAt(k, B, i, j + 1, scale);
      const g2 = gradAt(k, B, i, j + 2, scale);
      const g3 = gradAt(k, B, i, j + 3, scale);
      const g4 = gradAt(k, B, i, j + 4, scale);
      const g5 = gradAt(k, B, i, j + 5, scale);
      const g6 = gradAt(k, B, i, j + 6, scale);
      const g7 = gradAt(k, B, i, j + 7, scale);
      addEight(dEA, oa, EB, j * d, d, g0, g1, g2, g3, g4, g5, g6, g7);
    }
    for (; j < B; j++) {
      const g = gradAt(k, B, i, j, scale);
      const ob = j * d;
      for (let x = 0; x < d; x++) dEA[oa + x] = dEA[oa + x]! + g * EB[ob + x]!;
    }
  }
  let i = 0;
  for (; i + 8 <= B; i += 8) {
    const o0 = i * d;
    for (let j = r0; j < r1; j++) {
      const g0 = gradAt(k, B, i, j, scale);
      const g1 = gradAt(k, B, i + 1, j, scale);
      const g2 = gradAt(k, B, i + 2, j, scale);
      const g3 = gradAt(k, B, i + 3, j, scale);
      const g4 = gradAt(k, B, i + 4, j, scale);
      const g5 = gradAt(k, B, i + 5, j, scale);
      const g6 = gradAt(k, B, i + 6, j, scale);
      const g7 = gradAt(k, B, i + 7, j, scale);
      addEight(dEB, j * d, EA, o0, d, g0, g1, g2, g3, g4, g5, g6, g7);
    }
  }
  for (; i < B; i++) {
    const oa = i * d;
    for (let j = r0; j < r1; j++) {
      const g = gradAt(k, B, i, j, scale);
      const ob = j * d;
      for (let x = 0; x < d; x++) dEB[ob + x] = dEB[ob + x]! + g * EA[oa + x]!;
    }
  }
}

/** out[oo + x] += g0·src[so + x] + … + g7·src[so + 7d + x] for x < d, added left to right (the serial order). */
function addEight(
  out: Float64Array,
  oo: number,
  src: Float64Array,
  so: number,
  d: number,
  g0: number,
  g1: number,
  g2: number,
  g3: number,
  g4: number,
  g5: number,
  g6: number,
  g7: number,
): void {
  for (let x = 0; x < d; x++) {
    const e = so + x;
    out[oo + x] =
      out[oo + x]! +
      g0 * src[e]! +
      g1 * src[e + d]! +
      g2 * src[e + 2 * d]! +
      g3 * src[e + 3 * d]! +
      g4 * src[e + 4 * d]! +
      g5 * src[e + 5 * d]! +
      g6 * src[e + 6 * d]! +
      g7 * src[e + 7 * d]!;
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
