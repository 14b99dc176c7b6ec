/**
 * Process assembly: the search core over the served index (gRPC on GRPC_PORT; Connect, gRPC-Web and
 * gRPC on CONNECT_PORT), the REST gateway in front of it, or both in one process (the embedded
 * default). Shutdown drains: health goes NOT_SERVING, new work is refused, in-flight requests finish
 * within SHUTDOWN_GRACE_MS, then everything closes. The gateway loses no request a client sent
 * before the signal: it first reports /health unhealthy and closes every connection after its next
 * answer, keeps listening for SHUTDOWN_DRAIN_DELAY_MS (what is already in the kernel's accept queue
 * gets accepted and answered, and load balancers see the flip), and only then stops listening and
 * closes idle connections.
 */
import cluster from "node:cluster";
import { rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { installAsyncResourceBindFix } from "../common/async-resource-bind.js";
import { logger as rootLogger, type Logger } from "../common/logger.js";
import { gauge, joinClusterMetrics, metricsExposition, newRegistry } from "../common/metrics.js";
import { initTracing } from "../common/tracing.js";
import type { Config } from "../config/config.js";
import { SearchEngine } from "../core/engine.js";
import { LOCAL_CALLER, createCoreAuth, newLocalToken } from "../core/grpc/auth.js";
import { CoreClient } from "../core/grpc/client.js";
import { startConnectServer, type ConnectServerHandle } from "../core/grpc/connect.js";
import { FairScheduler } from "../core/grpc/scheduler.js";
import { startGrpcServer, type GrpcServerHandle } from "../core/grpc/server.js";
import { createCoreMetrics, type CoreMetrics } from "../core/metrics.js";
import { createReranker } from "../core/rerank/factory.js";
import { createLocalReranker } from "../core/rerank/local.js";
import { warmUp } from "../core/warmup.js";
import { createGatewayApp } from "../gateway/app.js";
import type { HttpEdge } from "../gateway/http-edge.js";
import { createAppServer } from "../gateway/http-server.js";
import { openAccountStore, type AccountStore } from "../gateway/accounts/index.js";
import { startReservationSweeper } from "../gateway/billing.js";
import { createLimiter, type Limiter } from "../gateway/limiter.js";
import { createGatewayMetrics, type GatewayMetrics } from "../gateway/metrics.js";
import { createQueryCache } from "../gateway/query-cache.js";
import { openStore } from "../store/factory.js";
import type { VectorStore } from "../store/types.js";
import { balancesConnections, receiveConnections } from "./balancer.js";
import { removeStaleSockets } from "./stale-sockets.js";

export type Role = "all" | "core" | "gateway";

export interface CoreHandle {
  readonly engine: SearchEngine;
  readonly grpc: GrpcServerHandle;
  /** The Connect port (Connect, gRPC-Web and gRPC over HTTP/1.1 and HTTP/2). */
  readonly connect: ConnectServerHandle;
  readonly store: VectorStore;
  /** The core's metrics (on the registry passed in, or a fresh one). */
  readonly metrics: CoreMetrics;
  /** With CORE_AUTH_TOKENS and a local socket: the private token of the gateway in this process (caller "local"). */
  readonly localToken: string | null;
  close(): Promise<void>;
}

/** `registry`: where the core's metrics go; pass the gateway's to expose both on one /metrics. */
/** `store`: serve this store instead of opening the configured one (the caller watches and closes it with the core). */
/** `localSocketPath`: also listen there (a Unix socket) for a gateway in the same process. */
export async function startCore(
  config: Config,
  opts: { logger?: Logger; version: string; registry?: Registry; store?: VectorStore; localSocketPath?: string },
): Promise<CoreHandle> {
  const log = opts.logger ?? rootLogger.child({ component: "core" });
  const metrics = createCoreMetrics(opts.registry);
  const store = opts.store ?? (await openStore(config, { logger: log }));
  const reranker = await createReranker(config, { local: async () => createLocalReranker() });
  const engine = SearchEngine.fromConfig(config, store, {
    reranker,
    logger: log,
    onStage: (stage, seconds) => metrics.observeStage(stage, seconds),
    onRerankFallback: () => metrics.rerankFallback(),
    onEmbedBatch: (size) => metrics.embedBatch(size),
  });
  metrics.trackIndex(() => engine.stats());
  await engine.sync();
  // Warm before the ports open, so that no probe or balancer sends traffic to a cold process. A core
  // that starts before the first index is published serves its first searches cold.
  if (engine.ready()) {
    const warmed = await warmUp(engine, store, { ...config.server.warmup, logger: log });
    metrics.warmupSearches.set(warmed.queries);
    metrics.warmupSeconds.set(warmed.ms / 1000);
  }
  // New versions are picked up by the store's watcher (an atomic pointer swap per request); the
  // engine follows so that a new embedder is loaded before queries need it.
  // (QdrantStore reads its version per call; the embedded store swaps segments on this watcher.)
  store.watch(config.server.indexWatchIntervalMs);
  const timer = setInterval(
    () => void engine.sync().catch((e: unknown) => log.warn("index sync failed", { error: (e as Error).message })),
    config.server.indexWatchIntervalMs,
  );
  timer.unref();
  // One authentication and one fair share for both ports (docs/threat-model.md). With tokens, the
  // gateway of this process gets a token of its own that never leaves the process.
  const limits = config.server.coreLimits;
  const localToken = config.server.coreAuthTokens.size > 0 && opts.localSocketPath ? newLocalToken() : null;
  const auth = createCoreAuth(localToken ? new Map([...config.server.coreAuthTokens, [LOCAL_CALLER, localToken]]) : config.server.coreAuthTokens);
  const scheduler = new FairScheduler(limits, metrics);
  const protection = {
    auth,
    scheduler,
    defaultDeadlineMs: config.server.coreDefaultDeadlineMs,
    maxMessageBytes: limits.maxMessageBytes,
    maxConcurrentStreams: limits.maxConcurrentStreams,
  };
  const grpc = await startGrpcServer({
    core: engine,
    host: config.server.host,
    port: config.server.grpcPort,
    logger: log,
    shutdownGraceMs: config.server.shutdownGraceMs,
    maxConnectionAgeMs: config.server.grpcMaxConnectionAgeMs,
    metrics,
    ...protection,
    streamMaxOpen: limits.streamMaxOpen,
    streamMaxBatch: limits.streamMaxBatch,
    ...(opts.localSocketPath ? { localSocketPath: opts.localSocketPath } : {}),
  });
  let connect: ConnectServerHandle;
  try {
    connect = await startConnectServer({
      core: engine,
      host: config.server.host,
      port: config.server.connectPort,
      logger: log,
      shutdownGraceMs: config.server.shutdownGraceMs,
      metrics,
      ...protection,
    });
  } catch (err) {
    clearInterval(timer);
    await grpc.shutdown();
    throw err;
  }
  grpc.setServing(true);
  const info = await store.info();
  log.info("search core listening", {
    address: grpc.address,
    connectUrl: connect.url,
    version: info.version,
    count: info.count,
    embedderId: info.embedderId,
    reranker: reranker?.id ?? "off",
    auth: auth.enabled ? "token" : "off",
  });
  return {
    engine,
    grpc,
    connect,
    store,
    metrics,
    localToken,
    async close() {
      clearInterval(timer);
      await Promise.all([grpc.shutdown(), connect.shutdown()]);
      await engine.close();
      await store.close();
    },
  };
}

export interface GatewayHandle {
  readonly server: Server;
  /** `http://host:port`, or `unix:PATH` when balanced (clients use the cluster primary's URL then). */
  readonly url: string;
  readonly accounts: AccountStore;
  readonly metrics: GatewayMetrics;
  close(): Promise<void>;
}

/** `registry`: where the gateway's metrics go (its /metrics serves the whole registry). */
/** `balanced`: take connections from the cluster primary's balancer instead of listening on PORT (src/server/balancer.ts). */
export async function startGateway(
  config: Config,
  opts: { logger?: Logger; version: string; coreAddress?: string; coreToken?: string | null; registry?: Registry; balanced?: boolean },
): Promise<GatewayHandle> {
  const log = opts.logger ?? rootLogger.child({ component: "gateway" });
  // Before the first gRPC call: without it every call's objects outlive it (src/common/async-resource-bind.ts).
  installAsyncResourceBindFix();
  const metrics = createGatewayMetrics(opts.registry);
  const core = new CoreClient(opts.coreAddress ?? config.server.coreAddress, {
    defaultDeadlineMs: config.server.coreTimeoutMs,
    streams: config.server.coreStreams,
    streamMaxAgeMs: config.server.coreStreamMaxAgeMs,
    token: opts.coreToken !== undefined ? opts.coreToken : config.server.coreToken,
  });
  const accounts = await openAccountStore(config);
  // Searches that a process which died charged but never answered are refunded before this one serves (billing.ts).
  const sweeper = startReservationSweeper({ accounts, metrics, log, ttlMs: config.gateway.reservationTtlMs });
  await sweeper.initial;
  let limiter: Limiter | null = null;
  let edge: HttpEdge | null = null;
  try {
    limiter = await createLimiter(config, log);
    const queryCache = createQueryCache(config, limiter, log);
    const app = createGatewayApp({
      core,
      accounts,
      limiter,
      config,
      logger: log,
      version: opts.version,
      startedAt: Date.now(),
      cacheHealth: () => limiter!.cacheHealth(),
      queryCache,
      metrics,
      draining: () => edge?.draining ?? false,
    });
    // Balanced (a cluster worker under SERVE_BALANCING=least-connections): the primary owns the port and
    // hands connections over IPC. The server still listens, on a private Unix socket, so node:http
    // tracks the connections (idle closing at shutdown, header and request timeouts).
    const socketPath = opts.balanced ? path.join(tmpdir(), `reposearch-gateway-${process.pid}.sock`) : null;
    if (socketPath) rmSync(socketPath, { force: true });
    const created = createAppServer(app, {
      // Waiting for the core counts as inactivity, so the socket timeout never cuts a core call short.
      limits: { ...config.gateway.http, socketTimeoutMs: socketTimeoutMs(config) },
      trustedProxies: config.gateway.trustedProxies,
      logger: log,
      metrics,
    });
    const { server, edge: httpEdge } = created;
    edge = httpEdge;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      if (socketPath) server.listen(socketPath, () => resolve());
      else server.listen(config.server.port, config.server.host, () => resolve());
    });
    const handedOff = socketPath ? receiveConnections(server) : null;
    let url: string;
    if (socketPath) {
      url = `unix:${socketPath}`;
      log.info("REST gateway taking connections from the cluster primary", { socket: socketPath, core: opts.coreAddress ?? config.server.coreAddress });
    } else {
      const addr = server.address() as AddressInfo;
      url = `http://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
      log.info("REST gateway listening", { url, core: opts.coreAddress ?? config.server.coreAddress });
    }
    let closing: Promise<void> | null = null;
    const drainMs = config.server.shutdownDrainDelayMs;
    return {
      server,
      url,
      accounts,
      metrics,
      close() {
        closing ??= (async () => {
          // 1. /health 503 and `Connection: close` on every answer; still accepting.
          httpEdge.beginDrain();
          log.info("REST gateway draining", { drainDelayMs: drainMs, graceMs: config.server.shutdownGraceMs });
          // 2. Keep accepting: connections already in the accept queue (or handed over by the primary) are answered.
          if (handedOff) await handedOff.drain(drainMs + 5_000);
          else if (drainMs > 0) await new Promise<void>((resolve) => setTimeout(resolve, drainMs));
          handedOff?.stop();
          // 3. Stop listening, close idle connections, and give requests in flight the grace period.
          await new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              server.closeAllConnections();
              for (const s of handedOff?.sockets ?? []) s.destroy();
              resolve();
            }, config.server.shutdownGraceMs);
            t.unref();
            // node:http's close callback waits for the connections its listener accepted, not handed-off ones.
            const drained = (): void => {
              if (httpEdge.connections > 0) return void setTimeout(drained, 20).unref();
              clearTimeout(t);
              resolve();
            };
            server.close(drained);
            server.closeIdleConnections();
          });
          if (socketPath) rmSync(socketPath, { force: true });
          core.close();
          sweeper.stop();
          await limiter!.close();
          await accounts.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    sweeper.stop();
    await limiter?.close().catch(() => {});
    await accounts.close().catch(() => {});
    core.close();
    throw err;
  }
}

/** HTTP_SOCKET_TIMEOUT_MS, raised to CORE_TIMEOUT_MS + 5 s when lower (0 stays off). */
export function socketTimeoutMs(config: Config): number {
  const configured = config.gateway.http.socketTimeoutMs;
  return configured === 0 ? 0 : Math.max(configured, config.server.coreTimeoutMs + 5_000);
}

export interface Running {
  readonly core: CoreHandle | null;
  readonly gateway: GatewayHandle | null;
  /** Base URL of a core-only process's /metrics and /health server (METRICS_PORT); null otherwise. */
  readonly coreMetricsUrl: string | null;
  close(): Promise<void>;
}

export interface CoreMetricsServer {
  readonly server: Server;
  /** Base URL, e.g. http://127.0.0.1:9464 (the real port when METRICS_PORT is 0). */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A core-only process's HTTP side on METRICS_PORT: /metrics (the core's registry, Prometheus text)
 * and /health (200 when an index is served, 503 otherwise) for orchestrators that probe over HTTP.
 */
export async function startCoreMetricsServer(config: Config, core: CoreHandle): Promise<CoreMetricsServer> {
  const { createServer } = await import("node:http");
  const registry = core.metrics.registry;
  const server = createServer((req, res) => {
    void (async () => {
      const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
      if (pathname === "/metrics" && (req.method === "GET" || req.method === "HEAD")) {
        res.writeHead(200, { "Content-Type": registry.contentType, "Cache-Control": "no-store" }).end(await metricsExposition(registry));
      } else if (pathname === "/health") {
        const ok = core.engine.ready();
        res.writeHead(ok ? 200 : 503, { "Content-Type": "application/json" }).end(JSON.stringify({ status: ok ? "serving" : "not_serving" }));
      } else {
        res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { code: "NOT_FOUND", message: "no such path", status: 404 } }));
      }
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.server.metricsPort, config.server.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** service.name of a process's spans: OTEL_SERVICE_NAME, else by role. */
export function tracingServiceName(config: Config, role: Role): string {
  return config.tracing.serviceName ?? (role === "all" ? "reposearch" : `reposearch-${role}`);
}

export async function serve(config: Config, role: Role, version: string, opts: { store?: VectorStore } = {}): Promise<Running> {
  // Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (a disabled handle costs nothing).
  const tracing = initTracing({ serviceName: tracingServiceName(config, role), serviceVersion: version, otlpEndpoint: config.tracing.otlpEndpoint });
  // One registry per process: with role "all" the gateway's /metrics shows the core's metrics too.
  const registry = newRegistry();
  joinClusterMetrics(registry);
  // 1 per process; a cluster's scrape sums it, so dashboards see how many workers are up.
  gauge(registry, {
    name: "serving_processes",
    help: "Serving processes behind this endpoint (1 per process, summed over a machine's cluster workers).",
    aggregator: "sum",
  }).set(1);
  let core: CoreHandle | null = null;
  let coreHttp: CoreMetricsServer | null = null;
  let gateway: GatewayHandle | null = null;
  // What a process killed before its graceful stop left in the temp dir (./stale-sockets.ts).
  removeStaleSockets(rootLogger.child({ component: "serve" }));
  try {
    // Role "all": the gateway dials its own core over a per-process Unix socket (see startGrpcServer).
    const localSocketPath = role === "all" ? path.join(tmpdir(), `reposearch-core-${process.pid}.sock`) : undefined;
    core = role === "gateway" ? null : await startCore(config, { version, registry, ...opts, ...(localSocketPath ? { localSocketPath } : {}) });
    coreHttp = role === "core" && core ? await startCoreMetricsServer(config, core) : null;
    const coreAddress = core ? (core.grpc.localAddress ?? core.grpc.address) : undefined;
    const balanced = cluster.isWorker && balancesConnections(config, role);
    gateway =
      role === "core"
        ? null
        : await startGateway(config, { version, registry, balanced, ...(coreAddress ? { coreAddress } : {}), ...(core ? { coreToken: core.localToken } : {}) });
  } catch (err) {
    await coreHttp?.close();
    await core?.close();
    await tracing.shutdown();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    core,
    gateway,
    coreMetricsUrl: coreHttp?.url ?? null,
    close() {
      // Gateway first (stop taking requests), then the core it calls; spans are flushed last.
      closing ??= (async () => {
        await gateway?.close();
        await coreHttp?.close();
        await core?.close();
        await tracing.shutdown();
      })();
      return closing;
    },
  };
}

/** Resolves on SIGINT/SIGTERM after a graceful close. */
export function closeOnSignals(running: Running, log: Logger = rootLogger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (sig: string) => {
      log.info("shutting down", { signal: sig });
      running.close().then(resolve, (e: unknown) => {
        log.error("shutdown failed", { error: (e as Error).message });
        resolve();
      });
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
}
