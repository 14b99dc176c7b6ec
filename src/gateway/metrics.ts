/**
 * Prometheus metrics of the gateway. Each app gets its own registry unless one is passed in, so
 * tests and several apps in one process never collide on metric names; a process running the core
 * too passes its one registry, so /metrics shows both (see src/server/serve.ts).
 *
 * Labels are low-cardinality by construction: no keys, accounts or queries ever become a label.
 */
import type { Counter, Histogram, Registry } from "prom-client";
import { LATENCY_BUCKETS, counter, histogram, newRegistry, ensureDefaultMetrics } from "../common/metrics.js";

export type AuthFailureReason = "missing" | "invalid" | "forbidden" | "insufficient_credits";
export type RateLimitScope = "ip" | "account";

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<"method" | "route" | "status">;
  readonly queryCacheRequests: Counter<"result">;
  /** Requests refused by a rate limit, by scope ("ip" | "account"). */
  readonly rateLimitRejections: Counter<"scope">;
  /** Times the limiter's store could not answer (503 in fail-closed mode, the fallback cap in fail-open mode). */
  readonly rateLimiterUnavailable: Counter;
  readonly creditsDebited: Counter;
  readonly creditsRefunded: Counter;
  /** Refused searches by reason ("missing" | "invalid" | "forbidden" | "insufficient_credits"). */
  readonly authFailures: Counter<"reason">;
  /** Connections refused by a cap of the HTTP edge, by reason ("total" | "per_ip"). */
  readonly connectionsRejected: Counter<"reason">;
  /** Requests the HTTP edge answered itself (parser errors, timeouts, missing Host, Expect, CONNECT, long URLs, refused connections), by status. */
  readonly protocolErrors: Counter<"status">;
}

export function createGatewayMetrics(registry?: Registry): GatewayMetrics {
  const reg = registry ? ensureDefaultMetrics(registry) : newRegistry();
  return {
    registry: reg,
    httpDuration: histogram(reg, {
      name: "http_request_duration_seconds",
      help: "REST request duration by method, route template and status.",
      labelNames: ["method", "route", "status"] as const,
      buckets: [...LATENCY_BUCKETS],
    }),
    queryCacheRequests: counter(reg, {
      name: "query_cache_requests_total",
      help: "Query-cache lookups by result (hit or miss).",
      labelNames: ["result"] as const,
    }),
    rateLimitRejections: counter(reg, {
      name: "rate_limit_rejections_total",
      help: "Requests refused with 429 by a rate limit, by scope (ip or account).",
      labelNames: ["scope"] as const,
    }),
    rateLimiterUnavailable: counter(reg, {
      name: "rate_limiter_unavailable_total",
      help: "Rate-limit decisions the limiter's store could not make (fail-closed: 503; fail-open: the per-process cap applied).",
    }),
    creditsDebited: counter(reg, {
      name: "credits_debited_micros_total",
      help: "Credits debited for searches, in micro-dollars.",
    }),
    creditsRefunded: counter(reg, {
      name: "credits_refunded_micros_total",
      help: "Credits refunded after a search failed, in micro-dollars.",
    }),
    authFailures: counter(reg, {
      name: "auth_failures_total",
      help: "Searches refused by authentication, permission or credits, by reason (missing, invalid, forbidden, insufficient_credits).",
      labelNames: ["reason"] as const,
    }),
    connectionsRejected: counter(reg, {
      name: "http_connections_rejected_total",
      help: "Connections refused by the HTTP edge's caps (HTTP_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS_PER_IP), by reason (total or per_ip).",
      labelNames: ["reason"] as const,
    }),
    protocolErrors: counter(reg, {
      name: "http_protocol_errors_total",
      help: "Answers of the HTTP edge itself, before any route: parser errors, header and body timeouts, missing Host, Expect, CONNECT, long URLs, refused connections; by status.",
      labelNames: ["status"] as const,
    }),
  };
}
