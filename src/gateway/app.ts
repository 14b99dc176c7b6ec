/**
 * The REST facade: express in front of the gRPC search core. See docs/api.md for the contract as
 * built; the order of checks below is part of it.
 *
 *   every request:  request id + access log → client IP → per-IP limit → route
 *   search, similar: Content-Type → body size → JSON syntax → operation (./operations.ts: API key →
 *                   per-account limit → body schema [→ query qualifiers] → debit → (query cache) →
 *                   core → respond; refund on any failure after the debit)
 *   repository card: operation (API key → per-account limit → path parameters → core; no charge)
 *
 * Transport problems (media type, size, syntax) are reported before authentication because they
 * say nothing about the account; the body's content is only judged for authenticated callers.
 * Nothing here logs a header, a body or a key.
 */
import { isUtf8 } from "node:buffer";
import express, { type NextFunction, type Request, type Response } from "express";
import { ErrorCode, ReposearchError, httpStatusOf, type ErrorDetail } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { metricsExposition } from "../common/metrics.js";
import { SpanKind, extractTraceContext, failSpan, startSpan, traceIdOf, type Context, type Span } from "../common/tracing.js";
import type { Config } from "../config/config.js";
import type { AccountStore } from "./accounts/types.js";
import { parseTrustedProxies, rateLimitKeyForIp, resolveClientIp } from "./client-ip.js";
import { docsRouter } from "./docs-ui.js";
import { checkHealth } from "./health.js";
import { LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS, type Limiter, type RateLimitDecision } from "./limiter.js";
import { renderLlmsTxt } from "./llms-txt.js";
import { createGatewayMetrics, type GatewayMetrics, type RateLimitScope } from "./metrics.js";
import { DOCS_PATH, HEALTH_PATH, LLMS_TXT_PATH, OPENAPI_PATH, REPOSITORY_PATH_PREFIX, SEARCH_PATH, SIMILAR_PATH, openApiDocument } from "./openapi.js";
import { createOperations, OperationError, type OperationContext, type OperationResult } from "./operations.js";
import { MCP_PATH, mountMcp } from "./mcp-route.js";
import type { QueryCache } from "./query-cache.js";
import type { CoreApi, ServiceHealth } from "./types.js";
import { describeError, fromBodyParserError, publicCode, toJsonPointer, validationError } from "./errors.js";
import { rateLimited, setRateLimitHeaders } from "./rate-limit-headers.js";
import { newRequestId } from "./http-edge.js";
import { throttledWarn } from "./log-throttle.js";
import { createBilling } from "./billing.js";

export { toJsonPointer };

export const METRICS_PATH = "/metrics";

/** The configuration the app reads; a full Config satisfies it. */
export interface GatewayAppConfig {
  readonly server: Pick<Config["server"], "coreTimeoutMs">;
  readonly gateway: Pick<Config["gateway"], "trustedProxies" | "maxBodyBytes" | "rateLimit">;
}

export interface GatewayDeps {
  readonly core: CoreApi;
  readonly accounts: Pick<AccountStore, "authenticate" | "debit" | "refund" | "commit" | "health">;
  readonly limiter: Pick<Limiter, "consumeIp" | "consumeAccount">;
  readonly config: GatewayAppConfig;
  readonly logger: Logger;
  readonly version: string;
  /** Epoch milliseconds when the service started (for `uptime`). */
  readonly startedAt: number;
  readonly cacheHealth: () => Promise<ServiceHealth>;
  /** Cache of core answers (query-cache.ts); null or absent disables it. */
  readonly queryCache?: QueryCache | null;
  /** Metrics to record into; a fresh registry with default metrics when absent. */
  readonly metrics?: GatewayMetrics;
  /** True once the process drains for shutdown: /health answers 503 so that load balancers stop sending. */
  readonly draining?: () => boolean;
}

/** A caller's X-Request-Id is echoed only when it is a short token of safe characters. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const KNOWN_PATHS: ReadonlySet<string> = new Set([SEARCH_PATH, SIMILAR_PATH, HEALTH_PATH, OPENAPI_PATH, LLMS_TXT_PATH, DOCS_PATH, METRICS_PATH, MCP_PATH]);
/** The card's route, as express matches it and as the access log and metrics name it. */
const REPOSITORY_ROUTE = `${REPOSITORY_PATH_PREFIX}:owner/:repo`;

/** The route template of a request that gets its own trace (the operations), or null. */
function tracedRoute(req: Request): string | null {
  const p = req.path.toLowerCase().replace(/\/+$/, "") || "/";
  if (req.method === "POST" && (p === SEARCH_PATH || p === SIMILAR_PATH || p === MCP_PATH)) return p;
  if (req.method === "GET" && p.startsWith(REPOSITORY_PATH_PREFIX)) return REPOSITORY_ROUTE;
  return null;
}

/** Per-request facts, kept out of the (untyped) res.locals. */
interface RequestState {
  /** Server-generated; keys the ledger entry, so a caller-chosen id can never collide with another request's debit. */
  readonly requestId: string;
  /** The caller's X-Request-Id when sane; echoed back and logged. */
  readonly clientRequestId: string | undefined;
  readonly startNs: bigint;
  ip: string;
  accountId?: string;
  keyPrefix?: string;
  /** The presented key, only so that logged error text can be scrubbed of it. */
  apiKey?: string;
  cache?: "hit" | "miss";
  /** The per-IP decision, so the search's headers can report whichever scope binds first. */
  ipDecision?: RateLimitDecision;
  /** The request's server span (POST /v1/codehost/search only) and the context that has it as parent. */
  span?: Span;
  traceCtx?: Context;
}

const states = new WeakMap<Request, RequestState>();
function stateOf(req: Request): RequestState {
  const s = states.get(req);
  if (!s) throw new Error("request state missing: the request-id middleware must run first");
  return s;
}

/** A body that claims UTF-8 but does not decode as UTF-8 (body-parser's `verify` hook throws it; errors.ts maps it). */
class NotUtf8Error extends Error {
  readonly status = 400;
  readonly type = "entity.verify.failed";
  constructor() {
    super("request body is not valid UTF-8");
  }
}

/** How long llms.txt states an index size before asking the core again. */
const INDEX_SIZE_TTL_MS = 60_000;
/** How long the first llms.txt request waits for the core's answer. */
const INDEX_SIZE_WAIT_MS = 1_000;

/**
 * The served index's size, for llms.txt: asked of the core (GetIndexStats) at most once per
 * INDEX_SIZE_TTL_MS, refreshed in the background once known, the last answer kept while the core does
 * not answer; null until it first has.
 */
function indexSizeCache(core: Pick<CoreApi, "stats">, log: Logger): () => Promise<number | null> {
  let value: number | null = null;
  let fetchedAt = -Infinity;
  let pending: Promise<void> | null = null;
  const refresh = (): Promise<void> =>
    (pending ??= core
      .stats({ deadlineMs: INDEX_SIZE_WAIT_MS })
      .then(
        (s) => {
          value = s.version === null ? value : s.count;
          fetchedAt = Date.now();
        },
        (err: unknown) => {
          // Asked again in 5 s, so a core that is down costs each llms.txt request no wait meanwhile.
          fetchedAt = Date.now() - INDEX_SIZE_TTL_MS + 5_000;
          log.debug("index stats for llms.txt unavailable", { error: err instanceof Error ? err.message : String(err) });
        },
      )
      .finally(() => (pending = null)));
  return async () => {
    if (Date.now() - fetchedAt > INDEX_SIZE_TTL_MS) {
      const p = refresh();
      if (value === null) await p;
    }
    return value;
  };
}

export function createGatewayApp(deps: GatewayDeps): express.Express {
  const { core, accounts, limiter, config, version, startedAt } = deps;
  const log = deps.logger.child({ component: "gateway" });
  const warn = throttledWarn(log);
  const metrics = deps.metrics ?? createGatewayMetrics();
  const billing = createBilling({ accounts, metrics, log });
  const operations = createOperations({
    core,
    accounts,
    limiter,
    metrics,
    logger: log,
    coreTimeoutMs: config.server.coreTimeoutMs,
    queryCache: deps.queryCache,
    billing,
  });
  const trusted = parseTrustedProxies(config.gateway.trustedProxies);
  const maxBodyBytes = config.gateway.maxBodyBytes;
  const openApiJson = JSON.stringify(openApiDocument);
  const llmsTxtOf = (indexedRepositories: number | null): string =>
    renderLlmsTxt({
      ipPerMinute: config.gateway.rateLimit.ipPerMinute,
      accountPerMinute: config.gateway.rateLimit.accountPerMinute,
      maxBodyBytes,
      indexedRepositories,
    });
  const indexSize = indexSizeCache(core, log);

  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");

  // a. request id, access log, request metrics
  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.get("x-request-id");
    const state: RequestState = {
      requestId: newRequestId(),
      clientRequestId: given !== undefined && SANE_REQUEST_ID.test(given) ? given : undefined,
      startNs: process.hrtime.bigint(),
      ip: "unknown",
    };
    states.set(req, state);
    res.setHeader("X-Request-Id", state.clientRequestId ?? state.requestId);
    // One trace per operation: the server span, joined to the caller's trace when it sent a traceparent.
    const traced = tracedRoute(req);
    if (traced !== null) {
      const { span, ctx } = startSpan(
        `${req.method} ${traced}`,
        { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method, "http.route": traced, "url.path": req.path } },
        extractTraceContext(req.headers),
      );
      state.span = span;
      state.traceCtx = ctx;
    }
    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - state.startNs) / 1e9;
      const routePath: unknown = req.route?.path;
      const lowerPath = req.path.toLowerCase().replace(/\/+$/, "") || "/";
      const route = typeof routePath === "string" ? routePath : KNOWN_PATHS.has(lowerPath) ? lowerPath : "unmatched";
      // 499 (nginx's "client closed request") when the caller left before the answer was written.
      const status = res.writableFinished ? res.statusCode : 499;
      metrics.httpDuration.observe({ method: req.method, route, status: String(status) }, seconds);
      const traceId = traceIdOf(state.span);
      if (state.span) {
        state.span.setAttribute("http.response.status_code", status);
        if (status >= 500) failSpan(state.span, `HTTP ${status}`);
        state.span.end();
      }
      log.info("request", {
        requestId: state.requestId,
        ...(state.clientRequestId ? { clientRequestId: state.clientRequestId } : {}),
        method: req.method,
        route,
        status,
        durationMs: Math.round(seconds * 10_000) / 10,
        ip: state.ip,
        ...(state.accountId ? { accountId: state.accountId, keyPrefix: state.keyPrefix } : {}),
        ...(state.cache ? { cache: state.cache } : {}),
        ...(traceId ? { traceId } : {}),
      });
    });
    next();
  });

  // b. client IP
  app.use((req: Request, _res: Response, next: NextFunction) => {
    stateOf(req).ip = resolveClientIp(req.socket.remoteAddress, req.headers["x-forwarded-for"], trusted);
    next();
  });

  /** A limiter decision, counted: store failures (either fail mode) and rejections by scope. */
  async function consumeLimit(scope: RateLimitScope, consume: () => Promise<RateLimitDecision>): Promise<RateLimitDecision> {
    let decision: RateLimitDecision;
    try {
      decision = await consume();
    } catch (err) {
      if (err instanceof ReposearchError && err.code === ErrorCode.RateLimitUnavailable) metrics.rateLimiterUnavailable.inc();
      throw err;
    }
    if (decision.degraded) metrics.rateLimiterUnavailable.inc();
    if (!decision.allowed) metrics.rateLimitRejections.inc({ scope });
    return decision;
  }

  // c. per-IP limit on every request, before anything else is looked at
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    let decision: RateLimitDecision;
    try {
      decision = await consumeLimit("ip", () => limiter.consumeIp(rateLimitKeyForIp(stateOf(req).ip)));
    } catch (err) {
      // Health must keep answering (with its own body) while the limiter store is down.
      const isHealth = (req.method === "GET" || req.method === "HEAD") && req.path.replace(/\/+$/, "").toLowerCase() === HEALTH_PATH;
      if (isHealth && err instanceof ReposearchError && err.code === ErrorCode.RateLimitUnavailable) return next();
      throw err;
    }
    if (!decision.allowed) throw rateLimited(res, decision, "requests per IP address");
    // Every answer reports the limit that binds it; a search narrows this down after its account's limit.
    stateOf(req).ipDecision = decision;
    setRateLimitHeaders(res, decision);
    next();
  });

  // d. routes
  app.get(HEALTH_PATH, async (_req: Request, res: Response) => {
    const draining = deps.draining?.() ?? false;
    const { httpStatus, body, core: coreStatus } = await checkHealth({ core, accounts, cacheHealth: deps.cacheHealth, version, startedAt, draining });
    if (httpStatus !== 200) {
      warn.warn("health", "health: unhealthy", { core: coreStatus, db: body.services.db.status, cache: body.services.cache.status, draining });
    }
    res.setHeader("Cache-Control", "no-store");
    res.status(httpStatus).json(body);
  });

  app.get(OPENAPI_PATH, (_req: Request, res: Response) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("application/json; charset=utf-8").send(openApiJson);
  });

  app.get(LLMS_TXT_PATH, async (_req: Request, res: Response) => {
    const text = llmsTxtOf(await indexSize());
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("text/plain; charset=utf-8").send(text);
  });

  app.use(docsRouter());

  app.get(METRICS_PATH, async (_req: Request, res: Response) => {
    const text = await metricsExposition(metrics.registry);
    res.setHeader("Cache-Control", "no-store");
    res.type(metrics.registry.contentType).send(text);
  });

  const parseJson = express.json({
    limit: maxBodyBytes,
    strict: true,
    type: () => true,
    // UTF-8 that does not decode would silently become U+FFFD (./unicode.ts); other charsets are decoded by body-parser.
    verify: (_req, _res, buf, encoding) => {
      if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) throw new NotUtf8Error();
    },
  });

  // e. transport-level checks of a JSON body: media type, then size and syntax (body-parser)
  const jsonBody = [
    (req: Request, _res: Response, next: NextFunction) => {
      // Judged on the header alone (req.is() answers null for an empty body, which is a schema problem, not a media-type one).
      const mediaType = (req.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (mediaType !== "application/json") {
        throw validationError("Content-Type must be application/json", [
          { path: "", rule: "contentType", message: "send the body as JSON with Content-Type: application/json" },
        ]);
      }
      next();
    },
    parseJson,
  ];

  // The operations (./operations.ts): auth → per-account limit → schema → charge → core → answer or refund.
  app.post(SEARCH_PATH, ...jsonBody, (req: Request, res: Response) => respond(req, res, (ctx) => operations.search({ ...ctx, body: req.body })));
  app.post(SIMILAR_PATH, ...jsonBody, (req: Request, res: Response) => respond(req, res, (ctx) => operations.similar({ ...ctx, body: req.body })));
  app.get(REPOSITORY_ROUTE, (req: Request, res: Response) =>
    respond(req, res, (ctx) => operations.repository({ ...ctx, params: { owner: String(req.params.owner), repo: String(req.params.repo) } })),
  );

  // The MCP server over Streamable HTTP (./mcp-route.ts): the key is checked here, each tool call runs one operation.
  mountMcp(app, {
    operations,
    version,
    parseJson,
    facts: (req) => {
      const state = stateOf(req);
      return {
        requestId: state.requestId,
        clientIp: state.ip,
        ipLimit: state.ipDecision,
        traceContext: state.traceCtx,
        observe: {
          key: (key) => (state.apiKey = key),
          account: (p) => {
            state.accountId = p.accountId;
            state.keyPrefix = p.keyPrefix;
          },
          cache: (c) => (state.cache = c),
        },
      };
    },
  });

  /**
   * Runs one operation for a REST request and writes its answer: the request's key, client, per-IP
   * decision, id and trace go in; the answer's rate-limit headers and body come out (an error's headers
   * too, then the error handler writes its body). The charge is settled once the answer has left.
   */
  async function respond<T>(req: Request, res: Response, run: (ctx: OperationContext) => Promise<OperationResult<T>>): Promise<void> {
    const state = stateOf(req);
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort();
    };
    res.once("close", onClose);
    try {
      const result = await run({
        apiKey: req.get("x-api-key"),
        clientIp: state.ip,
        ipLimit: state.ipDecision,
        signal: abort.signal,
        requestId: state.requestId,
        traceContext: state.traceCtx,
        observe: {
          key: (key) => (state.apiKey = key),
          account: (p) => {
            state.accountId = p.accountId;
            state.keyPrefix = p.keyPrefix;
          },
          cache: (c) => (state.cache = c),
        },
      });
      for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
      // The charge stands once the answer has left (or the client left while it was being written);
      // a crash before that leaves it to the reservation sweep (./billing.ts).
      res.once("close", result.settle);
      res.json(result.body);
    } catch (err) {
      if (err instanceof OperationError) for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
      throw err;
    } finally {
      res.off("close", onClose);
    }
  }

  // f. unknown routes and methods
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const p = req.path.toLowerCase().replace(/\/+$/, "") || "/";
    const shown = req.path.length > 200 ? `${req.path.slice(0, 200)}…` : req.path;
    next(new ReposearchError(ErrorCode.NotFound, KNOWN_PATHS.has(p) ? `${req.method} is not supported on ${shown}` : `no route for ${req.method} ${shown}`));
  });

  // Final error handler: the spec's error body; internals stay in the log.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const state = states.get(req);
    const e = fromBodyParserError(err, maxBodyBytes) ?? ReposearchError.from(err);
    const code = publicCode(e.code);
    const status = httpStatusOf[code];
    if (status >= 500) {
      const fields = {
        requestId: state?.requestId,
        code,
        message: e.message,
        ...(e.cause !== undefined ? { cause: describeError(e.cause, state?.apiKey) } : {}),
      };
      if (code === ErrorCode.Internal) log.error("internal error", fields);
      // Upstream failures repeat with traffic during an outage: one full line per code and window (./log-throttle.ts).
      else warn.warn(`upstream:${code}`, "upstream failure", fields);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (code === ErrorCode.RateLimitUnavailable) {
      // No limit could be decided (the per-IP one may have, before the account's failed): only Retry-After.
      for (const h of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]) res.removeHeader(h);
      res.setHeader("Retry-After", String(LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS));
    }
    const body: { code: ErrorCode; message: string; status: number; details?: ErrorDetail[] } = {
      code,
      // Internal messages never reach the caller.
      message: code === ErrorCode.Internal ? "internal error" : e.message,
      status,
    };
    if (e.details && e.details.length > 0) body.details = [...e.details];
    res.setHeader("Cache-Control", "no-store");
    res.status(status).json({ error: body });
  });

  return app;
}
