/**
 * Prometheus metrics of the gateway. Each app gets its own registry unless one is passed in, so
 * tests and several apps in one process never collide on metric names.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export interface GatewayMetrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<"method" | "route" | "status">;
  readonly queryCacheRequests: Counter<"result">;
}

export function createGatewayMetrics(registry?: Registry): GatewayMetrics {
  const reg = registry ?? new Registry();
  // A shared registry may already carry the default metrics (registering them twice throws).
  if (!reg.getSingleMetric("process_cpu_user_seconds_total")) collectDefaultMetrics({ register: reg });
  const existingDuration = reg.getSingleMetric("http_request_duration_seconds");
  const existingCache = reg.getSingleMetric("query_cache_requests_total");
  if (existingDuration instanceof Histogram && existingCache instanceof Counter) {
    // Another app on the same registry already created them (label sets are the same by construction).
    return { registry: reg, httpDuration: existingDuration as Histogram<"method" | "route" | "status">, queryCacheRequests: existingCache as Counter<"result"> };
  }
  const httpDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "REST request duration by method, route template and status.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [reg],
  });
  const queryCacheRequests = new Counter({
    name: "query_cache_requests_total",
    help: "Query-cache lookups by result (hit or miss).",
    labelNames: ["result"] as const,
    registers: [reg],
  });
  return { registry: reg, httpDuration, queryCacheRequests };
}
