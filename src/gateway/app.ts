/**
 * The REST facade: express in front of the gRPC search core. See docs/api.md for the contract as
 * built; the order of checks below is part of it.
 *
 *   every request:  request id + access log → client IP → per-IP limit → route
 *   search:         Content-Type → body size → JSON syntax → API key → per-account limit →
 *                   body schema → debit → (query cache) → core → respond; refund on any failure after the debit
 *
 * Transport problems (media type, size, syntax) are reported before authentication because they
 * say nothing about the account; the body's content is only judged for authenticated callers.
 * Nothing here logs a header, a body or a key.
 */
import { randomUUID } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { untilAborted } from "../common/abort.js";
import { ErrorCode, ReposearchError, httpStatusOf, type ErrorDetail } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { metricsExposition } from "../common/metrics.js";
import { SpanKind, extractTraceContext, failSpan, startSpan, traceHeaders, traceIdOf, type Context, type Span } from "../common/tracing.js";
import type { Config } from "../config/config.js";
import type { SearchRequest, SearchResponse } from "../core/types.js";
import type { AccountStore } from "./accounts/types.js";
import { parseTrustedProxies, rateLimitKeyForIp, resolveClientIp } from "./client-ip.js";
import { docsRouter } from "./docs-ui.js";
import { checkHealth } from "./health.js";
import { LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS, type Limiter, type RateLimitDecision } from "./limiter.js";
import { renderLlmsTxt } from "./llms-txt.js";
import { createGatewayMetrics, type AuthFailureReason, type GatewayMetrics, type RateLimitScope } from "./metrics.js";
import { DOCS_PATH, HEALTH_PATH, LLMS_TXT_PATH, OPENAPI_PATH, SEARCH_PATH, openApiDocument } from "./openapi.js";
import { queryCacheKey, type QueryCache } from "./query-cache.js";
import type { CoreApi, ServiceHealth } from "./types.js";
import { validateSearchRequest } from "./validation.js";
import { describeError, fromBodyParserError, fromCoreError, publicCode, toJsonPointer, validationError } from "./errors.js";
import { rateLimited, setRateLimitHeaders } from "./rate-limit-headers.js";
import { authenticate } from "./auth.js";
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
  readonly accounts: Pick<AccountStore, "authenticate" | "debit" | "refund" | "health">;
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
}

/** A caller's X-Request-Id is echoed only when it is a short token of safe characters. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Headroom over the core deadline before the gateway gives up on a core client that ignores it. */
const CORE_DEADLINE_GRACE_MS = 250;
/** The gateway's client span around the core call is `${CORE_SERVICE}/${method}`, as is the core's server span. */
const CORE_SERVICE = "reposearch.v1.SearchService";

const KNOWN_PATHS: ReadonlySet<string> = new Set([SEARCH_PATH, HEALTH_PATH, OPENAPI_PATH, LLMS_TXT_PATH, DOCS_PATH, METRICS_PATH]);

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

/** The validated body as the core's request; `rerank` is not part of the REST API and stays at the server default. */
function toCoreRequest(body: SearchRequest): SearchRequest {
  return { query: body.query, limit: body.limit, includeTree: body.includeTree, filters: body.filters };
}

export function createGatewayApp(deps: GatewayDeps): express.Express {
  const { core, accounts, limiter, config, version, startedAt } = deps;
  const log = deps.logger.child({ component: "gateway" });
  const metrics = deps.metrics ?? createGatewayMetrics();
  const billing = createBilling({ accounts, metrics, log });
  const queryCache = deps.queryCache ?? null;
  const coreMethod = core.searchMethod ?? "Search";
  const trusted = parseTrustedProxies(config.gateway.trustedProxies);
  const maxBodyBytes = config.gateway.maxBodyBytes;
  const coreTimeoutMs = config.server.coreTimeoutMs;
  const openApiJson = JSON.stringify(openApiDocument);
  const llmsTxt = renderLlmsTxt({
    ipPerMinute: config.gateway.rateLimit.ipPerMinute,
    accountPerMinute: config.gateway.rateLimit.accountPerMinute,
    maxBodyBytes,
  });

  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");

  // a. request id, access log, request metrics
  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.get("x-request-id");
    const state: RequestState = {
      requestId: `req_${randomUUID().replace(/-/g, "")}`,
      clientRequestId: given !== undefined && SANE_REQUEST_ID.test(given) ? given : undefined,
      startNs: process.hrtime.bigint(),
      ip: "unknown",
    };
    states.set(req, state);
    res.setHeader("X-Request-Id", state.clientRequestId ?? state.requestId);
    // One trace per search: the server span, joined to the caller's trace when it sent a traceparent.
    if (req.method === "POST" && (req.path.toLowerCase().replace(/\/+$/, "") || "/") === SEARCH_PATH) {
      const { span, ctx } = startSpan(
        `POST ${SEARCH_PATH}`,
        { kind: SpanKind.SERVER, attributes: { "http.request.method": "POST", "http.route": SEARCH_PATH, "url.path": SEARCH_PATH } },
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

  function authFailure(reason: AuthFailureReason, code: ErrorCode, message: string): ReposearchError {
    metrics.authFailures.inc({ reason });
    return new ReposearchError(code, message);
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
    next();
  });

  // d. routes
  app.get(HEALTH_PATH, async (_req: Request, res: Response) => {
    const { httpStatus, body, core: coreStatus } = await checkHealth({ core, accounts, cacheHealth: deps.cacheHealth, version, startedAt });
    if (httpStatus !== 200) log.warn("health: unhealthy", { core: coreStatus, db: body.services.db.status, cache: body.services.cache.status });
    res.setHeader("Cache-Control", "no-store");
    res.status(httpStatus).json(body);
  });

  app.get(OPENAPI_PATH, (_req: Request, res: Response) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("application/json; charset=utf-8").send(openApiJson);
  });

  app.get(LLMS_TXT_PATH, (_req: Request, res: Response) => {
    res.setHeader("Cache-Control", "public, max-age=300");
    res.type("text/plain; charset=utf-8").send(llmsTxt);
  });

  app.use(docsRouter());

  app.get(METRICS_PATH, async (_req: Request, res: Response) => {
    const text = await metricsExposition(metrics.registry);
    res.setHeader("Cache-Control", "no-store");
    res.type(metrics.registry.contentType).send(text);
  });

  const parseJson = express.json({ limit: maxBodyBytes, strict: true, type: () => true });

  app.post(
    SEARCH_PATH,
    // e. transport-level checks: media type, then size and syntax (body-parser)
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
    async (req: Request, res: Response) => {
      const state = stateOf(req);

      // Authentication and permission (./auth.ts).
      const principal = await authenticate(
        req.get("x-api-key"),
        accounts,
        (reason) => metrics.authFailures.inc({ reason }),
        (key) => (state.apiKey = key),
      );
      state.accountId = principal.accountId;
      state.keyPrefix = principal.keyPrefix;

      // Per-account limit; its headers go on every later answer, success included.
      const accountId = principal.accountId;
      const decision = await consumeLimit("account", () => limiter.consumeAccount(accountId));
      if (!decision.allowed) throw rateLimited(res, decision, "searches per account");
      setRateLimitHeaders(res, decision);

      // The body against the published schema.
      const checked = validateSearchRequest(req.body);
      if (!checked.ok) throw validationError("request body is invalid", checked.details);
      const request = toCoreRequest(checked.value);

      // Charge first; refund if no answer follows (./billing.ts).
      const ledgerId = state.requestId;
      if (!(await billing.charge(accountId, ledgerId))) {
        throw authFailure("insufficient_credits", ErrorCode.InsufficientCredits, "insufficient credits: top up the account in the dashboard");
      }

      let response: SearchResponse;
      try {
        response = await answer(request, res, state);
      } catch (err) {
        const failure = fromCoreError(err);
        await billing.refund(accountId, ledgerId, `search failed: ${failure.code}`, state.apiKey);
        throw failure;
      }
      res.json(response);
    },
  );

  /** The core's answer, through the query cache when one is configured. */
  async function answer(request: SearchRequest, res: Response, state: RequestState): Promise<SearchResponse> {
    const key = queryCache ? queryCacheKey(request) : "";
    if (queryCache) {
      const hit = await queryCache.get(key);
      metrics.queryCacheRequests.inc({ result: hit ? "hit" : "miss" });
      state.cache = hit ? "hit" : "miss";
      if (hit) return hit;
    }
    const abort = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) abort.abort(new ReposearchError(ErrorCode.ExternalService, "client disconnected"));
    };
    res.once("close", onClose);
    const guard = setTimeout(
      () => abort.abort(new ReposearchError(ErrorCode.DeadlineExceeded, `no answer within ${coreTimeoutMs} ms`)),
      coreTimeoutMs + CORE_DEADLINE_GRACE_MS,
    );
    // The core call as a client span under the request's span; its context travels as traceparent.
    const { span, ctx } = startSpan(
      `${CORE_SERVICE}/${coreMethod}`,
      { kind: SpanKind.CLIENT, attributes: { "rpc.system": "grpc", "rpc.service": CORE_SERVICE, "rpc.method": coreMethod } },
      state.traceCtx ?? extractTraceContext({}),
    );
    const metadata = { ...traceHeaders(ctx), "x-request-id": state.requestId };
    try {
      const response = await untilAborted(core.search(request, { deadlineMs: coreTimeoutMs, signal: abort.signal, metadata }), abort.signal);
      if (queryCache) await queryCache.set(key, response);
      return response;
    } catch (err) {
      failSpan(span, err instanceof ReposearchError ? err.code : "core call failed");
      throw err;
    } finally {
      span.end();
      clearTimeout(guard);
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
      else log.warn("upstream failure", fields);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (code === ErrorCode.RateLimitUnavailable) res.setHeader("Retry-After", String(LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS));
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
