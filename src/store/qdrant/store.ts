/**
 * QdrantStore: the VectorStore interface over a Qdrant collection (REST, @qdrant/js-client-rest).
 * Also talks to `reposearch store serve`, which answers the same subset of the REST API from the embedded
 * store. Layout, lexical encoding and the consistency trade-offs are described in docs/qdrant.md.
 */
import { QdrantClient, type Schemas } from "@qdrant/js-client-rest";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { logger as rootLogger, type Logger } from "../../common/logger.js";
import type { Config } from "../../config/config.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { Filter } from "../filter.js";
import {
  appendPopular,
  checkPopular,
  withCondition,
  type CommitResult,
  type DenseQuery,
  type Explanation,
  type ExplainQuery,
  type LexicalQuery,
  type Point,
  type PointId,
  type ScoredPoint,
  type ScrollQuery,
  type StoredPoint,
  type StoreInfo,
  type StoreWriter,
  type VectorStore,
} from "../types.js";
import { lexicalDocOf } from "../bm25f.js";
import { analyze } from "../../text/analyzer.js";
import { explainDocs, lexicalDocVector, lexicalQueryVector, lexicalTerms, SPARSE_LEXICAL_FORMAT } from "./sparse.js";
import { INDEXED_FIELDS, normalizePointId, type FieldIndexType } from "../filter.js";

export type QdrantQuantization = "none" | "int8";

export interface QdrantStoreOptions {
  /** Base URL of the Qdrant REST API (or of `reposearch store serve`), e.g. http://localhost:6333. */
  readonly url: string;
  readonly apiKey?: string | null | undefined;
  /** Collection of the points (default "repos"); metadata lives in `<collection>_meta`. */
  readonly collection?: string | undefined;
  /** Per-request deadline (default 30 s). */
  readonly timeoutMs?: number | undefined;
  /** Deadline of commit(): through `store serve` it builds a whole index version (default 30 minutes). */
  readonly commitTimeoutMs?: number | undefined;
  /** HNSW parameters used when this store creates the collection. */
  readonly hnsw: { readonly m: number; readonly efConstruction: number };
  /** Default HNSW beam width for searches (`hnsw_ef`). */
  readonly efSearch: number;
  /** Scalar int8 quantization of the dense vectors (default "none"); searches rescore with originals. */
  readonly quantization?: QdrantQuantization | undefined;
  /** Points per upsert request (default 256). */
  readonly upsertBatchSize?: number | undefined;
  /** Points per scroll page when reading hashes (default 1000). */
  readonly scrollPageSize?: number | undefined;
  readonly logger?: Logger | undefined;
}

export const DEFAULT_COLLECTION = "repos";
export const DENSE_VECTOR = "dense";
export const LEXICAL_VECTOR = "lexical";
/** The single point of `<collection>_meta`: what was last committed ({@link QdrantMeta}). */
export const META_POINT_ID = "00000000-0000-4000-8000-000000000001";
/** Headers that tell `store serve` which writer a request belongs to (real Qdrant ignores them). */
export const WRITER_HEADER = "x-reposearch-writer";
export const EMBEDDER_HEADER = "x-reposearch-embedder";

/**
 * Payload fields reposearch filters on, and the Qdrant index each gets: the embedded store's
 * INDEXED_FIELDS (one list, so both stores index the same fields), plus `name` as a keyword.
 */
export const PAYLOAD_INDEXES: Readonly<Record<string, FieldIndexType>> = { ...INDEXED_FIELDS, name: "keyword", lexTerms: "keyword" };

/**
 * Payload field holding a point's distinct analysed terms (./sparse.ts lexicalTerms), written by the
 * writer and stripped from what reads return: explain() counts a term's document frequency over it.
 */
export const LEXICAL_TERMS_FIELD = "lexTerms";
const DF_CACHE_ENTRIES = 10_000;
const DF_CACHE_MS = 60_000;

/** The payload of the meta point. */
export interface QdrantMeta {
  readonly version: string | null;
  readonly embedderId: string | null;
  readonly dims: number;
  readonly publishedAt: string | null;
  readonly count: number;
  /** How the `lexical` sparse vectors were made (SPARSE_LEXICAL_FORMAT). */
  readonly lexical: string | null;
}

export const metaCollectionOf = (collection: string): string => `${collection}_meta`;

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_COMMIT_TIMEOUT_MS = 30 * 60_000;
const DEFAULT_UPSERT_BATCH = 256;
const DEFAULT_SCROLL_PAGE = 1000;
const DELETE_BATCH = 1024;
const COLLECTION_RE = /^[A-Za-z0-9_-]{1,200}$/;
const WRITER_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LABEL_RE = /^v(\d{6,})$/;
const formatLabel = (n: number): string => `v${String(n).padStart(6, "0")}`;

type ValidatedOptions = Required<Omit<QdrantStoreOptions, "logger" | "apiKey">> & { readonly apiKey: string | null };

export class QdrantStore implements VectorStore {
  readonly local = false;
  /** Nothing to follow: every call reads the collection's current version. */
  watch(): void {}
  readonly collection: string;
  readonly metaCollection: string;
  private readonly client: QdrantClient;
  private readonly log: Logger;
  private closed = false;

  private constructor(
    private readonly o: ValidatedOptions,
    log: Logger,
  ) {
    this.collection = o.collection;
    this.metaCollection = metaCollectionOf(o.collection);
    this.client = newClient(o, o.timeoutMs, {});
    this.log = log;
  }

  /** Validates options (throws ValidationError naming every problem) without touching the network. */
  static create(options: QdrantStoreOptions): QdrantStore {
    const o = validateOptions(options);
    return new QdrantStore(o, (options.logger ?? rootLogger).child({ component: "qdrant-store", collection: o.collection }));
  }

  /** Validates options and checks the server answers, so a wrong URL fails at start-up. */
  static async open(options: QdrantStoreOptions): Promise<QdrantStore> {
    const store = QdrantStore.create(options);
    await store.call("reach the server", () => store.client.collectionExists(store.collection));
    return store;
  }

  // -- reads ----------------------------------------------------------------------------------

  async info(): Promise<StoreInfo> {
    this.assertOpen();
    const dims = await this.collectionDims();
    if (dims === null) return { version: null, count: 0, dims: 0, embedderId: null, publishedAt: null };
    const [meta, count] = await Promise.all([this.readMeta(), this.count()]);
    return { version: meta?.version ?? null, count, dims, embedderId: meta?.embedderId ?? null, publishedAt: meta?.publishedAt ?? null };
  }

  async denseSearch(q: DenseQuery): Promise<ScoredPoint[]> {
    this.assertOpen();
    const limit = checkLimit(q.limit);
    if (q.ef !== undefined && (!Number.isInteger(q.ef) || q.ef < 1)) throw validation(`ef must be a positive integer (got ${q.ef})`);
    if (!(q.vector instanceof Float32Array)) throw validation("vector must be a Float32Array");
    if (limit === 0) return [];
    const params: Schemas["SearchParams"] = { hnsw_ef: Math.max(q.ef ?? this.o.efSearch, limit), exact: q.exact === true };
    // int8 scores are approximate: oversample and rescore with the originals; an exact scan ignores them.
    if (this.o.quantization === "int8") params.quantization = q.exact ? { ignore: true } : { rescore: true, oversampling: 2 };
    const res = await this.query("dense search", {
      query: Array.from(q.vector),
      using: DENSE_VECTOR,
      filter: toQdrantFilter(q.filter),
      limit,
      with_payload: true,
      params,
    });
    return res.map(toScored);
  }

  async lexicalSearch(q: LexicalQuery): Promise<ScoredPoint[]> {
    this.assertOpen();
    const limit = checkLimit(q.limit);
    if (typeof q.text !== "string") throw validation("text must be a string");
    const popular = q.popular ? checkPopular(q.popular) : null;
    const sparse = lexicalQueryVector(q.text);
    if ((limit === 0 && !popular) || sparse.indices.length === 0) return [];
    const search = (filter: Filter | undefined, n: number) =>
      n === 0
        ? Promise.resolve([])
        : this.query("lexical search", {
            query: { indices: sparse.indices, values: sparse.values },
            using: LEXICAL_VECTOR,
            filter: toQdrantFilter(filter),
            limit: n,
            with_payload: true,
          });
    const [hits, also] = await Promise.all([
      search(q.filter, limit),
      popular ? search(withCondition(q.filter, { key: "stars", range: { gte: popular.minStars } }), popular.limit) : Promise.resolve([]),
    ]);
    return appendPopular(hits.map(toScored), also.map(toScored));
  }

  /**
   * Ranking features from Qdrant: cosines by one dense query restricted to the ids (exact), and the
   * per-field BM25 computed here from the payloads' text (./sparse.ts explainDocs), with each query
   * term's document frequency counted over the `lexTerms` payload field (cached for a minute).
   */
  async explain(q: ExplainQuery): Promise<Explanation> {
    this.assertOpen();
    if (q.vector !== null && !(q.vector instanceof Float32Array)) throw validation("vector must be a Float32Array or null");
    const ids = q.ids.map((id) => normalizePointId(String(id)));
    const terms = [...new Set(analyze(q.text))];
    const [payloads, pointCount, dfs, dense] = await Promise.all([
      q.payloads ?? this.retrieve(ids),
      this.count(),
      Promise.all(terms.map((t) => this.docFreq(t))),
      q.vector !== null && ids.length > 0 ? this.denseScores(q.vector, ids) : Promise.resolve(null),
    ]);
    const lexical = explainDocs(
      q.text,
      payloads.map((p) => (p ? lexicalDocOf(p) : null)),
      new Map(terms.map((t, i) => [t, dfs[i]!])),
      pointCount,
    );
    return { ...lexical, dense };
  }

  private async denseScores(vector: Float32Array, ids: readonly string[]): Promise<Float32Array> {
    const valid = [...new Set(ids.filter(isUuid))];
    const out = new Float32Array(ids.length);
    if (valid.length === 0) return out;
    const res = await this.query("dense scores", {
      query: Array.from(vector),
      using: DENSE_VECTOR,
      filter: { must: [{ has_id: valid }] },
      limit: valid.length,
      with_payload: false,
      params: { exact: true },
    });
    const byId = new Map(res.map((p) => [normalizePointId(String(p.id)), p.score]));
    ids.forEach((id, i) => (out[i] = byId.get(id) ?? 0));
    return out;
  }

  /** Points whose text holds an analysed term, by `count` over the `lexTerms` payload field. */
  private docFreq(term: string): Promise<number> {
    const now = Date.now();
    const hit = this.dfCache.get(term);
    if (hit && hit.until > now) return hit.value;
    const value = this.count({ must: [{ key: LEXICAL_TERMS_FIELD, match: { value: term } }] });
    if (this.dfCache.size >= DF_CACHE_ENTRIES) this.dfCache.delete(this.dfCache.keys().next().value!);
    this.dfCache.set(term, { value, until: now + DF_CACHE_MS });
    value.catch(() => this.dfCache.delete(term));
    return value;
  }
  private readonly dfCache = new Map<string, { value: Promise<number>; until: number }>();

  async count(filter?: Filter): Promise<number> {
    this.assertOpen();
    const res = await this.orEmpty("count", () => this.client.count(this.collection, { filter: toQdrantFilter(filter), exact: true }));
    return res?.count ?? 0;
  }

  async retrieve(ids: readonly PointId[]): Promise<(RepoPayload | null)[]> {
    this.assertOpen();
    // Qdrant rejects ids that are not UUIDs (or integers); such ids simply name no point here.
    const canonical = ids.map((id) => (typeof id === "string" ? normalizePointId(id) : ""));
    const valid = [...new Set(canonical.filter(isUuid))];
    if (valid.length === 0) return ids.map(() => null);
    const records = await this.orEmpty("retrieve", () => this.client.retrieve(this.collection, { ids: valid, with_payload: true, with_vector: false }));
    const byId = new Map<string, RepoPayload>();
    for (const r of records ?? []) byId.set(normalizePointId(String(r.id)), asPayload(r.payload, r.id));
    return canonical.map((id) => byId.get(id) ?? null);
  }

  async scroll(q: ScrollQuery): Promise<StoredPoint[]> {
    this.assertOpen();
    const limit = checkLimit(q.limit);
    if (limit === 0) return [];
    const res = await this.orEmpty("scroll", () =>
      this.client.scroll(this.collection, {
        filter: toQdrantFilter(q.filter),
        limit,
        with_payload: true,
        with_vector: q.withVectors ? [DENSE_VECTOR] : false,
        // Qdrant orders by a payload field with a range index (stars has an integer one); points
        // without the field are not in an ordered scroll.
        ...(q.orderBy === "stars" ? { order_by: { key: "stars", direction: "desc" as const } } : {}),
      }),
    );
    return (res?.points ?? []).map((r) => ({ id: normalizePointId(String(r.id)), payload: asPayload(r.payload, r.id), vector: denseVectorOf(r.vector) }));
  }

  async openWriter(opts: { writerId: string; dims: number; embedderId: string }): Promise<StoreWriter> {
    this.assertOpen();
    const problems: string[] = [];
    if (typeof opts.writerId !== "string" || !WRITER_ID_RE.test(opts.writerId))
      problems.push(`writerId must match ${WRITER_ID_RE} (got ${JSON.stringify(opts.writerId)})`);
    if (!Number.isInteger(opts.dims) || opts.dims < 1) problems.push(`dims must be a positive integer (got ${opts.dims})`);
    if (typeof opts.embedderId !== "string" || opts.embedderId.length === 0) problems.push("embedderId must be a non-empty string");
    if (problems.length) throw validation(`invalid writer options: ${problems.join("; ")}`);
    await this.ensureCollection(opts.dims);
    const headers = { [WRITER_HEADER]: opts.writerId, [EMBEDDER_HEADER]: encodeURIComponent(opts.embedderId) };
    return new QdrantWriter(
      this,
      newClient(this.o, this.o.timeoutMs, headers),
      newClient(this.o, this.o.commitTimeoutMs, headers),
      opts,
      this.log.child({ writerId: opts.writerId }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Drops the collection and its meta collection (tests, and operators starting over). */
  async dropCollection(): Promise<void> {
    for (const name of [this.collection, this.metaCollection]) {
      await this.orEmpty(`delete collection ${name}`, () => this.client.deleteCollection(name));
    }
  }

  // -- internals shared with the writer -------------------------------------------------------

  /** The collection's dense vector size, or null when the collection does not exist. */
  async collectionDims(): Promise<number | null> {
    const info = await this.orEmpty("read the collection", () => this.client.getCollection(this.collection));
    if (info === null) return null;
    const vectors: unknown = info.config?.params?.vectors;
    const dense = isRecord(vectors) ? vectors[DENSE_VECTOR] : undefined;
    const size = isRecord(dense) ? dense.size : undefined;
    if (typeof size !== "number") {
      throw new ReposearchError(
        ErrorCode.ValidationError,
        `collection ${this.collection} has no named vector "${DENSE_VECTOR}": it was not created by reposearch (use another QDRANT_COLLECTION)`,
      );
    }
    return size;
  }

  async readMeta(client: QdrantClient = this.client): Promise<QdrantMeta | null> {
    const recs = await this.orEmpty("read the meta point", () =>
      client.retrieve(this.metaCollection, { ids: [META_POINT_ID], with_payload: true, with_vector: false }),
    );
    const p = recs?.[0]?.payload;
    if (!isRecord(p)) return null;
    const str = (v: unknown) => (typeof v === "string" ? v : null);
    return {
      version: str(p.version),
      embedderId: str(p.embedderId),
      dims: typeof p.dims === "number" ? p.dims : 0,
      publishedAt: str(p.publishedAt),
      count: typeof p.count === "number" ? p.count : 0,
      lexical: str(p.lexical),
    };
  }

  /** Runs a client call, turning its failures into ReposearchErrors that name the operation. */
  async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw qdrantError(err, what, this.o.url);
    }
  }

  /** Like call(), but a missing collection reads as empty (null), as an unpublished embedded store does. */
  async orEmpty<T>(what: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (httpStatusOf(err) === 404) return null;
      throw qdrantError(err, what, this.o.url);
    }
  }

  get options(): ValidatedOptions {
    return this.o;
  }

  // -- private --------------------------------------------------------------------------------

  private async query(what: string, body: Omit<Schemas["QueryRequest"], "shard_key">): Promise<Schemas["ScoredPoint"][]> {
    const res = await this.orEmpty(what, () => this.client.query(this.collection, body));
    return res?.points ?? [];
  }

  /** Creates the collection, its payload indexes and the meta collection when missing; checks dims otherwise. */
  private async ensureCollection(dims: number): Promise<void> {
    let existing = await this.collectionDims();
    if (existing === null) {
      const created = await this.createIfMissing(this.collection, {
        vectors: { [DENSE_VECTOR]: { size: dims, distance: "Cosine" } },
        sparse_vectors: { [LEXICAL_VECTOR]: { modifier: "idf" } },
        hnsw_config: { m: this.o.hnsw.m, ef_construct: this.o.hnsw.efConstruction },
        ...(this.o.quantization === "int8" ? { quantization_config: { scalar: { type: "int8", quantile: 0.99, always_ram: true } } } : {}),
      });
      if (created) this.log.info("collection created", { dims, hnsw: this.o.hnsw, quantization: this.o.quantization });
      // Idempotent; done even when another writer won the race, so a half-finished creation completes.
      for (const [field_name, field_schema] of Object.entries(PAYLOAD_INDEXES)) {
        await this.call(`create payload index ${field_name}`, () => this.client.createPayloadIndex(this.collection, { field_name, field_schema, wait: true }));
      }
      existing = await this.collectionDims();
    }
    if (existing !== dims) {
      throw validation(
        `collection ${this.collection} holds ${existing}-dimensional vectors but the embedder makes ${dims}: ` +
          "Qdrant cannot change a collection's vector size; index into a new collection (QDRANT_COLLECTION) or drop this one",
      );
    }
    // No vectors at all: the meta collection only ever holds one payload.
    await this.createIfMissing(this.metaCollection, { vectors: {} });
  }

  /** True when this call created it; false when it already existed (another writer may have just made it). */
  private async createIfMissing(name: string, body: Schemas["CreateCollection"]): Promise<boolean> {
    const { exists } = await this.call(`check collection ${name}`, () => this.client.collectionExists(name));
    if (exists) return false;
    try {
      await this.client.createCollection(name, body);
      return true;
    } catch (err) {
      if (httpStatusOf(err) === 409) return false;
      throw qdrantError(err, `create collection ${name}`, this.o.url);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new ReposearchError(ErrorCode.Unavailable, "the index store is closed");
  }
}

/**
 * Qdrant applies every upsert and delete when it returns (wait=true): there is nothing to stage, and
 * readers see a run's writes as they land. commit() records a new version in the meta point. Through
 * `store serve`, the same requests are staged per writer (header) and commit() publishes them atomically.
 */
class QdrantWriter implements StoreWriter {
  private readonly upserted = new Set<PointId>();
  private readonly deleted = new Set<PointId>();

  constructor(
    private readonly store: QdrantStore,
    private readonly client: QdrantClient,
    private readonly commitClient: QdrantClient,
    private readonly opts: { readonly writerId: string; readonly dims: number; readonly embedderId: string },
    private readonly log: Logger,
  ) {}

  async hashes(): Promise<Map<PointId, string>> {
    const meta = await this.store.readMeta(this.client);
    // Points whose sparse vectors were made another way must all be re-upserted: report no hash matches,
    // but keep the ids so the indexer still deletes what left the dataset.
    const stale = meta !== null && meta.lexical !== null && meta.lexical !== SPARSE_LEXICAL_FORMAT;
    if (stale)
      this.log.warn("stored lexical vectors use another format; every point will be re-upserted", { stored: meta?.lexical, now: SPARSE_LEXICAL_FORMAT });
    const out = new Map<PointId, string>();
    let offset: Schemas["ExtendedPointId"] | null | undefined;
    const { collection } = this.store;
    do {
      const page = await this.store.call("scroll hashes", () =>
        this.client.scroll(collection, { limit: this.store.options.scrollPageSize, offset: offset ?? undefined, with_payload: ["hash"], with_vector: false }),
      );
      for (const p of page.points) {
        const hash = isRecord(p.payload) && typeof p.payload.hash === "string" ? p.payload.hash : "";
        out.set(normalizePointId(String(p.id)), stale ? `stale:${hash}` : hash);
      }
      const next: unknown = page.next_page_offset;
      offset = typeof next === "string" || typeof next === "number" ? next : null;
    } while (offset !== null && offset !== undefined);
    return out;
  }

  async upsert(points: readonly Point[]): Promise<void> {
    const { dims } = this.opts;
    for (const p of points) {
      if (typeof p?.id !== "string" || !isUuid(normalizePointId(p.id))) throw validation(`point ids must be UUID strings (got ${JSON.stringify(p?.id)})`);
      if (!(p.vector instanceof Float32Array) || p.vector.length !== dims) {
        throw validation(`point ${p.id}: vector must be a Float32Array of ${dims} dims (got ${p.vector?.length})`);
      }
      if (typeof p.payload?.hash !== "string" || typeof p.payload.key !== "string") throw validation(`point ${p.id}: payload needs string key and hash`);
    }
    const batch = this.store.options.upsertBatchSize;
    for (let i = 0; i < points.length; i += batch) {
      const part = points.slice(i, i + batch).map((p): Schemas["PointStruct"] => {
        const sparse = lexicalDocVector(lexicalDocOf(p.payload));
        const vector: Record<string, number[] | { indices: number[]; values: number[] }> = { [DENSE_VECTOR]: Array.from(p.vector) };
        // A document without terms has no lexical vector rather than an empty one.
        if (sparse.indices.length > 0) vector[LEXICAL_VECTOR] = { indices: sparse.indices, values: sparse.values };
        return { id: normalizePointId(p.id), vector, payload: { ...p.payload, [LEXICAL_TERMS_FIELD]: lexicalTerms(lexicalDocOf(p.payload)) } };
      });
      await this.store.call("upsert points", () => this.client.upsert(this.store.collection, { wait: true, points: part }));
      for (const p of part) {
        this.upserted.add(String(p.id));
        this.deleted.delete(String(p.id));
      }
    }
  }

  async delete(ids: readonly PointId[]): Promise<void> {
    for (const id of ids) if (typeof id !== "string" || id.length === 0) throw validation("point ids must be non-empty strings");
    const valid = ids.map(normalizePointId).filter(isUuid); // anything else cannot be stored, so is already absent
    for (let i = 0; i < valid.length; i += DELETE_BATCH) {
      const part = valid.slice(i, i + DELETE_BATCH);
      await this.store.call("delete points", () => this.client.delete(this.store.collection, { wait: true, points: part }));
      for (const id of part) {
        this.deleted.add(id);
        this.upserted.delete(id);
      }
    }
  }

  async commit(opts: { onProgress?: (stage: string, done: number, total: number) => void } = {}): Promise<CommitResult> {
    const onProgress = opts.onProgress ?? (() => {});
    onProgress("publish", 0, 1);
    const before = await this.store.readMeta(this.client);
    const changed = this.upserted.size + this.deleted.size > 0;
    const prevNumber = before?.version ? Number(LABEL_RE.exec(before.version)?.[1] ?? 0) : 0;
    // A counter read-then-written: two writers committing at the same moment can record one number.
    const count = await this.store.call("count points", () => this.client.count(this.store.collection, { exact: true }));
    const meta: QdrantMeta = {
      version: changed ? formatLabel(prevNumber + 1) : (before?.version ?? null),
      embedderId: this.opts.embedderId,
      dims: this.opts.dims,
      publishedAt: changed ? new Date().toISOString() : (before?.publishedAt ?? null),
      count: count.count,
      lexical: SPARSE_LEXICAL_FORMAT,
    };
    // Always written: through `store serve` this request is what publishes the writer's staged work.
    await this.store.call("commit (write the meta point)", () =>
      this.commitClient.upsert(this.store.metaCollection, { wait: true, points: [{ id: META_POINT_ID, vector: {}, payload: { ...meta } }] }),
    );
    const after = await this.store.readMeta(this.client);
    const version = after?.version ?? null;
    const result: CommitResult = {
      version,
      upserted: this.upserted.size,
      deleted: this.deleted.size,
      published: version !== null && version !== (before?.version ?? null),
    };
    this.upserted.clear();
    this.deleted.clear();
    onProgress("publish", 1, 1);
    this.log.info(result.published ? "published" : "nothing to publish", { ...result });
    return result;
  }

  /** Writes to Qdrant are already applied and cannot be rolled back; this only forgets the counts. */
  async abort(): Promise<void> {
    if (this.upserted.size + this.deleted.size > 0) {
      this.log.warn("abort on Qdrant keeps the writes already applied (Qdrant has no transactions)", {
        upserted: this.upserted.size,
        deleted: this.deleted.size,
      });
    }
    this.upserted.clear();
    this.deleted.clear();
  }
}

// ---------------------------------------------------------------------------------------------

function newClient(o: ValidatedOptions, timeoutMs: number, headers: Record<string, string>): QdrantClient {
  return new QdrantClient({
    url: o.url,
    ...(o.apiKey !== null ? { apiKey: o.apiKey } : {}),
    timeout: timeoutMs,
    headers,
    // The version check only logs, asynchronously, and `store serve` is not a Qdrant release.
    checkCompatibility: false,
  });
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isUuid = (id: string): boolean => UUID_RE.test(id);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const validation = (msg: string) => new ReposearchError(ErrorCode.ValidationError, msg);

function checkLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 0) throw validation(`limit must be a non-negative integer (got ${limit})`);
  return limit;
}

/** Our filter JSON is Qdrant's own language; only the TypeScript types differ. */
function toQdrantFilter(filter: Filter | null | undefined): Schemas["Filter"] | undefined {
  return filter === null || filter === undefined ? undefined : (filter as unknown as Schemas["Filter"]);
}

function asPayload(p: unknown, id: unknown): RepoPayload {
  if (!isRecord(p) || typeof p.key !== "string" || typeof p.hash !== "string") {
    throw new ReposearchError(ErrorCode.Internal, `point ${String(id)} has no reposearch payload (key and hash): the collection holds foreign points`);
  }
  const { [LEXICAL_TERMS_FIELD]: _terms, ...payload } = p;
  return payload as unknown as RepoPayload;
}

/** The dense vector of a point read with `with_vector: ["dense"]`, or null. */
function denseVectorOf(v: unknown): Float32Array | null {
  const dense = isRecord(v) ? v[DENSE_VECTOR] : v;
  return Array.isArray(dense) && dense.every((x) => typeof x === "number") ? Float32Array.from(dense as number[]) : null;
}

function toScored(p: Schemas["ScoredPoint"]): ScoredPoint {
  return { id: normalizePointId(String(p.id)), score: p.score, payload: asPayload(p.payload, p.id) };
}

/** The HTTP status of a failed client call (the fetch layer's ApiError carries it), if any. */
export function httpStatusOf(err: unknown): number | null {
  return isRecord(err) && typeof err.status === "number" ? err.status : null;
}

/** Turns a client failure into a ReposearchError with Qdrant's own message. */
export function qdrantError(err: unknown, what: string, url: string): ReposearchError {
  if (err instanceof ReposearchError) return err;
  const status = httpStatusOf(err);
  if (status !== null) {
    const data = isRecord(err) ? err.data : undefined;
    const detail =
      isRecord(data) && isRecord(data.status) && typeof data.status.error === "string" ? data.status.error : JSON.stringify(data ?? null).slice(0, 300);
    const code =
      status === 400 || status === 422 || status === 409 ? ErrorCode.ValidationError : status === 404 ? ErrorCode.NotFound : ErrorCode.ExternalService;
    return new ReposearchError(code, `qdrant: ${what} failed (HTTP ${status}): ${detail}`, { cause: err });
  }
  const name = err instanceof Error ? err.name : "";
  if (name === "QdrantClientTimeoutError") return new ReposearchError(ErrorCode.DeadlineExceeded, `qdrant: ${what} timed out (${url})`, { cause: err });
  const message = err instanceof Error ? `${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ""}` : String(err);
  return new ReposearchError(ErrorCode.Unavailable, `qdrant: cannot ${what} at ${url}: ${message}`, { cause: err });
}

function validateOptions(o: QdrantStoreOptions): ValidatedOptions {
  const problems: string[] = [];
  const int = (name: string, v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
      problems.push(`${name} must be an integer in [${min}, ${max}] (got ${JSON.stringify(v)})`);
  };
  if (typeof o?.url !== "string" || !/^https?:\/\/[^/\s]+/.test(o.url)) problems.push(`url must be an http(s) URL (got ${JSON.stringify(o?.url)})`);
  const apiKey = o?.apiKey === undefined || o.apiKey === null || o.apiKey === "" ? null : o.apiKey;
  if (apiKey !== null && typeof apiKey !== "string") problems.push("apiKey must be a string");
  const collection = o?.collection ?? DEFAULT_COLLECTION;
  if (typeof collection !== "string" || !COLLECTION_RE.test(collection))
    problems.push(`collection must match ${COLLECTION_RE} (got ${JSON.stringify(collection)})`);
  const timeoutMs = o?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  int("timeoutMs", timeoutMs, 1, 3_600_000);
  const commitTimeoutMs = o?.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS;
  int("commitTimeoutMs", commitTimeoutMs, 1, 24 * 3_600_000);
  int("hnsw.m", o?.hnsw?.m, 2, 128);
  int("hnsw.efConstruction", o?.hnsw?.efConstruction, 4, 10_000);
  int("efSearch", o?.efSearch, 1, 10_000);
  const quantization = o?.quantization ?? "none";
  if (quantization !== "none" && quantization !== "int8") problems.push(`quantization must be "none" or "int8" (got ${JSON.stringify(quantization)})`);
  const upsertBatchSize = o?.upsertBatchSize ?? DEFAULT_UPSERT_BATCH;
  int("upsertBatchSize", upsertBatchSize, 1, 10_000);
  const scrollPageSize = o?.scrollPageSize ?? DEFAULT_SCROLL_PAGE;
  int("scrollPageSize", scrollPageSize, 1, 100_000);
  if (problems.length) throw new ReposearchError(ErrorCode.ValidationError, `invalid Qdrant store options: ${problems.join("; ")}`);
  return {
    url: o.url.replace(/\/+$/, ""),
    apiKey,
    collection,
    timeoutMs,
    commitTimeoutMs,
    hnsw: { m: o.hnsw.m, efConstruction: o.hnsw.efConstruction },
    efSearch: o.efSearch,
    quantization,
    upsertBatchSize,
    scrollPageSize,
  };
}

/** Options from the configuration plus the Qdrant settings (env vars for now, see ../factory.ts). */
export function qdrantStoreOptionsFromConfig(
  config: Config,
  q: { url: string; apiKey?: string | null; collection?: string; quantization?: QdrantQuantization; timeoutMs?: number },
  logger?: Logger,
): QdrantStoreOptions {
  return {
    url: q.url,
    apiKey: q.apiKey ?? null,
    collection: q.collection ?? DEFAULT_COLLECTION,
    timeoutMs: q.timeoutMs,
    hnsw: { m: config.store.hnswM, efConstruction: config.store.hnswEfConstruction },
    efSearch: config.store.hnswEfSearch,
    quantization: q.quantization ?? "none",
    ...(logger ? { logger } : {}),
  };
}
