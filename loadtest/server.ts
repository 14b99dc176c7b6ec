/**
 * The system under test when the runner is not given --base-url: `reposearch serve` in a child
 * process on the published index in DATA_DIR, with a throw-away SQLite ledger (LEDGER_SQLITE_PATH in
 * a temp directory, so the user's ledger is never touched), the rate limits raised out of the way
 * and the query cache off (every search is a real one). The key is made with the admin CLI against
 * that ledger before the server starts. CPU is read from /proc/<pid>/stat.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { projectRoot } from "../src/config/config.js";

const run = promisify(execFile);

/** Server children not yet stopped and their temp directories, so an interrupted run can still clean up. */
const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();

/** SIGKILLs every server child this process started that is still running and removes their temp directories (for signal handlers). */
export function killLiveServers(): void {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}
const CLI = path.join(projectRoot, "bin", "reposearch.js");

/** Environment overrides for the load-test server (recorded in the results). */
export function serverOverrides(dataDir: string, ledgerPath: string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    GRPC_PORT: "0",
    VECTOR_STORE: "embedded",
    LEDGER_BACKEND: "sqlite",
    LEDGER_SQLITE_PATH: ledgerPath,
    CACHE_BACKEND: "memory",
    QUERY_CACHE_TTL_MS: "0",
    RATE_LIMIT_IP_PER_MINUTE: "1000000000",
    RATE_LIMIT_ACCOUNT_PER_MINUTE: "1000000000",
  };
}

export interface ChildServer {
  readonly url: string;
  readonly pid: number;
  readonly apiKey: string;
  readonly overrides: Record<string, string>;
  /** Last lines of the server's stderr (its JSON log), for error reports. */
  logTail(): string;
  stop(): Promise<void>;
}

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [CLI, ...args], { env, maxBuffer: 1 << 20 });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`reposearch ${args.slice(0, 2).join(" ")} failed: ${err.stderr?.trim() || err.message}`);
  }
}

/**
 * Creates the load-test account and key on a fresh ledger, then starts the server and waits for its
 * "serving at URL" line. `topups`: extra $1000 top-ups beyond the key's own $1000 (1M searches each).
 */
export async function startChildServer(opts: { dataDir: string; topups: number; startTimeoutMs: number }): Promise<ChildServer> {
  if (!existsSync(path.join(opts.dataDir, "index", "CURRENT"))) {
    throw new Error(`no published index in ${opts.dataDir} (index/CURRENT missing): build one with \`reposearch index\` or pass --data-dir`);
  }
  const tmp = mkdtempSync(path.join(tmpdir(), "reposearch-loadtest-"));
  const overrides = serverOverrides(opts.dataDir, path.join(tmp, "ledger.sqlite"));
  const env: NodeJS.ProcessEnv = { ...process.env, ...overrides };
  tempDirs.add(tmp);
  const cleanup = () => {
    rmSync(tmp, { recursive: true, force: true });
    tempDirs.delete(tmp);
  };
  let child: ChildProcess | null = null;
  let logFd: number | null = null;
  try {
    await cli(["accounts", "create", "loadtest"], env);
    const apiKey = (await cli(["keys", "create", "--account", "loadtest", "--credits-usd", "1000"], env)).split("\n")[0]!.trim();
    if (!apiKey) throw new Error("keys create printed no key");
    for (let i = 0; i < opts.topups; i++) await cli(["credits", "topup", "--account", "loadtest", "--usd", "1000"], env);

    const logFile = path.join(tmp, "server.log");
    logFd = openSync(logFile, "a");
    const proc = spawn(process.execPath, [CLI, "serve"], { env, stdio: ["ignore", "pipe", logFd] });
    child = proc;
    live.add(proc);
    proc.once("exit", () => live.delete(proc));
    const tail = () => {
      try {
        return readFileSync(logFile, "utf8").trim().split("\n").slice(-20).join("\n");
      } catch {
        return "";
      }
    };
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not report "serving at" within ${opts.startTimeoutMs} ms\n${tail()}`)), opts.startTimeoutMs);
      const rl = createInterface({ input: proc.stdout! });
      rl.on("line", (line) => {
        const m = /serving at (\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`server exited during start-up (code ${code}, signal ${signal})\n${tail()}`));
      });
    });
    proc.stdout!.resume();
    let stopping: Promise<void> | null = null;
    return {
      url,
      pid: proc.pid!,
      apiKey,
      overrides,
      logTail: tail,
      stop() {
        stopping ??= (async () => {
          if (proc.exitCode === null && proc.signalCode === null) {
            const exited = new Promise<void>((r) => proc.once("exit", () => r()));
            proc.kill("SIGTERM");
            const t = setTimeout(() => proc.kill("SIGKILL"), 15_000);
            await exited;
            clearTimeout(t);
          }
          if (logFd !== null) closeSync(logFd);
          cleanup();
        })();
        return stopping;
      },
    };
  } catch (e) {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    if (logFd !== null) closeSync(logFd);
    cleanup();
    throw e;
  }
}

let clkTck: number | null = null;
function ticksPerSecond(): number {
  if (clkTck === null) {
    try {
      clkTck = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc; null if unreadable. */
export function procCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces; fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / ticksPerSecond();
  } catch {
    return null;
  }
}

/** The machine's CPU time so far, in ticks of all cores: total, and stolen by the hypervisor; null off Linux. */
export interface MachineTicks {
  readonly total: number;
  readonly steal: number;
}

export function machineTicks(): MachineTicks | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    return parseCpuLine(line);
  } catch {
    return null;
  }
}

/** /proc/stat's aggregate line: user nice system idle iowait irq softirq steal [guest guest_nice] (guest time is already in user). */
export function parseCpuLine(line: string): MachineTicks | null {
  const f = line.trim().split(/\s+/);
  if (f[0] !== "cpu" || f.length < 9) return null;
  const v = f.slice(1, 9).map(Number);
  if (v.some((x) => !Number.isFinite(x))) return null;
  return { total: v.reduce((a, b) => a + b, 0), steal: v[7]! };
}

/** Share (%) of the machine's CPU time the hypervisor stole between two readings; null if unknown. */
export function stealPctBetween(a: MachineTicks | null, b: MachineTicks | null): number | null {
  if (a === null || b === null || b.total <= a.total) return null;
  return Math.round(((b.steal - a.steal) / (b.total - a.total)) * 1000) / 10;
}

/** Resident set size of a process in MB, from /proc; null if unreadable. */
export function procRssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Direct children of a process (cluster workers), from /proc/<pid>/task/<tid>/children (Linux ≥ 3.5). */
export function childPids(pid: number): number[] {
  try {
    const out: number[] = [];
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
    return out;
  } catch {
    return [];
  }
}

/**
 * CPU seconds of a process and its live direct children (a cluster primary and its workers); null if
 * the process itself is unreadable. A child that exits between two readings takes its time with it,
 * so compare readings over a period without restarts.
 */
export function procTreeCpuSeconds(pid: number): number | null {
  const own = procCpuSeconds(pid);
  if (own === null) return null;
  return childPids(pid).reduce((s, c) => s + (procCpuSeconds(c) ?? 0), own);
}

/** Resident set size in MB of a process and its live direct children; null if the process is unreadable. */
export function procTreeRssMb(pid: number): number | null {
  const own = procRssMb(pid);
  if (own === null) return null;
  return childPids(pid).reduce((s, c) => s + (procRssMb(c) ?? 0), own);
}
