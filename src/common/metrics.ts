/**
 * Prometheus plumbing shared by every process: one registry per process (the gateway and the core
 * share it when they run together), prom-client's default process/Node.js metrics on it once, and
 * get-or-create helpers so that two components registering the same metric on one registry reuse it
 * instead of throwing. Metric definitions live with their owners: src/gateway/metrics.ts,
 * src/core/metrics.ts, src/store/embedded/serve/server.ts. docs/observability.md lists them all.
 */
import cluster from "node:cluster";
import {
  AggregatorRegistry,
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
  type Metric,
} from "prom-client";

/**
 * Request-latency buckets (seconds), dense around the objectives: core p99 30 ms, 100 ms under load,
 * the 300 ms alert threshold.
 */
export const LATENCY_BUCKETS: readonly number[] = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.3, 0.5, 1, 2.5, 5]);

/** Per-stage buckets (seconds): stages take from tens of microseconds (rank) to the rerank budget. */
export const STAGE_BUCKETS: readonly number[] = Object.freeze([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1]);

/** Adds prom-client's default metrics (process_*, nodejs_*) unless the registry already has them. */
export function ensureDefaultMetrics(registry: Registry): Registry {
  if (!registry.getSingleMetric("process_cpu_user_seconds_total")) collectDefaultMetrics({ register: registry });
  return registry;
}

/** A fresh registry carrying the default metrics. */
export function newRegistry(): Registry {
  return ensureDefaultMetrics(new Registry());
}

function existing<M>(registry: Registry, name: string, kind: abstract new (...args: never[]) => M): M | null {
  const m: Metric | undefined = registry.getSingleMetric(name);
  if (m === undefined) return null;
  if (!(m instanceof kind)) throw new Error(`metric ${name} is already registered with another type`);
  return m;
}

export function counter<T extends string = string>(registry: Registry, cfg: Omit<CounterConfiguration<T>, "registers">): Counter<T> {
  return (existing(registry, cfg.name, Counter) as Counter<T> | null) ?? new Counter<T>({ ...cfg, registers: [registry] });
}

export function gauge<T extends string = string>(registry: Registry, cfg: Omit<GaugeConfiguration<T>, "registers">): Gauge<T> {
  return (existing(registry, cfg.name, Gauge) as Gauge<T> | null) ?? new Gauge<T>({ ...cfg, registers: [registry] });
}

export function histogram<T extends string = string>(registry: Registry, cfg: Omit<HistogramConfiguration<T>, "registers">): Histogram<T> {
  return (existing(registry, cfg.name, Histogram) as Histogram<T> | null) ?? new Histogram<T>({ ...cfg, registers: [registry] });
}

/** What the index gauges read at every scrape. */
export interface IndexGaugeValues {
  /** Published version label (v000003), or null while none is. */
  readonly version: string | null;
  readonly count: number;
  /** Seconds since the version was published, or null when unknown. */
  readonly ageSeconds: number | null;
}

export interface IndexGauges {
  readonly version: Gauge;
  readonly points: Gauge;
  readonly age: Gauge;
  /** Where the gauges read from at every scrape (the latest call wins). */
  track(source: () => Promise<IndexGaugeValues>): void;
}

/** The numeric part of a version label ("v000003" → 3); 0 when there is none. */
export function versionNumber(version: string | null): number {
  const m = version === null ? null : /(\d+)/.exec(version);
  return m ? Number(m[1]) : 0;
}

/**
 * index_version, index_points and index_age_seconds, set from `source` when scraped (one read per
 * scrape serves the three). A failing source leaves the last values.
 */
export function indexGauges(registry: Registry): IndexGauges {
  let source: (() => Promise<IndexGaugeValues>) | null = null;
  let pending: Promise<IndexGaugeValues | null> | null = null;
  const read = (): Promise<IndexGaugeValues | null> => {
    if (!source) return Promise.resolve(null);
    // The registry collects all metrics concurrently: the first gauge reads, the others share it.
    pending ??= source()
      .catch(() => null)
      .finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  return {
    // Aggregated over cluster workers (SERVE_PROCESSES > 1) the laggard shows: oldest version, largest age.
    version: gauge(registry, {
      name: "index_version",
      aggregator: "min",
      help: "Numeric part of the served index version label (v000003 is 3); 0 while none is served.",
      async collect() {
        const s = await read();
        if (s) this.set(versionNumber(s.version));
      },
    }),
    points: gauge(registry, {
      name: "index_points",
      aggregator: "min",
      help: "Points (repositories) in the served index version.",
      async collect() {
        const s = await read();
        if (s) this.set(s.count);
      },
    }),
    age: gauge(registry, {
      name: "index_age_seconds",
      aggregator: "max",
      help: "Seconds since the served index version was published.",
      async collect() {
        const s = await read();
        if (s && s.ageSeconds !== null) this.set(s.ageSeconds);
      },
    }),
    track(s) {
      source = s;
    },
  };
}

// --- cluster workers ------------------------------------------------------------------------------
// With SERVE_PROCESSES > 1 every worker has its own registry, and a scrape lands on any one of them.
// The worker that gets it asks the primary, which collects every worker's registry through
// prom-client's AggregatorRegistry (counters and histograms summed, gauges by their `aggregator`)
// and sends the text back, so each scrape sees the whole machine.

const METRICS_REQUEST = "reposearch:metrics-request";
const METRICS_RESPONSE = "reposearch:metrics-response";
/** How long a worker waits for the primary's aggregate before the scrape fails. */
export const CLUSTER_METRICS_TIMEOUT_MS = 10_000;

interface MetricsRequest {
  readonly type: typeof METRICS_REQUEST;
  readonly id: number;
}
interface MetricsResponse {
  readonly type: typeof METRICS_RESPONSE;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

let joined: Registry | null = null;
let nextRequestId = 0;
const pendingScrapes = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();

/**
 * In a cluster worker: makes `registry` the one the primary aggregates (call once, at start-up,
 * before the first scrape can reach any worker). A no-op outside a cluster worker.
 */
export function joinClusterMetrics(registry: Registry): void {
  if (!cluster.isWorker || joined) return;
  joined = registry;
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker-side listener that answers the primary.
  new AggregatorRegistry();
  process.on("message", (msg: unknown) => {
    const m = msg as Partial<MetricsResponse> | null;
    if (m?.type !== METRICS_RESPONSE || typeof m.id !== "number") return;
    const p = pendingScrapes.get(m.id);
    if (!p) return;
    pendingScrapes.delete(m.id);
    clearTimeout(p.timer);
    if (typeof m.text === "string") p.resolve(m.text);
    else p.reject(new Error(`cluster metrics: ${m.error ?? "no text"}`));
  });
}

/** The Prometheus text a scrape of this process should get: the whole cluster's when it is a joined worker. */
export function metricsExposition(registry: Registry): Promise<string> {
  if (!cluster.isWorker || joined !== registry || !process.send) return registry.metrics();
  const id = ++nextRequestId;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      pendingScrapes.delete(id);
      reject(new Error(`cluster metrics: the primary did not answer within ${CLUSTER_METRICS_TIMEOUT_MS} ms`));
    }, CLUSTER_METRICS_TIMEOUT_MS);
    timer.unref();
    pendingScrapes.set(id, { resolve, reject, timer });
    process.send!({ type: METRICS_REQUEST, id } satisfies MetricsRequest);
  });
}

/** In the cluster primary: answers workers' scrape requests with the aggregate over all workers. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker, msg: unknown) => {
    const m = msg as Partial<MetricsRequest> | null;
    if (m?.type !== METRICS_REQUEST || typeof m.id !== "number") return;
    const id = m.id;
    const reply = (r: Omit<MetricsResponse, "type" | "id">): void => {
      if (worker.isConnected()) worker.send({ type: METRICS_RESPONSE, id, ...r } satisfies MetricsResponse);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => reply({ error: err instanceof Error ? err.message : String(err) }),
    );
  });
}
