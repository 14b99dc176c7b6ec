/**
 * The gateway's HTTP edge: what node:http would otherwise answer (or drop) by itself, made to speak
 * the contract, and the bounds every connection lives under. It stands between node:http and the
 * express app (http-server.ts installs it).
 *
 * Contract at the protocol edge. Every error answered here carries the contract's JSON error body,
 * an `X-Request-Id` and `Connection: close`:
 *  - parser errors (`clientError`: a lowercase method, a non-ASCII path, CL+TE, a bad Content-Length
 *    or chunk, headers over 16 KiB, a header or body timeout) → 400, 408, 413 or 431; when the broken
 *    request already reached the app (a bad chunk, a trickled body) it is answered through its own
 *    response object, so the app's request id is the one reported;
 *  - HTTP/1.1 without Host → 400; an `Expect` other than 100-continue → 417; CONNECT → 404; a request
 *    target over MAX_URL_LENGTH → 414 (node:http answers the first three with an empty body, and
 *    closes the socket on CONNECT).
 * The code is VALIDATION_ERROR (NOT_FOUND for CONNECT, as for any unsupported method), one of the
 * contract's closed set; `status` repeats the HTTP status. After an answer written to the socket the
 * edge keeps reading (and discarding) for up to LINGER_MS before closing: closing with unread input
 * makes the kernel send a reset, and a client still sending would lose the answer with it.
 *
 * Bounds (config: HTTP_*):
 *  - headers within `headersTimeoutMs` of the connection or of the previous answer, the whole request
 *    (body included, so a body trickled a byte at a time) within `requestTimeoutMs`, both checked
 *    every CHECK_INTERVAL_MS (node:http's default is 30 s, which let a slowloris socket live ~88 s);
 *    idle keep-alive connections close after `keepAliveTimeoutMs`; a connection with no bytes moving
 *    either way for `socketTimeoutMs` while a request is open (a client that stopped reading) is closed;
 *  - at most `maxConnections` connections per process and `maxConnectionsPerIp` per client address
 *    (the socket peer, IPv6 by /64 as for the rate limit; trusted proxies count only towards the
 *    total, since every client behind them shares their address). A connection over a cap is answered
 *    429 RATE_LIMIT_EXCEEDED at once, without reading its request, and closed: it never reaches the
 *    parser, so it holds nothing for longer than the linger;
 *  - `maxRequestsPerConnection`: the answer to that request closes the connection, so long-lived
 *    clients re-balance over processes and replicas.
 * node:http's own `maxConnections` and `maxRequestsPerSocket` are not used: the first is not applied
 * to connections a cluster worker receives from its primary, the second answers an empty 503.
 *
 * Draining (shutdown): from `beginDrain()` on, every answer carries `Connection: close`, answers not
 * yet started get it too, and a pipelined request behind a closing answer is never run: what cannot
 * be answered must not be done (a search would be charged).
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ErrorCode, httpStatusOf, type ErrorDetail } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { normalizeIp, parseTrustedProxies, rateLimitKeyForIp } from "./client-ip.js";
import { throttledWarn } from "./log-throttle.js";
import type { GatewayMetrics } from "./metrics.js";

/** How often node:http checks the header and request deadlines (its default, 30 s, is coarser than the deadlines themselves). */
export const CHECK_INTERVAL_MS = 1_000;
/** How long a socket answered by the edge keeps being read before it is closed. */
export const LINGER_MS = 2_000;
/** Longest request target (path and query) served; longer ones are answered 414. Request line and headers together are capped at 16 KiB by node:http (431). */
export const MAX_URL_LENGTH = 8_192;
/** Retry-After of a refused connection: connections free up as requests finish, so soon. */
const CONNECTION_RETRY_AFTER_SECONDS = 1;

export interface HttpEdgeLimits {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** 0: no inactivity timeout. */
  readonly socketTimeoutMs: number;
  /** 0: unlimited. */
  readonly maxRequestsPerConnection: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerIp: number;
}

export interface HttpEdgeOptions {
  readonly limits: HttpEdgeLimits;
  /** TRUSTED_PROXIES: exempt from the per-address cap. */
  readonly trustedProxies: readonly string[];
  readonly logger: Logger;
  readonly metrics?: Pick<GatewayMetrics, "connectionsRejected" | "protocolErrors">;
}

export interface HttpEdge {
  /** Every answer from now on closes its connection; answers not yet started too. Idempotent. */
  beginDrain(): void;
  readonly draining: boolean;
  /** Connections admitted and still open. */
  readonly connections: number;
}

/** The node:http options the edge relies on; pass them to createServer. */
export function edgeServerOptions(): { requireHostHeader: false; connectionsCheckingInterval: number } {
  // The Host check is the edge's own, so that its 400 carries the JSON body.
  return { requireHostHeader: false, connectionsCheckingInterval: CHECK_INTERVAL_MS };
}

/** A server-generated request id: `req_` and 32 hex digits. */
export function newRequestId(): string {
  return `req_${randomUUID().replace(/-/g, "")}`;
}

/** What the edge knows about one connection. */
interface Conn {
  /** Per-address cap key; null for trusted proxies and sockets without an address. */
  readonly capKey: string | null;
  readonly ip: string;
  requests: number;
  /** An answer on this connection closes it: later (pipelined) requests are not run. */
  closing: boolean;
  /** The response to the latest request, until it is finished. */
  current: ServerResponse | null;
  /** The edge answered (or is closing) this socket itself after a parser error. */
  answered: boolean;
}

interface EdgeError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
  readonly rule: string;
}

function errorJson(e: EdgeError, status: number): string {
  const details: ErrorDetail[] = e.code === ErrorCode.ValidationError ? [{ path: "", rule: e.rule, message: e.message }] : [];
  return JSON.stringify({ error: { code: e.code, message: e.message, status, ...(details.length > 0 ? { details } : {}) } });
}

function headerBlock(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
}

/** A whole HTTP/1.1 error response, for sockets that have no response object (or none usable). */
function rawResponse(e: EdgeError, requestId: string, extra: Record<string, string> = {}): string {
  const body = errorJson(e, e.status);
  const headers = {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(body)),
    "Cache-Control": "no-store",
    "X-Request-Id": requestId,
    ...extra,
    Connection: "close",
  };
  return `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? "Error"}\r\n${headerBlock(headers)}\r\n${body}`;
}

/** Ends the socket (after `data`), reads and discards what still comes for up to LINGER_MS, then closes it. */
function closeGently(socket: Socket, data?: string): void {
  if (socket.destroyed) return;
  if (!socket.writable) return void socket.destroy();
  if (data === undefined) socket.end();
  else socket.end(data);
  socket.resume();
  socket.once("end", () => socket.destroy());
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
}

/** What a node:http parser error means for the caller. Messages never echo the caller's bytes. */
function describeClientError(err: NodeJS.ErrnoException, limits: HttpEdgeLimits): EdgeError {
  const bad = (message: string, status = 400, rule = "http"): EdgeError => ({ status, code: ErrorCode.ValidationError, message, rule });
  switch (err.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return bad(
        `request not received in time: headers are due within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms`,
        408,
        "timeout",
      );
    case "HPE_HEADER_OVERFLOW":
      return bad("request line and headers are larger than 16 KiB", 431);
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return bad("chunk extensions are too large", 413);
    case "HPE_INVALID_METHOD":
      return bad("invalid method: methods are upper-case tokens such as POST or GET");
    case "HPE_INVALID_URL":
      return bad("invalid request target: the path must be ASCII (percent-encode anything else)");
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return bad("conflicting or invalid Content-Length and Transfer-Encoding headers");
    case "HPE_INVALID_CONTENT_LENGTH":
      return bad("invalid Content-Length header");
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_STRICT":
    case "HPE_INVALID_EOF_STATE":
      return bad("malformed request body: invalid chunked encoding or a body shorter than its Content-Length");
    case "HPE_PAUSED_H2_UPGRADE":
      return bad("HTTP/2 is not supported here: use HTTP/1.1");
    default:
      return bad("malformed HTTP request: the request line or headers could not be parsed");
  }
}

/** Installs the edge on `server` (created with edgeServerOptions() and no request listener); `app` answers what the edge admits. */
export function installHttpEdge(server: Server, app: (req: IncomingMessage, res: ServerResponse) => void, opts: HttpEdgeOptions): HttpEdge {
  const { limits } = opts;
  const log = opts.logger.child({ component: "http-edge" });
  const warn = throttledWarn(log);
  const trusted = parseTrustedProxies(opts.trustedProxies);
  const conns = new Map<Socket, Conn>();
  const perIp = new Map<string, number>();
  /** Sockets refused by a cap and still lingering; bounded too, so a flood cannot hold them. */
  let refusedOpen = 0;
  let draining = false;

  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.timeout = limits.socketTimeoutMs;

  const accessLog = (requestId: string, status: number, ip: string, fields: Record<string, unknown>): void => {
    opts.metrics?.protocolErrors.inc({ status: String(status) });
    log.info("request", { requestId, route: "edge", status, ip, ...fields });
  };

  /**
   * Answers through the request's own response object, closing the connection after it. `fields`:
   * the access-log line's extra fields, or null when the app already logs this response itself.
   */
  const answerVia = (res: ServerResponse, conn: Conn | undefined, e: EdgeError, fields: Record<string, unknown> | null): void => {
    if (conn) conn.closing = true;
    const given = res.getHeader("X-Request-Id");
    const requestId = typeof given === "string" ? given : newRequestId();
    const body = errorJson(e, e.status);
    res.statusCode = e.status;
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.setHeader("Content-Length", Buffer.byteLength(body));
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Request-Id", requestId);
    res.setHeader("Connection", "close");
    res.end(body);
    if (fields) accessLog(requestId, e.status, conn?.ip ?? "unknown", fields);
    else opts.metrics?.protocolErrors.inc({ status: String(e.status) });
  };

  // ---- admission: the caps, before node:http's parser is attached ----
  const nodeConnectionListeners = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    if (!admit(socket)) return;
    for (const listener of nodeConnectionListeners) listener.call(server, socket);
  });

  function admit(socket: Socket): boolean {
    const ip = normalizeIp(socket.remoteAddress ?? "") ?? "unknown";
    const capKey = ip === "unknown" || trusted.has(ip) ? null : rateLimitKeyForIp(ip);
    let reason: "total" | "per_ip" | null = null;
    let limit = 0;
    if (conns.size >= limits.maxConnections) [reason, limit] = ["total", limits.maxConnections];
    else if (capKey !== null && (perIp.get(capKey) ?? 0) >= limits.maxConnectionsPerIp) [reason, limit] = ["per_ip", limits.maxConnectionsPerIp];
    if (reason !== null) {
      refuse(socket, reason, limit, ip);
      return false;
    }
    const conn: Conn = { capKey, ip, requests: 0, closing: false, current: null, answered: false };
    conns.set(socket, conn);
    if (capKey !== null) perIp.set(capKey, (perIp.get(capKey) ?? 0) + 1);
    socket.once("close", () => {
      conns.delete(socket);
      if (capKey === null) return;
      const n = (perIp.get(capKey) ?? 1) - 1;
      if (n <= 0) perIp.delete(capKey);
      else perIp.set(capKey, n);
    });
    return true;
  }

  function refuse(socket: Socket, reason: "total" | "per_ip", limit: number, ip: string): void {
    opts.metrics?.connectionsRejected.inc({ reason });
    warn.warn(`connections:${reason}`, "connection refused: too many open connections", { reason, limit, ip });
    socket.on("error", () => {});
    if (refusedOpen >= limits.maxConnections) return void socket.destroy();
    refusedOpen++;
    socket.once("close", () => refusedOpen--);
    const requestId = newRequestId();
    const what = reason === "total" ? `this server holds its maximum of ${limit} connections` : `at most ${limit} open connections per client address`;
    const e: EdgeError = {
      status: httpStatusOf[ErrorCode.RateLimitExceeded],
      code: ErrorCode.RateLimitExceeded,
      message: `too many open connections: ${what}; reuse or close idle connections and retry after ${CONNECTION_RETRY_AFTER_SECONDS} s`,
      rule: "connections",
    };
    const resetUnixSeconds = Math.ceil(Date.now() / 1000) + CONNECTION_RETRY_AFTER_SECONDS;
    closeGently(
      socket,
      rawResponse(e, requestId, {
        "X-RateLimit-Limit": String(limit),
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": String(resetUnixSeconds),
        "Retry-After": String(CONNECTION_RETRY_AFTER_SECONDS),
      }),
    );
    accessLog(requestId, e.status, ip, { error: `connections_${reason}` });
  }

  // ---- requests ----
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const conn = conns.get(req.socket);
    // Behind an answer that closes the connection: this request could never be answered, so it is not run.
    if (conn?.closing) return;
    if (conn) {
      conn.requests++;
      conn.current = res;
      res.once("close", () => {
        if (conn.current === res) conn.current = null;
      });
      if (draining || (limits.maxRequestsPerConnection > 0 && conn.requests >= limits.maxRequestsPerConnection)) {
        conn.closing = true;
        res.setHeader("Connection", "close");
      }
    }
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) {
      return answerVia(
        res,
        conn,
        { status: 400, code: ErrorCode.ValidationError, message: "HTTP/1.1 requests must carry a Host header", rule: "http" },
        {
          method: req.method,
          error: "missing_host",
        },
      );
    }
    if ((req.url ?? "").length > MAX_URL_LENGTH) {
      return answerVia(
        res,
        conn,
        { status: 414, code: ErrorCode.ValidationError, message: `request target is longer than ${MAX_URL_LENGTH} characters`, rule: "http" },
        { method: req.method, error: "url_too_long" },
      );
    }
    app(req, res);
  });

  // `Expect` other than 100-continue (node:http answers 417 with an empty body otherwise).
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    const conn = conns.get(req.socket);
    answerVia(
      res,
      conn,
      { status: 417, code: ErrorCode.ValidationError, message: 'unsupported Expect header: only "100-continue" is understood', rule: "http" },
      { method: req.method, error: "expectation" },
    );
  });

  // CONNECT (node:http closes the socket without a word otherwise).
  server.on("connect", (req: IncomingMessage, socket: Socket) => {
    const requestId = newRequestId();
    const e: EdgeError = { status: 404, code: ErrorCode.NotFound, message: "CONNECT is not supported: this is not a proxy", rule: "http" };
    socket.on("error", () => {});
    closeGently(socket, rawResponse(e, requestId));
    accessLog(requestId, e.status, conns.get(socket)?.ip ?? "unknown", { method: "CONNECT", error: "connect" });
  });

  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
    const conn = conns.get(socket);
    // A reset, or a socket that can no longer carry an answer: nothing to say.
    if (err.code === "ECONNRESET" || !socket.writable) return void socket.destroy();
    // Already answered: the parser reports the rest of the bytes (or their end) again; the linger closes it.
    if (conn?.answered) return;
    if (conn) conn.answered = true;
    const e = describeClientError(err, limits);
    const fields = { error: err.code ?? "parse_error" };
    const res = conn?.current ?? null;
    if (res && !res.headersSent && !res.writableEnded && !res.req.complete) {
      // The broken request is the one the app is reading (a bad chunk, a trickled body): answer it (the app logs it).
      return answerVia(res, conn, e, null);
    }
    if (res && !res.writableFinished) {
      // An earlier request is still being answered; the broken one behind it cannot be: close after that answer.
      if (conn) conn.closing = true;
      if (!res.headersSent) res.setHeader("Connection", "close");
      res.once("finish", () => closeGently(socket));
      return;
    }
    const requestId = newRequestId();
    closeGently(socket, rawResponse(e, requestId));
    accessLog(requestId, e.status, conn?.ip ?? "unknown", fields);
  });

  return {
    beginDrain() {
      if (draining) return;
      draining = true;
      for (const conn of conns.values()) {
        const res = conn.current;
        if (!res || res.headersSent) continue;
        conn.closing = true;
        res.setHeader("Connection", "close");
      }
    },
    get draining() {
      return draining;
    },
    get connections() {
      return conns.size;
    },
  };
}
