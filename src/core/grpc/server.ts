/**
 * The core's gRPC server: reposearch.v1.SearchService over a SearchCore, the standard
 * grpc.health.v1.Health service, and server reflection (so grpcurl works without the proto).
 * The Connect port (connect.ts) serves the same service to Connect, gRPC-Web and gRPC clients.
 *
 * Every call gets an AbortSignal tied to its deadline and to client cancellation, so abandoned work
 * stops (calls.ts). Every error leaves as a ReposearchError: its public message and a gRPC status,
 * the ErrorCode (and validation details) in trailers, the cause only in the server log.
 *
 * Protection (docs/threat-model.md): an interceptor authenticates every call but health (auth.ts);
 * searches wait for a fair share of the core (scheduler.ts); a SearchStream may start at most
 * `streamMaxBatch` searches per message and hold `streamMaxOpen` open, and a connection at most
 * `maxConcurrentStreams` calls; request messages are bounded by `maxMessageBytes`. What is beyond a
 * bound is answered RESOURCE_EXHAUSTED, search by search.
 */
import * as grpc from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { chmodSync, rmSync } from "node:fs";
import { HealthImplementation, type ServingStatus } from "grpc-health-check";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { Logger } from "../../common/logger.js";
import type { GrpcCallMetrics } from "../metrics.js";
import type { SearchCore } from "../types.js";
import { assertAuthAllowed, authInterceptor, callerOf, createCoreAuth, type CoreAuth } from "./auth.js";
import { callRunner, repositoryWork, searchWork, similarWork, statsWork, type CallWork } from "./calls.js";
import { SEARCH_SERVICE_NAME, errorToProto, errorToStatus, loadProtos, streamRequestFromProto, type StreamStart } from "./convert.js";
import { Outbox } from "./outbox.js";
import type { FairScheduler } from "./scheduler.js";

export interface GrpcServerOptions {
  readonly core: SearchCore;
  /** Interface to bind (e.g. "127.0.0.1", "0.0.0.0", "::"). */
  readonly host: string;
  /** Port to bind; 0 picks a free one (read it back from the handle). */
  readonly port: number;
  readonly logger: Logger;
  /** How long shutdown waits for in-flight calls before cutting connections. */
  readonly shutdownGraceMs: number;
  /**
   * Close each connection after this long (GOAWAY, then calls in flight get shutdownGraceMs), so
   * clients re-resolve and reach replicas added since they connected. 0 or absent = never.
   */
  readonly maxConnectionAgeMs?: number;
  /** How often health is re-derived from core.ready(). Default 1000. */
  readonly healthPollMs?: number;
  /** Records every SearchService call (grpc_server_handling_seconds, grpc_server_handled_total). */
  readonly metrics?: GrpcCallMetrics;
  /**
   * Also listen on this Unix socket (a path): the gateway in the same process dials it, which skips
   * TCP and, with several serving processes sharing the TCP port, keeps each gateway on its own core.
   * An existing file at the path is replaced; the socket is made accessible to this user only.
   */
  readonly localSocketPath?: string;
  /** Who may call (auth.ts). Absent: no authentication, which only a loopback `host` allows. */
  readonly auth?: CoreAuth;
  /** Admission and fair share of searches, shared with the Connect port (scheduler.ts). Absent: searches start at once. */
  readonly scheduler?: FairScheduler | null;
  /** Deadline of a call (or stream search) without one, in ms. Absent: none. */
  readonly defaultDeadlineMs?: number;
  /** Largest request message, in bytes (grpc-js's default: 4 MiB). */
  readonly maxMessageBytes?: number;
  /** Calls (HTTP/2 streams) one connection may have open. Absent: grpc-js's default (unbounded). */
  readonly maxConcurrentStreams?: number;
  /** Searches open on one SearchStream (running or waiting). Absent: unbounded. */
  readonly streamMaxOpen?: number;
  /** Searches one SearchStream message may start. Absent: unbounded. */
  readonly streamMaxBatch?: number;
}

export interface GrpcServerHandle {
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;
  /** `host:port` a client can dial. */
  readonly address: string;
  /** `unix:PATH` when localSocketPath was given, else null. */
  readonly localAddress: string | null;
  /**
   * Operator switch for health. false: NOT_SERVING whatever the core says (drain); true: SERVING as
   * soon as core.ready() (re-evaluated now, then on every poll). Ignored once shutdown has started.
   */
  setServing(serving: boolean): void;
  /** NOT_SERVING at once, stop accepting calls, wait up to shutdownGraceMs, then force. Idempotent. */
  shutdown(): Promise<void>;
}

function firstString(values: grpc.MetadataValue[]): string | undefined {
  const v = values[0];
  return typeof v === "string" ? v : undefined;
}

function formatAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

export async function startGrpcServer(opts: GrpcServerOptions): Promise<GrpcServerHandle> {
  const { core, logger } = opts;
  const log = logger.child({ component: "grpc" });
  const auth = opts.auth ?? createCoreAuth(new Map());
  assertAuthAllowed(auth, opts.host, "gRPC server");
  const protos = loadProtos();
  const maxAgeMs = opts.maxConnectionAgeMs ?? 0;
  const scheduler = opts.scheduler ?? null;
  const streamMaxOpen = opts.streamMaxOpen ?? Infinity;
  const streamMaxBatch = opts.streamMaxBatch ?? Infinity;
  const server = new grpc.Server({
    // Pings from the server find dead peers on long-idle connections (the gateway keeps one channel).
    "grpc.keepalive_time_ms": 60_000,
    "grpc.keepalive_timeout_ms": 20_000,
    ...(maxAgeMs > 0 ? { "grpc.max_connection_age_ms": maxAgeMs, "grpc.max_connection_age_grace_ms": opts.shutdownGraceMs } : {}),
    ...(opts.maxMessageBytes !== undefined ? { "grpc.max_receive_message_length": opts.maxMessageBytes } : {}),
    ...(opts.maxConcurrentStreams !== undefined ? { "grpc.max_concurrent_streams": opts.maxConcurrentStreams } : {}),
    interceptors: [authInterceptor(auth, (reason) => opts.metrics?.authFailure?.("grpc", reason))],
  });

  // --- health -------------------------------------------------------------------------------
  const health = new HealthImplementation({ "": "NOT_SERVING", [SEARCH_SERVICE_NAME]: "NOT_SERVING" });
  let operatorServing = true;
  let draining = false;
  let current: ServingStatus = "NOT_SERVING";
  const publish = (status: ServingStatus): void => {
    if (status === current) return;
    current = status;
    health.setStatus("", status);
    health.setStatus(SEARCH_SERVICE_NAME, status);
    log.info("health status", { status });
  };
  const evaluate = (): void => {
    let ready = false;
    try {
      ready = core.ready();
    } catch (err) {
      log.error("core.ready() threw", { err });
    }
    publish(!draining && operatorServing && ready ? "SERVING" : "NOT_SERVING");
  };
  const poll = setInterval(evaluate, opts.healthPollMs ?? 1000);
  poll.unref();

  // --- calls --------------------------------------------------------------------------------
  /** Runs one call of the search service: a unary call, or one search on a SearchStream (calls.ts). */
  const invoke = callRunner({
    system: "grpc",
    logger: log,
    logMessage: "grpc call",
    metrics: opts.metrics,
    draining: () => draining,
    defaultDeadlineMs: opts.defaultDeadlineMs,
  });

  const unary = (method: string, work: CallWork): grpc.handleUnaryCall<object, object> => {
    return (call, callback) => {
      const deadline = call.getDeadline();
      const requestIdValue = call.metadata.get("x-request-id")[0];
      const { cancel, outcome } = invoke(
        {
          method,
          request: call.request,
          traceparent: firstString(call.metadata.get("traceparent")),
          tracestate: firstString(call.metadata.get("tracestate")),
          requestId: typeof requestIdValue === "string" ? requestIdValue : undefined,
          deadline: deadline instanceof Date ? deadline.getTime() : deadline,
          caller: callerOf(call.metadata, call.getPeer()),
        },
        work,
      );
      call.on("cancelled", cancel);
      void outcome.then((o) => {
        if ("reply" in o) callback(null, o.reply);
        else if (o.error === null) callback({ code: grpc.status.CANCELLED, details: "cancelled" });
        else callback(errorToStatus(o.error));
      });
    };
  };

  const search = searchWork(core, scheduler);

  /** Open SearchStreams: shutdown ends each one as soon as nothing is open on it. */
  const streams = new Set<{ readonly endIfIdle: () => void }>();

  /**
   * Many searches on one stream; see SearchStream in proto/reposearch/v1/search.proto. Outcomes go out
   * in batches (outbox.ts): those that finish in the same turn, or while a message is being written,
   * share the next message.
   */
  const searchStream: grpc.handleBidiStreamingCall<object, object> = (call) => {
    const caller = callerOf(call.metadata, call.getPeer());
    const open = new Map<number, () => void>();
    let halfClosed = false;
    let ended = false;
    const end = (status?: { code: grpc.status; details: string }): void => {
      if (ended) return;
      ended = true;
      streams.delete(stream);
      if (status) {
        for (const cancel of open.values()) cancel();
        call.emit("error", status);
      } else call.end();
    };
    const outbox = new Outbox<object>(
      (outcomes, written) => {
        if (ended) written();
        else call.write({ outcomes }, written);
      },
      () => stream.endIfIdle(),
    );
    const stream = {
      endIfIdle: (): void => {
        if ((halfClosed || draining) && open.size === 0 && outbox.empty) end();
      },
    };
    streams.add(stream);
    const start = (item: StreamStart): void => {
      const { id, metadata } = item;
      const running = invoke(
        {
          method: "SearchStream",
          request: item.request,
          traceparent: metadata.traceparent,
          tracestate: metadata.tracestate,
          requestId: metadata["x-request-id"],
          deadline: item.timeoutMs === undefined ? Infinity : Date.now() + item.timeoutMs,
          caller,
        },
        search,
      );
      open.set(id, running.cancel);
      void running.outcome.then((o) => {
        open.delete(id);
        if (ended) return;
        outbox.push("reply" in o ? { id, response: o.reply } : { id, error: errorToProto(o.error) });
      });
    };
    call.on("data", (msg: unknown) => {
      if (ended) return;
      let batch: ReturnType<typeof streamRequestFromProto>;
      try {
        batch = streamRequestFromProto(msg);
        const ids = new Set<number>();
        for (const { id } of batch.searches) {
          if (open.has(id) || ids.has(id)) throw new ReposearchError(ErrorCode.ValidationError, `search id ${id} is already open on this stream`);
          ids.add(id);
        }
      } catch (err) {
        end({ code: grpc.status.INVALID_ARGUMENT, details: ReposearchError.from(err).message });
        return;
      }
      batch.searches.forEach((item, i) => {
        // Beyond a cap the search is answered at once and never opened: the rest of the stream goes on.
        const refused = i >= streamMaxBatch ? "batch_full" : open.size >= streamMaxOpen ? "stream_full" : null;
        if (refused === null) return start(item);
        const err = scheduler?.refuse(caller.label, refused) ?? new ReposearchError(ErrorCode.RateLimitExceeded, "too many searches; retry later");
        outbox.push({ id: item.id, error: errorToProto(err) });
      });
      for (const id of batch.cancel) open.get(id)?.();
    });
    call.on("end", () => {
      halfClosed = true;
      stream.endIfIdle();
    });
    // The client went away (reset, transport loss): stop the work, nobody reads the answers.
    call.on("cancelled", () => {
      ended = true;
      streams.delete(stream);
      for (const cancel of open.values()) cancel();
    });
    call.on("error", () => {
      // A transport error on the read side; 'cancelled' follows and stops the work.
    });
  };

  server.addService(protos.searchService, {
    Search: unary("Search", search),
    SearchStream: searchStream,
    GetIndexStats: unary("GetIndexStats", statsWork(core)),
    Similar: unary("Similar", similarWork(core, scheduler)),
    GetRepository: unary("GetRepository", repositoryWork(core)),
  });
  health.addToServer(server);
  new ReflectionService(protos.reflectionPackage).addToServer(server);

  // --- bind ---------------------------------------------------------------------------------
  /** Binds one more target; on failure the server is torn down and the error names the target. */
  const bind = async (target: string): Promise<number> => {
    try {
      return await new Promise<number>((resolve, reject) => {
        server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, boundPort) => (err ? reject(err) : resolve(boundPort)));
      });
    } catch (err) {
      clearInterval(poll);
      server.forceShutdown();
      throw new Error(`gRPC server could not bind ${target}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  };
  const port = await bind(formatAddress(opts.host, opts.port));
  const address = formatAddress(opts.host, port);
  let localAddress: string | null = null;
  if (opts.localSocketPath) {
    rmSync(opts.localSocketPath, { force: true });
    localAddress = `unix:${opts.localSocketPath}`;
    await bind(localAddress);
    // Only this user may connect (the socket lives in the shared temp dir).
    chmodSync(opts.localSocketPath, 0o600);
  }
  evaluate();
  log.info("gRPC server listening", { address, ...(localAddress ? { localAddress } : {}) });

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= (async () => {
      draining = true;
      for (const stream of [...streams]) stream.endIfIdle();
      clearInterval(poll);
      publish("NOT_SERVING");
      log.info("gRPC server shutting down", { graceMs: opts.shutdownGraceMs });
      let graceTimer: NodeJS.Timeout | undefined;
      const graceful = await new Promise<boolean>((resolve) => {
        graceTimer = setTimeout(() => resolve(false), opts.shutdownGraceMs);
        graceTimer.unref();
        server.tryShutdown(() => resolve(true));
      });
      if (graceTimer) clearTimeout(graceTimer);
      if (!graceful) {
        log.warn("gRPC shutdown grace expired; closing remaining calls", { graceMs: opts.shutdownGraceMs });
        server.forceShutdown();
      }
      if (opts.localSocketPath) rmSync(opts.localSocketPath, { force: true });
      log.info("gRPC server stopped");
    })();
    return shutdownPromise;
  };

  return {
    port,
    address,
    localAddress,
    setServing(serving: boolean): void {
      operatorServing = serving;
      evaluate();
    },
    shutdown,
  };
}
