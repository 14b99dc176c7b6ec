/**
 * The embedded, pure-TypeScript vector store: serves the published index version from memory and
 * swaps in newer versions without failing in-flight requests.
 */
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { logger as rootLogger, type Logger } from "../../common/logger.js";
import type { Config } from "../../config/config.js";
import { forgetPredecessor } from "../../dataset/payload-lineage.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Filter } from "../filter.js";
import {
  appendPopular,
  checkPopular,
  topRowsBy,
  withCondition,
  type DenseQuery,
  type Explanation,
  type ExplainQuery,
  type LexicalQuery,
  type PointId,
  type ScoredPoint,
  type ScrollQuery,
  type StoredPoint,
  type StoreInfo,
  type StoreWriter,
  type VectorStore,
} from "../types.js";
import { Bitset } from "./bitset.js";
import { explainRows } from "./explain.js";
import { denseSearch as planDenseSearch } from "./dense.js";
import { normalizePointId } from "./filter-compile.js";
import type { HnswParams } from "./hnsw.js";
import { PayloadIndex } from "./payload-index.js";
import { IndexFormatError, Segment } from "./segment.js";
import { SUBGRAPH_FIELDS, SUBGRAPH_MIN_ROWS } from "./subgraphs.js";
import type { Hit } from "./types.js";
import { EmbeddedWriter, IndexDir, parseLabel, type WriterHost } from "./writer.js";

export interface EmbeddedStoreOptions {
  /** The index lives in `${dataDir}/index/`. */
  readonly dataDir: string;
  readonly hnsw: { readonly m: number; readonly efConstruction: number; readonly seed?: number };
  /** Default HNSW beam width for searches. */
  readonly efSearch: number;
  /** Filtered subsets at or below this many points are scanned exactly. */
  readonly fullScanThreshold: number;
  /** Published versions kept on disk, the current one included. */
  readonly keepVersions: number;
  readonly logger?: Logger;
  /** How long a commit waits for another writer's commit to finish (default 30 minutes). */
  readonly lockTimeoutMs?: number;
  readonly lockPollIntervalMs?: number;
  /** Verify every file's SHA-256 at load (default true; ~0.3 s for the full index). */
  readonly verifyChecksums?: boolean;
  /** Values of category and language with at least this many rows get their own graph (default SUBGRAPH_MIN_ROWS). */
  readonly subgraphMinRows?: number;
  /**
   * How long a newly served version's changed payloads keep the served version's payload as their
   * predecessor (src/dataset/payload-lineage.ts; default 5 minutes). The ranker carries over what it
   * read from their unchanged text meanwhile; each link keeps an old payload alive, about 90 MiB of heap
   * when half the full index's payloads changed, so the links go once the first searches are past.
   */
  readonly lineageTtlMs?: number;
}

const DEFAULT_LOCK_TIMEOUT_MS = 30 * 60_000;
const DEFAULT_LOCK_POLL_MS = 250;
const MIN_WATCH_INTERVAL_MS = 10;
const DEFAULT_LINEAGE_TTL_MS = 5 * 60_000;

export class EmbeddedStore implements VectorStore {
  readonly local = true;
  readonly dir: IndexDir;
  private readonly log: Logger;
  private readonly hnsw: HnswParams;
  /** The served version. Replaced by one assignment; readers take it once per request. */
  private segment: Segment | null = null;
  private refreshing: Promise<boolean> | null = null;
  private watchTimer: NodeJS.Timeout | null = null;
  /** Bumped by watch()/close(), so a tick in flight from an earlier watch() does not reschedule. */
  private watchGeneration = 0;
  private closed = false;
  /** Validates filters when nothing is published, so a bad filter fails the same way always. */
  private emptyIndex: PayloadIndex | null = null;

  private constructor(
    private readonly opts: ValidatedOptions,
    log: Logger,
  ) {
    this.dir = new IndexDir(opts.dataDir);
    this.log = log;
    this.hnsw = opts.hnsw;
  }

  /** Opens the store and loads the published version, if any. Fails if that version is damaged. */
  static async open(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
    const o = validateOptions(options);
    const store = new EmbeddedStore(o, (options.logger ?? rootLogger).child({ component: "embedded-store" }));
    await store.refresh();
    return store;
  }

  // -- reads ----------------------------------------------------------------------------------

  async info(): Promise<StoreInfo> {
    const seg = this.serving();
    if (!seg) return { version: null, count: 0, dims: 0, embedderId: null, publishedAt: null };
    return { version: seg.version, count: seg.count, dims: seg.dims, embedderId: seg.embedderId, publishedAt: seg.createdAt };
  }

  async denseSearch(q: DenseQuery): Promise<ScoredPoint[]> {
    const seg = this.serving();
    const limit = checkLimit(q.limit);
    if (q.ef !== undefined && (!Number.isInteger(q.ef) || q.ef < 1)) throw validation(`ef must be a positive integer (got ${q.ef})`);
    if (!(q.vector instanceof Float32Array)) throw validation("vector must be a Float32Array");
    if (!seg) {
      this.allowed(null, q.filter);
      return [];
    }
    if (q.vector.length !== seg.dims) throw validation(`vector has ${q.vector.length} dims, the index has ${seg.dims}`);
    const allow = this.allowed(seg, q.filter);
    if (limit === 0) return [];
    const hits = planDenseSearch(seg.dense, q.vector, allow, {
      k: limit,
      ef: Math.max(q.ef ?? this.opts.efSearch, limit),
      fullScanThreshold: this.opts.fullScanThreshold,
      exact: q.exact === true,
    });
    return toScored(seg, hits);
  }

  async lexicalSearch(q: LexicalQuery): Promise<ScoredPoint[]> {
    const seg = this.serving();
    const limit = checkLimit(q.limit);
    if (typeof q.text !== "string") throw validation("text must be a string");
    const allow = this.allowed(seg, q.filter);
    const popular = q.popular ? checkPopular(q.popular) : null;
    const alsoAllow = popular && seg ? this.allowed(seg, withCondition(q.filter, { key: "stars", range: { gte: popular.minStars } })) : null;
    if (!seg?.lexical || (limit === 0 && !popular) || q.text.trim() === "") return [];
    if (!popular) return toScored(seg, seg.lexical.search(q.text, limit, allow));
    // A null bitset admits every row; the popular rows are never all of them unless minStars is 0.
    const res = seg.lexical.searchWithAlso(q.text, limit, allow, alsoAllow ?? Bitset.full(seg.count), popular.limit);
    return appendPopular(toScored(seg, res.hits), toScored(seg, res.also));
  }

  async explain(q: ExplainQuery): Promise<Explanation> {
    const seg = this.serving();
    if (q.vector !== null && !(q.vector instanceof Float32Array)) throw validation("vector must be a Float32Array or null");
    return explainRows(
      seg ?? { lexical: null, vectors: null, dims: 0, rowOf: () => undefined },
      seg ? { ...q, ids: q.ids.map((id) => (seg.rowOf(id) === undefined && typeof id === "string" ? normalizePointId(id) : id)) } : q,
    );
  }

  async count(filter?: Filter): Promise<number> {
    const seg = this.serving();
    const allow = this.allowed(seg, filter);
    if (!seg) return 0;
    return allow ? allow.count() : seg.count;
  }

  async retrieve(ids: readonly PointId[]): Promise<(RepoPayload | null)[]> {
    const seg = this.serving();
    if (!seg) return ids.map(() => null);
    return ids.map((id) => {
      // Ids are stored canonical (lowercase, hyphenated); accept other UUID spellings as Qdrant does.
      const row = seg.rowOf(id) ?? (typeof id === "string" ? seg.rowOf(normalizePointId(id)) : undefined);
      return row === undefined ? null : seg.payloads[row]!;
    });
  }

  async scroll(q: ScrollQuery): Promise<StoredPoint[]> {
    const seg = this.serving();
    const limit = checkLimit(q.limit);
    const allow = this.allowed(seg, q.filter);
    if (!seg || limit === 0) return [];
    const point = (row: number): StoredPoint => ({ id: seg.ids[row]!, payload: seg.payloads[row]!, vector: q.withVectors ? seg.vectorOf(row).slice() : null });
    if (q.orderBy === "stars") {
      const rows = allow ? allowedRows(allow) : Array.from({ length: seg.count }, (_, i) => i);
      return topRowsBy(rows, (row) => seg.payloads[row]!.stars, limit).map(point);
    }
    const out: StoredPoint[] = [];
    for (let row = 0; row < seg.count && out.length < limit; row++) if (allow === null || allow.has(row)) out.push(point(row));
    return out;
  }

  /** The served segment, for tools and benchmarks (vectors, payload statistics). Read-only. */
  currentSegment(): Segment | null {
    return this.serving();
  }

  // -- versions -------------------------------------------------------------------------------

  /**
   * Loads the published version if CURRENT moved, and swaps it in. Resolves true when a newer
   * version is now served. Throws when the published version cannot be loaded (the old one stays).
   */
  refresh(): Promise<boolean> {
    this.assertOpen();
    // Concurrent callers share one load: a version is big, and loading it twice helps nobody.
    this.refreshing ??= this.loadNewest().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Polls CURRENT every `intervalMs` and refreshes. Never throws; failures are logged and retried. */
  watch(intervalMs: number): void {
    this.assertOpen();
    if (!Number.isInteger(intervalMs) || intervalMs < MIN_WATCH_INTERVAL_MS) {
      throw new RangeError(`watch intervalMs must be an integer ≥ ${MIN_WATCH_INTERVAL_MS} (got ${intervalMs})`);
    }
    this.stopWatch();
    const generation = ++this.watchGeneration;
    const tick = async (): Promise<void> => {
      try {
        if (await this.refresh()) this.log.info("serving a new index version", { version: this.segment?.version });
      } catch (err) {
        this.log.warn("index refresh failed; still serving the previous version", { version: this.segment?.version ?? null, err });
      }
      // Scheduled after the tick completes, so slow loads never overlap.
      if (generation === this.watchGeneration && !this.closed) this.watchTimer = setTimeout(() => void tick(), intervalMs).unref();
    };
    this.watchTimer = setTimeout(() => void tick(), intervalMs).unref();
  }

  async openWriter(opts: { writerId: string; dims: number; embedderId: string }): Promise<StoreWriter> {
    this.assertOpen();
    return EmbeddedWriter.open(this.writerHost(), opts);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWatch();
    await this.refreshing?.catch(() => undefined);
    this.segment = null;
  }

  // -- internals ------------------------------------------------------------------------------

  private serving(): Segment | null {
    if (this.closed) throw new ReposearchError(ErrorCode.Unavailable, "the index store is closed");
    return this.segment;
  }

  private assertOpen(): void {
    if (this.closed) throw new ReposearchError(ErrorCode.Unavailable, "the index store is closed");
  }

  private allowed(seg: Segment | null, filter: Filter | null | undefined) {
    if (seg) return seg.payloadIndex.evaluate(filter);
    this.emptyIndex ??= PayloadIndex.build([], []);
    this.emptyIndex.evaluate(filter);
    return null;
  }

  private stopWatch(): void {
    this.watchGeneration++;
    if (this.watchTimer !== null) clearTimeout(this.watchTimer);
    this.watchTimer = null;
  }

  /** Only ever moves forward: a slow load of an older version never replaces a newer one. */
  private swapIn(seg: Segment): boolean {
    if (this.closed) return false;
    const cur = this.segment ? parseLabel(this.segment.version)! : 0;
    if (parseLabel(seg.version)! <= cur) return false;
    this.segment = seg;
    return true;
  }

  /** Drops the links of `seg`'s changed payloads to their predecessors after lineageTtlMs (see the option). */
  private forgetLineageLater(seg: Segment): void {
    setTimeout(() => {
      for (const p of seg.payloads) forgetPredecessor(p);
    }, this.opts.lineageTtlMs).unref();
  }

  private async loadNewest(): Promise<boolean> {
    // A version can be garbage-collected between reading CURRENT and loading it (keepVersions = 1);
    // then CURRENT has moved on, and we follow it.
    for (let attempt = 0; ; attempt++) {
      const label = await this.dir.readCurrent();
      if (label === null || label === this.segment?.version) return false;
      const started = performance.now();
      try {
        // Unchanged payloads stay the served version's objects, and with them what the ranker caches per payload.
        const seg = await Segment.load(this.dir.versionDir(label), {
          verifyChecksums: this.opts.verifyChecksums,
          expectVersion: label,
          previous: this.segment,
        });
        const swapped = this.swapIn(seg);
        if (swapped && seg.payloadsShared < seg.count) this.forgetLineageLater(seg);
        this.log.info("index version loaded", {
          version: label,
          count: seg.count,
          payloadsShared: seg.payloadsShared,
          loadMs: Math.round(performance.now() - started),
          swapped,
        });
        if (seg.lexicalReanalysed) {
          this.log.warn("the index's lexical part was written by an older analyzer and was rebuilt from its payloads; the next index run publishes it", {
            version: label,
          });
        }
        return swapped;
      } catch (err) {
        if (attempt < 3 && (await this.dir.readCurrent()) !== label) continue;
        throw err instanceof IndexFormatError ? err : new IndexFormatError(this.dir.versionDir(label), (err as Error).message, err);
      }
    }
  }

  private writerHost(): WriterHost {
    return {
      dir: this.dir,
      logger: this.log,
      hnsw: this.hnsw,
      subgraphs: { fields: SUBGRAPH_FIELDS, minRows: this.opts.subgraphMinRows },
      keepVersions: this.opts.keepVersions,
      lockTimeoutMs: this.opts.lockTimeoutMs,
      lockPollIntervalMs: this.opts.lockPollIntervalMs,
      newestBase: async () => {
        const label = await this.dir.readCurrent();
        if (label === null) return null;
        if (this.segment?.version !== label) await this.refresh();
        // A refresh already in flight may have loaded an older label; load the exact one then.
        if (this.segment?.version !== label) {
          const seg = await Segment.load(this.dir.versionDir(label), { verifyChecksums: this.opts.verifyChecksums, expectVersion: label });
          this.swapIn(seg);
          return seg;
        }
        return this.segment;
      },
      adopt: (seg) => {
        this.swapIn(seg);
      },
    };
  }
}

function toScored(seg: Segment, hits: readonly Hit[]): ScoredPoint[] {
  const columns = seg.rankColumns;
  if (columns === null) return hits.map((h) => ({ id: seg.ids[h.idx]!, score: h.score, payload: seg.payloads[h.idx]! }));
  return hits.map((h) => ({ id: seg.ids[h.idx]!, score: h.score, payload: seg.payloads[h.idx]!, row: h.idx, columns }));
}

/** The rows of a bitset, ascending. */
function allowedRows(allow: Bitset): number[] {
  const rows: number[] = [];
  allow.forEach((row) => rows.push(row));
  return rows;
}

const validation = (msg: string) => new ReposearchError(ErrorCode.ValidationError, msg);

function checkLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 0) throw validation(`limit must be a non-negative integer (got ${limit})`);
  return limit;
}

type ValidatedOptions = Required<Omit<EmbeddedStoreOptions, "logger" | "hnsw">> & { hnsw: HnswParams };

function validateOptions(o: EmbeddedStoreOptions): ValidatedOptions {
  const problems: string[] = [];
  const int = (name: string, v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
      problems.push(`${name} must be an integer in [${min}, ${max}] (got ${JSON.stringify(v)})`);
  };
  if (typeof o?.dataDir !== "string" || o.dataDir.trim() === "") problems.push("dataDir must be a non-empty path");
  int("hnsw.m", o?.hnsw?.m, 2, 128);
  int("hnsw.efConstruction", o?.hnsw?.efConstruction, 1, 10_000);
  if (o?.hnsw?.seed !== undefined) int("hnsw.seed", o.hnsw.seed, 0, 0xffffffff);
  int("efSearch", o?.efSearch, 1, 10_000);
  int("fullScanThreshold", o?.fullScanThreshold, 0);
  int("keepVersions", o?.keepVersions, 1, 1000);
  if (o?.lockTimeoutMs !== undefined) int("lockTimeoutMs", o.lockTimeoutMs, 0);
  if (o?.lockPollIntervalMs !== undefined) int("lockPollIntervalMs", o.lockPollIntervalMs, 1, 60_000);
  if (o?.subgraphMinRows !== undefined) int("subgraphMinRows", o.subgraphMinRows, 1);
  if (o?.lineageTtlMs !== undefined) int("lineageTtlMs", o.lineageTtlMs, 0);
  if (problems.length) throw new ReposearchError(ErrorCode.ValidationError, `invalid embedded store options: ${problems.join("; ")}`);
  return {
    dataDir: o.dataDir,
    hnsw: { m: o.hnsw.m, efConstruction: o.hnsw.efConstruction, ...(o.hnsw.seed !== undefined ? { seed: o.hnsw.seed } : {}) },
    efSearch: o.efSearch,
    fullScanThreshold: o.fullScanThreshold,
    keepVersions: o.keepVersions,
    lockTimeoutMs: o.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    lockPollIntervalMs: o.lockPollIntervalMs ?? DEFAULT_LOCK_POLL_MS,
    verifyChecksums: o.verifyChecksums ?? true,
    subgraphMinRows: o.subgraphMinRows ?? SUBGRAPH_MIN_ROWS,
    lineageTtlMs: o.lineageTtlMs ?? DEFAULT_LINEAGE_TTL_MS,
  };
}

export function embeddedStoreOptionsFromConfig(config: Config, logger?: Logger): EmbeddedStoreOptions {
  return {
    dataDir: config.dataDir,
    hnsw: { m: config.store.hnswM, efConstruction: config.store.hnswEfConstruction },
    efSearch: config.store.hnswEfSearch,
    fullScanThreshold: config.store.fullScanThreshold,
    keepVersions: config.store.keepVersions,
    ...(logger ? { logger } : {}),
  };
}

export function embeddedStoreFromConfig(config: Config, logger?: Logger): Promise<EmbeddedStore> {
  return EmbeddedStore.open(embeddedStoreOptionsFromConfig(config, logger));
}
