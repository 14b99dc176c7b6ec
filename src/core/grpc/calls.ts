/**
 * One call of reposearch.v1.SearchService, whatever carried it: a grpc-js unary call or a search on a
 * SearchStream (server.ts), or a Connect, gRPC-Web or gRPC call on the Connect port (connect.ts). Both
 * servers run their calls here, so they share the trace span, the deadline (the caller's, else
 * CORE_DEFAULT_DEADLINE_MS), the abort wiring, the error mapping, the metrics and the log line. A
 * search is bounded in size (bounds.ts), validated, and then waits for its fair share of the core
 * (scheduler.ts) before it runs.
 */
import type { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import * as grpc from "@grpc/grpc-js";
import { untilAborted } from "../../common/abort.js";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { Logger } from "../../common/logger.js";
import { SpanKind, context, extractTraceContext, failSpan, stageSpan, startSpan } from "../../common/tracing.js";
import type { GrpcCallMetrics } from "../metrics.js";
import type { SearchCore } from "../types.js";
import { validateRepositoryRequest, validateSearchRequest, validateSimilarRequest } from "../validate.js";
import type { Caller } from "./auth.js";
import { checkRequestBounds } from "./bounds.js";
import {
  SEARCH_SERVICE_NAME,
  repositoryRequestFromProto,
  repositoryToProto,
  requestFromProto,
  responseToProto,
  similarRequestFromProto,
  statsToProto,
} from "./convert.js";
import type { FairScheduler } from "./scheduler.js";

/** A cancellation this close to the deadline is reported as the deadline (see `cancel` in callRunner). */
const DEADLINE_SKEW_MS = 200;

/** Status codes that mean the server failed (a span error), as opposed to a caller's mistake. */
const SERVER_FAULTS: ReadonlySet<grpc.status> = new Set([
  grpc.status.UNKNOWN,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.INTERNAL,
  grpc.status.UNAVAILABLE,
  grpc.status.DATA_LOSS,
]);

/** What a call's work gets besides its request and signal. */
export interface CallContext {
  /** Per-stage hook that records the stage as a child span of the call's span (undefined when not tracing). */
  readonly onStage: ((stage: string, seconds: number) => void) | undefined;
  /** Who called (auth.ts): the fair-share key and metric label. */
  readonly caller: Caller;
}

/** The work of one method: gets the decoded request, returns the wire object to send (convert.ts). */
export type CallWork = (request: unknown, signal: AbortSignal, callCtx: CallContext) => Promise<object>;

/** One call as the runner runs it, whatever carried it. */
export interface Invocation {
  /** The method name for spans, metrics and logs. */
  readonly method: string;
  readonly request: unknown;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  readonly requestId: string | undefined;
  /** Epoch ms when the caller stops waiting; Infinity: none set (the runner's default deadline applies). */
  readonly deadline: number;
  /** Who called (auth.ts). */
  readonly caller: Caller;
  /** The protocol on the Connect port ("connect", "grpc", "grpc-web"), for the log line; absent on the grpc-js server. */
  readonly protocol?: string | undefined;
}

/** How a call ended, with a gRPC status code: the reply, or the error to send (null: cancelled by the caller). */
export type Outcome = { readonly code: grpc.status; readonly reply: object } | { readonly code: grpc.status; readonly error: ReposearchError | null };

/** A started call: `cancel()` is the caller leaving; the outcome settles once. */
export interface RunningCall {
  readonly cancel: () => void;
  readonly outcome: Promise<Outcome>;
}

/** Abort reason for a cancelled call: the client is gone, nothing is sent back. */
class CallCancelled extends Error {
  override readonly name = "CallCancelled";
}

export interface CallRunnerOptions {
  /** `rpc.system` of the spans: "grpc" (grpc-js server) or "connect_rpc" (Connect server). */
  readonly system: "grpc" | "connect_rpc";
  /** Gets one `debug` line per call, `msg` `logMessage`; internal errors at `error` with their cause. */
  readonly logger: Logger;
  readonly logMessage: string;
  /** Records every call (grpc_server_handling_seconds, grpc_server_handled_total). */
  readonly metrics?: GrpcCallMetrics | undefined;
  /** True once the server shuts down: new calls are answered UNAVAILABLE. */
  readonly draining: () => boolean;
  /** Deadline of a call whose caller set none, in ms (CORE_DEFAULT_DEADLINE_MS). Absent: none. */
  readonly defaultDeadlineMs?: number | undefined;
}

/**
 * Runs calls of the search service: trace span, deadline, abort wiring, error mapping, metrics and one
 * debug log line per call. `work` gets an AbortSignal tied to the deadline and to `cancel()`.
 */
export function callRunner(opts: CallRunnerOptions): (inv: Invocation, work: CallWork) => RunningCall {
  const { logger: log, metrics, system } = opts;
  return (inv, work) => {
    const { method } = inv;
    const startedAt = performance.now();
    // The caller's trace context (W3C traceparent) is the parent of this call's span.
    const parent = extractTraceContext({ traceparent: inv.traceparent, tracestate: inv.tracestate });
    const { span, ctx: spanCtx } = startSpan(
      `${SEARCH_SERVICE_NAME}/${method}`,
      { kind: SpanKind.SERVER, attributes: { "rpc.system": system, "rpc.service": SEARCH_SERVICE_NAME, "rpc.method": method } },
      parent,
    );
    const callCtx: CallContext = {
      onStage: span.isRecording() ? (stage, seconds) => stageSpan(spanCtx, `search.${stage}`, seconds, { "search.stage": stage }) : undefined,
      caller: inv.caller,
    };
    const ac = new AbortController();
    // A call without a deadline would hold its slot, or its place in the queue, for ever.
    const deadline = inv.deadline === Infinity && opts.defaultDeadlineMs !== undefined ? Date.now() + opts.defaultDeadlineMs : inv.deadline;
    const remainingMs = deadline - Date.now();
    let deadlineTimer: NodeJS.Timeout | undefined;
    // Once answered, a cancel changes nothing (grpc-js emits 'cancelled' when a unary stream closes,
    // answered calls included, and a Connect handler's signal aborts when the call completes;
    // otherwise every call would build an Error and abort a signal).
    let answered = false;
    const onDeadline = (): void => ac.abort(new ReposearchError(ErrorCode.DeadlineExceeded, "deadline exceeded"));
    if (remainingMs <= 0) onDeadline();
    else if (remainingMs < 2 ** 31 - 1) {
      deadlineTimer = setTimeout(onDeadline, remainingMs);
      deadlineTimer.unref();
    }
    // A client cancels when its own deadline timer fires, which is usually a moment before ours (its
    // clock started first), so a cancel that close to the deadline is the deadline.
    const cancel = (): void => {
      if (answered || ac.signal.aborted) return;
      if (deadline - Date.now() <= DEADLINE_SKEW_MS) onDeadline();
      else ac.abort(new CallCancelled("call cancelled by the client"));
    };
    const finish = (outcome: Outcome): Outcome => {
      answered = true;
      if (deadlineTimer) clearTimeout(deadlineTimer);
      const ms = performance.now() - startedAt;
      const codeName = grpc.status[outcome.code] ?? String(outcome.code);
      metrics?.observeCall(SEARCH_SERVICE_NAME, method, codeName, ms / 1000, inv.caller.label);
      // Connect numbers its codes as gRPC does; its spans name the code (and only on errors).
      if (system === "grpc") span.setAttribute("rpc.grpc.status_code", outcome.code);
      else if (outcome.code !== grpc.status.OK) span.setAttribute("rpc.connect_rpc.error_code", codeToString(outcome.code as number as Code));
      if (SERVER_FAULTS.has(outcome.code)) failSpan(span, codeName);
      span.end();
      log.debug(opts.logMessage, {
        method,
        ...(inv.protocol ? { protocol: inv.protocol } : {}),
        code: codeName,
        ms: Math.round(ms * 100) / 100,
        requestId: inv.requestId,
      });
      return outcome;
    };
    const outcome = (async (): Promise<Outcome> => {
      try {
        if (opts.draining()) throw new ReposearchError(ErrorCode.Unavailable, "server is shutting down");
        if (ac.signal.aborted) throw ac.signal.reason; // arrived with its deadline already spent
        const reply = await untilAborted(
          context.with(spanCtx, () => work(inv.request, ac.signal, callCtx)),
          ac.signal,
        );
        return finish({ code: grpc.status.OK, reply });
      } catch (thrown) {
        // Once aborted, the abort reason is the truth, whatever the core threw on the way out.
        const reason: unknown = ac.signal.aborted ? ac.signal.reason : thrown;
        if (reason instanceof CallCancelled) return finish({ code: grpc.status.CANCELLED, error: null });
        const err = ReposearchError.from(reason);
        if (err.code === ErrorCode.Internal) {
          // The cause (message, stack) stays here; the caller only ever sees the generic message.
          log.error(`${opts.logMessage} failed`, { method, requestId: inv.requestId, err: err.cause ?? err });
        }
        return finish({ code: err.grpcStatus, error: err });
      }
    })();
    return { cancel, outcome };
  };
}

/**
 * Search: bounds and validates the request itself (direct callers skip the REST facade's check), waits
 * for a slot of `scheduler` (when given), then searches. The slot is held until the core's work has
 * really ended, even when the caller stopped waiting earlier.
 */
export function searchWork(core: SearchCore, scheduler?: FairScheduler | null): CallWork {
  return async (request, signal, { onStage, caller }) => {
    const req = validateSearchRequest(checkRequestBounds(requestFromProto(request)));
    if (!core.ready()) throw new ReposearchError(ErrorCode.Unavailable, "no index loaded yet");
    const release = scheduler ? await scheduler.acquire(caller, signal) : null;
    try {
      return responseToProto(await core.search(req, { signal, ...(onStage ? { onStage } : {}) }));
    } finally {
      release?.();
    }
  };
}

/**
 * Similar: priced and scheduled as a search (bounds, validation, a fair-share slot), then the core's
 * `similar`. A core without it (a test double) answers INTERNAL.
 */
export function similarWork(core: SearchCore, scheduler?: FairScheduler | null): CallWork {
  return async (request, signal, { onStage, caller }) => {
    const similar = core.similar?.bind(core);
    if (!similar) throw new ReposearchError(ErrorCode.Internal, "this core does not serve Similar");
    const decoded = similarRequestFromProto(request);
    // The bounds are on the filter lists, which a similar request shares with a search.
    checkRequestBounds({ query: "", filters: decoded.filters });
    const req = validateSimilarRequest(decoded);
    if (!core.ready()) throw new ReposearchError(ErrorCode.Unavailable, "no index loaded yet");
    const release = scheduler ? await scheduler.acquire(caller, signal) : null;
    try {
      return responseToProto(await similar(req, { signal, ...(onStage ? { onStage } : {}) }));
    } finally {
      release?.();
    }
  };
}

/** GetRepository: a lookup by name, cheap enough to skip the scheduler. INTERNAL without it, as Similar. */
export function repositoryWork(core: SearchCore): CallWork {
  return async (request, signal) => {
    const repository = core.repository?.bind(core);
    if (!repository) throw new ReposearchError(ErrorCode.Internal, "this core does not serve GetRepository");
    const req = validateRepositoryRequest(repositoryRequestFromProto(request));
    if (!core.ready()) throw new ReposearchError(ErrorCode.Unavailable, "no index loaded yet");
    return repositoryToProto(await repository(req, { signal }));
  };
}

/** GetIndexStats: answers even before an index is loaded. */
export function statsWork(core: SearchCore): CallWork {
  return async () => statsToProto(await core.stats());
}
