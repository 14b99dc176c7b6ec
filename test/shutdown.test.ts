/**
 * SIGTERM loses no answer. `reposearch serve` runs as a real child process over a small real index,
 * in one process and as a two-worker cluster (the primary hands connections to the workers); 30
 * concurrent clients send paid searches, one connection per request or over keep-alive connections,
 * and the process gets SIGTERM in the middle of the traffic.
 *
 * Every request a client had sent before the signal must be answered 200: no reset, no error. (Before
 * the gateway drained this way, the listener closed at the signal and reset what the kernel had
 * already accepted for it, and idle keep-alive connections were closed under requests in flight.)
 * Meanwhile /health answers 503 so load balancers stop sending, keep-alive answers carry
 * `Connection: close`, and the process exits 0. Requests sent after the signal may be refused; none
 * may hang.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, test } from "vitest";
import { SEARCH_PATH } from "../src/gateway/openapi.js";
import { childPids } from "../loadtest/server.js";
import { datasetLines, oneRecordPerName, runCli, startCli, tempDir, type CliResult } from "./helpers.js";
import { buildIndex, stackEnv } from "./stack.js";

const CLIENTS = 30;
/** Traffic before the signal: at least this long and this many answers (a busy machine answers fewer per second). */
const LOAD_MS = 1_500;
const LOAD_ANSWERS = 100;
const QUERIES = ["http client", "json parser", "web framework", "cli tool", "database driver", "logging library", "test runner", "markdown editor"];

let dir: string;
let key: string;
const running: ChildProcess[] = [];

function envFor(processes: number): NodeJS.ProcessEnv {
  return stackEnv(dir, {
    LOG_LEVEL: "warn",
    SERVE_PROCESSES: String(processes),
    LEDGER_SQLITE_PATH: path.join(dir, "ledger.sqlite"),
    QUERY_CACHE_TTL_MS: "0",
    SHUTDOWN_GRACE_MS: "10000",
    SHUTDOWN_DRAIN_DELAY_MS: "1000",
  });
}

beforeAll(async () => {
  dir = await tempDir("shutdown");
  await buildIndex(dir, oneRecordPerName(await datasetLines(340)).slice(0, 300), { env: stackEnv(dir, { STATIC_TRAIN_EPOCHS: "0", LOG_LEVEL: "warn" }) });
  const env = envFor(1);
  assert.equal((await runCli(["accounts", "create", "shutdown"], env)).code, 0);
  const created = await runCli(["keys", "create", "--account", "shutdown", "--credits-usd", "500"], env);
  assert.equal(created.code, 0, created.stderr);
  key = created.stdout.split("\n")[0]!.trim();
});

afterAll(async () => {
  for (const c of running) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    for (const pid of childPids(c.pid!)) process.kill(pid, "SIGKILL");
    c.kill("SIGKILL");
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Starts `reposearch serve`; resolves with its URL once it serves. */
async function serve(processes: number): Promise<{ child: ChildProcess; done: Promise<CliResult>; url: string }> {
  const { child, done } = startCli(["serve"], envFor(processes));
  running.push(child);
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "serving at" within 60 s: ${out}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /serving at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void done.then((r) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${r.code}: ${r.stderr.slice(-2000)}`));
    });
  });
  return { child, done, url };
}

interface Outcome {
  /** When the request was fully handed to the OS (performance.now()). */
  readonly sentAt: number;
  readonly status: number | null;
  readonly error: string | null;
  readonly connection: string | null;
}

/** One search; never rejects. */
function search(url: string, agent: Agent | false, i: number): Promise<Outcome> {
  const u = new URL(SEARCH_PATH, url);
  const payload = JSON.stringify({ query: `${QUERIES[i % QUERIES.length]} ${i % 5}`, limit: 5 });
  return new Promise((resolve) => {
    let sentAt = Infinity;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "x-api-key": key, "content-length": String(Buffer.byteLength(payload)) },
        timeout: 30_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => {
          const ok = res.statusCode === 200 && Array.isArray((JSON.parse(body) as { results?: unknown }).results);
          resolve({ sentAt, status: res.statusCode ?? 0, error: ok || res.statusCode !== 200 ? null : "bad body", connection: res.headers.connection ?? null });
        });
        res.on("error", (err: NodeJS.ErrnoException) => resolve({ sentAt, status: null, error: err.code ?? err.message, connection: null }));
      },
    );
    req.on("finish", () => (sentAt = performance.now()));
    req.on("timeout", () => req.destroy(new Error("client timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ sentAt, status: null, error: err.code ?? err.message, connection: null }));
    req.end(payload);
  });
}

/** GET /health on a new connection; status 0 and the error code when it fails. */
function healthStatus(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const u = new URL("/health", url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, agent: false }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ status: 0, body: err.code ?? err.message }));
    req.end();
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function sigtermUnderTraffic(processes: number, keepAlive: boolean): Promise<void> {
  const { child, done, url } = await serve(processes);
  const agent = keepAlive ? new Agent({ keepAlive: true, maxSockets: CLIENTS }) : false;
  const outcomes: Outcome[] = [];
  let exited = false;
  void done.then(() => (exited = true));
  let n = 0;
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (!exited) {
      const o = await search(url, agent, n++);
      outcomes.push(o);
      if (o.status === null) await sleep(20); // refused after the listener closed: do not spin
    }
  });
  const loadStart = performance.now();
  while (performance.now() - loadStart < LOAD_MS || (outcomes.length < LOAD_ANSWERS && performance.now() - loadStart < 30_000)) await sleep(50);
  const pids = childPids(child.pid!);
  const signalAt = performance.now();
  child.kill("SIGTERM");
  // The health flips first, while the gateway still listens.
  await sleep(100);
  const health = await healthStatus(url);
  const result = await done;
  await Promise.all(loops);
  if (agent) agent.destroy();

  const before = outcomes.filter((o) => o.sentAt < signalAt);
  const after = outcomes.filter((o) => o.sentAt >= signalAt);
  const lost = before.filter((o) => o.status !== 200 || o.error !== null);
  const tally = (os: readonly Outcome[]) => {
    const m: Record<string, number> = {};
    for (const o of os) m[o.error ?? String(o.status)] = (m[o.error ?? String(o.status)] ?? 0) + 1;
    return m;
  };
  const summary = `${processes} process(es), ${keepAlive ? "keep-alive" : "one connection per request"}: before the signal ${JSON.stringify(tally(before))}, after ${JSON.stringify(tally(after))}`;
  console.log(`# SIGTERM under ${CLIENTS} clients, ${summary}`);

  assert.ok(before.length >= 50, `traffic ran before the signal: ${summary}`);
  assert.deepEqual(lost, [], `every request sent before the signal is answered 200 (0 resets, 0 failures): ${summary}`);
  assert.equal(result.code, 0, result.stderr.slice(-2000));
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), `worker ${pid} exited`);
  assert.equal(health.status, 503, `/health during the drain: ${health.body}`);
  assert.equal((JSON.parse(health.body) as { status: string }).status, "unhealthy");
  if (keepAlive) {
    const closing = outcomes.filter((o) => o.status === 200 && o.connection === "close");
    assert.ok(closing.length >= 1, `answers during the drain close their keep-alive connection: ${summary}`);
  }
  // Nothing hung: every request settled (the loops ended), answered or refused.
  assert.equal(outcomes.filter((o) => o.error === "client timeout").length, 0, summary);
}

test("one process, one connection per request: SIGTERM answers every request sent before it", async () => {
  await sigtermUnderTraffic(1, false);
});

test("one process, keep-alive connections: SIGTERM answers every request sent before it, then closes them", async () => {
  await sigtermUnderTraffic(1, true);
});

test("two workers behind the primary's balancer, one connection per request: nothing lost", async () => {
  await sigtermUnderTraffic(2, false);
});

test("two workers behind the primary's balancer, keep-alive connections: nothing lost", async () => {
  await sigtermUnderTraffic(2, true);
});
