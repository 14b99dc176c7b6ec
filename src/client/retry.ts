/**
 * When the client tries again, and after how long. The service says when to come back on 429 and 503
 * (`Retry-After`, whole seconds or an HTTP date); 500, 502 and a failed connection are retried after an
 * exponential backoff with jitter, as the contract recommends (service-spec.md §7). Anything else is
 * the caller's to fix and is never retried.
 */

/** Statuses whose answer asks the caller to come back later. */
const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);
/** Statuses of a failure a later attempt may not meet (nothing was charged: the service refunds). */
const BACKOFF_STATUSES: ReadonlySet<number> = new Set([500, 502]);

/** Base and cap of the exponential backoff, when the answer names no wait. */
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 8_000;

/**
 * Whether a failure is worth another attempt: a failed connection, or an answer whose status says so.
 * A timed-out attempt is not (the caller's time is spent), nor a malformed argument.
 */
export function isRetryable(code: string, status: number): boolean {
  if (status === 0) return code === "CONNECTION_ERROR";
  return RETRY_AFTER_STATUSES.has(status) || BACKOFF_STATUSES.has(status);
}

/**
 * `Retry-After` in whole seconds (rounded up, never negative), or null when absent or unreadable.
 * Both forms of RFC 9110 §10.2.3: delay-seconds and an HTTP date.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (!/[a-z]/i.test(v) || Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** The wait before attempt `attempt + 1` (attempt counts from 1) without a Retry-After: "equal jitter", half fixed, half random. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
