/** The rate-limit headers of a response, and the 429 of a refused request. */
import type { Response } from "express";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { RateLimitDecision } from "./limiter.js";

export function setRateLimitHeaders(res: Response, d: RateLimitDecision): void {
  res.setHeader("X-RateLimit-Limit", String(d.limit));
  res.setHeader("X-RateLimit-Remaining", String(d.remaining));
  res.setHeader("X-RateLimit-Reset", String(d.resetUnixSeconds));
}

export function rateLimited(res: Response, d: RateLimitDecision, what: string): ReposearchError {
  setRateLimitHeaders(res, d);
  res.setHeader("Retry-After", String(Math.max(1, d.retryAfterSeconds)));
  return new ReposearchError(
    ErrorCode.RateLimitExceeded,
    `rate limit exceeded: ${d.limit} ${what} per minute; retry after ${Math.max(1, d.retryAfterSeconds)} s`,
  );
}
