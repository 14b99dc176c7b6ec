/**
 * The rate-limit headers of a response, and the 429 of a refused request.
 *
 * A search passes two limits, per IP and per account. The headers report the one that binds first,
 * so a client pacing itself by them never runs into the other: the scope with fewer requests
 * remaining, with that scope's limit and reset; on a tie, the one that resets later (until then both
 * are spent). Every other request passes only the per-IP limit and reports it.
 */
import type { Response } from "express";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { RateLimitDecision } from "./limiter.js";

/** Of the decisions that applied to one request, the one that binds first (see the module header). */
export function bindingDecision(first: RateLimitDecision, other?: RateLimitDecision): RateLimitDecision {
  if (!other) return first;
  if (other.remaining !== first.remaining) return other.remaining < first.remaining ? other : first;
  return other.resetUnixSeconds > first.resetUnixSeconds ? other : first;
}

/** The three `X-RateLimit-*` headers of a decision, as values (for callers without an express Response: operations.ts). */
export function rateLimitHeaderValues(d: RateLimitDecision): Record<string, string> {
  return { "X-RateLimit-Limit": String(d.limit), "X-RateLimit-Remaining": String(d.remaining), "X-RateLimit-Reset": String(d.resetUnixSeconds) };
}

/** What `rateLimited` sends, without a Response: the headers (Retry-After included), the seconds and the message. */
export function rateLimitRefusal(
  refusal: RateLimitDecision,
  what: string,
  other?: RateLimitDecision,
): { readonly headers: Record<string, string>; readonly retryAfterSeconds: number; readonly message: string } {
  const shown = bindingDecision(refusal, other);
  const untilShownReset = Math.ceil(shown.resetUnixSeconds - Date.now() / 1000);
  const retryAfter = Math.max(1, refusal.retryAfterSeconds, shown === refusal ? 0 : untilShownReset);
  return {
    headers: { ...rateLimitHeaderValues(shown), "Retry-After": String(retryAfter) },
    retryAfterSeconds: retryAfter,
    message: `rate limit exceeded: ${refusal.limit} ${what} per minute; retry after ${retryAfter} s`,
  };
}

export function setRateLimitHeaders(res: Response, d: RateLimitDecision): void {
  res.setHeader("X-RateLimit-Limit", String(d.limit));
  res.setHeader("X-RateLimit-Remaining", String(d.remaining));
  res.setHeader("X-RateLimit-Reset", String(d.resetUnixSeconds));
}

/**
 * The 429 for `refusal`; `other` is the decision of the other scope this request passed (the per-IP
 * one when an account limit refuses). When that one is spent too and resets later, the headers and
 * `Retry-After` are its own: retrying at the refusing scope's reset would only be refused again.
 */
export function rateLimited(res: Response, refusal: RateLimitDecision, what: string, other?: RateLimitDecision): ReposearchError {
  const r = rateLimitRefusal(refusal, what, other);
  for (const [name, value] of Object.entries(r.headers)) res.setHeader(name, value);
  return new ReposearchError(ErrorCode.RateLimitExceeded, r.message);
}
