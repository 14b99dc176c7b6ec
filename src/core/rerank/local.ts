/**
 * The in-process reranker ("local"). It reads what the first stage does not: term order and
 * proximity (query bigrams found as adjacent words), how much of the query a repository covers
 * across all its fields at once (BM25F scores terms independently), and a repository name spelled
 * out in the query. It keeps the first-stage order as a prior: candidates arrive best first.
 */
import { analyze } from "../../text/analyzer.js";
import type { RerankCandidate, Reranker } from "./types.js";

export interface LocalRerankWeights {
  /** Weight of the first-stage position prior (1 for the first candidate, falling to 0). */
  readonly prior: number;
  /** Fraction of distinct query terms present anywhere in the candidate text. */
  readonly coverage: number;
  /** Fraction of query bigrams present as adjacent terms. */
  readonly bigrams: number;
  /** The repository name (after the slash, as words) appears in the query. */
  readonly name: number;
}

export const DEFAULT_LOCAL_WEIGHTS: LocalRerankWeights = Object.freeze({ prior: 1, coverage: 0.3, bigrams: 0.2, name: 0.3 });

export function createLocalReranker(weights: LocalRerankWeights = DEFAULT_LOCAL_WEIGHTS): Reranker {
  return {
    id: "local:v1",
    async score(query: string, candidates: readonly RerankCandidate[], opts: { signal: AbortSignal }): Promise<number[]> {
      const qTerms = analyze(query);
      const qSet = new Set(qTerms);
      const qBigrams = new Set<string>();
      for (let i = 1; i < qTerms.length; i++) qBigrams.add(`${qTerms[i - 1]} ${qTerms[i]}`);
      const qLower = ` ${query.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ")} `;
      const n = candidates.length;
      return candidates.map((c, i) => {
        if (opts.signal.aborted) throw opts.signal.reason;
        const terms = analyze(c.text);
        const present = new Set(terms);
        let covered = 0;
        for (const t of qSet) if (present.has(t)) covered++;
        let bi = 0;
        if (qBigrams.size) {
          const seen = new Set<string>();
          for (let j = 1; j < terms.length; j++) {
            const b = `${terms[j - 1]} ${terms[j]}`;
            if (qBigrams.has(b)) seen.add(b);
          }
          bi = seen.size / qBigrams.size;
        }
        // The text starts with the repository name as words (see engine.rerankText).
        const repoWords = c.id
          .slice(c.id.indexOf("/") + 1)
          .replace(/[^\p{L}\p{N}]+/gu, " ")
          .trim();
        const nameHit = repoWords.length >= 3 && qLower.includes(` ${repoWords} `) ? 1 : 0;
        const prior = n > 1 ? 1 - i / (n - 1) : 1;
        return weights.prior * prior + weights.coverage * (qSet.size ? covered / qSet.size : 0) + weights.bigrams * bi + weights.name * nameHit;
      });
    },
    async close(): Promise<void> {},
  };
}
