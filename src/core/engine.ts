/**
 * The search core: validate, apply filter defaults, embed the query, retrieve lexically and densely
 * under the same filter, fuse normalised scores with soft priors, optionally rerank the top 100,
 * and build evidence. Implements SearchCore for the gRPC service and for in-process callers (eval).
 *
 * Scores: `score` is the fused relative score in [0, 1]; the best result of a response scores 1
 * (or the reranker's normalised score when rerank reordered the list). Scores compare results of
 * one response only.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { logger as rootLogger, type Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import type { RepoPayload } from "../dataset/record.js";
import { BatchingEmbedder } from "../embed/batching.js";
import { loadQueryEmbedder } from "../embed/factory.js";
import type { Embedder } from "../embed/types.js";
import { analyze, stripMarkup } from "../store/embedded/analyzer.js";
import type { RankColumns, ScoredPoint, VectorStore } from "../store/types.js";
import { buildEvidence, compactTree, llmsUrlOf } from "./evidence.js";
import { applyFilterDefaults, toStoreFilter } from "./filters.js";
import { understandQuery, type QueryUnderstanding } from "./query.js";
import { runRerankStage, type Reranker } from "./rerank/types.js";
import type { IndexStats, MethodStats, SearchCore, SearchOptions, SearchRequest, SearchResponse, SearchResult } from "./types.js";
import { validateSearchRequest } from "./validate.js";
import fusionFile from "./fusion-weights.json" with { type: "json" };

/** Candidates each retriever contributes to fusion. */
export const LEXICAL_CANDIDATES = 200;
export const DENSE_CANDIDATES = 50;
/** The spec's rerank candidate pool. */
export const RERANK_POOL = 100;
export const DEFAULT_LIMIT = 10;

/**
 * Fusion weights (normalised-score fusion). Fitted on dev.jsonl with `npm run eval -- --tune`,
 * cross-validated by list; see README "Ranking".
 */
export interface FusionWeights {
  readonly lexical: number;
  readonly dense: number;
  /** log-stars popularity prior in [0, 1]. */
  readonly stars: number;
  /** The repository's language is the one the query names. */
  readonly language: number;
  /** The repository's category is a kind the query's wording points to. */
  readonly category: number;
}

/**
 * The fitted weights, versioned in ./fusion-weights.json (refit: `npm run eval -- --tune --write-fusion`).
 * One profile per kind of dense signal: how much the dense side may weigh depends on how good the
 * embedder is on this domain (a domain-adapted model earns ~8× the weight of the distilled one).
 */
export const FUSION_PROFILES = ["domainAdapted", "base"] as const;
export type FusionProfile = (typeof FUSION_PROFILES)[number];
const PROFILE_WEIGHTS: Readonly<Record<FusionProfile, FusionWeights>> = Object.freeze({
  domainAdapted: Object.freeze(checkWeights(fusionFile.profiles.domainAdapted.weights, "domainAdapted")),
  base: Object.freeze(checkWeights(fusionFile.profiles.base.weights, "base")),
});
/** The weights of the default build, whose static model is domain-adapted by its train stage. */
export const DEFAULT_FUSION: FusionWeights = PROFILE_WEIGHTS.domainAdapted;

/** The profile for an index's query embedder: domain-adapted models get theirs, every other one `base`. */
export function fusionProfileFor(embedder: Pick<Embedder, "domainAdapted"> | null): FusionProfile {
  return embedder?.domainAdapted === true ? "domainAdapted" : "base";
}

export function fusionWeights(profile: FusionProfile): FusionWeights {
  return PROFILE_WEIGHTS[profile];
}

function checkWeights(w: Record<string, unknown>, profile: string): FusionWeights {
  for (const k of ["lexical", "dense", "stars", "language", "category"]) {
    const v = w[k];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new Error(`fusion-weights.json: profiles.${profile}.weights.${k} must be a finite number ≥ 0`);
  }
  return w as unknown as FusionWeights;
}

export type Stage = "embed" | "lexical" | "dense" | "fuse" | "rerank" | "evidence";

export interface EngineOptions {
  readonly store: VectorStore;
  /** Loads the query embedder for an index's embedder id (loadQueryEmbedder in production). */
  readonly loadEmbedder: (embedderId: string) => Promise<Embedder>;
  /** The server's reranker, or null when rerank is disabled by configuration. */
  readonly reranker?: Reranker | null;
  readonly rerankTimeoutMs?: number;
  /** Fixed fusion weights; by default the fitted profile for the served index's embedder (fusionProfileFor). */
  readonly fusion?: FusionWeights;
  readonly logger?: Logger;
  /** Called once per stage with its duration, for metrics and traces. */
  readonly onStage?: (stage: Stage, seconds: number) => void;
  /** Called when the rerank stage fell back to the first-stage order. */
  readonly onRerankFallback?: () => void;
  /** Query understanding as a soft signal (default on); eval turns it off for its ablation. */
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
}

/** Whether the engine batches an embedder's queries (see EngineOptions.queryEmbedMaxBatch). */
export function batchesQueries(embedderId: string, maxBatch: number): boolean {
  return maxBatch > 1 && !embedderId.startsWith("static:");
}

export interface Candidate {
  readonly payload: RepoPayload;
  /** The row in the index version that answered, when fusion joined by rank columns; else -1. */
  readonly row: number;
  lexical: number | null;
  dense: number | null;
  fused: number;
}

export class SearchEngine implements SearchCore {
  private readonly store: VectorStore;
  private readonly log: Logger;
  /** Fusion weights for the loaded embedder (or opts.fusion). */
  private fusion: FusionWeights;
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
    this.fusion = opts.fusion ?? fusionWeights("base");
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
        this.fusion = this.opts.fusion ?? fusionWeights(fusionProfileFor(next));
        if (old) await old.close().catch(() => {});
        this.log.info("query embedder loaded", {
          embedderId: id,
          fusionProfile: this.opts.fusion ? "fixed" : fusionProfileFor(next),
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

  async search(raw: SearchRequest, options: SearchOptions = {}): Promise<SearchResponse> {
    const t0 = performance.now();
    const signal = options.signal;
    const req = validateSearchRequest(raw);
    const applied = applyFilterDefaults(req.filters);
    const filter = toStoreFilter(applied, this.opts.now?.() ?? new Date());
    const limit = req.limit ?? DEFAULT_LIMIT;
    const text = req.query.trim();
    const meta = (methods: Record<string, MethodStats>, total: number) => ({
      total,
      timeMs: round2(performance.now() - t0),
      methods,
      appliedFilters: applied,
    });
    // Whitespace-only: a valid request that matches nothing (and runs no rerank), per the spec.
    if (text === "") return { query: req.query, results: [], meta: meta({}, 0) };

    const info = await this.store.info();
    if (info.version === null) throw new ReposearchError(ErrorCode.Unavailable, "the index is not loaded yet");
    if (info.embedderId && info.embedderId !== this.embedderId) void this.ensureEmbedder(info.embedderId);
    checkAborted(signal);

    const understanding = this.opts.understanding === false ? NO_UNDERSTANDING : understandQuery(text);
    const embedder = info.embedderId !== null && this.embedderId === info.embedderId ? this.embedder : null;
    const stage = bothStageHooks(this.opts.onStage, options.onStage);

    // Searches that arrive together (a SearchStream message) run interleaved, and each `await null`
    // below ends a stage, so a batch runs stage by stage: every lexical search, then every embedding,
    // every dense search, every fusion, every evidence. With two serving processes on two cores that
    // order cost ~3% less CPU per request than a search's stages back to back (docs/performance.md):
    // each stage's data stays in cache for the whole batch.
    // Lexical and dense retrieval under the same filter. Dense first embeds (synchronous work for
    // the static embedder, a few ms for USE-lite); lexical runs meanwhile where the store is remote.
    const use = this.opts.retrievers ?? { lexical: true, dense: true };
    const lexicalP = use.lexical ? timed(() => this.store.lexicalSearch({ text, filter, limit: LEXICAL_CANDIDATES }), "lexical", stage) : Promise.resolve(null);
    const denseP = embedder && use.dense
      ? (async () => {
          await null; // stage by stage across a batch (see "Searches that arrive together" above)
          const [vec] = await timed(() => embedder.embed([text]), "embed", stage);
          checkAborted(signal);
          // An all-zero vector means the embedder knows none of the query's words: every cosine is
          // 0, so dense retrieval would only return arbitrary (popular) repositories as "matches".
          if (!vec!.some((x) => x !== 0)) return [];
          return timed(() => this.store.denseSearch({ vector: vec!, filter, limit: DENSE_CANDIDATES, ef: this.opts.denseEf }), "dense", stage);
        })()
      : Promise.resolve(null);
    const [lexHits, denseHits] = await Promise.all([lexicalP, denseP]);
    checkAborted(signal);

    const tf = performance.now();
    const cands = fuse(lexHits, denseHits, understanding, this.fusion);
    stage?.("fuse", (performance.now() - tf) / 1000);
    const methods: Record<string, MethodStats> = {};
    if (lexHits !== null) methods.lexical = { hits: lexHits.length, weight: this.fusion.lexical };
    if (denseHits !== null) methods.dense = { hits: denseHits.length, weight: this.fusion.dense };

    let ranked = cands;
    let rerankMeta: { reranked: boolean; rerankMs: number } | null = null;
    const reranker = this.opts.reranker ?? null;
    if (reranker !== null && req.rerank !== false && cands.length > 0) {
      const pool = cands.slice(0, RERANK_POOL);
      const stageRes = await runRerankStage(
        reranker,
        text,
        pool.map((c) => ({ id: c.payload.key, text: rerankText(c.payload) })),
        { timeoutMs: this.opts.rerankTimeoutMs ?? 200, ...(signal ? { signal } : {}), logger: this.log },
      );
      stage?.("rerank", stageRes.ms / 1000);
      if (stageRes.order !== null) {
        const reordered = stageRes.order.map((i) => pool[i]!);
        // Keep scores monotone in the new order: the reranked list reuses the fused scores, sorted.
        const scores = pool.map((c) => c.fused).sort((a, b) => b - a);
        reordered.forEach((c, i) => (c.fused = scores[i]!));
        ranked = [...reordered, ...cands.slice(RERANK_POOL)];
        methods.rerank = { hits: pool.length, weight: 1 };
        rerankMeta = { reranked: true, rerankMs: round2(stageRes.ms) };
      } else {
        this.opts.onRerankFallback?.();
        rerankMeta = { reranked: false, rerankMs: round2(stageRes.ms) };
      }
    }
    checkAborted(signal);

    await null; // stage boundary: fusion, then evidence, across a batch
    const te = performance.now();
    const top = ranked.slice(0, limit);
    const best = top.length ? Math.max(top[0]!.fused, 1e-9) : 1;
    const queryTerms = new Set(analyze(text));
    const results: SearchResult[] = top.map((c) => toResult(c, best, req.includeTree === true, queryTerms, applied, understanding));
    stage?.("evidence", (performance.now() - te) / 1000);

    return {
      query: req.query,
      results,
      meta: { ...meta(methods, cands.length), ...(rerankMeta ?? {}) },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.embedder?.close().catch(() => {});
    await this.opts.reranker?.close().catch(() => {});
  }
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

const NO_UNDERSTANDING: QueryUnderstanding = Object.freeze({ language: null, categories: [], notes: [] });

const LOG_STARS_MAX = Math.log1p(500_000);

/**
 * Normalised-score fusion: lexical scores divided by the best lexical score, dense cosines min-max
 * scaled over the dense candidates; a candidate missing from one list scores 0 there. Priors add
 * small, bounded amounts. Sorted best first, ties by key for determinism.
 */
export function fuse(lex: readonly ScoredPoint[] | null, dense: readonly ScoredPoint[] | null, u: QueryUnderstanding, w: FusionWeights): Candidate[] {
  lex ??= [];
  // By row and rank columns when every hit carries the same version's columns (the embedded
  // store); otherwise (Qdrant, or a new version published between the two retrievals) by key.
  const columns = sharedColumns(lex, dense);
  const joined = new Map<number | string, Candidate>();
  const lexMax = lex.length ? Math.max(lex[0]!.score, 1e-9) : 1;
  for (const h of lex) {
    const row = columns ? h.row! : -1;
    joined.set(columns ? row : h.payload.key, { payload: h.payload, row, lexical: h.score, dense: null, fused: 0 });
  }
  let dMin = 0;
  let dMax = 1;
  if (dense && dense.length) {
    dMax = dense[0]!.score;
    dMin = dense[dense.length - 1]!.score;
    for (const h of dense) {
      const row = columns ? h.row! : -1;
      const key = columns ? row : h.payload.key;
      const c = joined.get(key);
      if (c) c.dense = h.score;
      else joined.set(key, { payload: h.payload, row, lexical: null, dense: h.score, fused: 0 });
    }
  }
  const dSpan = Math.max(dMax - dMin, 1e-6);
  const qLanguage = columns && u.language !== null ? columns.languageCode(u.language) : -2;
  const qCategories = columns ? u.categories.map((c) => columns.categoryCode(c)) : [];
  const out = [...joined.values()];
  for (const c of out) {
    const ln = c.lexical === null ? 0 : c.lexical / lexMax;
    const dn = c.dense === null ? 0 : (c.dense - dMin) / dSpan;
    let stars: number;
    let lang: number;
    let cat: number;
    if (columns) {
      stars = columns.stars(c.row);
      lang = columns.language(c.row) === qLanguage ? 1 : 0;
      cat = qCategories.includes(columns.category(c.row)) ? 1 : 0;
    } else {
      const p = c.payload;
      stars = p.stars ?? 0;
      lang = u.language !== null && p.languageLc === u.language ? 1 : 0;
      cat = p.category !== null && u.categories.includes(p.category) ? 1 : 0;
    }
    const starsPrior = stars > 0 ? Math.min(1, Math.log1p(stars) / LOG_STARS_MAX) : 0;
    c.fused = w.lexical * ln + w.dense * dn + w.stars * starsPrior + w.language * lang + w.category * cat;
  }
  // -1/0/1 only: returning b.fused - a.fused would box a heap number per comparison.
  out.sort((a, b) => (a.fused > b.fused ? -1 : a.fused < b.fused ? 1 : a.payload.key < b.payload.key ? -1 : 1));
  return out;
}

/** The rank columns every hit carries (one version's, with rows), or null. */
function sharedColumns(lex: readonly ScoredPoint[], dense: readonly ScoredPoint[] | null): RankColumns | null {
  const columns = (lex[0] ?? dense?.[0])?.columns;
  if (columns === undefined) return null;
  for (const h of lex) if (h.columns !== columns || h.row === undefined) return null;
  if (dense) for (const h of dense) if (h.columns !== columns || h.row === undefined) return null;
  return columns;
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
    score: Math.round(Math.max(0, Math.min(1, c.fused / best)) * 10_000) / 10_000,
    language: p.language,
    stars: p.stars,
    forks: p.forks,
    topics: [...p.topics],
    pushedAt: p.pushedAt,
    isArchived: p.isArchived,
    llmsUrl: llmsUrlOf(p),
    evidence: buildEvidence({ payload: p, queryTerms, semantic: c.dense, applied, understanding }),
  };
  return includeTree ? { ...result, tree: compactTree(p.tree) } : result;
}
