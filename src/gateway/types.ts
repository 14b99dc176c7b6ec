/**
 * What the REST facade needs from its collaborators, as small interfaces: the gateway is tested
 * against fakes, and the real gRPC client (src/core/grpc/client.ts) satisfies CoreApi structurally.
 */
import type { GetRepositoryRequest, IndexStats, RepositoryCard, SearchRequest, SearchResponse, SimilarRequest } from "../core/types.js";

/** gRPC health-checking states (grpc.health.v1.HealthCheckResponse.ServingStatus). */
export type CoreServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN";

/** Per-call options of a core call: `metadata` carries the trace context (traceparent) and the request id. */
export interface CoreCallOptions {
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
  readonly metadata?: Readonly<Record<string, string>>;
}

/** The part of the gRPC core client the gateway calls. */
export interface CoreApi {
  search(req: SearchRequest, opts: CoreCallOptions): Promise<SearchResponse>;
  similar(req: SimilarRequest, opts: CoreCallOptions): Promise<SearchResponse>;
  repository(req: GetRepositoryRequest, opts: CoreCallOptions): Promise<RepositoryCard>;
  /** The served index (llms.txt states its size). */
  stats(opts?: { deadlineMs?: number }): Promise<IndexStats>;
  health(): Promise<CoreServingStatus>;
  /** The gRPC method searches go through ("Search" when absent), for the client span. */
  readonly searchMethod?: string;
}

/** One backing service in the health report (service-spec.md §2.5, ServiceHealth). */
export interface ServiceHealth {
  readonly status: "up" | "down";
  readonly latencyMs: number;
  readonly error?: string | undefined;
}

export type OverallHealthStatus = "healthy" | "degraded" | "unhealthy";

/** The body of GET /health (service-spec.md §2.5). */
export interface HealthBody {
  readonly status: OverallHealthStatus;
  readonly services: { readonly db: ServiceHealth; readonly cache: ServiceHealth };
  readonly version: string;
  /** Seconds since the gateway started, one decimal. */
  readonly uptime: number;
}
