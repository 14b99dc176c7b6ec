/**
 * The search core: validate, apply filter defaults, embed the query, retrieve lexically and densely
 * under the same filter, rank the joined pool with the learned ranker (./rank: a linear score plus
 * boosted trees over retrieval, naming, corpus-evidence and prior features), optionally rerank the top 100, and build
 * evidence. Implements SearchCore for the gRPC service and for in-process callers (eval).
 *
 * Scores: `score` is exp(s − s_best) of the ranker's scores s, so the best result of a response
 * scores 1 and the others (0, 1], in ranking order. Scores compare results of one response only.
 */
import { OWNER_REPO_REGEXP } from "../contract/search-request.js";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { logger as rootLogger, type Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import type { RepoPayload } from "../dataset/record.js";
import { BatchingEmbedder } from "../embed/batching.js";
import { loadQueryEmbedder } from "../embed/factory.js";
import type { Embedder } from "../embed/types.js";
import { analyze, stripMarkup } from "../text/analyzer.js";
import type { Filter } from "../store/filter.js";
import { withCondition, type PointId, type VectorStore } from "../store/types.js";
import { buildEvidence, compactTree, llmsUrlOf, MAX_EVIDENCE, sanitizeSnippet } from "./evidence.js";
import { applyFilterDefaults, toStoreFilter } from "./filters.js";
import { NO_UNDERSTANDING, understandQuery, type QueryUnderstanding } from "./query.js";
import { searchText } from "./framing.js";
import { mergeQualifierFilters, parseQualifiers } from "./qualifiers.js";
import { repositoryCard } from "./repository.js";
import { findSimilar, resolveRepository } from "./similar.js";
import { runRerankStage, type Reranker } from "./rerank/types.js";
import type {
  AppliedFilters,
  AppliedQualifier,
  GetRepositoryRequest,
  IndexStats,
  MethodStats,
  RepositoryCard,
  SearchCore,
  SearchOptions,
  SearchRequest,
  SearchResponse,
  SearchResult,
  SimilarRequest,
} from "./types.js";
import { validateRepositoryRequest, validateSearchRequest, validateSimilarRequest } from "./validate.js";
import { extractFeatures, FEATURES, type RankCandidate } from "./rank/features.js";
import { loadRankerModel, rankOrder, type RankerModel } from "./rank/model.js";
import rankerFile from "./rank/ranker-model.json" with { type: "json" };

/** Candidates each retriever contributes to the ranker's pool. */
export const LEXICAL_CANDIDATES = 200;
export const DENSE_CANDIDATES = 50;
/**
 * Popular candidates: the best lexical matches among repositories with at least this many stars,
 * beyond the LEXICAL_CANDIDATES best of all (see LexicalQuery.popular).
 */
export const POPULAR_CANDIDATES = { minStars: 5000, limit: 50 } as const;
/**
 * Popular dense candidates: the nearest repositories with at least this many stars, beyond the
 * DENSE_CANDIDATES nearest of all. Famous projects often describe themselves in words no query uses
 * ("Official mirror of Blender", "The Julia Programming Language"), so neither lexical channel reaches
 * them for "open source 3d modeling and animation software"; the embedding still places them near
 * what they are. On the head set it lifts the share of queries with an answer in the pool from 0.937
 * to 0.968 (docs/ranking.md). About 5,400 rows qualify: an exact int8 scan, ~0.15–0.25 ms a search
 * (docs/performance.md). The ranker did better held out with this bound than with 5,000.
 */
export const DENSE_POPULAR_CANDIDATES = { minStars: 10_000, limit: 50 } as const;
/** The spec's rerank candidate pool. */
export const RERANK_POOL = 100;
export const DEFAULT_LIMIT = 10;

export type Stage = "embed" | "lexical" | "dense" | "rank" | "rerank" | "evidence";

export interface EngineOptions {
  readonly store: VectorStore;
  /** Loads the query embedder for an index's embedder id (loadQueryEmbedder in production). */
  readonly loadEmbedder: (embedderId: string) => Promise<Embedder>;
  /** The server's reranker, or null when rerank is disabled by configuration. */
  readonly reranker?: Reranker | null;
  readonly rerankTimeoutMs?: number;
  /** The learned ranker; by default the model the core ships (./rank/ranker-model.json). */
  readonly ranker?: RankerModel;
  readonly logger?: Logger;
  /** Called once per stage with its duration, for metrics and traces. */
  readonly onStage?: (stage: Stage, seconds: number) => void;
  /** Called when the rerank stage fell back to the first-stage order. */
  readonly onRerankFallback?: () => void;
  /** Query understanding as ranking features (default on); eval turns it off for its ablation. */
  readonly understanding?: boolean;
  /** Which retrievers run (default both); eval uses single-retriever engines for its ablation. */
  readonly retrievers?: { readonly lexical: boolean; readonly dense: boolean };
  /** Clock for freshness filters (tests). */
  readonly now?: () => Date;
  /**
   * HNSW beam width of the dense stage; default: the store's own efSearch. The dense list is one of
   * two fusion inputs, so it needs less recall than a store query on its own (DENSE_EF_SEARCH).
   */
  readonly denseEf?: number;
  /**
   * Most query embeddings sent to the model in one call when searches arrive together (default 1: one
   * call per search). Embedders whose id starts with `static:` are never batched: a static embedding
   * costs ~8 µs a query, so a batch would amortise nothing (QUERY_EMBED_MAX_BATCH; src/embed/batching.ts).
   */
  readonly queryEmbedMaxBatch?: number;
  /** Called with the size of every batched call to the query embedder (metrics). */
  readonly onEmbedBatch?: (size: number) => void;
  /** Candidate pool sizes (eval experiments); defaults above. */
  readonly candidates?: {
    readonly lexical: number;
    readonly dense: number;
    readonly popular: { readonly minStars: number; readonly limit: number } | null;
    readonly densePopular?: { readonly minStars: number; readonly limit: number } | null;
  };
}

/** Whether the engine batches an embedder's queries (see EngineOptions.queryEmbedMaxBatch). */
export function batchesQueries(embedderId: string, maxBatch: number): boolean {
  return maxBatch > 1 && !embedderId.startsWith("static:");
}

export interface Candidate extends RankCandidate {
  /** Cosine of the query and the repository vectors (null for a lexical-only search). */
  readonly dense: number | null;
  /** The ranker's score. */
  score: number;
}

/** A query's candidate pool with its ranking features, before ranking. */
export interface CandidatePool {
  readonly candidates: readonly Candidate[];
  /** candidates × FEATURES, row-major. */
  readonly features: Float32Array;
  readonly lexicalHits: number | null;
  readonly denseHits: number | null;
  /** Time spent explaining the candidates and computing their features (part of the "rank" stage). */
  readonly featureSeconds: number;
}

/** A search request as the pool and the ranker read it (SearchEngine.prepare). */
export interface PreparedSearch {
  /** The request, validated. */
  readonly request: SearchRequest;
  /** The ranked text: the query without its qualifiers and the words that frame it (./framing.ts). */
  readonly text: string;
  readonly applied: AppliedFilters;
  readonly filter: Filter | undefined;
  /** The qualifiers that became filters (an explicit filter overrides its qualifier). */
  readonly qualifiers: readonly AppliedQualifier[];
  readonly understanding: QueryUnderstanding;
}

export class SearchEngine implements SearchCore {
  private readonly store: VectorStore;
  private readonly log: Logger;
  private readonly ranker: RankerModel;
  private embedder: Embedder | null = null;
  private embedderId: string | null = null;
  private embedderLoading: Promise<void> | null = null;
  private loadedVersion = false;
  private closed = false;

  constructor(private readonly opts: EngineOptions) {
    if (!opts.store) throw new TypeError("SearchEngine: store is required");
    if (opts.rerankTimeoutMs !== undefined && (!Number.isFinite(opts.rerankTimeoutMs) || opts.rerankTimeoutMs <= 0)) {
      throw new RangeError(`SearchEngine: rerankTimeoutMs must be positive (got ${opts.rerankTimeoutMs})`);
    }
    if (opts.denseEf !== undefined && (!Number.isInteger(opts.denseEf) || opts.denseEf < 1)) {
      throw new RangeError(`SearchEngine: denseEf must be a positive integer (got ${opts.denseEf})`);
    }
    if (opts.queryEmbedMaxBatch !== undefined && (!Number.isInteger(opts.queryEmbedMaxBatch) || opts.queryEmbedMaxBatch < 1)) {
      throw new RangeError(`SearchEngine: queryEmbedMaxBatch must be a positive integer (got ${opts.queryEmbedMaxBatch})`);
    }
    this.store = opts.store;
    this.ranker = opts.ranker ?? shippedRanker();
    this.log = opts.logger ?? rootLogger.child({ component: "core" });
  }

  /** For production: the embedder is loaded from the configuration for whichever index is served. */
  static fromConfig(config: Config, store: VectorStore, extra: Omit<EngineOptions, "store" | "loadEmbedder"> = {}): SearchEngine {
    return new SearchEngine({
      ...extra,
      store,
      loadEmbedder: (id) => loadQueryEmbedder(config, id),
      rerankTimeoutMs: extra.rerankTimeoutMs ?? config.rerank.timeoutMs,
      denseEf: extra.denseEf ?? config.store.denseEfSearch,
      queryEmbedMaxBatch: extra.queryEmbedMaxBatch ?? config.embedder.queryMaxBatch,
    });
  }

  ready(): boolean {
    return this.loadedVersion && !this.closed;
  }

  /** Loads the query embedder for the served index; call at start-up and whenever the version changes. */
  async sync(): Promise<void> {
    const info = await this.store.info();
    this.loadedVersion = info.version !== null;
    if (info.embedderId && info.embedderId !== this.embedderId) await this.ensureEmbedder(info.embedderId);
  }

  private ensureEmbedder(id: string): Promise<void> {
    if (this.embedderLoading) return this.embedderLoading;
    this.embedderLoading = (async () => {
      try {
        const loaded = await this.opts.loadEmbedder(id);
        const maxBatch = this.opts.queryEmbedMaxBatch ?? 1;
        const next = batchesQueries(loaded.id, maxBatch)
          ? new BatchingEmbedder(loaded, { maxBatch, ...(this.opts.onEmbedBatch ? { onBatch: this.opts.onEmbedBatch } : {}) })
          : loaded;
        const old = this.embedder;
        this.embedder = next;
        this.embedderId = id;
        if (old) await old.close().catch(() => {});
        this.log.info("query embedder loaded", {
          embedderId: id,
          queryBatch: next instanceof BatchingEmbedder ? next.maxBatch : 1,
        });
      } catch (err) {
        this.log.error("query embedder failed to load; answering lexical-only", { embedderId: id, error: (err as Error).message });
      } finally {
        this.embedderLoading = null;
      }
    })();
    return this.embedderLoading;
  }

  async stats(): Promise<IndexStats> {
    const info = await this.store.info();
    return {
      version: info.version,
      count: info.count,
      dims: info.dims,
      embedderId: info.embedderId,
      publishedAt: info.publishedAt,
      ageSeconds: info.publishedAt ? Math.max(0, Math.round((Date.now() - Date.parse(info.publishedAt)) / 1000)) : null,
      methods: this.methodsAvailable(info.version !== null, info.embedderId),
      rerankerId: this.opts.reranker?.id ?? null,
    };
  }

  private methodsAvailable(hasIndex: boolean, embedderId: string | null): string[] {
    if (!hasIndex) return [];
    return embedderId !== null && this.embedder !== null && this.embedderId === embedderId ? ["lexical", "dense"] : ["lexical"];
  }

  /**
   * Reads a request into what the pool and the ranker need. search() and the eval both start here, so
   * the eval's pools are the ones a search ranks: the same text under the same filter and understanding.
   */
  prepare(raw: SearchRequest): PreparedSearch {
    const request = validateSearchRequest(raw);
    // Qualifiers (`language:go stars:>1000`) become filters; explicit filters win (./qualifiers.ts).
    const parsed = parseQualifiers(request.query);
    const merged = mergeQualifierFilters(request.filters, parsed);
    const applied = applyFilterDefaults(merged.filters);
    const text = searchText(parsed.text);
    const understood = this.opts.understanding === false ? NO_UNDERSTANDING : understandQuery(text);
    return {
      request,
      text,
      applied,
      filter: toStoreFilter(applied, this.opts.now?.() ?? new Date()),
      qualifiers: merged.applied,
      understanding: merged.applied.length ? withQualifierNote(understood, merged.applied) : understood,
    };
  }

  async search(raw: SearchRequest, options: SearchOptions = {}): Promise<SearchResponse> {
    const t0 = performance.now();
    const signal = options.signal;
    const prepared = this.prepare(raw);
    const { request: req, text, applied, filter, qualifiers, understanding } = prepared;
    const limit = req.limit ?? DEFAULT_LIMIT;
    // meta.queryText: the ranked text, whenever it is not the query as sent (qualifiers or a framing
    // removed; a qualifier, applied or overridden, is never part of the text).
    const parsedMeta = {
      ...(qualifiers.length ? { qualifiers } : {}),
      ...(text !== req.query.trim() ? { queryText: text } : {}),
    };
    const meta = (methods: Record<string, MethodStats>, total: number) => ({
      total,
      timeMs: round2(performance.now() - t0),
      methods,
      appliedFilters: applied,
      ...parsedMeta,
    });
    // Whitespace-only: a valid request that matches nothing (and runs no rerank), per the spec.
    if (req.query.trim() === "") return { query: req.query, results: [], meta: meta({}, 0) };
    // Nothing but qualifiers ("language:go stars:>1000"): the most-starred repositories under them.
    if (text === "") {
      const { results, total } = await this.mostStarred(filter, limit, req.includeTree === true, applied, qualifiers);
      return { query: req.query, results, meta: meta({ popular: { hits: results.length, weight: 1 } }, total) };
    }

    const stage = bothStageHooks(this.opts.onStage, options.onStage);
    const pool = await this.pool(prepared, stage, signal);
    const tr = performance.now();
    const cands = promoteNamed(rankPool(pool, this.ranker), text);
    stage?.("rank", pool.featureSeconds + (performance.now() - tr) / 1000);
    const methods: Record<string, MethodStats> = {};
    if (pool.lexicalHits !== null) methods.lexical = { hits: pool.lexicalHits, weight: round4(this.methodWeights.lexical) };
    if (pool.denseHits !== null) methods.dense = { hits: pool.denseHits, weight: round4(this.methodWeights.dense) };

    let ranked = cands;
    let rerankMeta: { reranked: boolean; rerankMs: number } | null = null;
    const reranker = this.opts.reranker ?? null;
    if (reranker !== null && req.rerank !== false && cands.length > 0) {
      const rerankPool = cands.slice(0, RERANK_POOL);
      const stageRes = await runRerankStage(
        reranker,
        text,
        rerankPool.map((c) => ({ id: c.payload.key, text: rerankText(c.payload) })),
        { timeoutMs: this.opts.rerankTimeoutMs ?? 200, ...(signal ? { signal } : {}), logger: this.log },
      );
      stage?.("rerank", stageRes.ms / 1000);
      if (stageRes.order !== null) {
        const reordered = stageRes.order.map((i) => rerankPool[i]!);
        // Keep scores monotone in the new order: the reranked list reuses the ranker's scores, sorted.
        const scores = rerankPool.map((c) => c.score).sort((a, b) => b - a);
        reordered.forEach((c, i) => (c.score = scores[i]!));
        ranked = [...reordered, ...cands.slice(RERANK_POOL)];
        methods.rerank = { hits: rerankPool.length, weight: 1 };
        rerankMeta = { reranked: true, rerankMs: round2(stageRes.ms) };
      } else {
        this.opts.onRerankFallback?.();
        rerankMeta = { reranked: false, rerankMs: round2(stageRes.ms) };
      }
    }
    checkAborted(signal);

    await null; // stage boundary: ranking, then evidence, across a batch
    const te = performance.now();
    const top = ranked.slice(0, limit);
    const best = top.length ? top[0]!.score : 0;
    const queryTerms = new Set(analyze(text));
    const results: SearchResult[] = top.map((c) => toResult(c, best, req.includeTree === true, queryTerms, applied, understanding));
    stage?.("evidence", (performance.now() - te) / 1000);

    return {
      query: req.query,
      results,
      meta: { ...meta(methods, cands.length), ...(rerankMeta ?? {}) },
    };
  }

  /** Repositories like `raw.repo` (./similar.ts); NOT_FOUND when the index has no project of that name. */
  async similar(raw: SimilarRequest, options: SearchOptions = {}): Promise<SearchResponse> {
    const req = validateSimilarRequest(raw);
    await this.requireIndex();
    const seed = await resolveRepository(this.store, req.repo, true);
    checkAborted(options.signal);
    const applied = applyFilterDefaults(req.filters);
    const stage = bothStageHooks(this.opts.onStage, options.onStage);
    return findSimilar(seed, {
      store: this.store,
      limit: req.limit ?? DEFAULT_LIMIT,
      includeTree: req.includeTree === true,
      applied,
      filter: toStoreFilter(applied, this.opts.now?.() ?? new Date()),
      signal: options.signal,
      onStage: stage,
    });
  }

  /** The card of `raw.repo` (./repository.ts); a former name answers the project's card; NOT_FOUND when unknown. */
  async repository(raw: GetRepositoryRequest): Promise<RepositoryCard> {
    const req = validateRepositoryRequest(raw);
    await this.requireIndex();
    return repositoryCard((await resolveRepository(this.store, req.repo, false)).payload);
  }

  private async requireIndex(): Promise<void> {
    if ((await this.store.info()).version === null) throw new ReposearchError(ErrorCode.Unavailable, "the index is not loaded yet");
  }

  /**
   * A query of qualifiers only: the repositories with the most stars under the filter, scored
   * log(1 + stars) relative to the first (1 for it), with evidence naming the qualifiers.
   */
  private async mostStarred(
    filter: Filter | undefined,
    limit: number,
    includeTree: boolean,
    applied: AppliedFilters,
    qualifiers: readonly AppliedQualifier[],
  ): Promise<{ results: SearchResult[]; total: number }> {
    await this.requireIndex();
    const [points, total] = await Promise.all([this.store.scroll({ filter, limit, orderBy: "stars" }), this.store.count(filter)]);
    const best = Math.log1p(Math.max(0, points[0]?.payload.stars ?? 0));
    const why = sanitizeSnippet(`Ranked by stars: the query holds only qualifiers (${qualifiers.map((q) => q.qualifier).join(" ")})`);
    const results = points.map((pt) => {
      const logStars = Math.log1p(Math.max(0, pt.payload.stars ?? 0));
      const c: Candidate = { payload: pt.payload, lexical: null, lexicalRank: null, denseRank: null, dense: null, score: best > 0 ? logStars / best : 1 };
      const r = toResult(c, 1, includeTree, new Set(), applied, NO_UNDERSTANDING);
      // toResult scores exp(score − best); here the score is the log-stars ratio itself.
      return { ...r, score: Math.round(c.score * 10_000) / 10_000, evidence: [why, ...r.evidence].slice(0, MAX_EVIDENCE) };
    });
    return { results, total };
  }

  /**
   * The candidate pool of a query with its ranking features: the lexical and dense lists under the
   * filter, joined, then explained by the store (per-field BM25, coverage, cosines) for every
   * candidate. The training harness calls this with the filters a judged query is searched with.
   */
  async pool(
    { text, filter, understanding }: Pick<PreparedSearch, "text" | "filter" | "understanding">,
    stage?: EngineOptions["onStage"],
    signal?: AbortSignal,
  ): Promise<CandidatePool> {
    const info = await this.store.info();
    if (info.version === null) throw new ReposearchError(ErrorCode.Unavailable, "the index is not loaded yet");
    if (info.embedderId && info.embedderId !== this.embedderId) void this.ensureEmbedder(info.embedderId);
    checkAborted(signal);
    const embedder = info.embedderId !== null && this.embedderId === info.embedderId ? this.embedder : null;

    // Searches that arrive together (a SearchStream message) run interleaved, and each `await null`
    // below ends a stage, so a batch runs stage by stage: every lexical search, then every embedding,
    // every dense search, every ranking, every evidence. With two serving processes on two cores that
    // order cost ~3% less CPU per request than a search's stages back to back (docs/performance.md):
    // each stage's data stays in cache for the whole batch.
    const use = this.opts.retrievers ?? { lexical: true, dense: true };
    const sizes = this.opts.candidates ?? {
      lexical: LEXICAL_CANDIDATES,
      dense: DENSE_CANDIDATES,
      popular: POPULAR_CANDIDATES,
      densePopular: DENSE_POPULAR_CANDIDATES,
    };
    const densePopular = sizes.densePopular && sizes.densePopular.limit > 0 ? sizes.densePopular : null;
    const lexicalP = use.lexical
      ? timed(() => this.store.lexicalSearch({ text, filter, limit: sizes.lexical, popular: sizes.popular ?? undefined }), "lexical", stage)
      : Promise.resolve(null);
    let vector: Float32Array | null = null;
    const denseP = embedder
      ? (async () => {
          await null; // stage by stage across a batch (see "Searches that arrive together" above)
          const [vec] = await timed(() => embedder.embed([text]), "embed", stage);
          checkAborted(signal);
          // An all-zero vector means the embedder knows none of the query's words: every cosine is
          // 0, so dense retrieval would only return arbitrary (popular) repositories as "matches".
          if (!vec!.some((x) => x !== 0)) return use.dense ? { near: [], famous: [] } : null;
          vector = vec!;
          if (!use.dense) return null;
          return timed(
            async () => {
              const near = this.store.denseSearch({ vector: vec!, filter, limit: sizes.dense, ef: this.opts.denseEf });
              const famous = densePopular
                ? this.store.denseSearch({
                    vector: vec!,
                    filter: withCondition(filter, { key: "stars", range: { gte: densePopular.minStars } }),
                    limit: densePopular.limit,
                    ef: this.opts.denseEf,
                  })
                : [];
              const [n, f] = await Promise.all([near, famous]);
              return { near: n, famous: f };
            },
            "dense",
            stage,
          );
        })()
      : Promise.resolve(null);
    const [lexHits, dense] = await Promise.all([lexicalP, denseP]);
    checkAborted(signal);
    const nearIds = new Set(dense?.near.map((h) => h.id));
    const denseHits = dense && [...dense.near, ...dense.famous.filter((h) => !nearIds.has(h.id))];

    const t0 = performance.now();
    const byKey = new Map<string, Candidate>();
    // The hits' own point ids (no re-hashing of keys): explain addresses candidates by id.
    const ids: PointId[] = [];
    (lexHits ?? []).forEach((h, i) => {
      byKey.set(h.payload.key, { payload: h.payload, lexical: h.score, lexicalRank: i, denseRank: null, dense: null, score: 0 });
      ids.push(h.id);
    });
    const denseRanks = new Map<string, number>();
    (denseHits ?? []).forEach((h, i) => {
      denseRanks.set(h.payload.key, i);
      if (!byKey.has(h.payload.key)) {
        byKey.set(h.payload.key, { payload: h.payload, lexical: null, lexicalRank: null, denseRank: i, dense: null, score: 0 });
        ids.push(h.id);
      }
    });
    const joined = [...byKey.values()];
    const explanation = await this.store.explain({ text, vector: use.dense ? vector : null, ids, payloads: joined.map((c) => c.payload) });
    const candidates = joined.map((c, i) => ({
      ...c,
      denseRank: denseRanks.get(c.payload.key) ?? null,
      dense: explanation.dense ? explanation.dense[i]! : null,
    }));
    const features = extractFeatures(
      {
        text,
        understanding,
        explanation,
        lexicalTop: lexHits?.[0]?.score ?? 0,
        lexicalTenth: lexHits?.[Math.min(9, lexHits.length - 1)]?.score ?? 0,
      },
      candidates,
    );
    return {
      candidates,
      features,
      lexicalHits: lexHits?.length ?? null,
      denseHits: denseHits?.length ?? null,
      featureSeconds: (performance.now() - t0) / 1000,
    };
  }

  /** Each retriever's share of the ranker's split gain, reported as its `weight` in meta.methods. */
  private get methodWeights(): { lexical: number; dense: number } {
    return (this.weights ??= retrieverWeights(this.ranker));
  }
  private weights: { lexical: number; dense: number } | null = null;

  async close(): Promise<void> {
    this.closed = true;
    await this.embedder?.close().catch(() => {});
    await this.opts.reranker?.close().catch(() => {});
  }
}

/** Each retriever's share of the model's use (its features' importance), reported as meta.methods' weights. */
export function retrieverWeights(model: RankerModel): { lexical: number; dense: number } {
  let lexical = 0;
  let dense = 0;
  FEATURES.forEach((f, i) => {
    if (f === "lex" || f === "lex_rank" || f === "coverage" || f.startsWith("field_") || f === "q_lex_top" || f === "q_lex_gap")
      lexical += model.importance[i]!;
    else if (f.startsWith("dense") || f === "q_dense_top") dense += model.importance[i]!;
  });
  return { lexical, dense };
}

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof ReposearchError) throw reason;
    throw new ReposearchError(ErrorCode.DeadlineExceeded, "the search was cancelled or ran past its deadline");
  }
}

/** The engine's hook (metrics) and the call's (trace spans), either or both. */
function bothStageHooks(a: EngineOptions["onStage"], b: SearchOptions["onStage"]): EngineOptions["onStage"] {
  if (!a || !b) return a ?? b;
  return (stage, seconds) => {
    a(stage, seconds);
    b(stage, seconds);
  };
}

async function timed<T>(fn: () => Promise<T>, name: Stage, stage: EngineOptions["onStage"]): Promise<T> {
  const t = performance.now();
  try {
    return await fn();
  } finally {
    stage?.(name, (performance.now() - t) / 1000);
  }
}

/** The understanding with the query's qualifiers named first among its notes (evidence's "Query understood as"). */
function withQualifierNote(u: QueryUnderstanding, qualifiers: readonly AppliedQualifier[]): QueryUnderstanding {
  return { ...u, notes: [`qualifiers ${qualifiers.map((q) => q.qualifier).join(" ")}`, ...u.notes] };
}

/**
 * Orders a pool by the ranker's score, best first (ties by key, for determinism), the second stage
 * re-scoring the top K (rank/context.ts). Scores are the model's raw outputs; results report them
 * relative to the best (see toResult).
 */
export function rankPool(pool: CandidatePool, ranker: RankerModel): Candidate[] {
  const cands = pool.candidates;
  const { order, scores } = rankOrder(ranker, pool.features, (a, b) => (cands[a]!.payload.key < cands[b]!.payload.key ? -1 : 1));
  return order.map((i) => ((cands[i]!.score = scores[i]!), cands[i]!));
}

/**
 * A query that is a repository's full name, current or former ("facebook/react"), is a lookup: that
 * repository comes first whatever the ranker says (with the best score), as a web search engine answers
 * a URL. Other candidates keep their order.
 */
export function promoteNamed(cands: Candidate[], text: string): Candidate[] {
  const q = text.trim().toLowerCase();
  if (cands.length < 2 || !OWNER_REPO_REGEXP.test(q)) return cands;
  const i = cands.findIndex((c) => c.payload.key === q || c.payload.aliasKeys.includes(q));
  if (i <= 0) return cands;
  const [named] = cands.splice(i, 1);
  named!.score = Math.max(named!.score, cands[0]!.score);
  cands.unshift(named!);
  return cands;
}

let shipped: RankerModel | null = null;
/** The model the core ships, loaded (and checked against FEATURES) on first use. */
export function shippedRanker(): RankerModel {
  return (shipped ??= loadRankerModel(rankerFile, "src/core/rank/ranker-model.json"));
}

/** What a reranker reads: richer than the first stage's fields (description plus README prose). */
export function rerankText(p: RepoPayload): string {
  const parts = [p.name.replace(/[-_/]+/g, " ")];
  if (p.description) parts.push(p.description);
  if (p.topics.length) parts.push(p.topics.join(", "));
  if (p.readme) parts.push(stripMarkup(p.readme).slice(0, 600));
  return parts.join(". ");
}

function toResult(
  c: Candidate,
  best: number,
  includeTree: boolean,
  queryTerms: ReadonlySet<string>,
  applied: SearchResponse["meta"]["appliedFilters"],
  understanding: QueryUnderstanding,
): SearchResult {
  const p = c.payload;
  const result: SearchResult = {
    url: p.url,
    name: p.name,
    description: p.description,
    // exp(score − best): 1 for the best result, in (0, 1] for the rest, ordered as the ranking.
    score: Math.round(Math.exp(Math.min(0, c.score - best)) * 10_000) / 10_000,
    language: p.language,
    stars: p.stars,
    forks: p.forks,
    topics: [...p.topics],
    pushedAt: p.pushedAt,
    isArchived: p.isArchived,
    llmsUrl: llmsUrlOf(p),
    evidence: buildEvidence({ payload: p, queryTerms, semantic: c.dense, applied, understanding }),
  };
  const named = p.aliases.length ? { ...result, aliases: [...p.aliases] } : result;
  return includeTree ? { ...named, tree: compactTree(p.tree) } : named;
}
