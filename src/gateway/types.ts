/**
 * What the REST facade needs from its collaborators, as small interfaces: the gateway is tested
 * against fakes, and the real gRPC client (src/core/grpc/client.ts) satisfies CoreApi structurally.
 */
import type { SearchRequest, SearchResponse } from "../core/types.js";

/** gRPC health-checking states (grpc.health.v1.HealthCheckResponse.ServingStatus). */
export type CoreServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN";

/** The part of the gRPC core client the gateway calls. */
export interface CoreApi {
  /** `metadata` carries the trace context (traceparent) and the request id to the core. */
  search(req: SearchRequest, opts: { deadlineMs: number; signal?: AbortSignal; metadata?: Readonly<Record<string, string>> }): Promise<SearchResponse>;
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
