/**
 * The ranker: a linear score over standardised features (./linear.ts) plus boosted trees fitted to
 * what the linear score gets wrong (./lambdamart.ts, trained from the linear scores). Cross-validated by
 * curated list, the linear part carries most of the quality across lists (trees alone learn one list's
 * feature ranges), and the trees add the interactions a sum cannot express: e.g. popularity counting for
 * a short generic query and much less for a long specific one.
 *
 * A second stage (./context.ts) may re-score the first stage's top K with features that compare them
 * with each other; rankOrder applies both.
 *
 * The model file holds both parts, the feature names they were trained on, how they were trained and
 * what cross-validation measured. `npm run eval -- --tune` writes ./ranker-model.json (the versioned
 * artefact the core ships); loading refuses a file whose features are not FEATURES, in order, because a
 * weight or a tree's feature index would then read another feature.
 */
import { CONTEXT_FEATURE_COUNT, CONTEXT_FEATURES, firstStageOrder, reorderTop, type ContextStage } from "./context.js";
import { featureImportance, type Ensemble, type LambdaMartParams, type Tree } from "./lambdamart.js";
import { FEATURES } from "./features.js";
import type { LinearModel, LinearParams } from "./linear.js";

export const RANKER_FORMAT = "reposearch-ranker";
export const RANKER_FORMAT_VERSION = 3;

export interface RankerModelFile {
  readonly format: typeof RANKER_FORMAT;
  readonly formatVersion: number;
  readonly features: readonly string[];
  readonly linearParams: LinearParams;
  readonly linear: LinearModel;
  readonly params: LambdaMartParams;
  /** What it was trained on and what cross-validation measured (free-form, for people). */
  readonly training: Record<string, unknown>;
  readonly trees: readonly Tree[];
  /** The second stage, or null: how many candidates it re-scores, its features after FEATURES, its trees. */
  readonly context: { readonly k: number; readonly features: readonly string[]; readonly trees: readonly Tree[] } | null;
}

export class RankerModelError extends Error {
  override readonly name = "RankerModelError";
}

export interface RankerModel {
  readonly features: readonly string[];
  readonly linear: LinearModel;
  readonly ensemble: Ensemble;
  /**
   * Each feature's share of the model's use (FEATURES order): half its share of the linear part's
   * absolute standardised weights, half its share of the trees' split gain (all of the former when
   * there are no trees).
   */
  readonly importance: Float64Array;
  readonly training: Record<string, unknown>;
  readonly context: ContextStage | null;
}

/** A ranker from its two parts (training and tests); loadRankerModel checks a file and calls this. */
export function rankerModel(
  linear: LinearModel,
  trees: readonly Tree[],
  training: Record<string, unknown> = {},
  context: { readonly k: number; readonly trees: readonly Tree[] } | null = null,
): RankerModel {
  const ensemble: Ensemble = { featureCount: FEATURES.length, trees };
  const treeShare = featureImportance(ensemble);
  const abs = linear.weights.map(Math.abs);
  const total = abs.reduce((a, b) => a + b, 0) || 1;
  const half = trees.length ? 0.5 : 1;
  const importance = Float64Array.from(abs, (w, f) => half * (w / total) + (1 - half) * treeShare[f]!);
  return {
    features: [...FEATURES],
    linear,
    ensemble,
    importance,
    training,
    context: context && { k: context.k, ensemble: { featureCount: CONTEXT_FEATURE_COUNT, trees: context.trees } },
  };
}

/** A pool's order under both stages, best first, and each candidate's score (context.ts, reorderTop). */
export function rankOrder(model: RankerModel, features: Float32Array, tie?: (a: number, b: number) => number): { order: number[]; scores: Float64Array } {
  const scores = scoreRanker(model, features);
  const order = firstStageOrder(scores, tie);
  if (model.context === null || order.length < 2) return { order, scores };
  return { order: reorderTop(model.context, features, scores, order), scores };
}

/**
 * The model in the layout scoring reads: the linear part folded into one weight per raw feature and a
 * bias, and every tree's nodes in shared typed arrays (children as absolute node indexes). Scoring a
 * pool of ~250 candidates through 200 trees this way takes a fraction of walking the JSON arrays.
 */
interface Compiled {
  readonly bias: number;
  readonly weights: Float64Array;
  readonly roots: Int32Array;
  readonly feature: Int32Array;
  readonly threshold: Float64Array;
  readonly left: Int32Array;
  readonly right: Int32Array;
  readonly value: Float64Array;
}

const compiled = new WeakMap<RankerModel, Compiled>();

function compile(model: RankerModel): Compiled {
  const { mean, scale, weights: w } = model.linear;
  const weights = Float64Array.from(w, (x, f) => x / scale[f]!);
  let bias = 0;
  for (let f = 0; f < w.length; f++) bias -= weights[f]! * mean[f]!;
  const trees = model.ensemble.trees;
  const total = trees.reduce((s, t) => s + t.feature.length, 0);
  const c: Compiled = {
    bias,
    weights,
    roots: new Int32Array(trees.length),
    feature: new Int32Array(total),
    threshold: new Float64Array(total),
    left: new Int32Array(total),
    right: new Int32Array(total),
    value: new Float64Array(total),
  };
  let at = 0;
  trees.forEach((t, i) => {
    c.roots[i] = at;
    for (let k = 0; k < t.feature.length; k++) {
      c.feature[at + k] = t.feature[k]!;
      c.threshold[at + k] = t.threshold[k]!;
      c.left[at + k] = at + t.left[k]!;
      c.right[at + k] = at + t.right[k]!;
      c.value[at + k] = t.value[k]!;
    }
    at += t.feature.length;
  });
  return c;
}

/** Scores every row of a row-major candidates × FEATURES matrix (the linear score plus the trees'). */
export function scoreRanker(model: RankerModel, features: Float32Array, out = new Float64Array(features.length / FEATURES.length)): Float64Array {
  let c = compiled.get(model);
  if (!c) compiled.set(model, (c = compile(model)));
  const F = FEATURES.length;
  const { bias, weights, roots, feature, threshold, left, right, value } = c;
  const rows = out.length;
  for (let r = 0; r < rows; r++) {
    const o = r * F;
    let s = bias;
    for (let f = 0; f < F; f++) s += weights[f]! * features[o + f]!;
    out[r] = s;
  }
  // Tree by tree over all rows: one tree's few nodes stay in registers and cache for the whole pool.
  for (let t = 0; t < roots.length; t++) {
    const root = roots[t]!;
    for (let r = 0, o = 0; r < rows; r++, o += F) {
      let n = root;
      let f = feature[n]!;
      while (f >= 0) {
        n = features[o + f]! <= threshold[n]! ? left[n]! : right[n]!;
        f = feature[n]!;
      }
      out[r]! += value[n]!;
    }
  }
  return out;
}

/** Validates a parsed model file against FEATURES and the tree layout; throws RankerModelError. */
export function loadRankerModel(doc: unknown, source = "ranker model"): RankerModel {
  const fail = (why: string): never => {
    throw new RankerModelError(`${source}: ${why}`);
  };
  if (doc === null || typeof doc !== "object") fail("not a JSON object");
  const d = doc as Partial<RankerModelFile>;
  if (d.format !== RANKER_FORMAT) fail(`format is ${JSON.stringify(d.format)}, expected ${JSON.stringify(RANKER_FORMAT)}`);
  if (d.formatVersion !== RANKER_FORMAT_VERSION) fail(`format version ${String(d.formatVersion)}, expected ${RANKER_FORMAT_VERSION}`);
  const features = Array.isArray(d.features) ? d.features : fail("features is not an array");
  const mismatch = FEATURES.length !== features.length ? -1 : FEATURES.findIndex((f, i) => features[i] !== f);
  if (FEATURES.length !== features.length || mismatch >= 0) {
    const at =
      mismatch >= 0 ? ` (first difference at ${mismatch}: model ${JSON.stringify(features[mismatch])}, core ${JSON.stringify(FEATURES[mismatch])})` : "";
    fail(`trained on ${features.length} features that are not the core's ${FEATURES.length}${at}; retrain with \`npm run eval -- --tune\``);
  }
  const linear = d.linear ?? fail("linear is missing");
  for (const k of ["mean", "scale", "weights"] as const) {
    const v = linear[k];
    if (!Array.isArray(v) || v.length !== FEATURES.length || !v.every(Number.isFinite)) fail(`linear.${k} must be ${FEATURES.length} finite numbers`);
  }
  if (!linear.scale.every((s) => s > 0)) fail("linear.scale must be positive");
  const trees = Array.isArray(d.trees) ? d.trees : fail("trees is not an array");
  trees.forEach((t, i) => checkTree(t, i, FEATURES.length, fail));
  const ctx = d.context === undefined ? fail("context is missing (null for a model without a second stage)") : d.context;
  if (ctx !== null) {
    if (!Number.isInteger(ctx.k) || ctx.k < 2) fail(`context.k must be an integer ≥ 2 (got ${String(ctx.k)})`);
    const names = Array.isArray(ctx.features) ? ctx.features : fail("context.features is not an array");
    if (names.length !== CONTEXT_FEATURES.length || CONTEXT_FEATURES.some((f, i) => names[i] !== f))
      fail(`context trained on features ${JSON.stringify(names)}, not the core's ${JSON.stringify(CONTEXT_FEATURES)}; retrain with \`npm run eval -- --tune\``);
    const ctxTrees = Array.isArray(ctx.trees) ? ctx.trees : fail("context.trees is not an array");
    ctxTrees.forEach((t, i) => checkTree(t, i, CONTEXT_FEATURE_COUNT, (why) => fail(`context ${why}`)));
  }
  return rankerModel(linear, trees, (d.training ?? {}) as Record<string, unknown>, ctx);
}

function checkTree(t: Tree, i: number, featureCount: number, fail: (why: string) => never): void {
  const arrays = [t?.feature, t?.threshold, t?.left, t?.right, t?.value, t?.gain];
  if (!arrays.every(Array.isArray)) fail(`tree ${i}: expected arrays feature, threshold, left, right, value, gain`);
  const n = t.feature.length;
  if (n === 0 || arrays.some((a) => a.length !== n)) fail(`tree ${i}: arrays of different lengths`);
  for (let k = 0; k < n; k++) {
    const f = t.feature[k]!;
    if (!Number.isInteger(f) || f < -1 || f >= featureCount) fail(`tree ${i} node ${k}: feature ${f} out of range`);
    if (!Number.isFinite(t.value[k]) || !Number.isFinite(t.threshold[k])) fail(`tree ${i} node ${k}: non-finite value or threshold`);
    // Children come after their parent, so every walk ends at a leaf.
    if (f >= 0 && !(t.left[k]! > k && t.left[k]! < n && t.right[k]! > k && t.right[k]! < n)) fail(`tree ${i} node ${k}: children out of order`);
  }
}

/** The model file for a ranker trained on FEATURES. */
export function toModelFile(
  linear: LinearModel,
  linearParams: LinearParams,
  trees: Ensemble,
  params: LambdaMartParams,
  training: Record<string, unknown>,
  context: ContextStage | null = null,
): RankerModelFile {
  // Rounded to 6 significant digits: the file stays reviewable, and scores move by < 1e-5.
  const r = (xs: readonly number[]) => xs.map((x) => Number(x.toPrecision(6)));
  return {
    format: RANKER_FORMAT,
    formatVersion: RANKER_FORMAT_VERSION,
    features: [...FEATURES],
    linearParams,
    linear: { mean: r(linear.mean), scale: r(linear.scale), weights: r(linear.weights) },
    params,
    training,
    trees: trees.trees,
    context: context && { k: context.k, features: [...CONTEXT_FEATURES], trees: context.ensemble.trees },
  };
}
