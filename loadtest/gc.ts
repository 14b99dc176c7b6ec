/**
 * The server's garbage-collection pauses during a load phase, read from its own /metrics:
 * prom-client's `nodejs_gc_duration_seconds` histogram (by kind: minor, major, incremental, weakcb),
 * which a cluster's /metrics sums over the workers. The load test's tail follows these pauses (a
 * full collection stalls one worker's connections at once), so the report shows them beside the
 * latencies instead of leaving them to a dashboard.
 */

export type GcTotals = Readonly<Record<string, { readonly count: number; readonly seconds: number }>>;

export interface GcSummary {
  /** Pause time of all kinds, summed over the serving processes, in seconds. */
  readonly pauseSeconds: number;
  /** pauseSeconds as a share of the processes' wall time, in % (null when the process count is unknown). */
  readonly pauseSharePct: number | null;
  /** Pauses of V8's full (mark-compact) collector, kinds `major` and `incremental` (its finalisation); one collection can pause more than once. */
  readonly fullCount: number;
  readonly byKind: GcTotals;
}

const SERIES = /^nodejs_gc_duration_seconds_(sum|count)\{([^}]*)\}\s+(\S+)/;
const KIND = /(?:^|,)kind="([^"]*)"/;

/** The per-kind totals of a Prometheus text exposition; {} when it has no GC series. */
export function parseGcTotals(text: string): GcTotals {
  const out: Record<string, { count: number; seconds: number }> = {};
  for (const line of text.split("\n")) {
    const m = SERIES.exec(line);
    if (!m) continue;
    const kind = KIND.exec(m[2]!)?.[1];
    const v = Number(m[3]);
    if (kind === undefined || !Number.isFinite(v)) continue;
    const t = (out[kind] ??= { count: 0, seconds: 0 });
    if (m[1] === "sum") t.seconds += v;
    else t.count += v;
  }
  return out;
}

/** What happened between two scrapes; null when either is missing. */
export function gcBetween(before: GcTotals | null, after: GcTotals | null, seconds: number, processes: number | null): GcSummary | null {
  if (before === null || after === null) return null;
  const byKind: Record<string, { count: number; seconds: number }> = {};
  let pause = 0;
  for (const [kind, b] of Object.entries(after)) {
    const a = before[kind] ?? { count: 0, seconds: 0 };
    // A counter that went down means the server restarted in between: the delta is meaningless.
    if (b.count < a.count || b.seconds < a.seconds) return null;
    byKind[kind] = { count: b.count - a.count, seconds: Math.round((b.seconds - a.seconds) * 1e4) / 1e4 };
    pause += b.seconds - a.seconds;
  }
  const full = (byKind.major?.count ?? 0) + (byKind.incremental?.count ?? 0);
  return {
    pauseSeconds: Math.round(pause * 1e3) / 1e3,
    pauseSharePct: processes === null || processes < 1 || seconds <= 0 ? null : Math.round((pause / (seconds * processes)) * 1000) / 10,
    fullCount: full,
    byKind,
  };
}

/** Scrapes `<baseUrl>/metrics`; null (never a throw) when it cannot, so a load run never fails on it. */
export async function scrapeGc(baseUrl: string, timeoutMs = 5_000): Promise<GcTotals | null> {
  try {
    const res = await fetch(new URL("/metrics", baseUrl), { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return null;
    const totals = parseGcTotals(await res.text());
    return Object.keys(totals).length ? totals : null;
  } catch {
    return null;
  }
}
