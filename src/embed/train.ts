/**
 * Domain adaptation of the distilled static embedding (`reposearch train`): contrastive fine-tuning of the
 * token-vector table on weak pairs the dataset gives for free, starting from the teacher-distilled model.
 *
 * Model: a text's vector is e = s / ‖s‖ with s = Σ_t w_t·u_t over its distinct known words, where w_t is the
 * word's SIF weight (fixed; recovered as the norm of the distilled row, which distillation normalised
 * before weighting) and u_t the trained direction (initialised to the distilled unit row). The written
 * model stores w_t·u_t per row, so StaticEmbedder embeds with it unchanged. (Dividing s by Σ w_t, as a
 * weighted mean would, changes nothing after the normalisation.)
 *
 * Pairs (`PairKind`), one per repository with a description, the description always on one side:
 *   name    "repo (repo words). topic, topic" ↔ description
 *   readme  README excerpt (stripMarkup, first `readmeChars`) ↔ description
 *   doc     the repository's embedded text without its description (name, topics, README) ↔ description
 * Within a kind, a text seen before (on either side) drops the pair, so templates and forks with copied
 * descriptions do not become each other's false negatives.
 *
 * Loss: symmetric InfoNCE with in-batch negatives at temperature τ; pairs from the same repository are
 * masked out of each other's negatives. Gradients are exact, through the L2 normalisation to each token's
 * row. Optimiser: lazy (sparse) Adam on the rows a batch touches, with an optional L2 pull toward the
 * distilled init. Everything is deterministic (seeded shuffles, fixed summation order), and the trained
 * model's id is a hash of the init model id, the training configuration and the training data.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { compiledModuleUrl } from "../common/compiled-url.js";
import { sha256Hex } from "../common/hash.js";
import { seededRandom } from "../common/random.js";
import type { RepoRecord } from "../dataset/record.js";
import { embeddingText } from "../corpus/doc-text.js";
import { stripMarkup } from "../text/analyzer.js";
import type { StaticModel } from "./distill.js";
import { STATIC_FORMAT, STATIC_FORMAT_VERSION, type StaticModelMeta } from "./static.js";
import { BatchKernel } from "./train-kernel.js";
import { staticTokens } from "./static-tokenizer.js";

/** Bumped whenever the training procedure changes what a configuration produces (part of the model id). */
export const TRAIN_VERSION = 1;

export type PairKind = "name" | "readme" | "doc";
export const PAIR_KINDS: readonly PairKind[] = ["name", "readme", "doc"];

export interface TrainConfig {
  readonly pairs: readonly PairKind[];
  /** Characters of stripped README text in a `readme` pair. */
  readonly readmeChars: number;
  /** At most this many epochs; fewer when the held-out loss stops improving (`patience`). */
  readonly epochs: number;
  /**
   * Stop after this many epochs without a lower held-out loss (by `minImprovement`), and keep the best epoch's model
   * (0 = train every epoch). The held-out loss of the default build bottoms out at epoch 4 of 8.
   */
  readonly patience: number;
  /**
   * An epoch counts toward `patience` as an improvement only when it lowers the best held-out loss by at
   * least this fraction of it; a smaller gain is still kept as the best model. The default build's epoch 4
   * gains 0.06% on epoch 3 (3.3703 → 3.3682) and epoch 5 loses (3.3716): stopping after epoch 4 keeps the
   * same model and skips one epoch (about a minute on two cores).
   */
  readonly minImprovement: number;
  readonly batchSize: number;
  readonly temperature: number;
  /** Adam step size on the unit-norm token directions. */
  readonly lr: number;
  /** Strength of the L2 pull toward the distilled init (0 = none). */
  readonly l2ToInit: number;
  readonly seed: number;
  /** Fraction of pairs held out of training to report a validation loss (seeded selection). */
  readonly heldOut: number;
  /** Probability of dropping each word of a training text (seeded; a text keeps at least one word). */
  readonly tokenDropout: number;
  /**
   * Topic-aware batches: the training pairs are clustered by their description's distilled embedding
   * (spherical k-means, this many clusters) and batches are cut from the clusters laid end to end, so a
   * batch's in-batch negatives are mostly descriptions of the same kind. 0 = uniformly shuffled batches.
   * Measured on the full build: it trades the curated lists for the head set (docs/embeddings.md).
   */
  readonly batchClusters: number;
}

/** The configuration chosen on dev.jsonl (docs/embeddings.md has the variant table). */
export const DEFAULT_TRAIN_CONFIG: TrainConfig = Object.freeze({
  pairs: ["name", "readme"] as const,
  readmeChars: 300,
  epochs: 8,
  patience: 1,
  minImprovement: 0.001,
  batchSize: 512,
  temperature: 0.2,
  lr: 1e-2,
  l2ToInit: 0,
  seed: 1,
  heldOut: 0.01,
  tokenDropout: 0,
  batchClusters: 0,
});

export interface TrainedModelMeta extends StaticModelMeta {
  readonly trainedFrom: string;
  readonly training: {
    readonly version: number;
    readonly config: TrainConfig;
    readonly dataFingerprint: string;
    readonly pairs: Record<PairKind, number>;
    /** The epoch whose model was kept (early stopping on the held-out loss). */
    readonly keptEpoch: number;
    readonly history: readonly EpochStats[];
    readonly seconds: number;
  };
}

// ---------------------------------------------------------------------------------------------------------
// Texts → token ids

/** Distinct known token ids of many texts in CSR layout, in first-occurrence order (as StaticEmbedder sums). */
export interface TokenizedTexts {
  /** offsets[i]..offsets[i+1] is text i's slice of `ids`. */
  readonly offsets: Int32Array;
  readonly ids: Int32Array;
}

export function tokenizeTexts(texts: readonly string[], vocab: ReadonlyMap<string, number>): TokenizedTexts {
  const offsets = new Int32Array(texts.length + 1);
  let ids = new Int32Array(Math.max(64, texts.length * 16));
  let n = 0;
  const seen = new Set<number>();
  const toks: string[] = [];
  texts.forEach((text, i) => {
    seen.clear();
    toks.length = 0;
    for (const tok of staticTokens(text, toks)) {
      const id = vocab.get(tok);
      if (id === undefined || seen.has(id)) continue;
      seen.add(id);
      if (n === ids.length) {
        const grown = new Int32Array(ids.length * 2);
        grown.set(ids);
        ids = grown;
      }
      ids[n++] = id;
    }
    offsets[i + 1] = n;
  });
  return { offsets, ids: ids.slice(0, n) };
}

export function vocabIndex(vocab: readonly string[]): Map<string, number> {
  return new Map(vocab.map((t, i) => [t, i]));
}

/**
 * Embeds tokenised texts with a model's rows exactly as StaticEmbedder.embedOne does (float32 sums in
 * token order, then L2 normalisation): N × dims, row-major. Zero rows for texts with no known word.
 */
export function embedTokenized(vectors: Float32Array, dims: number, texts: TokenizedTexts): Float32Array {
  const count = texts.offsets.length - 1;
  const out = new Float32Array(count * dims);
  for (let i = 0; i < count; i++) {
    const o = i * dims;
    for (let p = texts.offsets[i]!; p < texts.offsets[i + 1]!; p++) {
      const base = texts.ids[p]! * dims;
      for (let j = 0; j < dims; j++) out[o + j]! += vectors[base + j]!;
    }
    let s = 0;
    for (let j = 0; j < dims; j++) s += out[o + j]! * out[o + j]!;
    if (s > 0) {
      const inv = 1 / Math.sqrt(s);
      for (let j = 0; j < dims; j++) out[o + j]! *= inv;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Weak pairs

/** "repo (repo words). topic, topic": the repository's name side of a `name` pair. */
export function nameText(r: RepoRecord): string {
  const repo = r.name.slice(r.name.indexOf("/") + 1);
  const words = repo.replace(/[-_.]+/g, " ");
  const head = words === repo ? repo : `${repo} (${words})`;
  return r.topics.length ? `${head}. ${r.topics.join(", ")}` : head;
}

export interface PairTexts {
  readonly a: string[];
  /** Always the description. */
  readonly b: string[];
  /** Index of the source record. */
  readonly group: number[];
  readonly kind: PairKind[];
}

/** The weak pairs of `kinds`, deduplicated per kind (a text seen before on either side drops the pair). */
export function pairTexts(records: readonly RepoRecord[], kinds: readonly PairKind[], readmeChars: number): PairTexts {
  const out: PairTexts = { a: [], b: [], group: [], kind: [] };
  for (const kind of PAIR_KINDS) {
    if (!kinds.includes(kind)) continue;
    const seen = new Set<string>();
    records.forEach((r, g) => {
      const desc = r.description?.trim();
      if (!desc) return;
      let other = "";
      if (kind === "name") other = nameText(r);
      else if (kind === "readme") other = r.readme ? stripMarkup(r.readme).slice(0, readmeChars).trim() : "";
      else other = embeddingText({ ...r, description: null }).trim();
      if (!other || other === desc || seen.has(other) || seen.has(desc)) return;
      seen.add(other);
      seen.add(desc);
      out.a.push(other);
      out.b.push(desc);
      out.group.push(g);
      out.kind.push(kind);
    });
  }
  return out;
}

export interface Pairs {
  readonly a: TokenizedTexts;
  readonly b: TokenizedTexts;
  /** Source record of each pair: pairs of one repository are not each other's negatives. */
  readonly group: Int32Array;
}

export interface PairSet extends Pairs {
  readonly count: number;
  readonly perKind: Record<PairKind, number>;
}

function sameIds(t: TokenizedTexts, i: number, u: TokenizedTexts, j: number): boolean {
  const la = t.offsets[i + 1]! - t.offsets[i]!;
  if (la !== u.offsets[j + 1]! - u.offsets[j]!) return false;
  const x = Array.from(t.ids.subarray(t.offsets[i]!, t.offsets[i + 1]!)).sort((p, q) => p - q);
  const y = Array.from(u.ids.subarray(u.offsets[j]!, u.offsets[j + 1]!)).sort((p, q) => p - q);
  return x.every((v, k) => v === y[k]);
}

/** Tokenises pair texts; drops pairs where a side has no known word or both sides have the same words. */
export function buildPairSet(texts: PairTexts, vocab: ReadonlyMap<string, number>): PairSet {
  const a = tokenizeTexts(texts.a, vocab);
  const b = tokenizeTexts(texts.b, vocab);
  const keep: number[] = [];
  for (let i = 0; i < texts.a.length; i++) {
    const empty = a.offsets[i + 1] === a.offsets[i] || b.offsets[i + 1] === b.offsets[i];
    if (!empty && !sameIds(a, i, b, i)) keep.push(i);
  }
  const perKind: Record<PairKind, number> = { name: 0, readme: 0, doc: 0 };
  for (const i of keep) perKind[texts.kind[i]!]++;
  return { a: selectTexts(a, keep), b: selectTexts(b, keep), group: Int32Array.from(keep.map((i) => texts.group[i]!)), count: keep.length, perKind };
}

function selectTexts(t: TokenizedTexts, rows: ArrayLike<number>): TokenizedTexts {
  const offsets = new Int32Array(rows.length + 1);
  let n = 0;
  for (let i = 0; i < rows.length; i++) {
    n += t.offsets[rows[i]! + 1]! - t.offsets[rows[i]!]!;
    offsets[i + 1] = n;
  }
  const ids = new Int32Array(n);
  for (let i = 0; i < rows.length; i++) ids.set(t.ids.subarray(t.offsets[rows[i]!]!, t.offsets[rows[i]! + 1]!), offsets[i]!);
  return { offsets, ids };
}

/** The texts `rows`, each word dropped with probability `p` (at least one kept): a batch-local copy. */
function dropTokens(t: TokenizedTexts, rows: ArrayLike<number>, p: number, rnd: () => number): TokenizedTexts {
  const offsets = new Int32Array(rows.length + 1);
  const ids: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const start = ids.length;
    const from = t.offsets[rows[i]!]!;
    const to = t.offsets[rows[i]! + 1]!;
    for (let k = from; k < to; k++) if (rnd() >= p) ids.push(t.ids[k]!);
    if (ids.length === start && to > from) ids.push(t.ids[from + Math.floor(rnd() * (to - from))]!);
    offsets[i + 1] = ids.length;
  }
  return { offsets, ids: Int32Array.from(ids) };
}

/** A hash of exactly what training reads (token ids of both sides and the grouping). */
export function pairFingerprint(p: PairSet): string {
  const bufs = [p.a.offsets, p.a.ids, p.b.offsets, p.b.ids, p.group].map((x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength));
  return sha256Hex(Buffer.concat(bufs)).slice(0, 16);
}

// ---------------------------------------------------------------------------------------------------------
// Parameters, loss and gradient

export interface Params {
  /** vocab × dims trained directions (the distilled rows divided by their weights at init). */
  readonly u: Float32Array;
  /** Per-token SIF weight, fixed. */
  readonly w: Float32Array;
  readonly dims: number;
}

export function paramsFromModel(model: StaticModel): Params {
  const d = model.meta.dims;
  const n = model.vocab.length;
  const u = new Float32Array(n * d);
  const w = new Float32Array(n);
  for (let t = 0; t < n; t++) {
    let s = 0;
    for (let j = 0; j < d; j++) s += model.vectors[t * d + j]! ** 2;
    const norm = Math.sqrt(s);
    w[t] = norm;
    const inv = norm > 0 ? 1 / norm : 0;
    for (let j = 0; j < d; j++) u[t * d + j] = model.vectors[t * d + j]! * inv;
  }
  return { u, w, dims: d };
}

/** Accumulates the gradient with respect to `u` for the rows a batch touches. */
export class SparseGrad {
  readonly g: Float64Array;
  private readonly mark: Uint8Array;
  touched: number[] = [];

  constructor(
    rows: number,
    readonly dims: number,
  ) {
    this.g = new Float64Array(rows * dims);
    this.mark = new Uint8Array(rows);
  }

  touch(row: number): void {
    if (this.mark[row]) return;
    this.mark[row] = 1;
    this.touched.push(row);
  }

  clear(): void {
    for (const r of this.touched) {
      this.mark[r] = 0;
      this.g.fill(0, r * this.dims, (r + 1) * this.dims);
    }
    this.touched = [];
  }
}

/** s = Σ w_t u_t into out[off..off+d); e = s/‖s‖ written in place. Returns ‖s‖ (0: left zero). */
function encodeInto(p: Params, t: TokenizedTexts, i: number, out: Float64Array, off: number): number {
  const d = p.dims;
  for (let k = t.offsets[i]!; k < t.offsets[i + 1]!; k++) {
    const id = t.ids[k]!;
    const w = p.w[id]!;
    const base = id * d;
    for (let j = 0; j < d; j++) out[off + j]! += w * p.u[base + j]!;
  }
  let s = 0;
  for (let j = 0; j < d; j++) s += out[off + j]! * out[off + j]!;
  const norm = Math.sqrt(s);
  if (norm > 0) for (let j = 0; j < d; j++) out[off + j]! /= norm;
  return norm;
}

/** dL/du for every token of text i, from dL/de (dE at off): (dE − e·(e·dE)) / ‖s‖ times each weight. */
function scatterGrad(
  p: Params,
  t: TokenizedTexts,
  i: number,
  e: Float64Array,
  dE: Float64Array,
  off: number,
  norm: number,
  grad: SparseGrad,
  ds: Float64Array,
): void {
  if (norm <= 0) return;
  const d = p.dims;
  let dot = 0;
  for (let j = 0; j < d; j++) dot += e[off + j]! * dE[off + j]!;
  for (let j = 0; j < d; j++) ds[j] = (dE[off + j]! - e[off + j]! * dot) / norm;
  for (let k = t.offsets[i]!; k < t.offsets[i + 1]!; k++) {
    const id = t.ids[k]!;
    const w = p.w[id]!;
    grad.touch(id);
    const base = id * d;
    for (let j = 0; j < d; j++) grad.g[base + j]! += w * ds[j]!;
  }
}

/**
 * Symmetric InfoNCE of one batch of pairs (mean over rows and columns, halved); adds dLoss/du into `grad`
 * when given. Entries of two pairs from the same group are masked out of the negatives.
 */
export function batchLoss(
  p: Params,
  pairs: Pairs,
  batch: ArrayLike<number>,
  temperature: number,
  grad?: SparseGrad,
  kernel: BatchKernel = new BatchKernel(batch.length, p.dims, 1),
): number {
  const B = batch.length;
  const d = p.dims;
  const k = kernel.buffers;
  const { EA, EB, PR, PC, S, masked, dEA, dEB } = k;
  EA.fill(0, 0, B * d);
  EB.fill(0, 0, B * d);
  const nA = new Float64Array(B);
  const nB = new Float64Array(B);
  for (let i = 0; i < B; i++) {
    nA[i] = encodeInto(p, pairs.a, batch[i]!, EA, i * d);
    nB[i] = encodeInto(p, pairs.b, batch[i]!, EB, i * d);
    k.groups[i] = pairs.group[batch[i]!]!;
  }
  const inv = 1 / temperature;
  kernel.similarities(B, d, inv);
  // Row softmax (a → b) and column softmax (b → a).
  let lossR = 0;
  let lossC = 0;
  for (let i = 0; i < B; i++) {
    let max = -Infinity;
    for (let j = 0; j < B; j++) if (!masked[i * B + j] && S[i * B + j]! > max) max = S[i * B + j]!;
    let sum = 0;
    for (let j = 0; j < B; j++) {
      if (masked[i * B + j]) continue;
      const e = Math.exp(S[i * B + j]! - max);
      PR[i * B + j] = e;
      sum += e;
    }
    for (let j = 0; j < B; j++) PR[i * B + j]! /= sum;
    lossR -= S[i * B + i]! - max - Math.log(sum);
  }
  for (let j = 0; j < B; j++) {
    let max = -Infinity;
    for (let i = 0; i < B; i++) if (!masked[i * B + j] && S[i * B + j]! > max) max = S[i * B + j]!;
    let sum = 0;
    for (let i = 0; i < B; i++) {
      if (masked[i * B + j]) continue;
      const e = Math.exp(S[i * B + j]! - max);
      PC[i * B + j] = e;
      sum += e;
    }
    for (let i = 0; i < B; i++) PC[i * B + j]! /= sum;
    lossC -= S[j * B + j]! - max - Math.log(sum);
  }
  const loss = (0.5 * (lossR + lossC)) / B;
  if (!grad) return loss;

  // dLoss/dS = ((PR − I) + (PC − I)) / 2B; dS/dEA_i = EB_j/τ, dS/dEB_j = EA_i/τ.
  kernel.gradients(B, d, (0.5 / B) * inv);
  const ds = new Float64Array(d);
  for (let i = 0; i < B; i++) {
    scatterGrad(p, pairs.a, batch[i]!, EA, dEA, i * d, nA[i]!, grad, ds);
    scatterGrad(p, pairs.b, batch[i]!, EB, dEB, i * d, nB[i]!, grad, ds);
  }
  return loss;
}

// ---------------------------------------------------------------------------------------------------------
// Training

/** Lazy Adam: moments of a row advance only on the steps that touch it (TensorFlow's LazyAdam). */
class LazyAdam {
  private readonly m: Float32Array;
  private readonly v: Float32Array;
  private step = 0;

  constructor(
    size: number,
    private readonly lr: number,
    private readonly b1 = 0.9,
    private readonly b2 = 0.999,
    private readonly eps = 1e-8,
  ) {
    this.m = new Float32Array(size);
    this.v = new Float32Array(size);
  }

  apply(p: Params, init: Float32Array, l2: number, grad: SparseGrad, ever: Uint8Array): void {
    this.step++;
    const c1 = 1 - this.b1 ** this.step;
    const c2 = 1 - this.b2 ** this.step;
    const d = p.dims;
    for (const r of grad.touched) {
      ever[r] = 1;
      for (let k = r * d; k < (r + 1) * d; k++) {
        const g = grad.g[k]! + l2 * (p.u[k]! - init[k]!);
        const m = (this.m[k] = this.b1 * this.m[k]! + (1 - this.b1) * g);
        const v = (this.v[k] = this.b2 * this.v[k]! + (1 - this.b2) * g * g);
        p.u[k]! -= (this.lr * (m / c1)) / (Math.sqrt(v / c2) + this.eps);
      }
    }
    grad.clear();
  }
}

export interface EpochStats {
  readonly epoch: number;
  /** Mean training-batch loss over the epoch. */
  readonly loss: number;
  /** Loss on the held-out pairs after the epoch (null without held-out pairs). */
  readonly heldOutLoss: number | null;
  readonly seconds: number;
}

export interface TrainHooks {
  readonly onStep?: (epoch: number, step: number, steps: number, loss: number) => void;
  /** `rows()` gives the model rows as they stand after this epoch (for evaluating as training goes). */
  readonly onEpoch?: (stats: EpochStats, rows: () => Float32Array) => void;
}

export interface TrainResult {
  readonly model: StaticModel & { readonly meta: TrainedModelMeta };
  readonly history: EpochStats[];
  /** The epoch whose model was kept: the last, or the one with the lowest held-out loss when stopping early. */
  readonly keptEpoch: number;
  /** Loss before any update, on the held-out pairs (or on the first training batches without any). */
  readonly initialHeldOutLoss: number | null;
  readonly seconds: number;
}

function shuffle(xs: Int32Array, rnd: () => number): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    const t = xs[i]!;
    xs[i] = xs[j]!;
    xs[j] = t;
  }
}

/** Mean loss over fixed consecutive batches of `rows`. */
export function meanLoss(
  p: Params,
  pairs: PairSet,
  rows: Int32Array,
  batchSize: number,
  temperature: number,
  kernel: BatchKernel = new BatchKernel(batchSize, p.dims, 1),
): number {
  let sum = 0;
  let n = 0;
  for (let s = 0; s < rows.length; s += batchSize) {
    const batch = rows.subarray(s, Math.min(rows.length, s + batchSize));
    if (batch.length < 2) continue;
    sum += batchLoss(p, pairs, batch, temperature, undefined, kernel) * batch.length;
    n += batch.length;
  }
  return n ? sum / n : NaN;
}

export function trainedModelId(initId: string, cfg: TrainConfig, dataFingerprint: string): string {
  // A setting at its neutral value is left out, so models trained before it existed keep their ids.
  const { batchClusters, ...rest } = cfg;
  const config = batchClusters ? cfg : rest;
  return sha256Hex(JSON.stringify({ version: TRAIN_VERSION, init: initId, config, data: dataFingerprint })).slice(0, 16);
}

/**
 * Spherical k-means over unit rows (N × dims): the cluster of each row. Seeded initial centres, a fixed
 * number of rounds; rows with no known word (zero vectors) all land in cluster 0. Deterministic.
 */
export function sphericalKMeans(x: Float32Array, dims: number, k: number, rounds: number, seed: number): Int32Array {
  const n = x.length / dims;
  const assign = new Int32Array(n);
  if (k <= 1 || n === 0) return assign;
  k = Math.min(k, n);
  const rnd = seededRandom(seed ^ 0xc1a5);
  const centres = new Float64Array(k * dims);
  const picked = new Set<number>();
  for (let c = 0; c < k; c++) {
    let i = Math.floor(rnd() * n);
    while (picked.has(i)) i = (i + 1) % n;
    picked.add(i);
    for (let j = 0; j < dims; j++) centres[c * dims + j] = x[i * dims + j]!;
  }
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < n; i++) {
      let best = 0;
      let bestDot = -Infinity;
      const o = i * dims;
      for (let c = 0; c < k; c++) {
        let dot = 0;
        const co = c * dims;
        for (let j = 0; j < dims; j++) dot += x[o + j]! * centres[co + j]!;
        if (dot > bestDot) {
          bestDot = dot;
          best = c;
        }
      }
      assign[i] = best;
    }
    centres.fill(0);
    for (let i = 0; i < n; i++) {
      const co = assign[i]! * dims;
      for (let j = 0; j < dims; j++) centres[co + j]! += x[i * dims + j]!;
    }
    for (let c = 0; c < k; c++) {
      let s = 0;
      for (let j = 0; j < dims; j++) s += centres[c * dims + j]! ** 2;
      // An empty cluster keeps a zero centre and takes no rows in the next round.
      if (s > 0) for (let j = 0; j < dims; j++) centres[c * dims + j]! /= Math.sqrt(s);
    }
  }
  return assign;
}

/**
 * One epoch's order of the training rows: uniformly shuffled, or, with clusters, each cluster's rows
 * shuffled and the clusters laid end to end in a shuffled order, so consecutive batches come from one
 * cluster (topic-aware sampling: harder in-batch negatives).
 */
function epochOrder(order: Int32Array, clusters: readonly Int32Array[] | null, rnd: () => number): void {
  if (clusters === null) return shuffle(order, rnd);
  const seq = Int32Array.from(clusters.keys());
  shuffle(seq, rnd);
  let o = 0;
  for (const c of seq) {
    const rows = clusters[c]!.slice();
    shuffle(rows, rnd);
    order.set(rows, o);
    o += rows.length;
  }
}

/** Splits pair indices into (train, held-out), seeded. */
export function splitPairs(count: number, heldOut: number, seed: number): { train: Int32Array; heldOut: Int32Array } {
  const rnd = seededRandom(seed ^ 0x5eed);
  const tr: number[] = [];
  const ho: number[] = [];
  for (let i = 0; i < count; i++) (rnd() < heldOut ? ho : tr).push(i);
  return { train: Int32Array.from(tr), heldOut: Int32Array.from(ho) };
}

export interface TrainOptions {
  /**
   * Threads for the batch's B×B products, this one included (./train-kernel.ts). The model is the same
   * bit for bit whatever the count, so it is not part of the configuration or the model id.
   */
  readonly threads?: number;
}

export function trainStaticModel(init: StaticModel, pairs: PairSet, cfg: TrainConfig, hooks: TrainHooks = {}, opts: TrainOptions = {}): TrainResult {
  const kernel = new BatchKernel(cfg.batchSize, init.meta.dims, opts.threads ?? 1);
  try {
    return trainWith(kernel, init, pairs, cfg, hooks);
  } finally {
    kernel.close();
  }
}

/** The training rows grouped by the cluster of their description (the `b` side) under the init model. */
function clusterRows(init: StaticModel, pairs: PairSet, train: Int32Array, cfg: TrainConfig): Int32Array[] {
  const x = embedTokenized(init.vectors, init.meta.dims, selectTexts(pairs.b, train));
  const assign = sphericalKMeans(x, init.meta.dims, cfg.batchClusters, 5, cfg.seed);
  const groups: number[][] = Array.from({ length: cfg.batchClusters }, () => []);
  train.forEach((row, i) => groups[assign[i]!]!.push(row));
  return groups.filter((g) => g.length > 0).map((g) => Int32Array.from(g));
}

function trainWith(kernel: BatchKernel, init: StaticModel, pairs: PairSet, cfg: TrainConfig, hooks: TrainHooks): TrainResult {
  const t0 = performance.now();
  const p = paramsFromModel(init);
  const u0 = p.u.slice();
  const n = init.vocab.length;
  const grad = new SparseGrad(n, p.dims);
  const adam = new LazyAdam(n * p.dims, cfg.lr);
  const ever = new Uint8Array(n);
  const { train, heldOut } = splitPairs(pairs.count, cfg.heldOut, cfg.seed);
  const evalLoss = () => (heldOut.length >= 2 ? meanLoss(p, pairs, heldOut, cfg.batchSize, cfg.temperature, kernel) : null);
  const initialHeldOutLoss = evalLoss();
  const history: EpochStats[] = [];
  const d = p.dims;
  // Rows no pair ever touched stay bit-identical to the init.
  const rows = () => {
    const out = init.vectors.slice();
    for (let t = 0; t < n; t++) {
      if (!ever[t]) continue;
      for (let j = 0; j < d; j++) out[t * d + j] = p.w[t]! * p.u[t * d + j]!;
    }
    return out;
  };
  const order = train.slice();
  const clusters = cfg.batchClusters > 0 ? clusterRows(init, pairs, train, cfg) : null;
  const steps = Math.ceil(order.length / cfg.batchSize);
  // Early stopping: the best epoch's rows are kept while later epochs try to beat its held-out loss;
  // patience counts from the last epoch that beat it by at least minImprovement.
  let best: { epoch: number; loss: number; vectors: Float32Array } | null = null;
  let lastGain = 0;
  const dropRnd = seededRandom(cfg.seed ^ 0xd0d0);
  const identity = Int32Array.from({ length: cfg.batchSize }, (_, i) => i);
  for (let epoch = 1; epoch <= cfg.epochs; epoch++) {
    const te = performance.now();
    epochOrder(order, clusters, seededRandom(cfg.seed * 1000 + epoch));
    let sum = 0;
    let cnt = 0;
    for (let s = 0; s < steps; s++) {
      const batch = order.subarray(s * cfg.batchSize, Math.min(order.length, (s + 1) * cfg.batchSize));
      if (batch.length < 2) continue;
      let loss: number;
      if (cfg.tokenDropout > 0) {
        const local: Pairs = {
          a: dropTokens(pairs.a, batch, cfg.tokenDropout, dropRnd),
          b: dropTokens(pairs.b, batch, cfg.tokenDropout, dropRnd),
          group: Int32Array.from(batch, (i) => pairs.group[i]!),
        };
        loss = batchLoss(p, local, identity.subarray(0, batch.length), cfg.temperature, grad, kernel);
      } else {
        loss = batchLoss(p, pairs, batch, cfg.temperature, grad, kernel);
      }
      adam.apply(p, u0, cfg.l2ToInit, grad, ever);
      sum += loss * batch.length;
      cnt += batch.length;
      hooks.onStep?.(epoch, s + 1, steps, loss);
    }
    const stats: EpochStats = { epoch, loss: sum / Math.max(1, cnt), heldOutLoss: evalLoss(), seconds: (performance.now() - te) / 1000 };
    history.push(stats);
    hooks.onEpoch?.(stats, rows);
    if (cfg.patience > 0 && stats.heldOutLoss !== null) {
      if (best === null || stats.heldOutLoss < best.loss * (1 - cfg.minImprovement)) lastGain = epoch;
      if (best === null || stats.heldOutLoss < best.loss) best = { epoch, loss: stats.heldOutLoss, vectors: rows() };
      if (epoch - lastGain >= cfg.patience) break;
    }
  }
  const lastEpoch = history.length;
  const vectors = best !== null && best.epoch !== lastEpoch ? best.vectors : rows();
  const keptEpoch = best?.epoch ?? lastEpoch;
  const seconds = (performance.now() - t0) / 1000;
  const dataFingerprint = pairFingerprint(pairs);
  const meta: TrainedModelMeta = {
    format: STATIC_FORMAT,
    formatVersion: STATIC_FORMAT_VERSION,
    modelId: trainedModelId(init.meta.modelId, cfg, dataFingerprint),
    teacher: init.meta.teacher,
    dims: d,
    vocabSize: n,
    createdAt: new Date().toISOString(),
    weighting: `${init.meta.weighting}+infonce(tau=${cfg.temperature})`,
    trainedFrom: init.meta.modelId,
    training: { version: TRAIN_VERSION, config: cfg, dataFingerprint, pairs: pairs.perKind, keptEpoch, history, seconds },
  };
  return { model: { meta, vocab: init.vocab, vectors }, history, keptEpoch, initialHeldOutLoss, seconds };
}

/** Reads a static model directory (the format writeStaticModel writes). */
export async function readStaticModel(dir: string): Promise<StaticModel> {
  const meta = JSON.parse(await readFile(path.join(dir, "model.json"), "utf8")) as StaticModelMeta;
  if (meta.format !== STATIC_FORMAT || meta.formatVersion !== STATIC_FORMAT_VERSION)
    throw new Error(`${dir}: not a ${STATIC_FORMAT} v${STATIC_FORMAT_VERSION} model`);
  const vocab = JSON.parse(await readFile(path.join(dir, "vocab.json"), "utf8")) as string[];
  const buf = await readFile(path.join(dir, "vectors.f32"));
  // Copy: the Buffer may share a pooled ArrayBuffer with an unaligned offset.
  const vectors = new Float32Array(buf.byteLength / 4);
  new Uint8Array(vectors.buffer).set(buf);
  if (vectors.length !== vocab.length * meta.dims) throw new Error(`${dir}: vectors hold ${vectors.length} floats, expected ${vocab.length}×${meta.dims}`);
  return { meta, vocab, vectors };
}

/**
 * trainStaticModel on a worker thread, so the caller's event loop keeps serving (`npm start` trains beside
 * a live gateway). Same result, bit for bit: the arithmetic is the same code on the same inputs.
 */
export function trainStaticModelInWorker(
  init: StaticModel,
  pairs: PairSet,
  cfg: TrainConfig,
  hooks: Omit<TrainHooks, "onEpoch"> & { readonly onEpoch?: (stats: EpochStats) => void } = {},
  opts: TrainOptions = {},
): Promise<TrainResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(compiledModuleUrl("./train-worker.js", import.meta.url), { workerData: { init, pairs, config: cfg, options: opts } });
    let done = false;
    worker.on("message", (m: TrainWorkerMessage) => {
      if (m.kind === "step") hooks.onStep?.(m.epoch, m.step, m.steps, m.loss);
      else if (m.kind === "epoch") hooks.onEpoch?.(m.stats);
      else {
        done = true;
        resolve(m.result);
        void worker.terminate();
      }
    });
    worker.on("error", reject);
    worker.on("exit", (code) => {
      if (!done) reject(new Error(`training worker exited with code ${code} before finishing`));
    });
  });
}

/** What the training worker (./train-worker.ts) posts back. */
export type TrainWorkerMessage =
  | { readonly kind: "step"; readonly epoch: number; readonly step: number; readonly steps: number; readonly loss: number }
  | { readonly kind: "epoch"; readonly stats: EpochStats }
  | { readonly kind: "done"; readonly result: TrainResult };
