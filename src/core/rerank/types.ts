/**
 * The rerank stage: a second, more expensive relevance model applied to the first stage's best
 * candidates. It is strictly optional at query time: any failure, timeout or nonsense answer leaves the
 * first-stage order in place, so a slow or broken reranker can cost latency (bounded by the timeout)
 * but never a failed search.
 */
import { performance } from "node:perf_hooks";
import { logger as rootLogger, type Logger } from "../../common/logger.js";

export interface RerankCandidate {
  readonly id: string;
  /** What the reranker reads: user and repository data, so never logged. */
  readonly text: string;
}

export interface Reranker {
  /** Names the implementation and model, e.g. "onnx:<dirname>", "http:<host>", "local:v1". */
  readonly id: string;
  /**
   * Relevance scores, one per candidate, same order; higher is more relevant. Scores are only compared
   * within one call, so their scale is the implementation's own. Rejects (with the signal's reason, or an
   * error) once `signal` aborts; implementations that cannot interrupt work in flight stop at the next
   * boundary they can (a batch, a request).
   */
  score(query: string, candidates: readonly RerankCandidate[], opts: { readonly signal: AbortSignal }): Promise<number[]>;
  /** Releases models, sockets and threads; the reranker is unusable afterwards. */
  close(): Promise<void>;
}

export interface RerankStageOptions {
  /** Budget of the whole stage, score() included from start to finish. */
  readonly timeoutMs: number;
  /** The request's own signal (client gone, request deadline); aborting it ends the stage like a timeout. */
  readonly signal?: AbortSignal;
  /** Where a fallback is reported; defaults to the "rerank" component logger. */
  readonly logger?: Logger;
}

export interface RerankStageResult {
  /** Indexes into the candidates, best first; null means "keep the first-stage order" (reranked: false). */
  readonly order: number[] | null;
  /** Stage duration in milliseconds, measured whether or not the stage succeeded. */
  readonly ms: number;
  /** Why `order` is null: a short, data-free description for logs and diagnostics. */
  readonly error?: string;
}

const stageLog = rootLogger.child({ component: "rerank" });

/**
 * Runs `reranker.score` under a deadline and turns the scores into an order. Never throws: the search
 * must answer even if the reranker hangs, throws, or returns garbage. The deadline is enforced here by
 * racing score() against the signal, so an implementation that ignores its signal (e.g. a native call
 * that cannot be interrupted) still cannot hold the request past `timeoutMs`; its late result is dropped.
 */
export async function runRerankStage(
  reranker: Reranker,
  query: string,
  candidates: readonly RerankCandidate[],
  opts: RerankStageOptions,
): Promise<RerankStageResult> {
  const started = performance.now();
  const log = opts.logger ?? stageLog;
  const fail = (error: string): RerankStageResult => {
    const ms = performance.now() - started;
    log.warn("rerank stage fell back to the first-stage order", { reranker: reranker.id, candidates: candidates.length, error, ms: Math.round(ms) });
    return { order: null, ms, error };
  };

  if (!(Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0)) return fail(`invalid timeoutMs ${opts.timeoutMs}`);
  if (opts.signal?.aborted) return fail(`aborted before start (${describeReason(opts.signal.reason)})`);
  if (candidates.length === 0) return { order: [], ms: performance.now() - started };

  // A plain timer rather than AbortSignal.timeout: that one is unref'd, so a stage whose pending work holds
  // nothing else open (a one-shot CLI search) would let the process exit before the deadline fires. This
  // timer is cleared as soon as the stage ends, so it never outlives the stage.
  const deadlineController = new AbortController();
  const deadline = deadlineController.signal;
  const timer = setTimeout(
    () => deadlineController.abort(new DOMException(`rerank stage timed out after ${opts.timeoutMs} ms`, "TimeoutError")),
    opts.timeoutMs,
  );
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  let scores: unknown;
  try {
    // score() is called inside the try: a synchronous throw must fall back too.
    scores = await Promise.race([Promise.resolve().then(() => reranker.score(query, candidates, { signal })), aborted]);
  } catch (err) {
    if (deadline.aborted) return fail(`timed out after ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) return fail(`aborted (${describeReason(opts.signal.reason)})`);
    return fail(`score failed: ${describeReason(err)}`);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
    // The race may have been won by score(); keep the losing promise from reporting an unhandled rejection.
    aborted.catch(() => {});
  }

  if (!Array.isArray(scores)) return fail(`score returned ${scores === null ? "null" : typeof scores}, expected an array`);
  if (scores.length !== candidates.length) return fail(`score returned ${scores.length} scores for ${candidates.length} candidates`);
  const bad = scores.findIndex((s: unknown) => typeof s !== "number" || !Number.isFinite(s));
  if (bad >= 0) return fail(`score ${bad} is not a finite number`);
  const s = scores as number[];
  // Array.prototype.sort is stable, so equal scores keep the first-stage order.
  const order = s.map((_, i) => i).sort((a, b) => s[b]! - s[a]!);
  return { order, ms: performance.now() - started };
}

/** An error's name and message only: messages of our own errors never quote user text. */
function describeReason(reason: unknown): string {
  if (reason instanceof Error) return reason.name === "Error" ? reason.message : `${reason.name}: ${reason.message}`;
  return String(reason);
}
