/**
 * A closed-loop HTTP load generator on node:http: N "connections", each a loop that sends one search,
 * waits for the whole response and sends the next (no think time), over keep-alive sockets. Every
 * latency is kept (a growable Float64Array, sorted at the end), with status counts and errors.
 * Phases change the number of loops without stopping the others (a spike adds loops, the recovery
 * retires them), and a request counts towards the phase in which it started.
 *
 * Closed loop means a slow server also slows the arrival rate (coordinated omission): the latencies
 * are those of requests that were sent, and RPS is what N agents waiting on answers achieve.
 */
import http from "node:http";
import { validateResponse } from "../src/gateway/validation.js";

export interface Phase {
  readonly label: string;
  readonly connections: number;
  readonly seconds: number;
  /** false: a warm-up; nothing is recorded. */
  readonly record: boolean;
}

export interface Target {
  readonly baseUrl: string;
  readonly apiKey: string;
}

/** A growable list of latencies in ms. */
export class Latencies {
  private buf = new Float64Array(1 << 14);
  length = 0;
  push(ms: number): void {
    if (this.length === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = ms;
  }
  /** The values, sorted ascending (a copy). */
  sorted(): Float64Array {
    return this.buf.slice(0, this.length).sort();
  }
  static concat(parts: readonly Latencies[]): Latencies {
    const out = new Latencies();
    for (const p of parts) for (let i = 0; i < p.length; i++) out.push(p.buf[i]!);
    return out;
  }
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface PhaseRecord {
  readonly label: string;
  readonly connections: number;
  /** Wall time of the phase (for the last phase, until the last in-flight request finished). */
  seconds: number;
  /** HTTP status → count. */
  readonly statuses: Record<string, number>;
  /** Network error or timeout (no response) → count. */
  readonly errors: Record<string, number>;
  /** Sampled 200 bodies that failed the SearchResponse schema. */
  invalidBodies: number;
  sampledBodies: number;
  /** Requests per mix entry (sent). */
  readonly byMix: Record<string, number>;
  /** Latencies of the answered requests, per mix entry (all of them together: the phase's latencies). */
  readonly mixLatencies: Record<string, Latencies>;
}

export interface LoadRequest {
  readonly mix: string;
  readonly body: Buffer;
}

export interface RunOptions {
  readonly target: Target;
  readonly requests: readonly LoadRequest[];
  readonly phases: readonly Phase[];
  readonly timeoutMs: number;
  /** Check one 200 body in this many against the SearchResponse schema (0 = never). */
  readonly sampleEvery: number;
  /** Called at each phase boundary (start of phase i, or i = phases.length at the end), for CPU snapshots. */
  readonly onBoundary?: (i: number) => void;
}

type Outcome = { readonly status: number; readonly body: Buffer | null } | { readonly error: string };

function send(agent: http.Agent, url: URL, apiKey: string, body: Buffer, timeoutMs: number, keepBody: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Outcome) => {
      if (!settled) {
        settled = true;
        resolve(o);
      }
    };
    const req = http.request(
      {
        agent,
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "Content-Type": "application/json", "Content-Length": body.length, "X-API-Key": apiKey },
      },
      (res) => {
        const chunks: Buffer[] | null = keepBody ? [] : null;
        res.on("data", (c: Buffer) => chunks?.push(c));
        res.on("end", () => done({ status: res.statusCode ?? 0, body: chunks ? Buffer.concat(chunks) : null }));
        res.on("error", (e: NodeJS.ErrnoException) => done({ error: e.code ?? e.message }));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) => done({ error: e.code ?? e.message }));
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs the phases back to back and returns one record per recorded phase. */
export async function runPhases(o: RunOptions): Promise<PhaseRecord[]> {
  const url = new URL("/v1/codehost/search", o.target.baseUrl);
  const maxConn = Math.max(...o.phases.map((p) => p.connections));
  // Free sockets time out before the server's 5 s keep-alive timeout closes them under us.
  const agent = new http.Agent({ keepAlive: true, maxSockets: maxConn, timeout: 4_000 });
  const records: (PhaseRecord | null)[] = o.phases.map((p) =>
    p.record
      ? {
          label: p.label,
          connections: p.connections,
          seconds: p.seconds,
          statuses: {},
          errors: {},
          invalidBodies: 0,
          sampledBodies: 0,
          byMix: {},
          mixLatencies: {},
        }
      : null,
  );
  let phase = 0;
  let target = 0;
  let stopped = false;
  let next = 0;
  let sent = 0;
  const running: boolean[] = new Array<boolean>(maxConn).fill(false);
  const loops: Promise<void>[] = [];

  const loop = async (id: number) => {
    running[id] = true;
    try {
      while (!stopped && id < target) {
        const rec = records[phase] ?? null;
        const r = o.requests[next++ % o.requests.length]!;
        const sample = rec !== null && o.sampleEvery > 0 && ++sent % o.sampleEvery === 0;
        const t0 = performance.now();
        const out = await send(agent, url, o.target.apiKey, r.body, o.timeoutMs, sample);
        const ms = performance.now() - t0;
        if (!rec) continue;
        rec.byMix[r.mix] = (rec.byMix[r.mix] ?? 0) + 1;
        if ("error" in out) {
          rec.errors[out.error] = (rec.errors[out.error] ?? 0) + 1;
          continue;
        }
        (rec.mixLatencies[r.mix] ??= new Latencies()).push(ms);
        rec.statuses[out.status] = (rec.statuses[out.status] ?? 0) + 1;
        if (out.body && out.status === 200) {
          rec.sampledBodies++;
          let ok = false;
          try {
            ok = validateResponse("SearchResponse", JSON.parse(out.body.toString("utf8"))).valid;
          } catch {
            ok = false;
          }
          if (!ok) rec.invalidBodies++;
        }
      }
    } finally {
      running[id] = false;
    }
  };

  let t = performance.now();
  for (let i = 0; i < o.phases.length; i++) {
    const p = o.phases[i]!;
    o.onBoundary?.(i);
    const prev = i > 0 ? records[i - 1] : null;
    if (prev) prev.seconds = (performance.now() - t) / 1000;
    t = performance.now();
    phase = i;
    target = p.connections;
    for (let id = 0; id < target; id++) if (!running[id]) loops.push(loop(id));
    await sleep(p.seconds * 1000);
  }
  stopped = true;
  await Promise.all(loops);
  const last = records[o.phases.length - 1];
  if (last) last.seconds = (performance.now() - t) / 1000;
  o.onBoundary?.(o.phases.length);
  agent.destroy();
  return records.filter((r): r is PhaseRecord => r !== null);
}
