/**
 * `reposearch store serve`: the embedded store behind the subset of Qdrant's REST API that QdrantStore
 * uses, with Qdrant's request and response shapes. It lets several indexer processes (shards, other
 * machines) write one embedded index over HTTP, and lets anything configured for Qdrant read it.
 *
 * Consistency is the embedded store's, not Qdrant's: every upsert/delete request is a durable checkpoint
 * staged for its writer, and reads see only the published version; a writer's work is published
 * atomically when it commits (writes.ts, reads.ts). See docs/qdrant.md ("store serve").
 *
 * This file is the server's lifecycle (start, close, metrics) and the route table; the units it
 * dispatches to are http.ts (plumbing), collection.ts (the collection state), writes.ts, reads.ts,
 * parse.ts (request parts) and sparse-index.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Histogram, Registry } from "prom-client";
import { ErrorCode, ReposearchError } from "../../../common/errors.js";
import { LATENCY_BUCKETS, histogram, indexGauges, newRegistry } from "../../../common/metrics.js";
import { logger as rootLogger, type Logger } from "../../../common/logger.js";
import type { EmbeddedStore } from "../store.js";
import { normalizePointId } from "../filter-compile.js";
import type { Segment } from "../segment.js";
import { DEFAULT_COLLECTION, META_POINT_ID, metaCollectionOf } from "../../qdrant/store.js";
import { type CollectionContext, collectionInfo, createCollection, createPayloadIndex, currentState, loadState, metaCollectionInfo } from "./collection.js";
import { badRequest, HttpError, metricMethod, notFound, pathSegments, readJson, routeLabel, send, toHttpError } from "./http.js";
import { countPoints, metaPoint, query, type ReadContext, retrievePoints, scroll } from "./reads.js";
import type { SparseIndex } from "./sparse-index.js";
import { commit, deleteCollection, deletePoints, upsert, type WriteContext, type WriterSlot } from "./writes.js";

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

const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** The state the units share: the store, the collection state, the writer slots and the read caches. */
interface ServeContext extends CollectionContext, WriteContext, ReadContext {}

export class StoreServer {
  readonly collection: string;
  readonly metaCollection: string;
  private readonly ctx: ServeContext;
  private readonly log: Logger;
  private readonly maxBodyBytes: number;
  private readonly closeGraceMs: number;
  private operationId = 0;
  private server: Server | null = null;
  private address: AddressInfo | null = null;
  /** GET /metrics: default process metrics, request durations, and the served index's gauges. */
  readonly registry: Registry = newRegistry();
  private readonly httpDuration: Histogram<"method" | "route" | "status">;

  private constructor(o: StoreServerOptions) {
    this.collection = o.collection ?? DEFAULT_COLLECTION;
    this.metaCollection = metaCollectionOf(this.collection);
    this.log = (o.logger ?? rootLogger).child({ component: "store-serve", collection: this.collection });
    this.ctx = {
      store: o.store,
      collection: this.collection,
      stateFile: path.join(path.dirname(o.store.dir.root), "store-serve.json"),
      log: this.log,
      state: null,
      slots: new Map<string, Promise<WriterSlot>>(),
      sortedRows: new WeakMap<Segment, Uint32Array>(),
      sparseIndexes: new WeakMap<Segment, SparseIndex>(),
    };
    this.maxBodyBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.closeGraceMs = o.closeGraceMs ?? 5_000;
    this.httpDuration = histogram(this.registry, {
      name: "http_request_duration_seconds",
      help: "store serve request duration by method, route template and status.",
      labelNames: ["method", "route", "status"] as const,
      buckets: [...LATENCY_BUCKETS],
    });
    indexGauges(this.registry).track(async () => {
      const info = await o.store.info();
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
    s.ctx.state = await loadState(s.ctx);
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
      const segs = pathSegments(url.pathname);
      route = routeLabel(segs, this.collection, this.metaCollection);
      const result = await this.route(req.method ?? "GET", segs, req);
      send(res, 200, { result, status: "ok", time: elapsed() });
    } catch (err) {
      const { status, message } = toHttpError(err);
      if (status >= 500) this.log.error("request failed", { method: req.method, url: req.url, err });
      send(res, status, { status: { error: message }, time: elapsed() });
    }
  }

  // -- routes ---------------------------------------------------------------------------------

  private async route(method: string, segs: string[], req: IncomingMessage): Promise<unknown> {
    if (segs.length === 0 && method === "GET") return { title: "reposearch store serve (Qdrant REST API subset)", version: EMULATED_QDRANT_VERSION };
    if (segs[0] !== "collections") throw new HttpError(404, `Not found: ${method} /${segs.join("/")}`);
    if (segs.length === 1 && method === "GET") {
      return { collections: (await currentState(this.ctx)) ? [{ name: this.collection }, { name: this.metaCollection }] : [] };
    }
    const name = segs[1];
    // `/collections` itself answers only GET (above); Qdrant has no other method on it.
    if (name === undefined) throw new HttpError(404, `Not found: ${method} /collections`);
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
    const ctx = this.ctx;
    switch (op) {
      case "GET exists":
        return { exists: (await currentState(ctx)) !== null };
      case "PUT ":
        return createCollection(ctx, await readJson(req, this.maxBodyBytes));
      case "DELETE ":
        return deleteCollection(ctx);
    }
    const state = await currentState(ctx);
    if (state === null) throw notFound(this.collection);
    const body = op.startsWith("GET ") ? {} : await readJson(req, this.maxBodyBytes);
    switch (op) {
      case "GET ":
        return collectionInfo(ctx, state);
      case "PUT index":
        return this.updated(createPayloadIndex(ctx, state, body));
      case "PUT points":
        return this.updated(upsert(ctx, state, body, req));
      case "POST points/delete":
        return this.updated(deletePoints(ctx, state, body, req));
      case "POST points":
        return retrievePoints(ctx, state, body);
      case "POST points/scroll":
        return scroll(ctx, state, body, req);
      case "POST points/count":
        return countPoints(ctx, body);
      case "POST points/query":
        return query(ctx, state, body);
      default:
        throw new HttpError(404, `Not found: ${op.replace(" ", ` /collections/${this.collection}/`)} is not part of the subset store serve answers`);
    }
  }

  /** The meta collection is derived from the published version: reading it reports it, writing it commits. */
  private async routeMeta(op: string, req: IncomingMessage): Promise<unknown> {
    const state = await currentState(this.ctx);
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
    const meta = await metaPoint(this.ctx.store);
    switch (op) {
      case "GET ":
        return metaCollectionInfo(meta !== null);
      case "PUT points":
        return this.updated(commit(this.ctx, state, req));
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

  /** Qdrant's UpdateResult, once the write is done: every write is durable before the response, whatever `wait` says. */
  private async updated(write: Promise<void>): Promise<{ operation_id: number; status: "completed" }> {
    await write;
    return { operation_id: ++this.operationId, status: "completed" };
  }
}
