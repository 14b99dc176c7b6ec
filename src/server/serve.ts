/**
 * Process assembly: the gRPC search core over the served index, the REST gateway in front of it,
 * or both in one process (the embedded default). Shutdown drains: health goes NOT_SERVING, new
 * work is refused, in-flight requests finish within SHUTDOWN_GRACE_MS, then everything closes.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { logger as rootLogger, type Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { SearchEngine } from "../core/engine.js";
import { CoreClient } from "../core/grpc/client.js";
import { startGrpcServer, type GrpcServerHandle } from "../core/grpc/server.js";
import { createReranker } from "../core/rerank/factory.js";
import { createLocalReranker } from "../core/rerank/local.js";
import { createGatewayApp } from "../gateway/app.js";
import { openAccountStore, type AccountStore } from "../gateway/accounts/index.js";
import { createLimiter, type Limiter } from "../gateway/limiter.js";
import { createQueryCache } from "../gateway/query-cache.js";
import { EmbeddedStore } from "../store/embedded/store.js";
import { openStore } from "../store/factory.js";
import type { VectorStore } from "../store/types.js";

export type Role = "all" | "core" | "gateway";

export interface CoreHandle {
  readonly engine: SearchEngine;
  readonly grpc: GrpcServerHandle;
  readonly store: VectorStore;
  close(): Promise<void>;
}

export async function startCore(config: Config, opts: { logger?: Logger; version: string }): Promise<CoreHandle> {
  const log = opts.logger ?? rootLogger.child({ component: "core" });
  const store = await openStore(config, { logger: log });
  const reranker = await createReranker(config, { local: async () => createLocalReranker() });
  const engine = SearchEngine.fromConfig(config, store, { reranker, logger: log });
  await engine.sync();
  // New versions are picked up by the store's watcher (an atomic pointer swap per request); the
  // engine follows so that a new embedder is loaded before queries need it.
  // (QdrantStore reads its version per call; the embedded store swaps segments on this watcher.)
  if (store instanceof EmbeddedStore) store.watch(config.server.indexWatchIntervalMs);
  const timer = setInterval(() => void engine.sync().catch((e: unknown) => log.warn("index sync failed", { error: (e as Error).message })), config.server.indexWatchIntervalMs);
  timer.unref();
  const grpc = await startGrpcServer({ core: engine, host: config.server.host, port: config.server.grpcPort, logger: log, shutdownGraceMs: config.server.shutdownGraceMs });
  grpc.setServing(true);
  const info = await store.info();
  log.info("search core listening", { address: grpc.address, version: info.version, count: info.count, embedderId: info.embedderId, reranker: reranker?.id ?? "off" });
  return {
    engine,
    grpc,
    store,
    async close() {
      clearInterval(timer);
      await grpc.shutdown();
      await engine.close();
      await store.close();
    },
  };
}

export interface GatewayHandle {
  readonly server: Server;
  readonly url: string;
  readonly accounts: AccountStore;
  close(): Promise<void>;
}

export async function startGateway(config: Config, opts: { logger?: Logger; version: string; coreAddress?: string }): Promise<GatewayHandle> {
  const log = opts.logger ?? rootLogger.child({ component: "gateway" });
  const core = new CoreClient(opts.coreAddress ?? config.server.coreAddress, { defaultDeadlineMs: config.server.coreTimeoutMs });
  const accounts = await openAccountStore(config);
  let limiter: Limiter | null = null;
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
    });
    const server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.server.port, config.server.host, () => resolve(s));
      s.once("error", reject);
    });
    // Keep-alive sockets must not hold shutdown open longer than the grace period.
    server.keepAliveTimeout = 5_000;
    const addr = server.address() as AddressInfo;
    const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
    const url = `http://${host}:${addr.port}`;
    log.info("REST gateway listening", { url, core: opts.coreAddress ?? config.server.coreAddress });
    return {
      server,
      url,
      accounts,
      async close() {
        await new Promise<void>((resolve) => {
          const t = setTimeout(() => {
            server.closeAllConnections();
            resolve();
          }, config.server.shutdownGraceMs);
          t.unref();
          server.close(() => {
            clearTimeout(t);
            resolve();
          });
          server.closeIdleConnections();
        });
        core.close();
        await limiter!.close();
        await accounts.close();
      },
    };
  } catch (err) {
    await limiter?.close().catch(() => {});
    await accounts.close().catch(() => {});
    core.close();
    throw err;
  }
}

export interface Running {
  readonly core: CoreHandle | null;
  readonly gateway: GatewayHandle | null;
  close(): Promise<void>;
}

/**
 * A core-only process's HTTP side: /metrics (Prometheus) and /health (200 when an index is served,
 * 503 otherwise) for orchestrators that probe over HTTP.
 */
async function startCoreHttp(config: Config, core: CoreHandle): Promise<Server> {
  const { createServer } = await import("node:http");
  const { Registry, collectDefaultMetrics, Gauge } = await import("prom-client");
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const points = new Gauge({ name: "index_points", help: "Points in the served index version", registers: [registry] });
  const age = new Gauge({ name: "index_age_seconds", help: "Seconds since the served index version was published", registers: [registry] });
  const server = createServer((req, res) => {
    void (async () => {
      if (req.url === "/metrics") {
        const s = await core.engine.stats();
        points.set(s.count);
        if (s.ageSeconds !== null) age.set(s.ageSeconds);
        res.writeHead(200, { "Content-Type": registry.contentType }).end(await registry.metrics());
      } else if (req.url === "/health") {
        const ok = core.engine.ready();
        res.writeHead(ok ? 200 : 503, { "Content-Type": "application/json" }).end(JSON.stringify({ status: ok ? "serving" : "not_serving" }));
      } else {
        res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { code: "NOT_FOUND", message: "no such path", status: 404 } }));
      }
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.server.metricsPort, config.server.host, () => resolve());
  });
  return server;
}

export async function serve(config: Config, role: Role, version: string): Promise<Running> {
  const core = role === "gateway" ? null : await startCore(config, { version });
  const coreHttp = role === "core" && core ? await startCoreHttp(config, core) : null;
  let gateway: GatewayHandle | null = null;
  try {
    gateway = role === "core" ? null : await startGateway(config, { version, ...(core ? { coreAddress: core.grpc.address } : {}) });
  } catch (err) {
    await core?.close();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    core,
    gateway,
    close() {
      // Gateway first (stop taking requests), then the core it calls.
      closing ??= (async () => {
        await gateway?.close();
        coreHttp?.close();
        await core?.close();
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
