/**
 * Client of the core's gRPC API (used by the REST facade). One channel per instance, reused for
 * every call. Failures come back as ReposearchError: the server's own code, message and details
 * when it answered (trailers), UNAVAILABLE / DEADLINE_EXCEEDED when the transport or the deadline
 * failed, so callers never see a raw grpc ServiceError. With `token` every call carries the core's
 * service token (`authorization: Bearer …`, auth.ts).
 */
import * as grpc from "@grpc/grpc-js";
import type * as protoLoader from "@grpc/proto-loader";
import { ConfigError, ErrorCode, ReposearchError } from "../../common/errors.js";
import type { GetRepositoryRequest, IndexStats, RepositoryCard, SearchRequest, SearchResponse, SimilarRequest } from "../types.js";
import { SearchMultiplexer } from "./multiplex.js";
import {
  SEARCH_SERVICE_NAME,
  errorFromStatus,
  loadProtos,
  repositoryFromProto,
  repositoryRequestToProto,
  requestToProto,
  responseFromProto,
  similarRequestToProto,
  statsFromProto,
} from "./convert.js";

/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
export type ServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN";

export interface CoreClientOptions {
  /** Deadline for calls that do not pass their own. Default 2000 (CORE_TIMEOUT_MS's default). */
  readonly defaultDeadlineMs?: number;
  /** Default insecure: the core is an internal service on a private network or loopback. */
  readonly credentials?: grpc.ChannelCredentials;
  /** Extra channel options, merged over the defaults below. */
  readonly channelOptions?: grpc.ChannelOptions;
  /**
   * 0 (the default): one unary Search call per search. N >= 1: searches multiplexed over N long-lived
   * SearchStream calls (src/core/grpc/multiplex.ts), much cheaper under load (docs/grpc.md). The channel
   * balances calls, so with several cores behind the address, use a few streams per core.
   */
  readonly streams?: number;
  /** With streams: age after which a stream takes no new searches and closes once idle, in ms. Default 5000. */
  readonly streamMaxAgeMs?: number;
  /** The core's service token (CORE_TOKEN), sent on every call. Absent or null: none (a core without authentication). */
  readonly token?: string | null;
}

export interface CallOptions {
  /** Time allowed for this call, in ms; sent to the server as the gRPC deadline. */
  readonly deadlineMs?: number;
  /** Cancels the call; the promise then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Extra request metadata (e.g. x-request-id). Keys must be valid gRPC metadata keys. */
  readonly metadata?: Readonly<Record<string, string>>;
}

const DEFAULT_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // Find a dead connection within ~40 s even while idle, instead of on the next call's deadline.
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.keepalive_permit_without_calls": 1,
  // Reconnect quickly after a core restart; stay under a typical deadline.
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 5_000,
  // Trees for 50 results can outgrow the 4 MiB default.
  "grpc.max_receive_message_length": 16 * 1024 * 1024,
  // Spread calls over every address the target resolves to (dns:/// of a headless Service: every core
  // pod). grpc-js's default, pick_first, would send all of them to the first address.
  "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
};

/** host:port, [ipv6]:port, or a grpc target URI (dns:, ipv4:, ipv6:, unix:). */
const HOST_PORT = /^(?:\[[0-9A-Fa-f:.%\w]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/;
const TARGET_URI = /^(?:dns:(?:\/\/[^/]*\/)?|ipv4:|ipv6:|unix:|unix-abstract:)\S+$/;

/** Fails fast on an address grpc-js would only reject later, on the first call, with a vague error. */
export function checkCoreAddress(address: string): string {
  const a = typeof address === "string" ? address.trim() : "";
  if (TARGET_URI.test(a)) return a;
  const m = HOST_PORT.exec(a);
  const port = m ? Number(m[1]) : NaN;
  if (!m || port < 1 || port > 65535) {
    throw new ConfigError([
      `CORE_ADDRESS: invalid search-core address ${JSON.stringify(address)}: expected host:port (e.g. 127.0.0.1:50051, [::1]:50051) or a gRPC target such as dns:///core:50051 or unix:/path`,
    ]);
  }
  return a;
}

/** Whether retrying the same call later (or on another replica) can succeed. */
export function isRetryableCoreError(err: unknown): boolean {
  return err instanceof ReposearchError && err.code === ErrorCode.Unavailable;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export class CoreClient {
  /** The search service's name, for `health(CoreClient.serviceName)`. */
  static readonly serviceName = SEARCH_SERVICE_NAME;

  readonly address: string;
  private readonly client: grpc.Client;
  private readonly searchService: protoLoader.ServiceDefinition;
  private readonly healthService: protoLoader.ServiceDefinition;
  private readonly defaultDeadlineMs: number;
  private readonly mux: SearchMultiplexer | null;
  /** The `authorization` metadata value, or null. */
  private readonly authorization: string | null;
  /** The method searches go through: "Search" (unary) or "SearchStream". */
  readonly searchMethod: "Search" | "SearchStream";

  constructor(address: string, opts: CoreClientOptions = {}) {
    this.address = checkCoreAddress(address);
    // Checked before the channel exists, so a bad option leaks nothing.
    const streams = opts.streams ?? 0;
    if (!Number.isInteger(streams) || streams < 0) throw new ConfigError([`streams: expected an integer >= 0 (got ${String(streams)})`]);
    const streamMaxAgeMs = opts.streamMaxAgeMs ?? 5_000;
    if (!(streamMaxAgeMs > 0)) throw new ConfigError([`streamMaxAgeMs: expected a number > 0 (got ${String(streamMaxAgeMs)})`]);
    const protos = loadProtos();
    this.searchService = protos.searchService;
    this.healthService = protos.healthService;
    this.defaultDeadlineMs = opts.defaultDeadlineMs ?? 2_000;
    this.authorization = opts.token ? `Bearer ${opts.token}` : null;
    this.client = new grpc.Client(this.address, opts.credentials ?? grpc.credentials.createInsecure(), {
      ...DEFAULT_CHANNEL_OPTIONS,
      ...opts.channelOptions,
    });
    this.mux =
      streams > 0 ? new SearchMultiplexer(this.client, this.searchService.SearchStream!, { streams, streamMaxAgeMs, authorization: this.authorization }) : null;
    this.searchMethod = this.mux ? "SearchStream" : "Search";
  }

  /** Runs one search. Rejects with ReposearchError (or the signal's reason when aborted). */
  async search(req: SearchRequest, opts: CallOptions = {}): Promise<SearchResponse> {
    if (this.mux)
      return this.mux.search(requestToProto(req), { deadlineMs: opts.deadlineMs ?? this.defaultDeadlineMs, signal: opts.signal, metadata: opts.metadata });
    const reply = await this.unary(this.searchService, "Search", requestToProto(req), opts);
    return responseFromProto(reply);
  }

  async stats(opts: CallOptions = {}): Promise<IndexStats> {
    return statsFromProto(await this.unary(this.searchService, "GetIndexStats", {}, opts));
  }

  /** Repositories like `req.repo` (always a unary call: SearchStream carries searches only). */
  async similar(req: SimilarRequest, opts: CallOptions = {}): Promise<SearchResponse> {
    return responseFromProto(await this.unary(this.searchService, "Similar", similarRequestToProto(req), opts));
  }

  /** One repository's card; NOT_FOUND for an unknown name. */
  async repository(req: GetRepositoryRequest, opts: CallOptions = {}): Promise<RepositoryCard> {
    return repositoryFromProto(await this.unary(this.searchService, "GetRepository", repositoryRequestToProto(req), opts));
  }

  /**
   * The standard health check. `service` "" asks about the server as a whole (the default),
   * "reposearch.v1.SearchService" about search. Unknown services answer SERVICE_UNKNOWN;
   * an unreachable server rejects with ReposearchError(UNAVAILABLE).
   */
  async health(service = "", opts: CallOptions = {}): Promise<ServingStatus> {
    try {
      const reply = await this.unary(this.healthService, "Check", { service }, { deadlineMs: 1_000, ...opts });
      const status = (reply as { readonly status?: unknown }).status;
      return status === "SERVING" || status === "NOT_SERVING" || status === "SERVICE_UNKNOWN" ? status : "UNKNOWN";
    } catch (err) {
      // The health service answers NOT_FOUND for a service it has no status for.
      if (err instanceof ReposearchError && err.cause instanceof Error && (err.cause as Partial<grpc.ServiceError>).code === grpc.status.NOT_FOUND) {
        return "SERVICE_UNKNOWN";
      }
      throw err;
    }
  }

  /** Resolves once the channel is connected; rejects with ReposearchError(UNAVAILABLE) after timeoutMs. */
  waitForReady(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.waitForReady(Date.now() + timeoutMs, (err) => {
        if (!err) resolve();
        else reject(new ReposearchError(ErrorCode.Unavailable, `search core at ${this.address} not reachable within ${timeoutMs} ms`, { cause: err }));
      });
    });
  }

  /** Closes the channel; calls still running fail with UNAVAILABLE. */
  close(): void {
    this.mux?.close();
    this.client.close();
  }

  private unary(service: protoLoader.ServiceDefinition, method: string, request: object, opts: CallOptions): Promise<object> {
    const def = service[method];
    if (def === undefined) return Promise.reject(new Error(`proto: method ${method} not found`));
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const metadata = new grpc.Metadata();
    if (this.authorization !== null) metadata.set("authorization", this.authorization);
    try {
      for (const [k, v] of Object.entries(opts.metadata ?? {})) metadata.set(k, v);
    } catch (err) {
      return Promise.reject(new ReposearchError(ErrorCode.Internal, "invalid call metadata", { cause: err }));
    }
    const deadlineMs = opts.deadlineMs ?? this.defaultDeadlineMs;
    return new Promise<object>((resolve, reject) => {
      let onAbort: (() => void) | undefined;
      const call = this.client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        request,
        metadata,
        { deadline: Date.now() + deadlineMs },
        (err: grpc.ServiceError | null, value?: object) => {
          if (onAbort) signal?.removeEventListener("abort", onAbort);
          if (signal?.aborted) reject(abortReason(signal));
          else if (err) reject(errorFromStatus(err));
          else if (value === undefined) reject(new ReposearchError(ErrorCode.Internal, "empty reply from the search core"));
          else resolve(value);
        },
      );
      if (signal) {
        onAbort = () => call.cancel();
        signal.addEventListener("abort", onAbort, { once: true });
      }
    });
  }
}
