/**
 * Ranking metrics for dev.jsonl-style judgements (binary relevance). Only relevant repositories that
 * exist in the index count, as the eval README prescribes; queries with none are skipped by the caller.
 */
import { readFile } from "node:fs/promises";

export interface EvalQuery {
  readonly id: string;
  readonly query: string;
  readonly relevant: readonly string[];
  readonly list: string;
  readonly language: string | null;
  readonly category_guess: string | null;
}

export async function loadEvalQueries(file: string): Promise<EvalQuery[]> {
  const text = await readFile(file, "utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as EvalQuery);
}

export interface QueryMetrics {
  ndcg10: number;
  recall10: number;
  recall50: number;
  mrr: number;
}

/** `ranked`: result keys best first; `relevant`: the judged keys present in the index (non-empty). */
export function scoreRanking(ranked: readonly string[], relevant: ReadonlySet<string>): QueryMetrics {
  let dcg = 0;
  let hits10 = 0;
  let hits50 = 0;
  let mrr = 0;
  for (let i = 0; i < Math.min(ranked.length, 50); i++) {
    if (!relevant.has(ranked[i]!)) continue;
    if (mrr === 0) mrr = 1 / (i + 1);
    if (i < 10) {
      dcg += 1 / Math.log2(i + 2);
      hits10++;
    }
    hits50++;
  }
  if (mrr === 0) {
    const at = ranked.findIndex((k) => relevant.has(k));
    if (at >= 0) mrr = 1 / (at + 1);
  }
  let idcg = 0;
  for (let i = 0; i < Math.min(10, relevant.size); i++) idcg += 1 / Math.log2(i + 2);
  return { ndcg10: idcg > 0 ? dcg / idcg : 0, recall10: hits10 / relevant.size, recall50: hits50 / relevant.size, mrr };
}

export function meanMetrics(all: readonly QueryMetrics[]): QueryMetrics {
  const n = Math.max(1, all.length);
  const sum = { ndcg10: 0, recall10: 0, recall50: 0, mrr: 0 };
  for (const m of all) {
    sum.ndcg10 += m.ndcg10;
    sum.recall10 += m.recall10;
    sum.recall50 += m.recall50;
    sum.mrr += m.mrr;
  }
  return { ndcg10: sum.ndcg10 / n, recall10: sum.recall10 / n, recall50: sum.recall50 / n, mrr: sum.mrr / n };
}
