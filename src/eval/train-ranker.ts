/**
 * Training the learned ranker and measuring it honestly: k-fold cross-validation where a fold is one
 * curated list of the dev set (so no list judges a model that saw it) together with a slice of the
 * head-query set, then a final model trained on everything. `npm run eval -- --tune` runs it on the
 * full index and writes src/core/rank/ranker-model.json.
 *
 * The ranker is trained in two steps (see src/core/rank/model.ts): the linear part on all pairs, then
 * boosted trees starting from its scores. A second stage (src/core/rank/context.ts) is trained on the
 * first stage's held-out scores: trees over each query's top K that correct what the first stage gets
 * wrong on queries it has not seen.
 */
import { CONTEXT_FEATURE_COUNT, contextRows, firstStageOrder, reorderTop, type ContextStage } from "../core/rank/context.js";
import { FEATURE_COUNT } from "../core/rank/features.js";
import { averageEnsembles, DEFAULT_LAMBDAMART_PARAMS, trainLambdaMart, type Ensemble, type LambdaMartParams, type RankGroup } from "../core/rank/lambdamart.js";
import { DEFAULT_LINEAR_PARAMS, scoreLinear, trainLinear, type LinearModel, type LinearParams } from "../core/rank/linear.js";
import { rankerModel, scoreRanker, type RankerModel } from "../core/rank/model.js";

/**
 * Whether a pool teaches: one with weight 0 is scored held out, for a figure, and never trained on
 * (its gradient would be zero anyway; left out, it changes no other statistic either: the features'
 * standardisation, the trees' row sample, a leaf's row count).
 */
const taught = (g: RankGroup): boolean => (g.weight ?? 1) > 0;

/** One judged query's candidate pool, ready for training. */
export interface JudgedPool extends RankGroup {
  readonly id: string;
  /** The fold it is held out in. */
  readonly fold: string;
  /** "dev" (curated lists) or "head" (everyday queries). */
  readonly set: string;
  /** Candidate keys, in pool order (parallel to labels). */
  readonly keys: readonly string[];
  /** Relevant keys of the query (those in the index; some may be missing from the pool). */
  readonly relevant: ReadonlySet<string>;
}

export interface RankerParams {
  readonly linear: Partial<LinearParams>;
  readonly trees: Partial<LambdaMartParams>;
}

/**
 * The shipped ranker's training parameters. Shallow trees with large leaves: on top of the linear score
 * they only need coarse interactions, and deeper or finer trees fit one list's ranges (measured by
 * `npm run eval -- --tune --max-depth 4 --min-leaf 50`: lower cross-validated nDCG).
 */
export const DEFAULT_RANKER_PARAMS: RankerParams = Object.freeze({
  linear: DEFAULT_LINEAR_PARAMS,
  trees: { ...DEFAULT_LAMBDAMART_PARAMS, maxDepth: 3, minLeafRows: 100, learningRate: 0.05, subsample: 0.7 },
});

/**
 * Trains both parts on `all` (those of weight 0 left out); `onTree` sees the ranker after each tree
 * (validation curves; with a bag, each member's in turn). With `bag` > 1, that many tree ensembles
 * are trained from the same linear scores, with seeds `seed`, `seed` + 1, …, and averaged (bagging:
 * the row samples differ, so their errors partly cancel). Deterministic: the linear part does not
 * sample, and the trees sample from a seeded PRNG.
 */
export function trainRanker(
  all: readonly RankGroup[],
  params: RankerParams,
  onTree?: (count: number, model: RankerModel) => void,
  bag = 1,
): { linear: LinearModel; ensemble: Ensemble } {
  if (!Number.isInteger(bag) || bag < 1) throw new RangeError(`bag must be a positive integer (got ${bag})`);
  const groups = all.filter(taught);
  const linear = trainLinear(groups, FEATURE_COUNT, params.linear);
  const rows = groups.reduce((s, g) => s + g.labels.length, 0);
  const init = new Float64Array(rows);
  let at = 0;
  for (const g of groups) for (let i = 0; i < g.labels.length; i++) init[at++] = scoreLinear(linear, g.features, i * FEATURE_COUNT);
  const seed = params.trees.seed ?? DEFAULT_LAMBDAMART_PARAMS.seed;
  const members = Array.from({ length: bag }, (_, member) =>
    trainLambdaMart(groups, FEATURE_COUNT, {
      params: { ...params.trees, seed: seed + member },
      initScores: init,
      ...(onTree ? { onTree: (count: number, e: Ensemble) => onTree(count, rankerModel(linear, e.trees)) } : {}),
    }),
  );
  return { linear, ensemble: averageEnsembles(members) };
}

/**
 * Held-out first-stage scores for every query at each tree count in `checkpoints` (0 = the linear part
 * alone): for each fold, a model trained on the other folds scores the fold's queries (with `bag` > 1,
 * the mean of its members' scores at that count), those of weight 0 too. Deterministic: folds in
 * sorted order.
 */
export function crossValidate(
  pools: readonly JudgedPool[],
  params: RankerParams,
  checkpoints: readonly number[],
  onFold?: (fold: string, i: number, n: number) => void,
  bag = 1,
): Map<number, Map<string, Float64Array>> {
  const folds = [...new Set(pools.map((p) => p.fold))].sort();
  const out = new Map(checkpoints.map((c) => [c, new Map<string, Float64Array>()]));
  const trees = Math.max(1, ...checkpoints);
  folds.forEach((fold, i) => {
    onFold?.(fold, i, folds.length);
    const held = pools.filter((p) => p.fold === fold);
    const record = (count: number, model: RankerModel, share: number) => {
      const m = out.get(count);
      if (!m) return;
      for (const p of held) {
        const s = scoreRanker(model, p.features);
        const sum = m.get(p.id) ?? m.set(p.id, new Float64Array(s.length)).get(p.id)!;
        for (let j = 0; j < s.length; j++) sum[j]! += s[j]! * share;
      }
    };
    const { linear } = trainRanker(
      pools.filter((p) => p.fold !== fold),
      { ...params, trees: { ...params.trees, trees } },
      (count, model) => record(count, model, 1 / bag),
      bag,
    );
    record(0, rankerModel(linear, []), 1);
  });
  return out;
}

/** Keys of a pool by scores, best first (ties by pool order). */
export function keysByScore(pool: JudgedPool, scores: ArrayLike<number>): string[] {
  return firstStageOrder(scores).map((i) => pool.keys[i]!);
}

/** How many first-stage candidates the second stage re-scores, and how many trees it has. */
export interface ContextParams {
  readonly k: number;
  readonly trees: number;
}

/** The shipped second stage's settings (cross-validated in docs/ranking.md, section 4). */
export const DEFAULT_CONTEXT_PARAMS: ContextParams = Object.freeze({ k: 5, trees: 25 });

interface ContextGroup extends RankGroup {
  /** First-stage scores of the top K, best first. */
  readonly init: Float64Array;
}

function contextGroup(pool: JudgedPool, scores: Float64Array, k: number): ContextGroup {
  const top = firstStageOrder(scores).slice(0, k);
  return {
    init: Float64Array.from(top, (i) => scores[i]!),
    features: contextRows(pool.features, scores, top),
    labels: Float32Array.from(top, (i) => pool.labels[i]!),
    ...(pool.weight !== undefined ? { weight: pool.weight } : {}),
  };
}

/**
 * The second stage, trained on `pools` with their first-stage scores `scores` (held out: a model that
 * did not see the query scored it), starting from those scores. Queries with nothing relevant in their
 * top K teach it nothing and are left out.
 */
export function trainContext(
  pools: readonly JudgedPool[],
  scores: ReadonlyMap<string, Float64Array>,
  trees: Partial<LambdaMartParams>,
  ctx: ContextParams,
): ContextStage {
  return fitContext(
    pools.map((p) => contextGroup(p, scores.get(p.id)!, ctx.k)),
    trees,
    ctx,
  );
}

function fitContext(groups: readonly ContextGroup[], trees: Partial<LambdaMartParams>, ctx: ContextParams): ContextStage {
  const teaching = groups.filter((g) => taught(g) && g.labels.some((l) => l > 0));
  const init = Float64Array.from(teaching.flatMap((g) => [...g.init]));
  const ensemble = trainLambdaMart(teaching, CONTEXT_FEATURE_COUNT, { params: { ...trees, trees: ctx.trees }, initScores: init });
  return { k: ctx.k, ensemble };
}

/**
 * Held-out rankings under both stages: for each fold, a second stage trained on the other folds
 * re-orders the fold's top K by their held-out first-stage scores. Deterministic: folds in sorted order.
 */
export function crossValidateContext(
  pools: readonly JudgedPool[],
  scores: ReadonlyMap<string, Float64Array>,
  trees: Partial<LambdaMartParams>,
  ctx: ContextParams,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  // Each query's top K and its rows, built once for the ten folds' trainings.
  const groups = new Map(pools.map((p) => [p.id, contextGroup(p, scores.get(p.id)!, ctx.k)]));
  for (const fold of [...new Set(pools.map((p) => p.fold))].sort()) {
    const stage = fitContext(
      pools.filter((p) => p.fold !== fold).map((p) => groups.get(p.id)!),
      trees,
      ctx,
    );
    for (const p of pools.filter((p) => p.fold === fold)) {
      const held = Float64Array.from(scores.get(p.id)!);
      out.set(
        p.id,
        reorderTop(stage, p.features, held, firstStageOrder(held)).map((i) => p.keys[i]!),
      );
    }
  }
  return out;
}

/**
 * Query weights that give each set (dev, head) the same total weight, whatever their sizes, times the
 * set's factor in `factors` (1 when absent).
 */
export function balanceSets(pools: readonly JudgedPool[], factors: Readonly<Record<string, number>> = {}): JudgedPool[] {
  const counts = new Map<string, number>();
  for (const p of pools) counts.set(p.set, (counts.get(p.set) ?? 0) + 1);
  const mean = pools.length / Math.max(1, counts.size);
  return pools.map((p) => ({ ...p, weight: (mean / counts.get(p.set)!) * (factors[p.set] ?? 1) }));
}
