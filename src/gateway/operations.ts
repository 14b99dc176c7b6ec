/**
 * The gateway's operations without HTTP: what one authenticated API call does, whichever front door
 * it came through (the REST routes in app.ts, the MCP server at /mcp). Each operation runs
 *
 *   caller (API key → principal, auth.ts) → per-account limit → request schema → [qualifier check] →
 *   [debit] → core call (deadline, cancellation, client span, query cache) → answer | [refund] + error
 *
 * and returns the answer with its rate-limit headers and a `settle()` to call once the answer is
 * written (the charge then stands: billing.ts's reservations), or throws an OperationError: a
 * ReposearchError whose `code` is already the public contract code (internal core codes mapped, as the
 * REST error body shows them), whose `httpStatus` is the contract status, and whose `headers` are the
 * headers the refusal must carry (`Retry-After` and `X-RateLimit-*` on 429; the account's
 * `X-RateLimit-*` on any failure after the account limit was taken). The headers report whichever
 * limit binds first, the account's or the per-IP one the front door already took (`ipLimit`;
 * rate-limit-headers.ts). Nothing here knows express.
 *
 * Exports (stable; the MCP server builds on them):
 *   - createOperations(deps) → Operations { authenticate, search, similar, repository };
 *   - OperationContext (apiKey or principal, clientIp, ipLimit, signal, requestId, traceContext,
 *     observe), SearchInput / SimilarInput (`body`: the parsed JSON, validated here), RepositoryInput
 *     (`params`: `{owner, repo}`), OperationResult<T> (`body`, `headers`, `rateLimit`, `principal`,
 *     `settle`), OperationObserver;
 *   - OperationError (code, httpStatus, message, details, headers, retryAfterSeconds).
 *
 * Pricing and limits: search and similar are each one search (SEARCH_PRICE_MICROS, $0.001, one debit keyed by the request
 * id, refunded when no answer follows: billing.ts) and count against the account's per-minute limit;
 * the repository card counts against the same limit and costs nothing. A malformed query qualifier
 * (`stars:>abc`) is refused before the debit: the parser is the core's (src/core/qualifiers.ts), run
 * here too so that the mistake costs nothing instead of a debit and a refund.
 */
import { randomUUID } from "node:crypto";
import { untilAborted } from "../common/abort.js";
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { SpanKind, extractTraceContext, failSpan, startSpan, traceHeaders, type Context } from "../common/tracing.js";
import { parseQualifiers } from "../core/qualifiers.js";
import type { GetRepositoryRequest, RepositoryCard, SearchRequest, SearchResponse, SimilarRequest } from "../core/types.js";
import type { AccountStore, Principal } from "./accounts/types.js";
import { authenticate as authenticateKey } from "./auth.js";
import { createBilling, type Billing } from "./billing.js";
import { fromCoreError, publicCode, toJsonPointer } from "./errors.js";
import { LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS, type Limiter, type RateLimitDecision } from "./limiter.js";
import type { GatewayMetrics } from "./metrics.js";
import { queryCacheKey, similarCacheKey, type QueryCache } from "./query-cache.js";
import { bindingDecision, rateLimitHeaderValues, rateLimitRefusal } from "./rate-limit-headers.js";
import type { CoreApi, CoreCallOptions } from "./types.js";
import { unpairedSurrogateDetails } from "../contract/unicode.js";
import { validateRepositoryParams, validateSearchRequest, validateSimilarRequest, type ValidationResult } from "./validation.js";

/** Headroom over the core deadline before the gateway gives up on a core client that ignores it. */
const CORE_DEADLINE_GRACE_MS = 250;
/** The client span around a core call is `${CORE_SERVICE}/${method}`, as is the core's server span. */
const CORE_SERVICE = "reposearch.v1.SearchService";

/** Told what an operation learned, for the caller's access log and key scrubbing. Every member is optional. */
export interface OperationObserver {
  /** The presented key, once it is of a plausible length: scrub it from anything logged. */
  readonly key?: (apiKey: string) => void;
  /** The authenticated caller. */
  readonly account?: (principal: Principal) => void;
  /** Whether the answer came from the query cache (search and similar, when a cache is configured). */
  readonly cache?: (result: "hit" | "miss") => void;
}

/** Who calls and how; shared by every operation. */
export interface OperationContext {
  /** The presented API key (REST: X-API-Key; MCP: X-API-Key or the Bearer token); undefined when none was sent. */
  readonly apiKey?: string | undefined;
  /** A caller already authenticated with Operations.authenticate; `apiKey` is then not looked at. */
  readonly principal?: Principal | undefined;
  /** The client address as resolved behind trusted proxies (client-ip.ts), for logs. */
  readonly clientIp: string;
  /** The per-IP limit decision the front door took for this request, if any: the headers report whichever binds first. */
  readonly ipLimit?: RateLimitDecision | undefined;
  /** Aborts the core call (the caller went away); the charge is then refunded. */
  readonly signal?: AbortSignal | undefined;
  /** The server-generated request id: it keys the ledger entry and goes to the core as x-request-id. Generated when absent. */
  readonly requestId?: string | undefined;
  /** The trace context the core call's client span is parented to (the request's server span). */
  readonly traceContext?: Context | undefined;
  readonly observe?: OperationObserver | undefined;
}

/** search: `body` is the parsed JSON body, validated here against the published SearchRequest schema. */
export interface SearchInput extends OperationContext {
  readonly body: unknown;
}

/** similar: `body` is the parsed JSON body, validated here against the published SimilarRequest schema. */
export interface SimilarInput extends OperationContext {
  readonly body: unknown;
}

/** repository: the two halves of `owner/repo` (REST path parameters; MCP splits its `repo` argument). */
export interface RepositoryInput extends OperationContext {
  readonly params: { readonly owner: string; readonly repo: string };
}

export interface OperationResult<T> {
  readonly body: T;
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` of the binding limit, to send with the answer. */
  readonly headers: Readonly<Record<string, string>>;
  /** The limit decision these headers come from (the account's, or the per-IP one when that binds first). */
  readonly rateLimit: RateLimitDecision;
  readonly principal: Principal;
  /**
   * Call once the answer has been written (or the client left while it was written): the charge then
   * stands (billing.ts commit). Not calling it leaves the charge to the reservation sweep, which refunds
   * it. A no-op for free operations; idempotent; never throws.
   */
  readonly settle: () => void;
}

/**
 * A refused or failed operation, as the contract states it: `code` (public), `httpStatus`, `message`,
 * `details` (validation), and `headers` to send with it. `retryAfterSeconds` is set on 429 and 503.
 */
export class OperationError extends ReposearchError {
  readonly headers: Readonly<Record<string, string>>;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: ErrorDetail[] | undefined; cause?: unknown; headers?: Readonly<Record<string, string>> } = {},
  ) {
    const pub = publicCode(code);
    super(pub, message, { ...(opts.details ? { details: opts.details } : {}), cause: opts.cause });
    const headers = { ...opts.headers };
    if (pub === ErrorCode.RateLimitUnavailable && headers["Retry-After"] === undefined)
      headers["Retry-After"] = String(LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS);
    this.headers = headers;
    const retry = headers["Retry-After"];
    this.retryAfterSeconds = retry === undefined ? undefined : Number(retry);
  }

  /** Any failure as an OperationError with `headers` added (an OperationError keeps its own and gains these). */
  static wrap(err: unknown, headers: Readonly<Record<string, string>> = {}): OperationError {
    if (err instanceof OperationError)
      return Object.keys(headers).length ? new OperationError(err.code, err.message, { ...parts(err), headers: { ...headers, ...err.headers } }) : err;
    const e = ReposearchError.from(err);
    return new OperationError(e.code, e.code === ErrorCode.Internal ? "internal error" : e.message, { ...parts(e), headers });
  }
}

function parts(e: ReposearchError): { details?: ErrorDetail[]; cause: unknown } {
  return { ...(e.details ? { details: [...e.details] } : {}), cause: e.cause ?? e };
}

export interface Operations {
  /** The principal behind a key, or OperationError 401 AUTH_ERROR / 403 FORBIDDEN / 502 (accounts database down). */
  authenticate(apiKey: string | undefined, observe?: OperationObserver): Promise<Principal>;
  /** POST /v1/codehost/search: charged. */
  search(input: SearchInput): Promise<OperationResult<SearchResponse>>;
  /** POST /v1/codehost/similar: charged like a search; 404 NOT_FOUND for an unknown repository (refunded). */
  similar(input: SimilarInput): Promise<OperationResult<SearchResponse>>;
  /** GET /v1/codehost/repos/{owner}/{repo}: free, rate limited; 404 NOT_FOUND for an unknown repository. */
  repository(input: RepositoryInput): Promise<OperationResult<RepositoryCard>>;
}

export interface OperationsDeps {
  readonly core: CoreApi;
  readonly accounts: Pick<AccountStore, "authenticate" | "debit" | "refund" | "commit">;
  readonly limiter: Pick<Limiter, "consumeAccount">;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
  /** Deadline of every core call (CORE_TIMEOUT_MS). */
  readonly coreTimeoutMs: number;
  /** Cache of search and similar answers; null or absent: none. */
  readonly queryCache?: QueryCache | null;
  /** The credits ledger's charge and refund; built from `accounts` when absent. */
  readonly billing?: Billing;
}

/** What differs between the operations; `run` does the rest. */
interface OperationSpec<Req, Res> {
  /** The core method, for the client span. */
  readonly method: string;
  readonly charged: boolean;
  /** Validates the input (returns the core request or the problems). */
  readonly validate: () => ValidationResult<Req>;
  /** The caller's JSON body, checked for unpaired surrogates; absent for path parameters. */
  readonly body?: unknown;
  /** Checks beyond the schema that must pass before the debit (the query's qualifiers). */
  readonly precheck?: (req: Req) => void;
  readonly call: (req: Req, opts: CoreCallOptions) => Promise<Res>;
  /** The query-cache key of a request; absent: not cached. */
  readonly cacheKey?: (req: Req) => string;
  /** Why a charge was refunded, for the ledger (e.g. "search failed"). */
  readonly refundReason: string;
}

export function createOperations(deps: OperationsDeps): Operations {
  const { core, accounts, limiter, metrics } = deps;
  const log = deps.logger;
  const billing = deps.billing ?? createBilling({ accounts, metrics, log });
  const queryCache = deps.queryCache ?? null;

  async function authenticate(apiKey: string | undefined, observe?: OperationObserver): Promise<Principal> {
    try {
      const principal = await authenticateKey(
        apiKey,
        accounts,
        (reason) => metrics.authFailures.inc({ reason }),
        (key) => observe?.key?.(key),
      );
      observe?.account?.(principal);
      return principal;
    } catch (err) {
      throw OperationError.wrap(err);
    }
  }

  /** The per-account limit, counted like the per-IP one in app.ts; a refusal reports whichever limit binds (`ipLimit`). */
  async function consumeAccount(accountId: string, ipLimit: RateLimitDecision | undefined): Promise<RateLimitDecision> {
    let decision: RateLimitDecision;
    try {
      decision = await limiter.consumeAccount(accountId);
    } catch (err) {
      if (err instanceof ReposearchError && err.code === ErrorCode.RateLimitUnavailable) metrics.rateLimiterUnavailable.inc();
      throw OperationError.wrap(err);
    }
    if (decision.degraded) metrics.rateLimiterUnavailable.inc();
    if (!decision.allowed) {
      metrics.rateLimitRejections.inc({ scope: "account" });
      const refusal = rateLimitRefusal(decision, "requests per account", ipLimit);
      throw new OperationError(ErrorCode.RateLimitExceeded, refusal.message, { headers: refusal.headers });
    }
    return decision;
  }

  async function run<Req, Res>(input: OperationContext, spec: OperationSpec<Req, Res>): Promise<OperationResult<Res>> {
    const principal = input.principal ?? (await authenticate(input.apiKey, input.observe));
    if (input.principal) input.observe?.account?.(principal);
    const decision = await consumeAccount(principal.accountId, input.ipLimit);
    const binding = bindingDecision(decision, input.ipLimit);
    const headers = rateLimitHeaderValues(binding);
    try {
      const checked = spec.validate();
      // Every string valid Unicode too (./unicode.ts): an unpaired surrogate would reach the core as U+FFFD.
      const unpaired = spec.body === undefined ? [] : unpairedSurrogateDetails(spec.body);
      if (!checked.ok || unpaired.length > 0) {
        const what = spec.body === undefined ? "request" : "request body";
        throw new OperationError(ErrorCode.ValidationError, `${what} is invalid`, { details: [...(checked.ok ? [] : checked.details), ...unpaired] });
      }
      const req = checked.value;
      spec.precheck?.(req);
      const ledgerId = input.requestId ?? `req_${randomUUID().replace(/-/g, "")}`;
      if (spec.charged && !(await billing.charge(principal.accountId, ledgerId))) {
        metrics.authFailures.inc({ reason: "insufficient_credits" });
        throw new OperationError(ErrorCode.InsufficientCredits, "insufficient credits: top up the account in the dashboard");
      }
      try {
        const body = await answer(input, spec, req, ledgerId);
        let settled = !spec.charged;
        const settle = (): void => {
          if (settled) return;
          settled = true;
          billing.commit(principal.accountId, ledgerId);
        };
        return { body, headers, rateLimit: binding, principal, settle };
      } catch (err) {
        const failure = fromCoreError(err);
        if (spec.charged) await billing.refund(principal.accountId, ledgerId, `${spec.refundReason}: ${failure.code}`, input.apiKey);
        throw failure;
      }
    } catch (err) {
      throw OperationError.wrap(err, headers);
    }
  }

  /** The core's answer, through the query cache when the operation has a key and a cache is configured. */
  async function answer<Req, Res>(input: OperationContext, spec: OperationSpec<Req, Res>, req: Req, requestId: string): Promise<Res> {
    const cache = spec.cacheKey && queryCache ? { key: spec.cacheKey(req), store: queryCache } : null;
    if (cache) {
      const hit = await cache.store.get(cache.key);
      metrics.queryCacheRequests.inc({ result: hit ? "hit" : "miss" });
      input.observe?.cache?.(hit ? "hit" : "miss");
      if (hit) return hit as Res;
    }
    const abort = new AbortController();
    const onAbort = (): void => abort.abort(new ReposearchError(ErrorCode.ExternalService, "client disconnected"));
    if (input.signal?.aborted) onAbort();
    else input.signal?.addEventListener("abort", onAbort, { once: true });
    const guard = setTimeout(
      () => abort.abort(new ReposearchError(ErrorCode.DeadlineExceeded, `no answer within ${deps.coreTimeoutMs} ms`)),
      deps.coreTimeoutMs + CORE_DEADLINE_GRACE_MS,
    );
    // The core call as a client span under the request's span; its context travels as traceparent.
    const { span, ctx } = startSpan(
      `${CORE_SERVICE}/${spec.method}`,
      { kind: SpanKind.CLIENT, attributes: { "rpc.system": "grpc", "rpc.service": CORE_SERVICE, "rpc.method": spec.method } },
      input.traceContext ?? extractTraceContext({}),
    );
    const metadata = { ...traceHeaders(ctx), "x-request-id": requestId };
    try {
      const res = await untilAborted(spec.call(req, { deadlineMs: deps.coreTimeoutMs, signal: abort.signal, metadata }), abort.signal);
      if (cache) await cache.store.set(cache.key, res as SearchResponse);
      return res;
    } catch (err) {
      failSpan(span, err instanceof ReposearchError ? err.code : "core call failed");
      throw err;
    } finally {
      span.end();
      clearTimeout(guard);
      input.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** A malformed qualifier in the query is a 400 before any debit (the core would refuse it too). */
  function checkQualifiers(query: string): void {
    try {
      parseQualifiers(query);
    } catch (err) {
      const e = ReposearchError.from(err);
      throw new OperationError(e.code, e.message, { details: (e.details ?? []).map((d) => ({ ...d, path: toJsonPointer(d.path) })) });
    }
  }

  return {
    authenticate,

    search(input) {
      return run<SearchRequest, SearchResponse>(input, {
        method: core.searchMethod ?? "Search",
        charged: true,
        validate: () => validateSearchRequest(input.body),
        body: input.body,
        precheck: (req) => checkQualifiers(req.query),
        // `rerank` is not part of the REST API: the server's default applies.
        call: (req, opts) => core.search({ query: req.query, limit: req.limit, includeTree: req.includeTree, filters: req.filters }, opts),
        cacheKey: queryCacheKey,
        refundReason: "search failed",
      });
    },

    similar(input) {
      return run<SimilarRequest, SearchResponse>(input, {
        method: "Similar",
        charged: true,
        validate: () => validateSimilarRequest(input.body),
        body: input.body,
        call: (req, opts) => core.similar(req, opts),
        cacheKey: similarCacheKey,
        refundReason: "similar failed",
      });
    },

    repository(input) {
      return run<GetRepositoryRequest, RepositoryCard>(input, {
        method: "GetRepository",
        charged: false,
        validate: () => validateRepositoryParams(input.params),
        call: (req, opts) => core.repository(req, opts),
        refundReason: "",
      });
    },
  };
}
