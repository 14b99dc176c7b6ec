/**
 * `reposearch store serve`: the embedded store behind the subset of Qdrant's REST API that QdrantStore
 * uses, with Qdrant's request and response shapes. It lets several indexer processes (shards, other
 * machines) write one embedded index over HTTP, and lets anything configured for Qdrant read it.
 *
 * Consistency is the embedded store's, not Qdrant's: every upsert/delete request is a durable checkpoint
 * staged for its writer (header `x-reposearch-writer`), and reads (query, count, retrieve, scroll) see
 * only the published version. A writer's work is published atomically when it commits, which QdrantStore
 * does by upserting the meta point of `<collection>_meta`: here that request is the commit. Scroll with a
 * writer header sees that writer's staged work too, which is what lets a killed indexer resume.
 * See docs/qdrant.md ("store serve").
 */
import { readdir, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Histogram, Registry } from "prom-client";
import { ErrorCode, ReposearchError } from "../../../common/errors.js";
import { LATENCY_BUCKETS, histogram, indexGauges, newRegistry } from "../../../common/metrics.js";
import { logger as rootLogger, type Logger } from "../../../common/logger.js";
import type { RepoPayload } from "../../../dataset/record.js";
import type { Bitset } from "../bitset.js";
import { normalizePointId } from "../filter-compile.js";
import { readFileIfExists, writeFileAtomic } from "../fsutil.js";
import type { Segment } from "../segment.js";
import type { EmbeddedStore } from "../store.js";
import { decodeChunk } from "../writer.js";
import type { Filter } from "../../filter.js";
import { DEFAULT_COLLECTION, DENSE_VECTOR, EMBEDDER_HEADER, LEXICAL_VECTOR, META_POINT_ID, metaCollectionOf, WRITER_HEADER } from "../../qdrant/store.js";
import { lexicalDocOf } from "../lexical.js";
import { lexicalDocVector, SPARSE_LEXICAL_FORMAT, sparseIdf, sparseVectorProblem, type SparseVector } from "../../qdrant/sparse.js";
import type { Point, PointId, StoreWriter } from "../../types.js";

export interface StoreServerOptions {
  /** The embedded store to serve; the caller opens and closes it. */
  readonly store: EmbeddedStore;
  /** The one collection served (default "repos"); its meta collection is `<collection>_meta`. */
  readonly collection?: string | undefined;
  readonly host?: string | undefined;
  /** 0 picks a free port (default 6333, Qdrant's). */
  readonly port?: number | undefined;
  /** Largest request body accepted (default 64 MiB: a 256-point upsert of 1 KiB vectors is ~2 MiB). */
  readonly maxBodyBytes?: number | undefined;
  /** How long close() lets in-flight requests finish before cutting connections (default 5 s). */
  readonly closeGraceMs?: number | undefined;
  readonly logger?: Logger | undefined;
}

/** The Qdrant REST API level emulated (query API and the sparse idf modifier arrived in 1.10). */
export const EMULATED_QDRANT_VERSION = "1.10.0";
export const DEFAULT_STORE_SERVE_PORT = 6333;
/** Writer id of requests that carry no writer header (plain Qdrant clients). */
export const DEFAULT_WRITER_ID = "store-serve";

const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
const CHUNK_RE = /^(\d{6,})\.chunk$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What a create request asked for, kept in `<dataDir>/store-serve.json` so the collection survives restarts. */
interface CollectionState {
  readonly collection: string;
  readonly vectorName: string;
  readonly dims: number;
  readonly sparseName: string | null;
  /** Recorded and reported; the embedded store builds its graph with its own configuration. */
  readonly hnswConfig: Record<string, unknown> | null;
  readonly quantizationConfig: Record<string, unknown> | null;
  readonly payloadIndexes: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
}

interface WriterSlot {
  readonly id: string;
  readonly dims: number;
  readonly embedderId: string;
  readonly writer: StoreWriter;
  /** Payloads of this writer's staged operations (null for a delete), mirroring its checkpoints. */
  readonly overlay: Map<PointId, RepoPayload | null>;
  /** Serialises this writer's requests, so the overlay follows the checkpoint order. */
  tail: Promise<unknown>;
  /** Bumped on every staged change; invalidates `view`. */
  ops: number;
  view: { readonly ops: number; readonly base: string | null; readonly ids: string[]; readonly hashes: Map<PointId, string> } | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
const badRequest = (msg: string) => new HttpError(400, `Wrong input: ${msg}`);
const notFound = (name: string) => new HttpError(404, `Not found: Collection \`${name}\` doesn't exist!`);

export class StoreServer {
  readonly collection: string;
  readonly metaCollection: string;
  private readonly store: EmbeddedStore;
  private readonly log: Logger;
  private readonly stateFile: string;
  private readonly maxBodyBytes: number;
  private readonly closeGraceMs: number;
  private state: CollectionState | null = null;
  private readonly slots = new Map<string, Promise<WriterSlot>>();
  private readonly sortedRows = new WeakMap<Segment, Uint32Array>();
  private readonly sparse = new WeakMap<Segment, SparseIndex>();
  private operationId = 0;
  private server: Server | null = null;
  private address: AddressInfo | null = null;
  /** GET /metrics: default process metrics, request durations, and the served index's gauges. */
  readonly registry: Registry = newRegistry();
  private readonly httpDuration: Histogram<"method" | "route" | "status">;

  private constructor(o: StoreServerOptions) {
    this.store = o.store;
    this.collection = o.collection ?? DEFAULT_COLLECTION;
    this.metaCollection = metaCollectionOf(this.collection);
    this.log = (o.logger ?? rootLogger).child({ component: "store-serve", collection: this.collection });
    this.stateFile = path.join(path.dirname(o.store.dir.root), "store-serve.json");
    this.maxBodyBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.closeGraceMs = o.closeGraceMs ?? 5_000;
    this.httpDuration = histogram(this.registry, {
      name: "http_request_duration_seconds",
      help: "store serve request duration by method, route template and status.",
      labelNames: ["method", "route", "status"] as const,
      buckets: [...LATENCY_BUCKETS],
    });
    indexGauges(this.registry).track(async () => {
      const info = await this.store.info();
      const ageSeconds = info.publishedAt ? Math.max(0, Math.round((Date.now() - Date.parse(info.publishedAt)) / 1000)) : null;
      return { version: info.version, count: info.count, ageSeconds };
    });
  }

  /** Loads the collection state and listens. Resolves once the port is bound. */
  static async start(o: StoreServerOptions): Promise<StoreServer> {
    const problems: string[] = [];
    if (o.collection !== undefined && !/^[A-Za-z0-9_-]{1,200}$/.test(o.collection))
      problems.push(`collection must match /^[A-Za-z0-9_-]{1,200}$/ (got ${JSON.stringify(o.collection)})`);
    const port = o.port ?? DEFAULT_STORE_SERVE_PORT;
    if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`port must be an integer in [0, 65535] (got ${port})`);
    if (o.maxBodyBytes !== undefined && (!Number.isInteger(o.maxBodyBytes) || o.maxBodyBytes < 1024)) problems.push("maxBodyBytes must be an integer ≥ 1024");
    if (problems.length) throw new ReposearchError(ErrorCode.ValidationError, `invalid store server options: ${problems.join("; ")}`);
    const s = new StoreServer(o);
    s.state = await s.loadState();
    const server = createServer((req, res) => void s.handle(req, res));
    server.keepAliveTimeout = 65_000; // longer than the client's 10 s keep-alive, so the server never closes first
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, o.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    s.server = server;
    s.address = server.address() as AddressInfo;
    s.log.info("store serve listening", { url: s.url });
    return s;
  }

  get port(): number {
    return this.address?.port ?? 0;
  }

  get url(): string {
    const a = this.address;
    if (!a) return "";
    return `http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /** Stops accepting requests, lets in-flight ones finish (up to closeGraceMs), then closes connections. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), this.closeGraceMs).unref();
    await closed;
    clearTimeout(timer);
  }

  // -- HTTP -----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    let route = "unmatched";
    res.once("finish", () => this.httpDuration.observe({ method: metricMethod(req.method), route, status: String(res.statusCode) }, elapsed()));
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/metrics" && req.method === "GET") {
        route = "/metrics";
        const text = await this.registry.metrics();
        res.writeHead(200, { "content-type": this.registry.contentType, "cache-control": "no-store" });
        res.end(text);
        return;
      }
      const segs = url.pathname
        .split("/")
        .filter((s) => s !== "")
        .map(decodeSegment);
      route = this.routeLabel(segs);
      const result = await this.route(req.method ?? "GET", segs, req);
      send(res, 200, { result, status: "ok", time: elapsed() });
    } catch (err) {
      const { status, message } = toHttpError(err);
      if (status >= 500) this.log.error("request failed", { method: req.method, url: req.url, err });
      send(res, status, { status: { error: message }, time: elapsed() });
    }
  }

  /** A bounded route label for metrics: collection names become placeholders, unknown paths "unmatched". */
  private routeLabel(segs: readonly string[]): string {
    if (segs.length === 0) return "/";
    if (segs[0] !== "collections") return "unmatched";
    if (segs.length === 1) return "/collections";
    const name = segs[1] === this.collection ? "{collection}" : segs[1] === this.metaCollection ? "{meta}" : "{other}";
    const rest = segs.slice(2).join("/");
    if (rest === "") return `/collections/${name}`;
    return ROUTE_SUFFIXES.has(rest) ? `/collections/${name}/${rest}` : "unmatched";
  }

  private async route(method: string, segs: string[], req: IncomingMessage): Promise<unknown> {
    if (segs.length === 0 && method === "GET") return { title: "reposearch store serve (Qdrant REST API subset)", version: EMULATED_QDRANT_VERSION };
    if (segs[0] !== "collections") throw new HttpError(404, `Not found: ${method} /${segs.join("/")}`);
    if (segs.length === 1 && method === "GET") {
      return { collections: (await this.currentState()) ? [{ name: this.collection }, { name: this.metaCollection }] : [] };
    }
    const name = segs[1]!;
    const op = `${method} ${segs.slice(2).join("/")}`;
    if (name === this.collection) return this.routeMain(op, req);
    if (name === this.metaCollection) return this.routeMeta(op, req);
    switch (op) {
      case "GET exists":
        return { exists: false };
      case "DELETE ":
        return false;
      case "PUT ":
        throw badRequest(`store serve serves the single collection \`${this.collection}\` (start it with --collection ${name} to serve \`${name}\`)`);
      default:
        throw notFound(name);
    }
  }

  private async routeMain(op: string, req: IncomingMessage): Promise<unknown> {
    switch (op) {
      case "GET exists":
        return { exists: (await this.currentState()) !== null };
      case "PUT ":
        return this.createCollection(await readJson(req, this.maxBodyBytes));
      case "DELETE ":
        return this.deleteCollection();
    }
    const state = await this.currentState();
    if (state === null) throw notFound(this.collection);
    const body = op.startsWith("GET ") ? {} : await readJson(req, this.maxBodyBytes);
    switch (op) {
      case "GET ":
        return this.collectionInfo(state);
      case "PUT index":
        return this.createPayloadIndex(state, body);
      case "PUT points":
        return this.upsert(state, body, req);
      case "POST points/delete":
        return this.deletePoints(state, body, req);
      case "POST points":
        return this.retrievePoints(state, body);
      case "POST points/scroll":
        return this.scroll(state, body, req);
      case "POST points/count":
        return { count: await this.store.count(optionalFilter(body.filter)) };
      case "POST points/query":
        return this.query(state, body);
      default:
        throw new HttpError(404, `Not found: ${op.replace(" ", ` /collections/${this.collection}/`)} is not part of the subset store serve answers`);
    }
  }

  /** The meta collection is derived from the published version: reading it reports it, writing it commits. */
  private async routeMeta(op: string, req: IncomingMessage): Promise<unknown> {
    const state = await this.currentState();
    const body = op.startsWith("GET ") || op.startsWith("DELETE ") ? {} : await readJson(req, this.maxBodyBytes);
    switch (op) {
      case "GET exists":
        return { exists: state !== null };
      case "PUT ":
      case "DELETE ":
      case "PUT index":
        return true;
    }
    if (state === null) throw notFound(this.metaCollection);
    const meta = await this.metaPoint();
    switch (op) {
      case "GET ":
        return {
          status: "green",
          optimizer_status: "ok",
          points_count: meta ? 1 : 0,
          indexed_vectors_count: 0,
          segments_count: 1,
          config: { params: { vectors: {} } },
          payload_schema: {},
        };
      case "PUT points":
        return this.commit(state, req);
      case "POST points": {
        const ids = Array.isArray(body.ids) ? body.ids.map((x) => normalizePointId(String(x))) : [];
        return meta && ids.includes(META_POINT_ID) ? [meta] : [];
      }
      case "POST points/scroll":
        return { points: meta ? [meta] : [], next_page_offset: null };
      case "POST points/count":
        return { count: meta ? 1 : 0 };
      default:
        throw badRequest(`\`${this.metaCollection}\` is derived from the published index version; only reads and the commit (upsert) are supported`);
    }
  }

  // -- collections ----------------------------------------------------------------------------

  private async loadState(): Promise<CollectionState | null> {
    const buf = await readFileIfExists(this.stateFile);
    if (buf === null) return null;
    const s: unknown = JSON.parse(buf.toString("utf8"));
    if (!isRecord(s) || s.collection !== this.collection || typeof s.vectorName !== "string" || typeof s.dims !== "number") return null;
    return s as unknown as CollectionState;
  }

  /**
   * The collection exists once created, or when the data dir already holds a non-empty published index
   * (built by `reposearch index` on the embedded store): it is then served with reposearch's vector names.
   */
  private async currentState(): Promise<CollectionState | null> {
    if (this.state) return this.state;
    const info = await this.store.info();
    if (info.version === null || info.count === 0) return null;
    return {
      collection: this.collection,
      vectorName: DENSE_VECTOR,
      dims: info.dims,
      sparseName: LEXICAL_VECTOR,
      hnswConfig: null,
      quantizationConfig: null,
      payloadIndexes: {},
      createdAt: info.publishedAt ?? new Date().toISOString(),
    };
  }

  private async createCollection(body: Record<string, unknown>): Promise<boolean> {
    if (await this.currentState()) throw new HttpError(409, `Wrong input: Collection \`${this.collection}\` already exists!`);
    const vectors = body.vectors;
    const named = isRecord(vectors) && !("size" in vectors) ? Object.entries(vectors) : [];
    const [vectorName, params] = named.length === 1 ? named[0]! : [null, null];
    if (vectorName === null || !isRecord(params))
      throw badRequest('store serve needs exactly one named dense vector, e.g. {"vectors": {"dense": {"size": 256, "distance": "Cosine"}}}');
    if (!Number.isInteger(params.size) || (params.size as number) < 1 || (params.size as number) > 65_536)
      throw badRequest(`vector size must be a positive integer (got ${JSON.stringify(params.size)})`);
    if (params.distance !== "Cosine") throw badRequest(`store serve supports distance Cosine only (got ${JSON.stringify(params.distance)})`);
    const sparse = isRecord(body.sparse_vectors) ? Object.entries(body.sparse_vectors) : [];
    if (sparse.length > 1) throw badRequest("store serve supports at most one sparse vector");
    const sparseEntry = sparse[0];
    if (sparseEntry && (!isRecord(sparseEntry[1]) || sparseEntry[1].modifier !== "idf"))
      throw badRequest(`sparse vector \`${sparseEntry[0]}\` must use {"modifier": "idf"}`);
    const dims = params.size as number;
    const published = await this.store.info();
    if (published.version !== null && published.count > 0 && published.dims !== dims) {
      throw badRequest(`the data dir's index holds ${published.dims}-dimensional vectors, not ${dims}`);
    }
    const state: CollectionState = {
      collection: this.collection,
      vectorName,
      dims,
      sparseName: sparseEntry ? sparseEntry[0] : null,
      hnswConfig: isRecord(body.hnsw_config) ? body.hnsw_config : null,
      quantizationConfig: isRecord(body.quantization_config) ? body.quantization_config : null,
      payloadIndexes: {},
      createdAt: new Date().toISOString(),
    };
    await this.saveState(state);
    this.log.info("collection created", { vectorName, dims, sparse: state.sparseName });
    return true;
  }

  /** Drops staged work and publishes an empty version (readers following CURRENT see the drop too). */
  private async deleteCollection(): Promise<boolean> {
    const state = await this.currentState();
    if (state === null) return false;
    for (const [id, slot] of [...this.slots]) {
      this.slots.delete(id);
      await (await slot.catch(() => null))?.writer.abort();
    }
    const info = await this.store.info();
    const seg = this.store.currentSegment();
    if (seg && info.count > 0 && info.embedderId) {
      const w = await this.store.openWriter({ writerId: `${DEFAULT_WRITER_ID}-drop`, dims: info.dims, embedderId: info.embedderId });
      await w.delete(seg.ids);
      await w.commit();
    }
    this.state = null;
    await rm(this.stateFile, { force: true });
    this.log.info("collection deleted", { points: info.count });
    return true;
  }

  private async saveState(state: CollectionState): Promise<void> {
    await writeFileAtomic(this.stateFile, JSON.stringify(state, null, 2) + "\n");
    this.state = state;
  }

  private async createPayloadIndex(state: CollectionState, body: Record<string, unknown>): Promise<unknown> {
    if (typeof body.field_name !== "string" || body.field_name === "") throw badRequest("field_name must be a non-empty string");
    // Acknowledged and recorded only: the embedded store indexes every filterable field (and scans the rest).
    if (state === this.state) await this.saveState({ ...state, payloadIndexes: { ...state.payloadIndexes, [body.field_name]: body.field_schema ?? null } });
    return this.updateResult();
  }

  private async collectionInfo(state: CollectionState): Promise<unknown> {
    const info = await this.store.info();
    const seg = this.store.currentSegment();
    const hnsw = seg?.hnswParams;
    const schema: Record<string, unknown> = {};
    for (const [field, type] of Object.entries(state.payloadIndexes)) schema[field] = { data_type: isRecord(type) ? type.type : type, points: info.count };
    return {
      status: "green",
      optimizer_status: "ok",
      points_count: info.count,
      indexed_vectors_count: info.count,
      segments_count: 1,
      config: {
        params: {
          vectors: { [state.vectorName]: { size: state.dims, distance: "Cosine" } },
          ...(state.sparseName ? { sparse_vectors: { [state.sparseName]: { modifier: "idf" } } } : {}),
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: false,
        },
        hnsw_config: { ...(state.hnswConfig ?? {}), ...(hnsw ? { m: hnsw.m, ef_construct: hnsw.efConstruction } : {}) },
        optimizer_config: {},
        wal_config: {},
        quantization_config: state.quantizationConfig,
      },
      payload_schema: schema,
    };
  }

  private updateResult(): { operation_id: number; status: "completed" } {
    // Every write is durable before the response, whatever `wait` says.
    return { operation_id: ++this.operationId, status: "completed" };
  }

  // -- writes ---------------------------------------------------------------------------------

  private async upsert(state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    if (!Array.isArray(body.points)) throw badRequest('store serve accepts upserts in the `points` form ({"points": [{id, vector, payload}]})');
    const raw: unknown[] = body.points;
    const points = raw.map((p, i) => this.parsePoint(state, p, i));
    const slot = await this.writerFor(state, req);
    await this.exclusive(slot, async () => {
      await slot.writer.upsert(points);
      for (const p of points) slot.overlay.set(p.id, p.payload);
      slot.ops++;
    });
    return this.updateResult();
  }

  private async deletePoints(state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    if (!Array.isArray(body.points)) throw badRequest('store serve deletes by ids only ({"points": [ids]})');
    const raw: unknown[] = body.points;
    const ids = raw.map((x, i) => pointId(x, `points[${i}]`));
    const slot = await this.writerFor(state, req);
    await this.exclusive(slot, async () => {
      await slot.writer.delete(ids);
      for (const id of ids) slot.overlay.set(id, null);
      slot.ops++;
    });
    return this.updateResult();
  }

  private async commit(state: CollectionState, req: IncomingMessage): Promise<unknown> {
    const slot = await this.writerFor(state, req);
    const result = await this.exclusive(slot, async () => {
      const r = await slot.writer.commit();
      slot.overlay.clear();
      slot.ops++;
      return r;
    });
    this.log.info(result.published ? "published" : "nothing to publish", { writerId: slot.id, ...result });
    return this.updateResult();
  }

  private parsePoint(state: CollectionState, raw: unknown, i: number): Point {
    if (!isRecord(raw)) throw badRequest(`points[${i}] must be an object`);
    const id = pointId(raw.id, `points[${i}].id`);
    const v = raw.vector;
    if (!isRecord(v)) throw badRequest(`points[${i}].vector must name its vectors ({"${state.vectorName}": [...]})`);
    for (const name of Object.keys(v)) {
      if (name !== state.vectorName && name !== state.sparseName) throw badRequest(`points[${i}]: Not existing vector name error: ${name}`);
    }
    const vector = denseVector(v[state.vectorName], state.dims, `points[${i}].vector.${state.vectorName}`);
    const payload = raw.payload;
    if (!isRecord(payload) || typeof payload.key !== "string" || typeof payload.hash !== "string") {
      throw badRequest(`points[${i}].payload must be a reposearch payload (an object with string key and hash)`);
    }
    const repo = payload as unknown as RepoPayload;
    if (state.sparseName !== null && v[state.sparseName] !== undefined) {
      // Lexical vectors are derived from the payload (so they need not be stored); one that differs would be
      // silently ignored, so it is refused instead.
      const given = v[state.sparseName];
      const problem = sparseVectorProblem(given) ?? sparseMismatch(given as SparseVector, lexicalDocVector(lexicalDocOf(repo)));
      if (problem) throw badRequest(`points[${i}].vector.${state.sparseName}: ${problem}`);
    }
    return { id, vector, payload: repo };
  }

  /** The writer of a request: one embedded writer (own staging directory) per `x-reposearch-writer`. */
  private async writerFor(state: CollectionState, req: IncomingMessage): Promise<WriterSlot> {
    const id = headerValue(req, WRITER_HEADER) ?? DEFAULT_WRITER_ID;
    const embedderHeader = headerValue(req, EMBEDDER_HEADER);
    let embedderId: string;
    try {
      embedderId = embedderHeader !== null ? decodeURIComponent(embedderHeader) : ((await this.store.info()).embedderId ?? DEFAULT_WRITER_ID);
    } catch {
      throw badRequest(`${EMBEDDER_HEADER} must be URI-encoded`);
    }
    const existing = this.slots.get(id);
    if (existing) {
      const slot = await existing.catch(() => null);
      if (slot && slot.dims === state.dims && slot.embedderId === embedderId) return slot;
      if (this.slots.get(id) === existing) this.slots.delete(id);
      else return this.writerFor(state, req); // another request replaced it meanwhile
    }
    const opening = this.openSlot(id, state.dims, embedderId);
    this.slots.set(id, opening);
    opening.catch(() => {
      if (this.slots.get(id) === opening) this.slots.delete(id);
    });
    return opening;
  }

  private async openSlot(id: string, dims: number, embedderId: string): Promise<WriterSlot> {
    // Opening recovers the writer's checkpoints (dropping damaged ones, or all of them for another embedder).
    const writer = await this.store.openWriter({ writerId: id, dims, embedderId });
    const overlay = new Map<PointId, RepoPayload | null>();
    // Rebuild the staged payloads from the same checkpoints, so a restarted server still serves them to scroll.
    const dir = this.store.dir.writerDir(id);
    const chunks = (await readdir(dir).catch(() => [] as string[])).filter((n) => CHUNK_RE.test(n)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
    for (const name of chunks) {
      const op = decodeChunk(await readFile(path.join(dir, name)));
      if (typeof op === "string") break;
      op.ids.forEach((pid, i) => overlay.set(pid, op.kind === "upsert" ? op.payloads[i]! : null));
    }
    if (overlay.size) this.log.info("writer resumed from checkpoints", { writerId: id, staged: overlay.size });
    return { id, dims, embedderId, writer, overlay, tail: Promise.resolve(), ops: 0, view: null };
  }

  private exclusive<T>(slot: WriterSlot, fn: () => Promise<T>): Promise<T> {
    const next = slot.tail.then(fn, fn);
    slot.tail = next.catch(() => undefined);
    return next;
  }

  // -- reads ----------------------------------------------------------------------------------

  private retrievePoints(state: CollectionState, body: Record<string, unknown>): unknown[] {
    if (!Array.isArray(body.ids)) throw badRequest("ids must be an array of point ids");
    const raw: unknown[] = body.ids;
    const ids = raw.map((x, i) => pointId(x, `ids[${i}]`));
    const seg = this.store.currentSegment();
    const out: unknown[] = [];
    if (!seg) return out;
    for (const id of new Set(ids)) {
      const row = seg.rowOf(id);
      if (row !== undefined) out.push(this.record(state, seg, row, body.with_payload ?? true, body.with_vector ?? false));
    }
    return out;
  }

  /** Points in id order (Qdrant's), from `offset` on. Published points, or with a writer header, that writer's view. */
  private async scroll(state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
    const limit = body.limit ?? 10;
    if (!Number.isInteger(limit) || (limit as number) < 1) throw badRequest(`limit must be a positive integer (got ${JSON.stringify(limit)})`);
    const offset = body.offset === undefined || body.offset === null ? null : pointId(body.offset, "offset");
    const withPayload = body.with_payload ?? true;
    const seg = this.store.currentSegment();
    if (headerValue(req, WRITER_HEADER) !== null) return this.scrollWriterView(state, body, req, limit as number, offset, withPayload);

    if (!seg) return { points: [], next_page_offset: null };
    const allow = seg.payloadIndex.evaluate(optionalFilter(body.filter));
    const order = this.sortedRowsOf(seg);
    let i = offset === null ? 0 : lowerBound(order.length, (k) => seg.ids[order[k]!]! < offset);
    const points: unknown[] = [];
    for (; i < order.length; i++) {
      const row = order[i]!;
      if (allow !== null && !allow.has(row)) continue;
      if (points.length === limit) return { points, next_page_offset: seg.ids[row] };
      points.push(this.record(state, seg, row, withPayload, body.with_vector ?? false));
    }
    return { points, next_page_offset: null };
  }

  private async scrollWriterView(
    state: CollectionState,
    body: Record<string, unknown>,
    req: IncomingMessage,
    limit: number,
    offset: string | null,
    withPayload: unknown,
  ): Promise<unknown> {
    if (body.filter !== undefined && body.filter !== null) throw badRequest("a scroll with a writer header (the writer's staged view) takes no filter");
    if (body.with_vector !== undefined && body.with_vector !== false)
      throw badRequest("a scroll with a writer header (the writer's staged view) returns no vectors");
    const slot = await this.writerFor(state, req);
    const view = await this.exclusive(slot, async () => {
      const base = this.store.currentSegment()?.version ?? null;
      if (slot.view?.ops !== slot.ops || slot.view.base !== base) {
        const hashes = await slot.writer.hashes();
        slot.view = { ops: slot.ops, base, ids: [...hashes.keys()].sort(), hashes };
      }
      return slot.view;
    });
    const seg = this.store.currentSegment();
    let i = offset === null ? 0 : lowerBound(view.ids.length, (k) => view.ids[k]! < offset);
    const points: unknown[] = [];
    for (; i < view.ids.length; i++) {
      const id = view.ids[i]!;
      if (points.length === limit) return { points, next_page_offset: id };
      const hash = view.hashes.get(id)!;
      const row = seg?.rowOf(id);
      const staged = slot.overlay.get(id);
      const payload =
        row !== undefined && seg!.payloads[row]!.hash === hash
          ? seg!.payloads[row]!
          : staged && staged.hash === hash
            ? staged
            : ({ hash } as unknown as RepoPayload);
      points.push({ id, payload: project(payload, withPayload) });
    }
    return { points, next_page_offset: null };
  }

  private async query(state: CollectionState, body: Record<string, unknown>): Promise<unknown> {
    let q = body.query;
    if (isRecord(q) && "nearest" in q) q = q.nearest;
    const limit = body.limit ?? 10;
    const offset = body.offset ?? 0;
    if (!Number.isInteger(limit) || (limit as number) < 0) throw badRequest(`limit must be a non-negative integer (got ${JSON.stringify(limit)})`);
    if (!Number.isInteger(offset) || (offset as number) < 0) throw badRequest(`offset must be a non-negative integer (got ${JSON.stringify(offset)})`);
    if (body.prefetch !== undefined && body.prefetch !== null) throw badRequest("store serve does not support prefetch (hybrid) queries");
    const k = (limit as number) + (offset as number);
    const filter = optionalFilter(body.filter);
    const using = body.using ?? null;
    const params = isRecord(body.params) ? body.params : {};
    let hits: { id: PointId; score: number }[];
    if (Array.isArray(q)) {
      if (using !== state.vectorName) throw badRequest(`dense queries must say \`"using": "${state.vectorName}"\` (got ${JSON.stringify(using)})`);
      const vector = denseVector(q, state.dims, "query");
      const ef = params.hnsw_ef ?? undefined;
      if (ef !== undefined && (!Number.isInteger(ef) || (ef as number) < 1))
        throw badRequest(`params.hnsw_ef must be a positive integer (got ${JSON.stringify(ef)})`);
      hits = await this.store.denseSearch({ vector, filter, limit: k, ef: ef as number | undefined, exact: params.exact === true });
    } else if (isRecord(q) && "indices" in q) {
      if (state.sparseName === null || using !== state.sparseName)
        throw badRequest(`sparse queries must say \`"using": "${state.sparseName}"\` (got ${JSON.stringify(using)})`);
      const problem = sparseVectorProblem(q);
      if (problem) throw badRequest(`query: ${problem}`);
      hits = await this.sparseSearch(q as unknown as SparseVector, filter, k);
    } else {
      throw badRequest("store serve answers nearest-neighbour queries only: a dense vector or a sparse {indices, values}");
    }
    const threshold = typeof body.score_threshold === "number" ? body.score_threshold : null;
    const seg = this.store.currentSegment();
    const points = hits
      .slice(offset as number)
      .filter((h) => threshold === null || h.score >= threshold)
      .map((h) => {
        const row = seg?.rowOf(h.id);
        const rec = row === undefined || !seg ? { id: h.id } : this.record(state, seg, row, body.with_payload ?? false, body.with_vector ?? false);
        return { ...rec, version: 0, score: h.score };
      });
    return { points };
  }

  /** Qdrant's sparse search with the idf modifier: Σ q_i · idf_i · d_i over the published points. */
  private async sparseSearch(q: SparseVector, filter: Filter | undefined, k: number): Promise<{ id: PointId; score: number }[]> {
    const seg = this.store.currentSegment();
    if (!seg) {
      await this.store.count(filter); // a bad filter fails the same way on an empty store
      return [];
    }
    const allow = seg.payloadIndex.evaluate(filter);
    if (k === 0) return [];
    let index = this.sparse.get(seg);
    if (!index) {
      const started = performance.now();
      index = SparseIndex.build(seg.payloads);
      this.sparse.set(seg, index);
      this.log.info("sparse index built", { version: seg.version, points: seg.count, ms: Math.round(performance.now() - started) });
    }
    return index.search(q, allow, k).map((h) => ({ id: seg.ids[h.row]!, score: h.score }));
  }

  private record(state: CollectionState, seg: Segment, row: number, withPayload: unknown, withVector: unknown): Record<string, unknown> {
    const rec: Record<string, unknown> = { id: seg.ids[row], payload: project(seg.payloads[row]!, withPayload) };
    const names = vectorNames(withVector, state);
    if (names.length) {
      const vector: Record<string, unknown> = {};
      for (const name of names) {
        if (name === state.vectorName) vector[name] = Array.from(seg.vectorOf(row));
        else if (name === state.sparseName) vector[name] = lexicalDocVector(lexicalDocOf(seg.payloads[row]!));
      }
      rec.vector = vector;
    }
    return rec;
  }

  private sortedRowsOf(seg: Segment): Uint32Array {
    let order = this.sortedRows.get(seg);
    if (!order) {
      // Canonical lowercase UUID strings sort like Qdrant's 128-bit ids.
      const rows = Array.from({ length: seg.count }, (_, i) => i).sort((a, b) => (seg.ids[a]! < seg.ids[b]! ? -1 : seg.ids[a]! > seg.ids[b]! ? 1 : 0));
      order = Uint32Array.from(rows);
      this.sortedRows.set(seg, order);
    }
    return order;
  }

  private async metaPoint(): Promise<Record<string, unknown> | null> {
    const info = await this.store.info();
    if (info.version === null) return null;
    const payload = {
      version: info.version,
      embedderId: info.embedderId,
      dims: info.dims,
      publishedAt: info.publishedAt,
      count: info.count,
      lexical: SPARSE_LEXICAL_FORMAT,
    };
    return { id: META_POINT_ID, payload };
  }
}

/** Inverted lists of the derived lexical vectors of one published version, built on first use. */
class SparseIndex {
  private constructor(
    private readonly count: number,
    private readonly postings: Map<number, { rows: Uint32Array; weights: Float32Array }>,
  ) {}

  static build(payloads: readonly RepoPayload[]): SparseIndex {
    const rows = new Map<number, number[]>();
    const weights = new Map<number, number[]>();
    payloads.forEach((p, row) => {
      const v = lexicalDocVector(lexicalDocOf(p));
      for (let i = 0; i < v.indices.length; i++) {
        const t = v.indices[i]!;
        let r = rows.get(t);
        if (!r) {
          rows.set(t, (r = []));
          weights.set(t, []);
        }
        r.push(row);
        weights.get(t)!.push(v.values[i]!);
      }
    });
    const postings = new Map<number, { rows: Uint32Array; weights: Float32Array }>();
    for (const [t, r] of rows) postings.set(t, { rows: Uint32Array.from(r), weights: Float32Array.from(weights.get(t)!) });
    return new SparseIndex(payloads.length, postings);
  }

  search(q: SparseVector, allow: Bitset | null, k: number): { row: number; score: number }[] {
    const acc = new Map<number, number>();
    for (let i = 0; i < q.indices.length; i++) {
      const p = this.postings.get(q.indices[i]!);
      if (!p) continue;
      const w = q.values[i]! * sparseIdf(this.count, p.rows.length);
      for (let j = 0; j < p.rows.length; j++) {
        const row = p.rows[j]!;
        if (allow !== null && !allow.has(row)) continue;
        acc.set(row, (acc.get(row) ?? 0) + w * p.weights[j]!);
      }
    }
    return [...acc]
      .map(([row, score]) => ({ row, score }))
      .sort((a, b) => b.score - a.score || a.row - b.row)
      .slice(0, k);
  }
}

// ---------------------------------------------------------------------------------------------

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw badRequest(`malformed path segment ${JSON.stringify(s)}`);
  }
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === "string" && s !== "" ? s : null;
}

function pointId(x: unknown, where: string): PointId {
  const id = typeof x === "string" ? normalizePointId(x) : null;
  if (id === null || !UUID_RE.test(id)) throw badRequest(`${where}: store serve supports UUID point ids only (got ${JSON.stringify(x)})`);
  return id;
}

/** A dense vector as Cosine stores it: validated and L2-normalised (the embedded store scores by dot product). */
function denseVector(x: unknown, dims: number, where: string): Float32Array {
  if (!Array.isArray(x)) throw badRequest(`${where} must be an array of ${dims} numbers`);
  if (x.length !== dims) throw badRequest(`Vector dimension error: expected dim: ${dims}, got ${x.length} (${where})`);
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const n = x[i];
    if (typeof n !== "number" || !Number.isFinite(n)) throw badRequest(`${where}[${i}] is not a finite number`);
    v[i] = n;
    norm += n * n;
  }
  // A zero vector stays zero, as in Qdrant: it scores 0 against everything (a static embedder makes
  // one for a text with no known tokens).
  if (norm === 0) return v;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < dims; i++) v[i]! *= inv;
  return v;
}

function sparseMismatch(given: SparseVector, derived: SparseVector): string | null {
  const order = given.indices.map((_, i) => i).sort((a, b) => given.indices[a]! - given.indices[b]!);
  const same =
    order.length === derived.indices.length &&
    order.every(
      (j, i) => given.indices[j] === derived.indices[i] && Math.abs(given.values[j]! - derived.values[i]!) <= 1e-6 * Math.max(1, Math.abs(derived.values[i]!)),
    );
  return same ? null : "differs from the lexical vector of the payload (store serve derives it with src/store/qdrant/sparse.ts; send that one or none)";
}

function optionalFilter(f: unknown): Filter | undefined {
  if (f === undefined || f === null) return undefined;
  if (!isRecord(f)) throw badRequest("filter must be an object");
  return f as Filter;
}

/** Qdrant's with_payload: true, false, a list of keys to include, or {include} / {exclude}. */
function project(payload: RepoPayload, sel: unknown): Record<string, unknown> | null {
  const p = payload as unknown as Record<string, unknown>;
  if (sel === true) return p;
  if (sel === false || sel === null || sel === undefined) return null;
  const keys = Array.isArray(sel) ? sel : isRecord(sel) && Array.isArray(sel.include) ? sel.include : null;
  if (keys) return Object.fromEntries(keys.filter((k): k is string => typeof k === "string" && k in p).map((k) => [k, p[k]]));
  if (isRecord(sel) && Array.isArray(sel.exclude)) {
    const drop = new Set(sel.exclude);
    return Object.fromEntries(Object.entries(p).filter(([k]) => !drop.has(k)));
  }
  throw badRequest("with_payload must be a boolean, a list of keys, or {include} / {exclude}");
}

function vectorNames(sel: unknown, state: CollectionState): string[] {
  const all = [state.vectorName, ...(state.sparseName ? [state.sparseName] : [])];
  if (sel === true) return all;
  if (Array.isArray(sel)) return all.filter((n) => sel.includes(n));
  return [];
}

function lowerBound(n: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

async function readJson(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    const buf = c as Buffer;
    size += buf.byteLength;
    if (size > maxBytes) throw new HttpError(413, `Payload too large: the body exceeds ${maxBytes} bytes`);
    chunks.push(buf);
  }
  if (size === 0) return {};
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    throw new HttpError(400, `Json deserialize error: ${(err as Error).message}`);
  }
  if (!isRecord(body)) throw new HttpError(400, "Json deserialize error: the body must be a JSON object");
  return body;
}

function toHttpError(err: unknown): { status: number; message: string } {
  if (err instanceof HttpError) return { status: err.status, message: err.message };
  if (err instanceof ReposearchError) {
    if (err.code === ErrorCode.ValidationError) return { status: 400, message: `Wrong input: ${err.message}` };
    if (err.code === ErrorCode.NotFound) return { status: 404, message: `Not found: ${err.message}` };
    if (err.code === ErrorCode.Unavailable) return { status: 503, message: `Service unavailable: ${err.message}` };
  }
  return { status: 500, message: `Service internal error: ${err instanceof Error ? err.message : String(err)}` };
}

/** Collection sub-paths of the emulated API, the only ones that become a route label. */
const ROUTE_SUFFIXES: ReadonlySet<string> = new Set(["exists", "index", "points", "points/delete", "points/scroll", "points/count", "points/query"]);
const METRIC_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);

function metricMethod(method: string | undefined): string {
  return method !== undefined && METRIC_METHODS.has(method) ? method : "other";
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}
