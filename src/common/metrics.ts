/**
 * Prometheus plumbing shared by every process: one registry per process (the gateway and the core
 * share it when they run together), prom-client's default process/Node.js metrics on it once, and
 * get-or-create helpers so that two components registering the same metric on one registry reuse it
 * instead of throwing. Metric definitions live with their owners: src/gateway/metrics.ts,
 * src/core/metrics.ts, src/store/serve/server.ts. docs/observability.md lists them all.
 */
import {
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

/** Per-stage buckets (seconds): stages take from tens of microseconds (fuse) to the rerank budget. */
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
    version: gauge(registry, {
      name: "index_version",
      help: "Numeric part of the served index version label (v000003 is 3); 0 while none is served.",
      async collect() {
        const s = await read();
        if (s) this.set(versionNumber(s.version));
      },
    }),
    points: gauge(registry, {
      name: "index_points",
      help: "Points (repositories) in the served index version.",
      async collect() {
        const s = await read();
        if (s) this.set(s.count);
      },
    }),
    age: gauge(registry, {
      name: "index_age_seconds",
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
