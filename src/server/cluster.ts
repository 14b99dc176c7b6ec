/**
 * Multi-process serving (node:cluster), for `reposearch serve` with SERVE_PROCESSES > 1.
 *
 * Each worker runs the whole role (core, gateway or both) on the published index; the workers share
 * the REST, gRPC and metrics ports. The primary accepts connections and hands them out: REST ones to
 * the worker holding fewest (balancer.ts; SERVE_BALANCING), the others round-robin (node:cluster).
 * The primary serves no request itself. It
 *  - holds the memory rate limiter's counters (limiter.ts), so limits count once per machine;
 *  - answers scrapes with the sum over all workers (metrics.ts), so /metrics on any worker is whole;
 *  - restarts a worker that dies, after a backoff (RESTART_POLICY);
 *  - on SIGTERM/SIGINT tells every worker to drain (each runs its own graceful close), keeps handing
 *    them connections for SHUTDOWN_DRAIN_DELAY_MS, then stops listening and waits.
 * A worker that fails before the cluster first became ready fails the whole start: that is a
 * configuration or index problem every replacement would repeat.
 */
import cluster, { type Worker } from "node:cluster";
import { logger as rootLogger, type Logger } from "../common/logger.js";
import { serveClusterMetrics } from "../common/metrics.js";
import type { Config } from "../config/config.js";
import { serveClusterLimiter } from "../gateway/limiter.js";
import { balancesConnections, ConnectionBalancer } from "./balancer.js";
import type { Role, Running } from "./serve.js";

/** Worker → primary: the worker is serving (sent once, after start-up). */
const READY = "reposearch:worker-ready";

interface ReadyMessage {
  readonly type: typeof READY;
  readonly url: string | null;
  readonly grpcAddress: string | null;
  readonly connectUrl: string | null;
  readonly coreMetricsUrl: string | null;
}

/** Restarts of crashed workers: exponential backoff, forgotten once a worker has lived `resetAfterMs`. */
export interface RestartPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly resetAfterMs: number;
}

export const RESTART_POLICY: RestartPolicy = { initialDelayMs: 1_000, maxDelayMs: 30_000, resetAfterMs: 60_000 };

/** What the primary reports once every worker is serving. */
export interface ClusterReady {
  readonly processes: number;
  readonly url: string | null;
  readonly grpcAddress: string | null;
  /** Base URL of the core's Connect port (Connect, gRPC-Web and gRPC). */
  readonly connectUrl: string | null;
  readonly coreMetricsUrl: string | null;
}

/**
 * The workers' Node flags: this process's, plus --max-semi-space-size when SERVE_SEMI_SPACE_MB asks for
 * one and neither these flags nor NODE_OPTIONS set it already (an explicit flag wins). Why: under load
 * a worker allocates about 100 MiB/s; V8's default 16 MiB semi-space means a scavenge every ~0.1 s
 * (9% of the time paused), and at 64 MiB the pauses halved and the load test's p99 fell ~15%.
 * Returns `execArgv` itself when nothing changes.
 */
export function workerExecArgv(execArgv: readonly string[], nodeOptions: string | undefined, semiSpaceMb: number): readonly string[] {
  const setsIt = (s: string): boolean => /--max[-_]semi[-_]space[-_]size/.test(s);
  if (semiSpaceMb <= 0 || execArgv.some(setsIt) || (nodeOptions !== undefined && setsIt(nodeOptions))) return execArgv;
  return [...execArgv, `--max-semi-space-size=${semiSpaceMb}`];
}

/** True in a process that should fork workers instead of serving. */
export function isClusterPrimary(config: Config): boolean {
  return config.server.processes > 1 && cluster.isPrimary;
}

/** In a worker: tells the primary this worker is serving. A no-op outside a cluster worker. */
export function reportWorkerReady(running: Running): void {
  if (!cluster.isWorker || !process.send) return;
  const msg: ReadyMessage = {
    type: READY,
    url: running.gateway?.url ?? null,
    grpcAddress: running.core?.grpc.address ?? null,
    connectUrl: running.core?.connect.url ?? null,
    coreMetricsUrl: running.coreMetricsUrl,
  };
  process.send(msg);
}

export interface ClusterOptions {
  readonly logger?: Logger;
  readonly restartPolicy?: RestartPolicy;
  /** Called once, when every first-generation worker is serving. */
  readonly onReady?: (ready: ClusterReady) => void;
}

/**
 * Runs the primary: forks `config.server.processes` workers (each re-runs this command, as a
 * worker), waits until they all serve, keeps them running, and resolves after a graceful stop on
 * SIGTERM/SIGINT. Rejects when a worker fails before the cluster was first ready.
 */
export async function runClusterPrimary(config: Config, role: Role, opts: ClusterOptions = {}): Promise<void> {
  const log = (opts.logger ?? rootLogger).child({ component: "cluster" });
  const policy = opts.restartPolicy ?? RESTART_POLICY;
  const target = config.server.processes;
  serveClusterLimiter(config);
  serveClusterMetrics();
  const execArgv = workerExecArgv(process.execArgv, process.env.NODE_OPTIONS, config.server.workerSemiSpaceMb);
  if (execArgv !== process.execArgv) cluster.setupPrimary({ execArgv: [...execArgv] });

  // The balancer listens before any worker exists, so a taken port fails the start at once.
  const balancer = balancesConnections(config, role) ? new ConnectionBalancer({ logger: log }) : null;
  let balancedUrl: string | null = null;
  if (balancer) {
    try {
      balancedUrl = await balancer.listen(config.server.port, config.server.host);
    } catch (err) {
      throw new Error(`cannot listen on ${config.server.host}:${config.server.port}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  return new Promise<void>((resolve, reject) => {
    const started = new Map<number, number>(); // live worker id → fork time
    const ready = new Set<number>();
    let firstReady = false;
    let stopping = false;
    let drainTimer: NodeJS.Timeout | undefined;
    let failed = false;
    let restartDelayMs = policy.initialDelayMs;
    const restartTimers = new Set<NodeJS.Timeout>();

    const fork = (): Worker => {
      const w = cluster.fork();
      started.set(w.id, Date.now());
      return w;
    };

    const stopAll = (why: string): void => {
      if (stopping) return;
      stopping = true;
      for (const t of restartTimers) clearTimeout(t);
      restartTimers.clear();
      log.info("stopping workers", { reason: why, workers: started.size });
      // The workers drain (health 503, `Connection: close` on every answer) while the balancer keeps
      // handing them what load balancers still send, for SHUTDOWN_DRAIN_DELAY_MS; then it stops
      // listening and tells each worker that nothing more follows (balancer.ts).
      balancer?.beginShutdown();
      for (const w of Object.values(cluster.workers ?? {})) if (w && started.has(w.id) && !w.isDead()) w.process.kill("SIGTERM");
      if (balancer) drainTimer = setTimeout(() => void balancer.close(), config.server.shutdownDrainDelayMs);
      // A worker that ignores SIGTERM past its drain and grace periods (and some margin) is killed.
      const hard = setTimeout(
        () => {
          for (const w of Object.values(cluster.workers ?? {})) if (w && !w.isDead()) w.process.kill("SIGKILL");
        },
        config.server.shutdownDrainDelayMs + config.server.shutdownGraceMs + 15_000,
      );
      hard.unref();
      maybeDone();
    };

    const maybeDone = (): void => {
      if (!stopping || started.size > 0) return;
      // No worker left to hand anything to.
      clearTimeout(drainTimer);
      void balancer?.close();
      cluster.removeListener("message", onMessage);
      cluster.removeListener("exit", onExit);
      process.removeListener("SIGINT", onSigint);
      process.removeListener("SIGTERM", onSigterm);
      log.info("all workers stopped");
      if (failed) reject(new Error("a serving process failed during start-up; see its log above"));
      else resolve();
    };

    const onMessage = (worker: Worker, msg: unknown): void => {
      if (balancer?.onMessage(worker, msg)) return;
      const m = msg as Partial<ReadyMessage> | null;
      if (m?.type !== READY) return;
      ready.add(worker.id);
      balancer?.addWorker(worker);
      log.info("worker serving", { worker: worker.id, pid: worker.process.pid });
      if (!firstReady && ready.size >= target) {
        firstReady = true;
        opts.onReady?.({
          processes: target,
          url: balancedUrl ?? m.url ?? null,
          grpcAddress: m.grpcAddress ?? null,
          connectUrl: m.connectUrl ?? null,
          coreMetricsUrl: m.coreMetricsUrl ?? null,
        });
      }
    };

    const onExit = (worker: Worker, code: number | null, signal: string | null): void => {
      const lived = Date.now() - (started.get(worker.id) ?? Date.now());
      started.delete(worker.id);
      balancer?.removeWorker(worker);
      const wasReady = ready.delete(worker.id);
      if (stopping) return maybeDone();
      if (!firstReady) {
        log.error("serving process failed during start-up", { worker: worker.id, code, signal });
        failed = true;
        return stopAll("start-up failure");
      }
      if (lived >= policy.resetAfterMs) restartDelayMs = policy.initialDelayMs;
      log.error("serving process exited; restarting it", { worker: worker.id, code, signal, wasReady, restartInMs: restartDelayMs });
      const t = setTimeout(() => {
        restartTimers.delete(t);
        if (!stopping) fork();
      }, restartDelayMs);
      restartTimers.add(t);
      restartDelayMs = Math.min(policy.maxDelayMs, restartDelayMs * 2);
    };

    const onSigint = (): void => stopAll("SIGINT");
    const onSigterm = (): void => stopAll("SIGTERM");
    cluster.on("message", onMessage);
    cluster.on("exit", onExit);
    process.on("SIGINT", onSigint);
    process.on("SIGTERM", onSigterm);
    log.info("starting serving processes", { processes: target, role, ...(balancedUrl ? { balancing: "least-connections", url: balancedUrl } : {}) });
    for (let i = 0; i < target; i++) fork();
  });
}
