/**
 * The second stage: the first stage's best K candidates re-scored with features that compare each of
 * them with the others of that top K. The first stage scores a candidate against the whole pool (~290):
 * its fame rank counts every candidate that covers the query, most of which an agent never sees. What
 * decides the top 3 is how a candidate stands among the few that made the top: the most starred of
 * them, the most starred of those that say the head noun, how far its first-stage score trails the
 * best. "markdown editor": marktext, the most starred of the top 5, was fourth behind two smaller
 * editors and pandoc.
 *
 * Trees fitted to what the first stage gets wrong (initialised from its scores), trained on the first
 * stage's held-out scores (src/eval/train-ranker.ts, trainContext), so they learn to correct the
 * scores the first stage gives queries it has not seen. Cross-validated with the same folds, K 5, 25
 * trees: head hit@3 / MRR 0.817 / 0.743 → 0.829 / 0.757, dev nDCG@10 / MRR 0.256 / 0.462 → 0.256 /
 * 0.463; K 10, 20 and 30 did no better (docs/ranking.md, section 4).
 */
import { FEATURE_COUNT, FEATURE_INDEX as IX, MISSING_RANK, WELL_MATCHED } from "./features.js";
import { scoreRows, type Ensemble } from "./lambdamart.js";

/** Features of a candidate among the first stage's top K, after the FEATURES row (rank features are log2(2 + rank)). */
export const CONTEXT_FEATURES = [
  // how far its first-stage score trails the best, and its first-stage rank
  "s1_gap",
  "s1_rank",
  // its stars' rank among the top K, and the gap to the most starred of them (log scale)
  "top_stars_rank",
  "top_stars_gap",
  // its rank by fame (stars and mentions) among the top K
  "top_fame_rank",
  // its stars' rank among the top K that say the query's head noun, and among those that cover the
  // query nearly as well as the best of the top K (WELL_MATCHED of its coverage)
  "top_said_stars_rank",
  "top_covered_stars_rank",
] as const;
export const CONTEXT_FEATURE_COUNT = FEATURE_COUNT + CONTEXT_FEATURES.length;

/** The second stage of a ranker: how many first-stage candidates it re-scores, and its trees. */
export interface ContextStage {
  readonly k: number;
  readonly ensemble: Ensemble;
}

const F = FEATURE_COUNT;
/** Rank given to a candidate outside the group ranked. */
const MISSING = Math.log2(2 + MISSING_RANK);

/** Candidate indexes by first-stage score, best first; ties by `tie` (default: index), for determinism. */
export function firstStageOrder(scores: ArrayLike<number>, tie: (a: number, b: number) => number = (a, b) => a - b): number[] {
  return Array.from({ length: scores.length }, (_, i) => i).sort((a, b) => scores[b]! - scores[a]! || tie(a, b));
}

/**
 * Rows (top.length × CONTEXT_FEATURE_COUNT, row-major) for the candidates `top` (indexes into the pool,
 * best first): each candidate's FEATURES row, then its CONTEXT_FEATURES.
 */
export function contextRows(features: Float32Array, scores: ArrayLike<number>, top: readonly number[]): Float32Array {
  const G = CONTEXT_FEATURE_COUNT;
  const out = new Float32Array(top.length * G);
  if (!top.length) return out;
  const at = (i: number, f: number) => features[i * F + f]!;
  const stars = (i: number) => at(i, IX.stars);
  const fame = (i: number) => at(i, IX.stars) + at(i, IX.mentions);
  let coverageTop = 0;
  let starsTop = -Infinity;
  for (const i of top) {
    coverageTop = Math.max(coverageTop, at(i, IX.coverage));
    starsTop = Math.max(starsTop, stars(i));
  }
  const byStars = rankAmong(top, stars, () => true);
  const byFame = rankAmong(top, fame, () => true);
  const saidByStars = rankAmong(top, stars, (i) => at(i, IX.head_said) === 1);
  const coveredByStars = rankAmong(top, stars, (i) => at(i, IX.coverage) >= WELL_MATCHED * coverageTop);
  const best = scores[top[0]!]!;
  top.forEach((i, r) => {
    const o = r * G;
    out.set(features.subarray(i * F, (i + 1) * F), o);
    out[o + F] = best - scores[i]!;
    out[o + F + 1] = Math.log2(2 + r);
    out[o + F + 2] = byStars.get(i)!;
    out[o + F + 3] = starsTop - stars(i);
    out[o + F + 4] = byFame.get(i)!;
    out[o + F + 5] = saidByStars.get(i) ?? MISSING;
    out[o + F + 6] = coveredByStars.get(i) ?? MISSING;
  });
  return out;
}

/**
 * Applies a second stage to a pool ranked by the first: the top K of `order` re-scored (first-stage
 * score plus the stage's correction) and re-sorted (ties keep the first-stage order). The candidates
 * below keep their order, their scores capped at the lowest of the top K so that scores never rise down
 * the list. `scores` is updated in place.
 */
export function reorderTop(stage: ContextStage, features: Float32Array, scores: Float64Array, order: readonly number[]): number[] {
  const top = order.slice(0, stage.k);
  const add = scoreRows(stage.ensemble, contextRows(features, scores, top));
  const rescored = top.map((i, r) => ({ i, r, s: scores[i]! + add[r]! })).sort((a, b) => b.s - a.s || a.r - b.r);
  let floor = Infinity;
  for (const x of rescored) floor = Math.min(floor, (scores[x.i] = x.s));
  for (let r = top.length; r < order.length; r++) scores[order[r]!] = Math.min(scores[order[r]!]!, floor);
  return [...rescored.map((x) => x.i), ...order.slice(top.length)];
}

/** log2(2 + rank) by `value`, highest first, among the members of `group` that `keep`. */
function rankAmong(group: readonly number[], value: (i: number) => number, keep: (i: number) => boolean): Map<number, number> {
  const kept = group.filter(keep).sort((a, b) => value(b) - value(a) || a - b);
  return new Map(kept.map((i, r) => [i, Math.log2(2 + r)]));
}
