/**
 * Warm-up: searches the core runs on itself after loading an index and before it opens its ports.
 *
 * A fresh process answers its first few hundred searches about 1.5× slower than a warmed one: V8 has
 * not yet optimised the ranking code, and each candidate's query-independent facts (its analysed name
 * and description pairs, src/core/rank/features.ts) are computed the first time a pool holds it.
 * Measured on a 2-core machine over 400 dev.jsonl queries the process had never seen (docs/performance.md,
 * "2026-12-07, seventh entry"): p50 / p99 10–13 / 28–30 ms cold, 8.5 / 16.6 ms after 1,000 warm-up
 * searches (7.9 s). So the core warms itself before a load balancer or a probe can send it traffic.
 *
 * The queries come from the index itself, so any index warms without a file to ship: the topics most
 * used by its most-starred repositories ("machine learning", "react", "cli"), in order of use, each
 * under one of a rotation of filters, so the filtered paths warm too. Deterministic for an index.
 * Never throws: a failing search ends the warm-up early with a warning, and the core serves cold.
 */
import type { Logger } from "../common/logger.js";
import type { VectorStore } from "../store/types.js";
import type { SearchFilters, SearchRequest, SearchResponse } from "./types.js";

export interface WarmUpOptions {
  /** At most this many searches; 0 turns the warm-up off. */
  readonly queries: number;
  /** Stop starting new searches after this long. */
  readonly maxMs: number;
  readonly logger?: Logger;
}

export interface WarmUpResult {
  readonly queries: number;
  readonly ms: number;
}

/** How many of the most-starred repositories lend their topics. */
const SOURCE_REPOSITORIES = 3_000;

/** The filter each query runs under, in turn; `language` is filled with the index's most used languages. */
const FILTER_ROTATION: readonly (SearchFilters | "language" | undefined)[] = [
  undefined,
  "language",
  { minStars: 1_000 },
  { categories: [], excludeArchived: false },
  { staleAfterMonths: 12 },
  { categories: ["library", "tool"] },
  { minForks: 100, maxStars: 50_000 },
];

/** The warm-up's searches for the served index, most used topics first (at most `limit`). */
export async function warmUpRequests(store: VectorStore, limit: number): Promise<SearchRequest[]> {
  if (limit <= 0) return [];
  const top = await store.scroll({ limit: SOURCE_REPOSITORIES, orderBy: "stars" });
  const topics = new Map<string, number>();
  const languages = new Map<string, number>();
  for (const { payload } of top) {
    for (const t of payload.topics) topics.set(t, (topics.get(t) ?? 0) + 1);
    if (payload.language) languages.set(payload.language, (languages.get(payload.language) ?? 0) + 1);
  }
  const byUse = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k]) => k);
  const langs = byUse(languages).slice(0, 8);
  return byUse(topics)
    .slice(0, limit)
    .map((topic, i) => {
      const rotated = FILTER_ROTATION[i % FILTER_ROTATION.length];
      const language = langs[Math.floor(i / FILTER_ROTATION.length) % Math.max(1, langs.length)];
      const filters = rotated === "language" ? (language ? { language } : undefined) : rotated;
      return { query: topic.replace(/-/g, " "), limit: 10, ...(filters ? { filters } : {}) };
    });
}

/** Runs the warm-up; resolves when done, out of time or after the first failure (logged). */
export async function warmUp(core: { search(r: SearchRequest): Promise<SearchResponse> }, store: VectorStore, opts: WarmUpOptions): Promise<WarmUpResult> {
  const start = performance.now();
  let done = 0;
  try {
    for (const request of await warmUpRequests(store, opts.queries)) {
      if (performance.now() - start >= opts.maxMs) break;
      await core.search(request);
      done++;
    }
  } catch (err) {
    opts.logger?.warn("warm-up stopped early; the first searches will be slower", { error: (err as Error).message, queries: done });
  }
  const ms = Math.round(performance.now() - start);
  if (done > 0) opts.logger?.info("warm-up done", { queries: done, ms });
  return { queries: done, ms };
}
