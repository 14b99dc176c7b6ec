/**
 * Prometheus metrics of the search core: gRPC handling time and outcomes, per-stage latency, rerank
 * fallbacks, and the served index (version, points, age; read from engine.stats() at every scrape).
 * A core-only process exposes them on METRICS_PORT; a process running the gateway too shares its
 * registry with the gateway, whose /metrics then shows both (src/server/serve.ts).
 *
 * Per caller (the `caller` label: a CORE_AUTH_TOKENS name, "local" or "anonymous", so the label set is
 * bounded by configuration and never holds a secret): calls by outcome, searches running and waiting,
 * time waited for a slot, searches refused by a bound. Authentication failures by port and reason.
 */
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { LATENCY_BUCKETS, STAGE_BUCKETS, counter, ensureDefaultMetrics, gauge, histogram, indexGauges, newRegistry } from "../common/metrics.js";
import type { Stage } from "./engine.js";
import type { AuthFailureReason } from "./grpc/auth.js";
import type { RejectReason, SchedulerMetrics } from "./grpc/scheduler.js";
import type { IndexStats } from "./types.js";

/** What the gRPC and Connect servers record per call. */
export interface GrpcCallMetrics {
  /** `caller`: the caller's label (auth.ts), when known. */
  observeCall(service: string, method: string, code: string, seconds: number, caller?: string): void;
  /** A call refused for its credentials. */
  authFailure?(port: "grpc" | "connect", reason: AuthFailureReason): void;
}

export type IndexStatsSource = () => Promise<Pick<IndexStats, "version" | "count" | "ageSeconds">>;

export interface CoreMetrics extends GrpcCallMetrics, SchedulerMetrics {
  readonly registry: Registry;
  readonly grpcHandling: Histogram<"grpc_service" | "grpc_method" | "grpc_code">;
  readonly grpcHandled: Counter<"grpc_service" | "grpc_method" | "grpc_code">;
  readonly stageDuration: Histogram<"stage">;
  readonly rerankFallbacks: Counter;
  readonly embedBatchSize: Histogram;
  readonly callerCalls: Counter<"caller" | "grpc_method" | "grpc_code">;
  readonly callerRunning: Gauge<"caller">;
  readonly callerQueued: Gauge<"caller">;
  readonly callerQueueWait: Histogram<"caller">;
  readonly callerRejected: Counter<"caller" | "reason">;
  readonly authFailures: Counter<"port" | "reason">;
  readonly indexVersion: Gauge;
  readonly indexPoints: Gauge;
  readonly indexAge: Gauge;
  /** The start-up warm-up (src/core/warmup.ts): its searches and how long it took. */
  readonly warmupSearches: Gauge;
  readonly warmupSeconds: Gauge;
  /** SearchEngine's onStage hook. */
  observeStage(stage: Stage, seconds: number): void;
  /** SearchEngine's onRerankFallback hook. */
  rerankFallback(): void;
  /** SearchEngine's onEmbedBatch hook: the size of one batched call to the query embedder. */
  embedBatch(size: number): void;
  /** Where the index gauges read from at every scrape (the latest call wins). */
  trackIndex(source: IndexStatsSource): void;
}

export function createCoreMetrics(registry?: Registry): CoreMetrics {
  const reg = registry ? ensureDefaultMetrics(registry) : newRegistry();
  const index = indexGauges(reg);
  const grpcHandling = histogram(reg, {
    name: "grpc_server_handling_seconds",
    help: "Time the core took to handle a gRPC call, by service, method and status code.",
    labelNames: ["grpc_service", "grpc_method", "grpc_code"] as const,
    buckets: [...LATENCY_BUCKETS],
  });
  const grpcHandled = counter(reg, {
    name: "grpc_server_handled_total",
    help: "gRPC calls completed by the core, by service, method and status code.",
    labelNames: ["grpc_service", "grpc_method", "grpc_code"] as const,
  });
  const stageDuration = histogram(reg, {
    name: "search_stage_duration_seconds",
    help: "Duration of each search stage (embed, lexical, dense, rank, rerank, evidence).",
    labelNames: ["stage"] as const,
    buckets: [...STAGE_BUCKETS],
  });
  const rerankFallbacks = counter(reg, {
    name: "rerank_fallbacks_total",
    help: "Searches whose rerank stage failed or timed out, answered in first-stage order.",
  });
  const embedBatchSize = histogram(reg, {
    name: "search_query_embed_batch_size",
    help: "Queries per call to the query embedder when searches that arrive together are embedded as one batch (not recorded for static embedders, which are never batched).",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  });
  const callerCalls = counter(reg, {
    name: "core_caller_calls_total",
    help: "SearchService calls (a search on SearchStream counts as one) by caller, method and status code.",
    labelNames: ["caller", "grpc_method", "grpc_code"] as const,
  });
  const callerRunning = gauge(reg, {
    name: "core_caller_searches_running",
    help: "Searches running in the core now, by caller.",
    labelNames: ["caller"] as const,
    aggregator: "sum",
  });
  const callerQueued = gauge(reg, {
    name: "core_caller_searches_queued",
    help: "Searches waiting for a slot of the core now, by caller.",
    labelNames: ["caller"] as const,
    aggregator: "sum",
  });
  const callerQueueWait = histogram(reg, {
    name: "core_caller_queue_wait_seconds",
    help: "Time a search waited for a slot of the core before it ran, by caller (0 when a slot was free).",
    labelNames: ["caller"] as const,
    buckets: [...LATENCY_BUCKETS],
  });
  const callerRejected = counter(reg, {
    name: "core_caller_searches_rejected_total",
    help: "Searches answered RESOURCE_EXHAUSTED by a bound of the core (queue_full, caller_queue_full, stream_full, batch_full), by caller.",
    labelNames: ["caller", "reason"] as const,
  });
  const authFailures = counter(reg, {
    name: "core_auth_failures_total",
    help: "Calls refused UNAUTHENTICATED (no or an unknown service token), by port and reason.",
    labelNames: ["port", "reason"] as const,
  });
  const warmupSearches = gauge(reg, {
    name: "core_warmup_searches",
    help: "Searches the core ran on itself at start, before it opened its ports (0: no warm-up).",
    aggregator: "sum",
  });
  const warmupSeconds = gauge(reg, {
    name: "core_warmup_seconds",
    help: "How long the start-up warm-up took.",
    aggregator: "max",
  });

  return {
    registry: reg,
    warmupSearches,
    warmupSeconds,
    callerCalls,
    callerRunning,
    callerQueued,
    callerQueueWait,
    callerRejected,
    authFailures,
    grpcHandling,
    grpcHandled,
    stageDuration,
    rerankFallbacks,
    embedBatchSize,
    indexVersion: index.version,
    indexPoints: index.points,
    indexAge: index.age,
    observeCall(service, method, code, seconds, caller) {
      const labels = { grpc_service: service, grpc_method: method, grpc_code: code };
      grpcHandling.observe(labels, seconds);
      grpcHandled.inc(labels);
      if (caller !== undefined) callerCalls.inc({ caller, grpc_method: method, grpc_code: code });
    },
    authFailure(port, reason) {
      authFailures.inc({ port, reason });
    },
    started(caller, waitSeconds) {
      callerQueueWait.observe({ caller }, waitSeconds);
    },
    running(caller, delta) {
      callerRunning.inc({ caller }, delta);
    },
    queued(caller, delta) {
      callerQueued.inc({ caller }, delta);
    },
    rejected(caller, reason: RejectReason) {
      callerRejected.inc({ caller, reason });
    },
    observeStage(stage, seconds) {
      stageDuration.observe({ stage }, seconds);
    },
    rerankFallback() {
      rerankFallbacks.inc();
    },
    embedBatch(size) {
      embedBatchSize.observe(size);
    },
    trackIndex(s) {
      index.track(s);
    },
  };
}
