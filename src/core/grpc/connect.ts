/**
 * The core's Connect port: reposearch.v1.SearchService (Search, Similar, GetRepository, GetIndexStats) over the Connect
 * protocol (JSON and binary, HTTP/1.1 and HTTP/2), gRPC-Web and gRPC, with @connectrpc/connect-node.
 * So a browser, `curl` or any Connect client can call the core without a gRPC stack. The grpc-js server (server.ts) stays the port for plain gRPC with
 * health, reflection and SearchStream; SearchStream is not served here (UNIMPLEMENTED).
 *
 * Calls run through the same runner as on the gRPC port (calls.ts): the same validation, deadline (the
 * Connect timeout header, `grpc-timeout` for gRPC and gRPC-Web), cancellation, metrics and error
 * mapping. An error carries its Connect code (connectCodeOf), its public message, the same
 * `reposearch-error-code` / `reposearch-error-details-bin` metadata as a gRPC error's trailers, and the
 * validation details as reposearch.v1.ErrorDetail error details.
 *
 * The same protection as the gRPC port (docs/threat-model.md): the service token (auth.ts) is checked
 * before anything else, searches share the gRPC port's scheduler, a call without a deadline gets
 * CORE_DEFAULT_DEADLINE_MS, request messages are bounded by `maxMessageBytes` and HTTP/2 connections by
 * `maxConcurrentStreams`.
 */
import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import { ConnectError, createContextKey, createContextValues, encodeBinaryHeader, type HandlerContext } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { ReposearchError } from "../../common/errors.js";
import type { Logger } from "../../common/logger.js";
import {
  ErrorDetailSchema,
  IndexStatsSchema,
  RepositorySchema,
  SearchResponseSchema,
  SearchService,
  SimilarResponseSchema,
  type IndexStats as IndexStatsMessage,
  type Repository as RepositoryMessage,
  type SearchResponse as SearchResponseMessage,
  type SimilarResponse as SimilarResponseMessage,
} from "../../gen/reposearch/v1/search_pb.js";
import type { GrpcCallMetrics } from "../metrics.js";
import type { SearchCore } from "../types.js";
import { ANONYMOUS, TOKEN_HEADER, assertAuthAllowed, authError, createCoreAuth, type Caller, type CoreAuth } from "./auth.js";
import { callRunner, repositoryWork, searchWork, similarWork, statsWork, type CallWork } from "./calls.js";
import type { FairScheduler } from "./scheduler.js";
import { ERROR_CODE_TRAILER, ERROR_DETAILS_TRAILER, messageFromWire, type Wire } from "./convert.js";

export interface ConnectServerOptions {
  readonly core: SearchCore;
  /** Interface to bind (e.g. "127.0.0.1", "0.0.0.0", "::"). */
  readonly host: string;
  /** Port to bind; 0 picks a free one (read it back from the handle). */
  readonly port: number;
  readonly logger: Logger;
  /** How long shutdown waits for in-flight calls before cutting connections. */
  readonly shutdownGraceMs: number;
  /** Records every call, in the same metrics as the gRPC port's calls. */
  readonly metrics?: GrpcCallMetrics;
  /** Who may call (auth.ts). Absent: no authentication, which only a loopback `host` allows. */
  readonly auth?: CoreAuth;
  /** The gRPC port's scheduler, so that both ports share the core fairly. Absent: searches start at once. */
  readonly scheduler?: FairScheduler | null;
  /** Deadline of a call without one, in ms. Absent: none. */
  readonly defaultDeadlineMs?: number;
  /** Largest request message, in bytes. Default 4 MiB (as grpc-js). */
  readonly maxMessageBytes?: number;
  /** Streams one HTTP/2 connection may have open. Absent: Node's default. */
  readonly maxConcurrentStreams?: number;
}

export interface ConnectServerHandle {
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;
  /** Base URL of the service, e.g. `http://127.0.0.1:50052` (a call goes to `URL/reposearch.v1.SearchService/Search`). */
  readonly url: string;
  /** Refuse new calls (UNAVAILABLE), wait up to shutdownGraceMs for the ones in flight, then close every connection. Idempotent. */
  shutdown(): Promise<void>;
}

/** Largest request message accepted by default: grpc-js's default receive limit on the gRPC port. */
const READ_MAX_BYTES = 4 * 1024 * 1024;

/** The peer of a call (`address:port`), for the fair share of anonymous callers. */
const PEER = createContextKey<string>("unknown", { description: "peer address" });

/** How an HTTP/2 connection without TLS starts (RFC 9113 §3.4, "prior knowledge"). */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** A connection that has not sent enough to tell HTTP/1.1 from HTTP/2 within this time is closed. */
const SNIFF_TIMEOUT_MS = 10_000;

/**
 * Hands each connection to the HTTP/1.1 or the HTTP/2 server by its first bytes. node:http2's
 * `allowHTTP1` works with TLS only (ALPN), and the core serves cleartext, so the port sniffs: an HTTP/2
 * client with prior knowledge (gRPC, connect-node's HTTP/2 transports, `curl --http2-prior-knowledge`)
 * opens with the connection preface, anything else is HTTP/1.1. The bytes read are put back first.
 */
function dispatchByPreface(socket: Socket, h1: http.Server, h2: http2.Http2Server): void {
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), SNIFF_TIMEOUT_MS);
  timer.unref();
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && seen.length < H2_PREFACE.length) return; // a prefix of the preface: wait for more
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("close", onClose);
    socket.pause();
    socket.unshift(seen);
    if (isH2) {
      // The session reads what is buffered on the socket, then takes the socket's handle over.
      h2.emit("connection", socket);
    } else {
      h1.emit("connection", socket);
      socket.resume();
    }
  };
  const onClose = (): void => clearTimeout(timer);
  socket.on("data", onData);
  socket.once("close", onClose);
}

/** The ConnectError a failed call ends with; `null` is a call cancelled by its caller. */
function connectErrorOf(err: ReposearchError | null): ConnectError {
  if (err === null) return new ConnectError("cancelled", codeFromString("canceled"));
  const metadata = new Headers({ [ERROR_CODE_TRAILER]: err.code });
  const details = err.details ?? [];
  if (details.length > 0) metadata.set(ERROR_DETAILS_TRAILER, encodeBinaryHeader(JSON.stringify(details)));
  return new ConnectError(
    err.message,
    codeFromString(err.connectCode),
    metadata,
    details.map((d) => ({ desc: ErrorDetailSchema, value: { path: d.path, rule: d.rule, message: d.message } })),
  );
}

function formatUrl(address: AddressInfo): string {
  return `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
}

export async function startConnectServer(opts: ConnectServerOptions): Promise<ConnectServerHandle> {
  const { core } = opts;
  const log = opts.logger.child({ component: "connect" });
  const auth = opts.auth ?? createCoreAuth(new Map());
  assertAuthAllowed(auth, opts.host, "Connect server");
  let draining = false;
  const invoke = callRunner({
    system: "connect_rpc",
    logger: log,
    logMessage: "connect call",
    metrics: opts.metrics,
    draining: () => draining,
    defaultDeadlineMs: opts.defaultDeadlineMs,
  });

  /** Runs one call; resolves with the wire object to send, or throws its ConnectError. */
  const run = async (method: string, ctx: HandlerContext, request: unknown, work: CallWork): Promise<object> => {
    const timeoutMs = ctx.timeoutMs();
    const header = (name: string): string | undefined => ctx.requestHeader.get(name) ?? undefined;
    const who = auth.identify(header("authorization"), header(TOKEN_HEADER));
    if ("failure" in who) {
      opts.metrics?.authFailure?.("connect", who.failure);
      throw connectErrorOf(authError(who.failure));
    }
    const caller: Caller = { label: who.name, key: who.name === ANONYMOUS ? `${ANONYMOUS}@${ctx.values.get(PEER)}` : who.name };
    const { cancel, outcome } = invoke(
      {
        method,
        request,
        traceparent: header("traceparent"),
        tracestate: header("tracestate"),
        requestId: header("x-request-id"),
        deadline: timeoutMs === undefined ? Infinity : Date.now() + timeoutMs,
        protocol: ctx.protocolName,
        caller,
      },
      work,
    );
    // The signal aborts when the caller goes away or its timeout passes (and once the call completes,
    // when cancel does nothing).
    ctx.signal.addEventListener("abort", cancel, { once: true });
    try {
      const o = await outcome;
      if ("reply" in o) return o.reply;
      throw connectErrorOf(o.error);
    } finally {
      ctx.signal.removeEventListener("abort", cancel);
    }
  };

  // The request is a protobuf-es message, which convert.ts reads as it reads proto-loader's objects.
  // The work builds the wire object the gRPC port sends and turns it into a message inside the call,
  // so a failure there is an INTERNAL error of the call like any other.
  const searchWire = searchWork(core, opts.scheduler ?? null);
  const statsWire = statsWork(core);
  const search: CallWork = async (req, signal, callCtx) =>
    messageFromWire(SearchResponseSchema, (await searchWire(req, signal, callCtx)) as Wire<SearchResponseMessage>);
  const stats: CallWork = async (req, signal, callCtx) => messageFromWire(IndexStatsSchema, (await statsWire(req, signal, callCtx)) as Wire<IndexStatsMessage>);
  const similarWire = similarWork(core, opts.scheduler ?? null);
  const repositoryWire = repositoryWork(core);
  const similar: CallWork = async (req, signal, callCtx) =>
    messageFromWire(SimilarResponseSchema, (await similarWire(req, signal, callCtx)) as Wire<SimilarResponseMessage>);
  const repository: CallWork = async (req, signal, callCtx) =>
    messageFromWire(RepositorySchema, (await repositoryWire(req, signal, callCtx)) as Wire<RepositoryMessage>);
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(SearchService, {
        search: async (req, ctx) => (await run("Search", ctx, req, search)) as SearchResponseMessage,
        getIndexStats: async (_req, ctx) => (await run("GetIndexStats", ctx, {}, stats)) as IndexStatsMessage,
        similar: async (req, ctx) => (await run("Similar", ctx, req, similar)) as SimilarResponseMessage,
        getRepository: async (req, ctx) => (await run("GetRepository", ctx, req, repository)) as RepositoryMessage,
      }),
    readMaxBytes: opts.maxMessageBytes ?? READ_MAX_BYTES,
    contextValues: (req) => createContextValues().set(PEER, `${req.socket.remoteAddress ?? "?"}:${req.socket.remotePort ?? 0}`),
    // Unknown JSON fields are an error, as unknown properties are in REST (a typo such as "limt" is
    // reported, not ignored). Fields at their zero value are written, so JSON callers see every field.
    jsonOptions: { ignoreUnknownFields: false, alwaysEmitImplicit: true },
  });

  // Requests in flight (HTTP/1.1 requests and HTTP/2 streams), sessions and sockets, for shutdown.
  let active = 0;
  let onIdle: (() => void) | undefined;
  const track = (res: http.ServerResponse | http2.Http2ServerResponse): void => {
    active++;
    res.once("close", () => {
      active--;
      if (active === 0) onIdle?.();
    });
  };
  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<Socket>();
  const h1 = http.createServer((req, res) => {
    track(res);
    handler(req, res);
  });
  const h2 = http2.createServer(
    opts.maxConcurrentStreams !== undefined ? { settings: { maxConcurrentStreams: opts.maxConcurrentStreams } } : {},
    (req, res) => {
      track(res);
      handler(req, res);
    },
  );
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  // A peer's protocol error ends its session only.
  h2.on("sessionError", (err) => log.debug("connect session error", { error: err.message }));
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    dispatchByPreface(socket, h1, h2);
  });

  const target = opts.host.includes(":") ? `[${opts.host}]:${opts.port}` : `${opts.host}:${opts.port}`;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port, opts.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    throw new Error(`Connect server could not bind ${target}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  server.on("error", (err) => log.error("Connect server error", { err }));
  const address = server.address() as AddressInfo;
  const url = formatUrl(address);
  log.info("Connect server listening", { url, protocols: "connect, grpc-web, grpc" });

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      draining = true;
      log.info("Connect server shutting down", { graceMs: opts.shutdownGraceMs });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // HTTP/2: GOAWAY, so clients open no new streams here; the open ones finish.
      for (const session of sessions) session.close();
      let graceTimer: NodeJS.Timeout | undefined;
      const graceful = await new Promise<boolean>((resolve) => {
        if (active === 0) return resolve(true);
        onIdle = () => resolve(true);
        graceTimer = setTimeout(() => resolve(false), opts.shutdownGraceMs);
        graceTimer.unref();
      });
      if (graceTimer) clearTimeout(graceTimer);
      if (!graceful) log.warn("Connect shutdown grace expired; closing remaining calls", { graceMs: opts.shutdownGraceMs });
      // Idle HTTP/1.1 keep-alive connections, and whatever the grace left.
      for (const socket of sockets) socket.destroy();
      await closed;
      log.info("Connect server stopped");
    })();
    return shutdownPromise;
  };

  return { port: address.port, url, shutdown };
}
