/**
 * `npm run loadtest`: the k6 scenarios (loadtest/k6) under Node, for machines without k6.
 *
 *   node dist/loadtest/runner.js [--scenario smoke,load] [--duration S] [--connections N] [--warmup S]
 *        [--data-dir DIR] [--base-url URL --api-key KEY [--server-pid PID] [--server-processes N]]
 *        [--ceiling-seconds 10 | --no-ceiling] [--out results/loadtest.json]
 *
 * Without --base-url it starts `reposearch serve` on DATA_DIR's published index in a child process
 * (throw-away ledger, rate limits raised, query cache off, default SERVE_PROCESSES: see server.ts)
 * and measures the CPU of it and its workers from /proc. The generator (loadgen.ts) runs here. After
 * the scenarios, with the server stopped, it measures the transport ceiling (transport.ts) and the
 * embedding-only ceiling (ceiling.ts), and reports sustained search RPS as a fraction of both (of the
 * embedding ceiling with one thread per serving process). Markdown table on stdout, JSON to --out.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { IndexDir } from "../src/store/embedded/writer.js";
import { indexEmbedderId, multiThreadCeiling, singleThreadCeiling, type CeilingResult } from "./ceiling.js";
import { Latencies, percentile, runPhases, type LoadRequest, type Phase, type PhaseRecord, type Target } from "./loadgen.js";
import { buildRequests, DEFAULT_MIX_PATH, DEFAULT_QUERIES_PATH, loadMix, loadMixQueries } from "./mix.js";
import { transportCeiling, type TransportCeiling } from "./transport.js";
import { gcBetween, scrapeGc, type GcSummary, type GcTotals } from "./gc.js";
import {
  killLiveServers,
  machineTicks,
  procTreeCpuSeconds,
  procTreeRssMb,
  startChildServer,
  stealPctBetween,
  type ChildServer,
  type MachineTicks,
} from "./server.js";

export const SCENARIOS = ["smoke", "load", "stress", "spike", "soak"] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** The targets the load scenario is judged against (README "Load tests"). */
export const TARGETS = { p99Ms: 100, errors: 0, ceilingRatio: 0.7 } as const;

/** A scenario's phases (without warm-up); `duration` / `connections` override the defaults. */
export function scenarioPhases(name: ScenarioName, duration?: number, connections?: number): Phase[] {
  const one = (conn: number, secs: number): Phase[] => [{ label: name, connections: connections ?? conn, seconds: duration ?? secs, record: true }];
  switch (name) {
    case "smoke":
      return one(1, 10);
    case "load":
      return one(50, 60);
    case "stress":
      return one(100, 30);
    case "soak":
      return one(25, 3600);
    case "spike": {
      // Baseline, a sudden jump to the peak (no ramp), then recovery at the baseline.
      const peak = connections ?? 100;
      const base = Math.max(1, Math.round(peak / 10));
      const third = (duration ?? 30) / 3;
      return [
        { label: `spike: baseline`, connections: base, seconds: third, record: true },
        { label: `spike: peak`, connections: peak, seconds: third, record: true },
        { label: `spike: recovery`, connections: base, seconds: third, record: true },
      ];
    }
  }
}

export interface Summary {
  readonly label: string;
  readonly connections: number | string;
  readonly seconds: number;
  /** Sent: responses plus requests that got none. */
  readonly requests: number;
  readonly ok2xx: number;
  /** 2xx responses per second. */
  readonly rps: number;
  readonly latencyMs: {
    readonly min: number;
    readonly p50: number;
    readonly p90: number;
    readonly p95: number;
    readonly p99: number;
    readonly max: number;
    readonly mean: number;
  };
  readonly statuses: Record<string, number>;
  readonly non2xx: number;
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  readonly sampledBodies: number;
  readonly invalidBodies: number;
  /** Server process CPU, % of one core (null when not measured). */
  readonly serverCpuPct: number | null;
  /**
   * Server CPU per answered request, in ms (null when not measured or nothing was answered). On a
   * machine whose speed drifts, builds compare better by this than by RPS alone.
   */
  readonly serverCpuMsPerRequest: number | null;
  /** This process (the load generator) CPU, % of one core. */
  readonly loadgenCpuPct: number;
  /** The server's GC pauses during the phase, from its /metrics (null when they could not be read). */
  readonly gc: GcSummary | null;
  /**
   * Share (%) of the machine's CPU time taken by the hypervisor for other guests during the phase
   * (/proc/stat steal); null off Linux. On shared VMs it tells a slow phase of the host from a slow build.
   */
  readonly stealPct: number | null;
  readonly byMix: Record<string, number>;
  /**
   * Per mix entry: answered requests, their p50 and p99, and how many of the slowest 1% of all
   * answered requests (those above the overall p99) it holds, so a tail made by one query shape shows.
   */
  readonly latencyByMix: Record<string, MixLatency>;
}

export interface MixLatency {
  readonly answered: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Of the requests slower than the overall p99, the share (%) that came from this entry. */
  readonly slowestSharePct: number;
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

function sumInto(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

export function summarize(
  label: string,
  recs: readonly PhaseRecord[],
  serverCpuS: number | null,
  loadgenCpuS: number,
  gc: GcSummary | null = null,
  stealPct: number | null = null,
): Summary {
  const seconds = recs.reduce((s, r) => s + r.seconds, 0);
  const lat = Latencies.concat(recs.flatMap((r) => Object.values(r.mixLatencies))).sorted();
  const statuses: Record<string, number> = {};
  const errorKinds: Record<string, number> = {};
  const byMix: Record<string, number> = {};
  for (const r of recs) {
    sumInto(statuses, r.statuses);
    sumInto(errorKinds, r.errors);
    sumInto(byMix, r.byMix);
  }
  const ok2xx = Object.entries(statuses).reduce((s, [k, v]) => s + (k.startsWith("2") ? v : 0), 0);
  const responses = Object.values(statuses).reduce((s, v) => s + v, 0);
  const errors = Object.values(errorKinds).reduce((s, v) => s + v, 0);
  let mean = 0;
  for (let i = 0; i < lat.length; i++) mean += lat[i]!;
  mean = lat.length ? mean / lat.length : NaN;
  const conns = [...new Set(recs.map((r) => r.connections))];
  return {
    label,
    connections: conns.length === 1 ? conns[0]! : conns.join(" → "),
    seconds: r3(seconds),
    requests: responses + errors,
    ok2xx,
    rps: r1(ok2xx / seconds),
    latencyMs: {
      min: r3(lat[0] ?? NaN),
      p50: r3(percentile(lat, 50)),
      p90: r3(percentile(lat, 90)),
      p95: r3(percentile(lat, 95)),
      p99: r3(percentile(lat, 99)),
      max: r3(lat[lat.length - 1] ?? NaN),
      mean: r3(mean),
    },
    statuses,
    non2xx: responses - ok2xx,
    errors,
    errorKinds,
    sampledBodies: recs.reduce((s, r) => s + r.sampledBodies, 0),
    invalidBodies: recs.reduce((s, r) => s + r.invalidBodies, 0),
    serverCpuPct: serverCpuS === null ? null : r1((serverCpuS / seconds) * 100),
    serverCpuMsPerRequest: serverCpuS === null || responses === 0 ? null : r3((serverCpuS * 1000) / responses),
    loadgenCpuPct: r1((loadgenCpuS / seconds) * 100),
    gc,
    stealPct,
    byMix,
    latencyByMix: latencyByMix(recs, percentile(lat, 99)),
  };
}

/** See Summary.latencyByMix. Entries sorted by their share of the tail, then name. */
export function latencyByMix(recs: readonly PhaseRecord[], overallP99: number): Record<string, MixLatency> {
  const names = [...new Set(recs.flatMap((r) => Object.keys(r.mixLatencies)))];
  const rows = names.map((name) => {
    const lat = Latencies.concat(recs.map((r) => r.mixLatencies[name] ?? new Latencies())).sorted();
    let slow = 0;
    for (let i = lat.length - 1; i >= 0 && lat[i]! > overallP99; i--) slow++;
    return { name, lat, slow };
  });
  const slowTotal = rows.reduce((s, r) => s + r.slow, 0);
  rows.sort((a, b) => b.slow - a.slow || (a.name < b.name ? -1 : 1));
  const out: Record<string, MixLatency> = {};
  for (const { name, lat, slow } of rows) {
    out[name] = {
      answered: lat.length,
      p50Ms: r3(percentile(lat, 50)),
      p99Ms: r3(percentile(lat, 99)),
      slowestSharePct: slowTotal === 0 ? 0 : r1((slow / slowTotal) * 100),
    };
  }
  return out;
}

export function markdownTable(rows: readonly Summary[]): string {
  const f = (x: number | null) => (x === null || Number.isNaN(x) ? "–" : String(x));
  const lines = [
    "| scenario | connections | duration s | requests | RPS (2xx/s) | p50 ms | p95 ms | p99 ms | max ms | errors | non-2xx | server CPU % | server CPU ms/request | server GC pause % | full-GC pauses | loadgen CPU % | steal % |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const s of rows) {
    const l = s.latencyMs;
    lines.push(
      `| ${s.label} | ${s.connections} | ${r1(s.seconds)} | ${s.requests} | ${s.rps} | ${r1(l.p50)} | ${r1(l.p95)} | ${r1(l.p99)} | ${r1(l.max)} | ${s.errors} | ${s.non2xx} | ${f(s.serverCpuPct)} | ${f(s.serverCpuMsPerRequest)} | ${f(s.gc?.pauseSharePct ?? null)} | ${f(s.gc?.fullCount ?? null)} | ${f(s.loadgenCpuPct)} | ${f(s.stealPct)} |`,
    );
  }
  return lines.join("\n");
}

export function mixTable(s: Summary): string {
  const lines = ["| mix entry | answered | p50 ms | p99 ms | tail share % |", "|---|---:|---:|---:|---:|"];
  for (const [name, m] of Object.entries(s.latencyByMix)) lines.push(`| ${name} | ${m.answered} | ${r1(m.p50Ms)} | ${r1(m.p99Ms)} | ${m.slowestSharePct} |`);
  return lines.join("\n");
}

function parseScenarios(v: string | undefined): ScenarioName[] {
  const names = (v ?? "smoke,load")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names)
    if (!(SCENARIOS as readonly string[]).includes(n))
      throw new Error(`--scenario: unknown ${JSON.stringify(n)} (one of ${SCENARIOS.join(", ")}, or a comma list)`);
  return names as ScenarioName[];
}

function num(flag: string, v: string | undefined, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${flag} must be a number ≥ ${min} (got ${JSON.stringify(v)})`);
  return n;
}

function gitCommit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: projectRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

function indexInfo(dataDir: string): Record<string, unknown> | null {
  try {
    const dir = new IndexDir(dataDir);
    const label = (JSON.parse(readFileSync(dir.currentFile, "utf8")) as { version: string }).version;
    const m = JSON.parse(readFileSync(path.join(dir.versionDir(label), "manifest.json"), "utf8")) as Record<string, unknown>;
    return { version: m.version, count: m.count, dims: m.dims, embedderId: m.embedderId, createdAt: m.createdAt };
  } catch {
    return null;
  }
}

/** One search before the run; returns its 200 body (the transport ceiling answers with it). */
async function preflight(target: Target, body: Buffer): Promise<Buffer> {
  const res = await fetch(new URL("/v1/codehost/search", target.baseUrl), {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-API-Key": target.apiKey },
    body,
  });
  const text = await res.text();
  if (res.status === 200) return Buffer.from(text);
  const hint =
    res.status === 429
      ? " (the server's rate limits are in the way: run it with RATE_LIMIT_IP_PER_MINUTE and RATE_LIMIT_ACCOUNT_PER_MINUTE raised, e.g. 1000000000)"
      : res.status === 401
        ? " (check --api-key / API_KEY)"
        : "";
  throw new Error(`pre-flight search got ${res.status}${hint}: ${text.slice(0, 300)}`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: "string" },
      duration: { type: "string" },
      connections: { type: "string" },
      warmup: { type: "string", default: "3" },
      "data-dir": { type: "string" },
      "base-url": { type: "string" },
      "api-key": { type: "string" },
      "server-pid": { type: "string" },
      "server-processes": { type: "string" },
      queries: { type: "string" },
      mix: { type: "string" },
      requests: { type: "string", default: "5000" },
      seed: { type: "string", default: "1" },
      "timeout-ms": { type: "string", default: "10000" },
      "sample-every": { type: "string", default: "100" },
      "ceiling-seconds": { type: "string", default: "10" },
      "no-ceiling": { type: "boolean", default: false },
      "start-timeout-ms": { type: "string", default: "300000" },
      out: { type: "string", default: path.join("results", "loadtest.json") },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(
      "usage: node dist/loadtest/runner.js [--scenario smoke,load|stress|spike|soak] [--duration S] [--connections N] [--warmup S]\n" +
        "       [--data-dir DIR] [--base-url URL --api-key KEY [--server-pid PID] [--server-processes N]] [--ceiling-seconds S | --no-ceiling] [--out FILE]",
    );
    return 0;
  }
  setLogLevel("warn");
  const scenarios = parseScenarios(values.scenario);
  const duration = num("duration", values.duration, 1);
  const connections = num("connections", values.connections, 1);
  const warmup = num("warmup", values.warmup, 0)!;
  const ceilingSeconds = num("ceiling-seconds", values["ceiling-seconds"], 1)!;
  const timeoutMs = num("timeout-ms", values["timeout-ms"], 1)!;
  const sampleEvery = num("sample-every", values["sample-every"], 0)!;
  const dataDir = path.resolve(values["data-dir"] ?? process.env.DATA_DIR ?? "./data");
  const queriesPath = path.resolve(values.queries ?? process.env.EVAL_QUERIES ?? DEFAULT_QUERIES_PATH);
  if (connections !== undefined && !Number.isInteger(connections)) throw new Error("--connections must be an integer");

  const mix = loadMix(values.mix ? path.resolve(values.mix) : DEFAULT_MIX_PATH);
  const queries = await loadMixQueries(queriesPath);
  const requests: LoadRequest[] = buildRequests(mix, queries, num("requests", values.requests, 1)!, Number(values.seed)).map((r) => ({
    mix: r.mix,
    body: Buffer.from(JSON.stringify(r.body)),
  }));
  const plans = scenarios.map((name) => ({ name, phases: scenarioPhases(name, duration, connections) }));
  const totalSeconds = plans.reduce((s, p) => s + warmup + p.phases.reduce((a, ph) => a + ph.seconds, 0), 0);

  let server: ChildServer | null = null;
  // Ctrl-C: stop the server child gracefully once it is up, or kill it while it is still starting.
  const onSignal = (sig: NodeJS.Signals) => {
    const stopped = server ? server.stop() : Promise.resolve(killLiveServers());
    void stopped.finally(() => process.kill(process.pid, sig));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let target: Target;
  let serverPid: number | null = null;
  const external = values["base-url"] !== undefined;
  if (external) {
    const apiKey = values["api-key"] ?? process.env.API_KEY;
    if (!apiKey) throw new Error("--base-url needs --api-key (or API_KEY)");
    target = { baseUrl: values["base-url"]!, apiKey };
    serverPid = num("server-pid", values["server-pid"], 1) ?? null;
  } else {
    // Each key comes with $1000 (1M searches at $0.001); top up for long runs at up to 2000 RPS.
    const topups = Math.max(0, Math.ceil((totalSeconds * 2000) / 1_000_000) - 1);
    console.error(`starting reposearch serve on ${dataDir} (throw-away ledger, limits raised, query cache off)…`);
    const t0 = performance.now();
    server = await startChildServer({ dataDir, topups, startTimeoutMs: num("start-timeout-ms", values["start-timeout-ms"], 1000)! });
    console.error(`server pid ${server.pid} at ${server.url}, ready in ${r1((performance.now() - t0) / 1000)} s`);
    target = { baseUrl: server.url, apiKey: server.apiKey };
    serverPid = server.pid;
  }
  const stopServer = () => server?.stop();
  // Serving processes of the system under test: the child's SERVE_PROCESSES (its default: one per CPU).
  const childConfig = external ? null : loadConfig({ ...process.env, ...server!.overrides });
  const serverProcesses = childConfig ? childConfig.server.processes : (num("server-processes", values["server-processes"], 1) ?? null);

  const rows: Summary[] = [];
  const results: Record<string, unknown>[] = [];
  let sampleResponse: Buffer | null = null;
  try {
    sampleResponse = await preflight(target, requests[0]!.body);
    for (const plan of plans) {
      const phases: Phase[] =
        warmup > 0 ? [{ label: "warm-up", connections: plan.phases[0]!.connections, seconds: warmup, record: false }, ...plan.phases] : plan.phases;
      const serverCpu: (number | null)[] = [];
      const ownCpu: number[] = [];
      const machine: (MachineTicks | null)[] = [];
      // GC totals from the server's /metrics at each boundary (async; awaited after the phases).
      const gcScrapes: Promise<GcTotals | null>[] = [];
      const loadavg = os.loadavg().map(r3);
      console.error(
        `scenario ${plan.name}: ${plan.phases.map((p) => `${p.connections} conn × ${r1(p.seconds)} s`).join(", ")}${warmup ? ` after ${warmup} s warm-up` : ""} (load average ${loadavg.join(" ")})`,
      );
      const recs = await runPhases({
        target,
        requests,
        phases,
        timeoutMs,
        sampleEvery,
        onBoundary: () => {
          serverCpu.push(serverPid === null ? null : procTreeCpuSeconds(serverPid));
          const u = process.cpuUsage();
          ownCpu.push((u.user + u.system) / 1e6);
          machine.push(machineTicks());
          gcScrapes.push(scrapeGc(target.baseUrl));
        },
      });
      const gcAt = await Promise.all(gcScrapes);
      const gcDelta = (a: number, b: number, seconds: number) => gcBetween(gcAt[a] ?? null, gcAt[b] ?? null, seconds, serverProcesses);
      // Boundaries: one per phase start plus the end; skip the warm-up's.
      const first = phases.length - recs.length;
      const cpuDelta = (a: number, b: number) => {
        const x = serverCpu[a];
        const y = serverCpu[b];
        return x === null || y === null || x === undefined || y === undefined ? null : y - x;
      };
      const phaseSummaries = recs.map((rec, k) =>
        summarize(
          rec.label,
          [rec],
          cpuDelta(first + k, first + k + 1),
          ownCpu[first + k + 1]! - ownCpu[first + k]!,
          gcDelta(first + k, first + k + 1, rec.seconds),
          stealPctBetween(machine[first + k] ?? null, machine[first + k + 1] ?? null),
        ),
      );
      const total =
        recs.length === 1
          ? phaseSummaries[0]!
          : summarize(
              `${plan.name} (all)`,
              recs,
              cpuDelta(first, phases.length),
              ownCpu[phases.length]! - ownCpu[first]!,
              gcDelta(
                first,
                phases.length,
                recs.reduce((t, r) => t + r.seconds, 0),
              ),
              stealPctBetween(machine[first] ?? null, machine[phases.length] ?? null),
            );
      if (recs.length > 1) rows.push(...phaseSummaries);
      rows.push(total);
      results.push({
        scenario: plan.name,
        warmupSeconds: warmup,
        loadavgAtStart: loadavg,
        serverRssMbAtEnd: serverPid === null ? null : procTreeRssMb(serverPid),
        total,
        ...(recs.length > 1 ? { phases: phaseSummaries } : {}),
      });
    }
  } catch (e) {
    if (server) console.error(`server log (last lines):\n${server.logTail()}`);
    throw e;
  } finally {
    await stopServer();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }

  // How the child's REST connections reach its workers (SERVE_BALANCING); unknown for an external server.
  const serverBalancing = childConfig && childConfig.server.processes > 1 ? childConfig.server.balancing : null;

  // The transport ceiling, with the server stopped: the same generator against a Node HTTP server
  // that does no work (transport.ts), as many processes as the service.
  let transport: TransportCeiling | null = null;
  let transportStealPct: number | null = null;
  const transportConnections = plans.find((p) => p.name === "load")?.phases[0]?.connections ?? connections ?? 50;
  if (!values["no-ceiling"] && sampleResponse) {
    console.error(
      `transport ceiling: node:http answering a fixed search response, ${serverProcesses ?? 1} process(es), ${transportConnections} connections, ${ceilingSeconds} s…`,
    );
    const before = machineTicks();
    transport = await transportCeiling({
      processes: serverProcesses ?? 1,
      connections: transportConnections,
      seconds: ceilingSeconds,
      requests,
      responseBody: sampleResponse,
    });
    transportStealPct = stealPctBetween(before, machineTicks());
  }

  // The ceiling, with the server stopped (idle machine apart from this process).
  let ceiling: { embedderId: string; singleThread: CeilingResult; twoThreads: CeilingResult; stealPct: number | null } | null = null;
  let ceilingNote: string | null = null;
  if (values["no-ceiling"]) {
    ceilingNote = "skipped (--no-ceiling)";
  } else if (!existsSync(path.join(dataDir, "index", "CURRENT"))) {
    ceilingNote = `skipped: no published index in ${dataDir} to take the query embedder from (pass --data-dir)`;
  } else {
    const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
    const embedderId = await indexEmbedderId(config);
    const texts = queries.map((q) => q.query);
    console.error(`embedding ceiling: ${embedderId}, ${ceilingSeconds} s on 1 thread, then ${ceilingSeconds} s on 2 threads…`);
    const before = machineTicks();
    const singleThread = await singleThreadCeiling(config, embedderId, texts, ceilingSeconds);
    const twoThreads = await multiThreadCeiling(config, embedderId, texts, ceilingSeconds, 2);
    ceiling = { embedderId, singleThread, twoThreads, stealPct: stealPctBetween(before, machineTicks()) };
  }

  const load = results.find((r) => r.scenario === "load")?.total as Summary | undefined;
  // The ceiling the service is compared with: one embedding thread per serving process (each embeds
  // its queries on its main thread), so the two-thread figure when it runs two processes or more.
  const machineCeiling = ceiling ? ((serverProcesses ?? 1) >= 2 ? ceiling.twoThreads : ceiling.singleThread) : null;
  // Three significant digits: with a fast embedder the ratio can be far below 0.001.
  const ratio = (s: Summary) => (machineCeiling ? Number((s.rps / machineCeiling.perSecond).toPrecision(3)) : null);
  for (const r of results) (r as { ceilingRatio?: number | null }).ceilingRatio = ratio(r.total as Summary);
  const targets = load
    ? {
        scenario: "load",
        p99: { targetMs: TARGETS.p99Ms, actualMs: load.latencyMs.p99, pass: load.latencyMs.p99 <= TARGETS.p99Ms },
        errors: { target: TARGETS.errors, actual: load.errors + load.non2xx, pass: load.errors + load.non2xx === TARGETS.errors },
        rps: {
          target: `≥ ${TARGETS.ceilingRatio} × embedding ceiling (${machineCeiling?.threads ?? 1} thread(s), one per serving process)`,
          targetRps: machineCeiling ? r1(TARGETS.ceilingRatio * machineCeiling.perSecond) : null,
          actualRps: load.rps,
          ratio: ratio(load),
          pass: machineCeiling ? load.rps >= TARGETS.ceilingRatio * machineCeiling.perSecond : null,
          transportCeilingRps: transport ? r1(transport.perSecond) : null,
          ratioToTransport: transport ? Number((load.rps / transport.perSecond).toPrecision(3)) : null,
        },
      }
    : null;

  console.log(
    `\nreposearch load test, ${os.cpus().length} cores, ${external ? target.baseUrl : `child server on ${dataDir}`}, uncached queries, closed loop (no think time)\n`,
  );
  console.log(markdownTable(rows));
  if (load) console.log(`\nload, by query shape (the mix entries; "tail share": of the requests slower than the p99):\n\n${mixTable(load)}`);
  if (ceiling) {
    const c = ceiling;
    console.log(
      `\nembedding-only ceiling (${c.embedderId}, no HTTP or search, ${c.singleThread.batch === 1 ? "one query per call" : `${c.singleThread.batch} queries per call, as the core batches them`}): ${r1(c.singleThread.perSecond)} queries/s on 1 thread, ${r1(c.twoThreads.perSecond)} queries/s on 2 threads (each serving process embeds on its main thread); steal ${c.stealPct ?? "–"} %`,
    );
    for (const r of results)
      console.log(
        `  ${r.scenario}: ${(r.total as Summary).rps} RPS = ${r.ceilingRatio} × the ${machineCeiling!.threads}-thread ceiling (one thread per serving process)`,
      );
  } else {
    console.log(`\nembedding-only ceiling: ${ceilingNote}`);
  }
  if (transport) {
    console.log(
      `transport ceiling (node:http, ${transport.processes} process(es), ${transport.connections} connections, a fixed ${transport.responseBytes}-byte response, no work): ${r1(transport.perSecond)} RPS, ${transport.errors} errors, server CPU ${transport.serverCpuPct ?? "–"} %, generator CPU ${transport.generatorCpuPct} %, steal ${transportStealPct ?? "–"} %`,
    );
    if (targets) console.log(`  load: ${load!.rps} RPS = ${targets.rps.ratioToTransport} × the transport ceiling`);
  }
  if (targets) {
    const pf = (b: boolean | null) => (b === null ? "n/a" : b ? "PASS" : "FAIL");
    console.log(
      `\ntargets (load): p99 ${targets.p99.actualMs} ms ≤ ${TARGETS.p99Ms} ms ${pf(targets.p99.pass)}; errors + non-2xx ${targets.errors.actual} = 0 ${pf(targets.errors.pass)}; ` +
        `RPS ${load!.rps} ≥ ${TARGETS.ceilingRatio} × ceiling${targets.rps.targetRps === null ? "" : ` (${targets.rps.targetRps})`} ${pf(targets.rps.pass)}`,
    );
  }
  const invalid = rows.reduce((s, r) => s + r.invalidBodies, 0);
  if (invalid) console.log(`\nwarning: ${invalid} sampled 200 bodies failed the SearchResponse schema`);

  const out = path.resolve(values.out!);
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(
    out,
    JSON.stringify(
      {
        benchmark: "loadtest",
        date: new Date().toISOString(),
        commit: gitCommit(),
        host: {
          cores: os.cpus().length,
          cpu: os.cpus()[0]?.model ?? null,
          memoryGb: r1(os.totalmem() / 2 ** 30),
          node: process.version,
          platform: `${os.platform()} ${os.release()}`,
        },
        server: external
          ? { baseUrl: target.baseUrl, pid: serverPid }
          : {
              mode: "child process: reposearch serve",
              dataDir,
              env: { ...server!.overrides, LEDGER_SQLITE_PATH: "(a temp file, removed after the run)" },
              logLevel: process.env.LOG_LEVEL ?? "info",
            },
        index: indexInfo(dataDir),
        generator: {
          kind: "closed loop, node:http keep-alive",
          timeoutMs,
          warmupSeconds: warmup,
          distinctBodies: requests.length,
          seed: Number(values.seed),
          sampleEvery,
        },
        mix: {
          file: path.relative(projectRoot, values.mix ? path.resolve(values.mix) : DEFAULT_MIX_PATH),
          queries: path.relative(projectRoot, queriesPath),
          queryCount: queries.length,
          entries: mix.entries.map((e) => ({ name: e.name, weight: e.weight })),
        },
        scenarios: results,
        serverProcesses,
        serverBalancing,
        ceiling: ceiling ?? { note: ceilingNote },
        ceilingRatioUses: `${machineCeiling?.threads ?? 1} thread(s): one per serving process, each embedding on its main thread, ${machineCeiling?.batch ?? 1} queries per call`,
        transportCeiling: transport === null ? null : { ...transport, stealPct: transportStealPct },
        targets,
      },
      null,
      2,
    ) + "\n",
  );
  const shown = path.relative(process.cwd(), out);
  console.log(`\nwrote ${shown.startsWith("..") ? out : shown}`);
  return 0;
}

// Run only as the entry point, so tests can import the helpers.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  main().then(
    (code) => (process.exitCode = code),
    (e: unknown) => {
      console.error(e instanceof Error ? e.message : e);
      process.exitCode = 1;
    },
  );
}
