/**
 * Prometheus metrics of the search core: gRPC handling time and outcomes, per-stage latency, rerank
 * fallbacks, and the served index (version, points, age; read from engine.stats() at every scrape).
 * A core-only process exposes them on METRICS_PORT; a process running the gateway too shares its
 * registry with the gateway, whose /metrics then shows both (src/server/serve.ts).
 */
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { LATENCY_BUCKETS, STAGE_BUCKETS, counter, ensureDefaultMetrics, histogram, indexGauges, newRegistry } from "../common/metrics.js";
import type { Stage } from "./engine.js";
import type { IndexStats } from "./types.js";

/** What the gRPC server records per call. */
export interface GrpcCallMetrics {
  observeCall(service: string, method: string, code: string, seconds: number): void;
}

export type IndexStatsSource = () => Promise<Pick<IndexStats, "version" | "count" | "ageSeconds">>;

export interface CoreMetrics extends GrpcCallMetrics {
  readonly registry: Registry;
  readonly grpcHandling: Histogram<"grpc_service" | "grpc_method" | "grpc_code">;
  readonly grpcHandled: Counter<"grpc_service" | "grpc_method" | "grpc_code">;
  readonly stageDuration: Histogram<"stage">;
  readonly rerankFallbacks: Counter;
  readonly embedBatchSize: Histogram;
  readonly indexVersion: Gauge;
  readonly indexPoints: Gauge;
  readonly indexAge: Gauge;
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

  return {
    registry: reg,
    grpcHandling,
    grpcHandled,
    stageDuration,
    rerankFallbacks,
    embedBatchSize,
    indexVersion: index.version,
    indexPoints: index.points,
    indexAge: index.age,
    observeCall(service, method, code, seconds) {
      const labels = { grpc_service: service, grpc_method: method, grpc_code: code };
      grpcHandling.observe(labels, seconds);
      grpcHandled.inc(labels);
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
