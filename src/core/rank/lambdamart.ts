/**
 * LambdaMART: gradient-boosted regression trees trained on LambdaRank gradients (Burges 2010), in
 * plain TypeScript. Small enough to read in one sitting, deterministic (sampling, when asked for, draws
 * from a seeded PRNG), and fast enough to train on ~1,000 queries × ~300 candidates × ~30 features in
 * seconds per hundred trees.
 *
 * - Gradients. For each query and each pair (i, j) with label_i > label_j, at least one of them ranked
 *   within `truncation` by the current scores (as LightGBM does), ρ = 1 / (1 + e^(s_i − s_j)) and
 *   |ΔnDCG| = the change in nDCG from swapping them. λ_i += |ΔnDCG|·ρ, λ_j −= |ΔnDCG|·ρ and both get
 *   the Newton weight |ΔnDCG|·ρ(1 − ρ). Queries without a relevant candidate contribute nothing.
 * - Trees. Depth-wise growth to `maxDepth` over pre-binned features (≤ `bins` quantile bins each);
 *   a split maximises the gain G_L²/(H_L + λ) + G_R²/(H_R + λ) − G²/(H + λ) and needs `minLeafRows`
 *   rows on each side; a leaf's value is the Newton step G/(H + λ), scaled by the learning rate.
 * - Sampling. With `subsample` < 1 each tree is fitted on the rows of a random share of the queries
 *   (stochastic gradient boosting, Friedman 2002), with `featureFraction` < 1 on a random share of the
 *   features; the gradients are still computed for every query.
 * - Model. Trees store raw feature thresholds (x ≤ t goes left), so scoring needs no bins.
 */

import { seededRandom } from "../../common/random.js";

export interface LambdaMartParams {
  readonly trees: number;
  readonly learningRate: number;
  readonly maxDepth: number;
  readonly minLeafRows: number;
  /** L2 regularisation of leaf values (λ above). */
  readonly l2: number;
  readonly bins: number;
  /** Pairs count only when one of the two ranks within this many (by the current scores). */
  readonly truncation: number;
  /**
   * How a pair is weighted: "ndcg" by |ΔnDCG| of swapping it (LambdaMART), "pairs" equally, each query
   * weighing 1 in total (RankNet's pairwise logistic loss).
   */
  readonly pairWeight: "ndcg" | "pairs";
  /**
   * Share of queries whose rows fit each tree (stochastic gradient boosting, Friedman 2002); 1 = all.
   * Drawn per tree from a PRNG seeded with `seed`, so training stays deterministic.
   */
  readonly subsample: number;
  /** Share of features each tree may split on (drawn per tree, like `subsample`); 1 = all. */
  readonly featureFraction: number;
  readonly seed: number;
}

export const DEFAULT_LAMBDAMART_PARAMS: LambdaMartParams = Object.freeze({
  trees: 300,
  learningRate: 0.05,
  maxDepth: 4,
  minLeafRows: 50,
  l2: 1,
  bins: 64,
  truncation: 30,
  pairWeight: "ndcg",
  subsample: 1,
  featureFraction: 1,
  seed: 1,
});

/** One query's candidates: `features` is row-major (rows × featureCount). */
export interface RankGroup {
  readonly features: Float32Array;
  /** Graded relevance per row (0 = not relevant). */
  readonly labels: Float32Array;
  /** The query's weight in the gradient (default 1). */
  readonly weight?: number;
}

/** A regression tree as parallel arrays; node 0 is the root. A leaf has feature −1. */
export interface Tree {
  readonly feature: readonly number[];
  readonly threshold: readonly number[];
  readonly left: readonly number[];
  readonly right: readonly number[];
  readonly value: readonly number[];
  /** The split's gain at an inner node (0 at a leaf): feature importance. */
  readonly gain: readonly number[];
}

export interface Ensemble {
  readonly featureCount: number;
  readonly trees: readonly Tree[];
}

/** The ensemble's score of one row (features at `offset` in `x`). */
export function scoreRow(model: Ensemble, x: ArrayLike<number>, offset = 0): number {
  let s = 0;
  for (const t of model.trees) {
    let n = 0;
    while (t.feature[n]! >= 0) n = x[offset + t.feature[n]!]! <= t.threshold[n]! ? t.left[n]! : t.right[n]!;
    s += t.value[n]!;
  }
  return s;
}

/** One ensemble whose score is the mean of the members' (their trees, each leaf value divided by their number). */
export function averageEnsembles(members: readonly Ensemble[]): Ensemble {
  if (!members.length) throw new RangeError("averageEnsembles needs at least one ensemble");
  const featureCount = members[0]!.featureCount;
  if (members.some((e) => e.featureCount !== featureCount)) throw new RangeError("averageEnsembles: members differ in feature count");
  if (members.length === 1) return members[0]!;
  const n = members.length;
  return { featureCount, trees: members.flatMap((e) => e.trees.map((t) => ({ ...t, value: t.value.map((v) => v / n) }))) };
}

/** Each feature's share of the ensemble's total split gain. */
export function featureImportance(model: Ensemble): Float64Array {
  const imp = new Float64Array(model.featureCount);
  for (const t of model.trees) for (let n = 0; n < t.feature.length; n++) if (t.feature[n]! >= 0) imp[t.feature[n]!]! += t.gain[n]!;
  const total = imp.reduce((a, b) => a + b, 0);
  if (total > 0) for (let f = 0; f < imp.length; f++) imp[f]! /= total;
  return imp;
}

/** Scores every row of a row-major feature matrix. */
export function scoreRows(model: Ensemble, features: Float32Array, out = new Float64Array(features.length / model.featureCount)): Float64Array {
  const f = model.featureCount;
  for (let r = 0; r < out.length; r++) out[r] = scoreRow(model, features, r * f);
  return out;
}

// ---------------------------------------------------------------------------------------------
// nDCG

const LOG2 = Array.from({ length: 4096 }, (_, i) => 1 / Math.log2(i + 2));
const discount = (rank: number) => (rank < LOG2.length ? LOG2[rank]! : 1 / Math.log2(rank + 2));
const gain = (label: number) => 2 ** label - 1;

/** nDCG@k of `scores` against `labels` (ties broken by row order); 0 when nothing is relevant. */
export function ndcgAt(scores: ArrayLike<number>, labels: ArrayLike<number>, k: number): number {
  const n = labels.length;
  const order = rankOrder(scores, n);
  let dcg = 0;
  for (let r = 0; r < Math.min(k, n); r++) dcg += gain(labels[order[r]!]!) * discount(r);
  const ideal = Array.from(labels).sort((a, b) => b - a);
  let idcg = 0;
  for (let r = 0; r < Math.min(k, n); r++) idcg += gain(ideal[r]!) * discount(r);
  return idcg > 0 ? dcg / idcg : 0;
}

/** Row indices sorted by descending score, ties by row. */
function rankOrder(scores: ArrayLike<number>, n: number): Int32Array {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return order;
}

// ---------------------------------------------------------------------------------------------
// Training

interface Binned {
  /** Per feature, ascending upper bounds of bins 0..count−2 (the last bin is open). */
  readonly edges: Float64Array[];
  /** rows × features bin codes, feature-major for the histogram loops. */
  readonly codes: Uint8Array[];
}

function binFeatures(groups: readonly RankGroup[], featureCount: number, bins: number): Binned {
  const rows = groups.reduce((s, g) => s + g.labels.length, 0);
  const edges: Float64Array[] = [];
  const codes: Uint8Array[] = [];
  const column = new Float64Array(rows);
  for (let f = 0; f < featureCount; f++) {
    let r = 0;
    for (const g of groups) for (let i = 0; i < g.labels.length; i++) column[r++] = g.features[i * featureCount + f]!;
    const sorted = Float64Array.from(column).sort();
    // Quantile cut points between distinct values: a threshold is the midpoint of its neighbours.
    const cuts: number[] = [];
    for (let b = 1; b < bins; b++) {
      const at = Math.floor((b * rows) / bins);
      if (at <= 0 || at >= rows) continue;
      const lo = sorted[at - 1]!;
      const hi = sorted[at]!;
      if (hi > lo) {
        const cut = lo + (hi - lo) / 2;
        if (cuts.length === 0 || cut > cuts[cuts.length - 1]!) cuts.push(cut);
      }
    }
    const e = Float64Array.from(cuts);
    const c = new Uint8Array(rows);
    for (let i = 0; i < rows; i++) {
      const x = column[i]!;
      let lo = 0;
      let hi = e.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (x <= e[mid]!) hi = mid;
        else lo = mid + 1;
      }
      c[i] = lo;
    }
    edges.push(e);
    codes.push(c);
  }
  return { edges, codes };
}

/** LambdaRank gradients (as λ: positive pushes up) and Newton weights for every row, in place. */
function lambdas(
  groups: readonly RankGroup[],
  scores: Float64Array,
  truncation: number,
  pairWeight: LambdaMartParams["pairWeight"],
  lambda: Float64Array,
  hess: Float64Array,
): void {
  lambda.fill(0);
  hess.fill(0);
  let base = 0;
  for (const g of groups) {
    const n = g.labels.length;
    const labels = g.labels;
    const s = scores.subarray(base, base + n);
    const ideal = Array.from(labels).sort((a, b) => b - a);
    let idcg = 0;
    for (let r = 0; r < n && ideal[r]! > 0; r++) idcg += gain(ideal[r]!) * discount(r);
    if (idcg > 0) {
      const order = rankOrder(s, n);
      const rankOf = new Int32Array(n);
      for (let r = 0; r < n; r++) rankOf[order[r]!] = r;
      let pairs = 0;
      if (pairWeight === "pairs") for (let a = 0; a < n; a++) for (let b = 0; b < n; b++) if (labels[b]! < labels[a]!) pairs++;
      const w = pairWeight === "pairs" ? (g.weight ?? 1) / Math.max(1, pairs) : (g.weight ?? 1) / idcg;
      for (let a = 0; a < n; a++) {
        const la = labels[a]!;
        if (la <= 0) continue;
        const ra = rankOf[a]!;
        for (let b = 0; b < n; b++) {
          const lb = labels[b]!;
          if (lb >= la) continue;
          const rb = rankOf[b]!;
          if (pairWeight === "ndcg" && ra >= truncation && rb >= truncation) continue;
          const delta = pairWeight === "pairs" ? w : Math.abs((gain(la) - gain(lb)) * (discount(ra) - discount(rb))) * w;
          const rho = 1 / (1 + Math.exp(s[a]! - s[b]!));
          const l = delta * rho;
          const h = delta * rho * (1 - rho);
          lambda[base + a]! += l;
          lambda[base + b]! -= l;
          hess[base + a]! += h;
          hess[base + b]! += h;
        }
      }
    }
    base += n;
  }
}

interface NodeWork {
  readonly rows: Int32Array;
  readonly depth: number;
  readonly index: number;
}

/** Fits one tree on `rootRows` (every row, or a sampled share), splitting only on the `usable` features. */
function fitTree(b: Binned, lambda: Float64Array, hess: Float64Array, rootRows: Int32Array, usable: readonly boolean[], p: LambdaMartParams): Tree {
  const F = b.codes.length;
  const feature: number[] = [];
  const threshold: number[] = [];
  const left: number[] = [];
  const right: number[] = [];
  const value: number[] = [];
  const gains: number[] = [];
  const newNode = () => {
    feature.push(-1);
    threshold.push(0);
    left.push(-1);
    right.push(-1);
    value.push(0);
    gains.push(0);
    return feature.length - 1;
  };
  const queue: NodeWork[] = [{ rows: rootRows, depth: 0, index: newNode() }];
  const gh = new Float64Array(p.bins);
  const hh = new Float64Array(p.bins);
  const ch = new Int32Array(p.bins);
  while (queue.length) {
    const node = queue.shift()!;
    let G = 0;
    let H = 0;
    for (const r of node.rows) {
      G += lambda[r]!;
      H += hess[r]!;
    }
    value[node.index] = (p.learningRate * G) / (H + p.l2);
    if (node.depth >= p.maxDepth || node.rows.length < 2 * p.minLeafRows) continue;
    const parentScore = (G * G) / (H + p.l2);
    let bestGain = 1e-12;
    let bestF = -1;
    let bestBin = -1;
    for (let f = 0; f < F; f++) {
      if (!usable[f]) continue;
      const codes = b.codes[f]!;
      const nb = b.edges[f]!.length + 1;
      if (nb < 2) continue;
      gh.fill(0, 0, nb);
      hh.fill(0, 0, nb);
      ch.fill(0, 0, nb);
      for (const r of node.rows) {
        const c = codes[r]!;
        gh[c]! += lambda[r]!;
        hh[c]! += hess[r]!;
        ch[c]!++;
      }
      let gl = 0;
      let hl = 0;
      let cl = 0;
      for (let bin = 0; bin < nb - 1; bin++) {
        gl += gh[bin]!;
        hl += hh[bin]!;
        cl += ch[bin]!;
        const cr = node.rows.length - cl;
        if (cl < p.minLeafRows) continue;
        if (cr < p.minLeafRows) break;
        const gr = G - gl;
        const hr = H - hl;
        const gainHere = (gl * gl) / (hl + p.l2) + (gr * gr) / (hr + p.l2) - parentScore;
        if (gainHere > bestGain) {
          bestGain = gainHere;
          bestF = f;
          bestBin = bin;
        }
      }
    }
    if (bestF < 0) continue;
    const codes = b.codes[bestF]!;
    let nl = 0;
    for (const r of node.rows) if (codes[r]! <= bestBin) nl++;
    const lr = new Int32Array(nl);
    const rr = new Int32Array(node.rows.length - nl);
    let i = 0;
    let j = 0;
    for (const r of node.rows) {
      if (codes[r]! <= bestBin) lr[i++] = r;
      else rr[j++] = r;
    }
    feature[node.index] = bestF;
    threshold[node.index] = b.edges[bestF]![bestBin]!;
    gains[node.index] = bestGain;
    const li = newNode();
    const ri = newNode();
    left[node.index] = li;
    right[node.index] = ri;
    queue.push({ rows: lr, depth: node.depth + 1, index: li }, { rows: rr, depth: node.depth + 1, index: ri });
  }
  return { feature, threshold, left, right, value, gain: gains };
}

export interface TrainOptions {
  readonly params?: Partial<LambdaMartParams>;
  /** Starting scores per row (groups' rows back to back), e.g. a linear model's: the trees learn what it misses. */
  readonly initScores?: Float64Array;
  /** Called after each tree with the model so far (for validation curves). */
  readonly onTree?: (treeCount: number, model: Ensemble) => void;
}

/** Trains an ensemble on query groups. Deterministic: the same groups and params give the same trees. */
export function trainLambdaMart(groups: readonly RankGroup[], featureCount: number, opts: TrainOptions = {}): Ensemble {
  const p: LambdaMartParams = { ...DEFAULT_LAMBDAMART_PARAMS, ...opts.params };
  checkParams(p);
  if (!Number.isInteger(featureCount) || featureCount < 1) throw new RangeError(`featureCount must be a positive integer (got ${featureCount})`);
  for (const [i, g] of groups.entries()) {
    if (g.features.length !== g.labels.length * featureCount) {
      throw new RangeError(`group ${i}: ${g.features.length} feature values for ${g.labels.length} rows × ${featureCount} features`);
    }
  }
  const rowCount = groups.reduce((s, g) => s + g.labels.length, 0);
  const binned = binFeatures(groups, featureCount, p.bins);
  const scores = opts.initScores ? Float64Array.from(opts.initScores) : new Float64Array(rowCount);
  if (scores.length !== rowCount) throw new RangeError(`initScores has ${scores.length} values for ${rowCount} rows`);
  const lambda = new Float64Array(rowCount);
  const hess = new Float64Array(rowCount);
  const trees: Tree[] = [];
  const random = seededRandom(p.seed);
  const allRows = Int32Array.from({ length: rowCount }, (_, i) => i);
  const allFeatures = Array<boolean>(featureCount).fill(true);
  for (let t = 0; t < p.trees; t++) {
    lambdas(groups, scores, p.truncation, p.pairWeight, lambda, hess);
    const rows = p.subsample < 1 ? sampleRows(groups, p.subsample, random) : allRows;
    const usable = p.featureFraction < 1 ? Array.from({ length: featureCount }, () => random() < p.featureFraction) : allFeatures;
    const tree = fitTree(binned, lambda, hess, rows, usable, p);
    trees.push(tree);
    // Update scores through the binned codes: a raw threshold is a bin edge, so both agree.
    let base = 0;
    for (const g of groups) {
      for (let i = 0; i < g.labels.length; i++) scores[base + i]! += scoreTreeBinned(tree, binned, base + i);
      base += g.labels.length;
    }
    opts.onTree?.(trees.length, { featureCount, trees });
  }
  return { featureCount, trees };
}

/** Rows of a random share of the groups (each group drawn with probability `share`; at least one). */
function sampleRows(groups: readonly RankGroup[], share: number, random: () => number): Int32Array {
  const rows: number[] = [];
  let base = 0;
  for (const g of groups) {
    if (random() < share) for (let i = 0; i < g.labels.length; i++) rows.push(base + i);
    base += g.labels.length;
  }
  if (!rows.length) for (let i = 0; i < (groups[0]?.labels.length ?? 0); i++) rows.push(i);
  return Int32Array.from(rows);
}

function scoreTreeBinned(t: Tree, b: Binned, row: number): number {
  let n = 0;
  while (t.feature[n]! >= 0) {
    const f = t.feature[n]!;
    // x ≤ edge[bin] ⇔ code ≤ bin, where edge[bin] is the node's threshold.
    const code = b.codes[f]![row]!;
    const e = b.edges[f]!;
    n = code < e.length && e[code]! <= t.threshold[n]! ? t.left[n]! : t.right[n]!;
  }
  return t.value[n]!;
}

function checkParams(p: LambdaMartParams): void {
  const problems: string[] = [];
  if (!Number.isInteger(p.trees) || p.trees < 1) problems.push(`trees must be a positive integer (got ${p.trees})`);
  if (!(p.learningRate > 0 && p.learningRate <= 1)) problems.push(`learningRate must be in (0, 1] (got ${p.learningRate})`);
  if (!Number.isInteger(p.maxDepth) || p.maxDepth < 1 || p.maxDepth > 16) problems.push(`maxDepth must be an integer in [1, 16] (got ${p.maxDepth})`);
  if (!Number.isInteger(p.minLeafRows) || p.minLeafRows < 1) problems.push(`minLeafRows must be a positive integer (got ${p.minLeafRows})`);
  if (!(p.subsample > 0 && p.subsample <= 1)) problems.push(`subsample must be in (0, 1] (got ${p.subsample})`);
  if (!(p.featureFraction > 0 && p.featureFraction <= 1)) problems.push(`featureFraction must be in (0, 1] (got ${p.featureFraction})`);
  if (!Number.isInteger(p.seed)) problems.push(`seed must be an integer (got ${p.seed})`);
  if (!(p.l2 >= 0)) problems.push(`l2 must be ≥ 0 (got ${p.l2})`);
  if (!Number.isInteger(p.bins) || p.bins < 2 || p.bins > 256) problems.push(`bins must be an integer in [2, 256] (got ${p.bins})`);
  if (!Number.isInteger(p.truncation) || p.truncation < 1) problems.push(`truncation must be a positive integer (got ${p.truncation})`);
  if (p.pairWeight !== "ndcg" && p.pairWeight !== "pairs") problems.push(`pairWeight must be "ndcg" or "pairs" (got ${JSON.stringify(p.pairWeight)})`);
  if (problems.length) throw new RangeError(`invalid LambdaMART params: ${problems.join("; ")}`);
}
