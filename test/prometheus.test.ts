/**
 * Metrics through a real Prometheus: a small real index built with the real CLI, a core-only and a
 * gateway-only process assembly (serve() with roles "core" and "gateway", on loopback, ports 0) and
 * `reposearch store serve` over the same data dir, scraped every second by /usr/bin/prometheus
 * (Debian package `prometheus`) with the project's alert rules loaded. After valid searches and
 * 400/401/403/429 answers, the key series are asserted through Prometheus's HTTP API, the alert rules
 * evaluate without error, and every Grafana dashboard query is valid PromQL.
 *
 * Skipped with a message when the Prometheus binary is not installed.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, test } from "vitest";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot, type Config } from "../src/config/config.js";
import { SEARCH_PATH } from "../src/gateway/openapi.js";
import { serve, type Running } from "../src/server/serve.js";
import { EmbeddedStore } from "../src/store/embedded/store.js";
import { StoreServer } from "../src/store/embedded/serve/server.js";
import { datasetLines, tempDir } from "./helpers.js";
import { buildIndex, freePort, fundedAccount, postSearch, stackEnv, uniqueName } from "./stack.js";
import { skipReason } from "./support/skip.js";

const PROMETHEUS = process.env.PROMETHEUS_BIN || "/usr/bin/prometheus";
const SKIP = existsSync(PROMETHEUS) ? false : `Prometheus is not installed at ${PROMETHEUS} (Debian: apt-get install prometheus, or set PROMETHEUS_BIN)`;
const SKIPPED = skipReason(SKIP, "the Prometheus tests");
const VERSION = "0.0.0-prom";
const ACCOUNT_LIMIT = 3;

setLogLevel("warn");

let dir: string;
let coreRun: Running | undefined;
let gwRun: Running | undefined;
let allRun: Running | undefined;
let storeEmbedded: EmbeddedStore | undefined;
let storeServer: StoreServer | undefined;
let prom: ChildProcess | undefined;
let promUrl = "";
let promLog = "";

function configFor(extra: Record<string, string>): Config {
  // stackEnv's per-IP limit is high enough for Prometheus scraping the gateway every second.
  return loadConfig(
    stackEnv(dir, {
      METRICS_PORT: "0",
      QUERY_CACHE_TTL_MS: "60000",
      RATE_LIMIT_ACCOUNT_PER_MINUTE: String(ACCOUNT_LIMIT),
      OTEL_EXPORTER_OTLP_ENDPOINT: "",
      ...extra,
    }),
  );
}

const hostPort = (url: string): string => new URL(url).host;

interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

async function promApi<T>(pathAndQuery: string): Promise<T> {
  const res = await fetch(`${promUrl}${pathAndQuery}`);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  assert.equal(body.status, "success", `${pathAndQuery}: ${body.error ?? res.status}`);
  return body.data;
}

async function query(q: string): Promise<PromSample[]> {
  const data = await promApi<{ resultType: string; result: PromSample[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`);
  return data.resultType === "vector" ? data.result : [];
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; prometheus log tail:\n${promLog.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const scalar = async (q: string): Promise<number> => {
  const r = await query(q);
  return r.length ? Number(r[0]!.value[1]) : NaN;
};

async function status(res: Promise<Response>): Promise<number> {
  const r = await res;
  await r.text();
  return r.status;
}

async function startPrometheus(targets: Record<string, string>): Promise<void> {
  const promDir = path.join(dir, "prometheus");
  await mkdir(path.join(promDir, "data"), { recursive: true });
  const rules = path.join(projectRoot, "deploy", "prometheus", "alerts.yml");
  const cfg = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 900ms",
    "  evaluation_interval: 1s",
    "rule_files:",
    `  - ${JSON.stringify(rules)}`,
    "scrape_configs:",
    ...Object.entries(targets).flatMap(([job, target]) => [`  - job_name: ${job}`, "    static_configs:", `      - targets: [${JSON.stringify(target)}]`]),
    "",
  ].join("\n");
  const cfgFile = path.join(promDir, "prometheus.yml");
  await writeFile(cfgFile, cfg);
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prom = spawn(
    PROMETHEUS,
    [`--config.file=${cfgFile}`, `--storage.tsdb.path=${path.join(promDir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  prom.stdout!.on("data", (d: Buffer) => (promLog += d.toString()));
  prom.stderr!.on("data", (d: Buffer) => (promLog += d.toString()));
  const exited = new Promise<never>((_, reject) => prom!.once("exit", (code) => reject(new Error(`prometheus exited (${code}):\n${promLog.slice(-3000)}`))));
  exited.catch(() => {});
  await Promise.race([waitFor("Prometheus to be ready", async () => (await fetch(`${promUrl}/-/ready`)).ok), exited]);
}

async function stopPrometheus(): Promise<void> {
  const p = prom;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const gone = new Promise<void>((r) => p.once("exit", () => r()));
  p.kill("SIGTERM");
  const t = setTimeout(() => p.kill("SIGKILL"), 10_000);
  await gone;
  clearTimeout(t);
}

let key = "";
let brokeKey = "";
let points = 0;

beforeAll(async () => {
  if (SKIP) return;
  dir = await tempDir("prom");
  await buildIndex(dir, await datasetLines(500));

  coreRun = await serve(configFor({}), "core", VERSION);
  assert.ok(coreRun.coreMetricsUrl, "a core-only process serves /metrics on METRICS_PORT");
  gwRun = await serve(configFor({ CORE_ADDRESS: coreRun.core!.grpc.address }), "gateway", VERSION);
  storeEmbedded = await EmbeddedStore.open({ dataDir: dir, hnsw: { m: 8, efConstruction: 32 }, efSearch: 32, fullScanThreshold: 20, keepVersions: 2 });
  storeServer = await StoreServer.start({ store: storeEmbedded, port: 0 });
  // Fewer points than rows: dedup folds renamed and mirrored repositories into one point each.
  points = (await storeEmbedded.info()).count;
  assert.ok(points > 400 && points <= 500, `points in the index: ${points}`);

  const accounts = gwRun.gateway!.accounts;
  key = (await fundedAccount(accounts, uniqueName("prom"), 5)).key;
  brokeKey = (await fundedAccount(accounts, uniqueName("prom-broke"), 0)).key;

  await startPrometheus({
    "reposearch-gateway": hostPort(gwRun.gateway!.url),
    "reposearch-core": hostPort(coreRun.coreMetricsUrl),
    "reposearch-store": hostPort(storeServer.url),
  });
});

afterAll(async () => {
  await stopPrometheus();
  await allRun?.close();
  await gwRun?.close();
  await coreRun?.close();
  await storeServer?.close();
  await storeEmbedded?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test.skipIf(SKIPPED)("every process exposes /metrics: gateway, core (METRICS_PORT) and store serve", async () => {
  for (const url of [`${gwRun!.gateway!.url}/metrics`, `${coreRun!.coreMetricsUrl}/metrics`, `${storeServer!.url}/metrics`]) {
    const res = await fetch(url);
    assert.equal(res.status, 200, url);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    assert.match(await res.text(), /^process_cpu_seconds_total /m, url);
  }
  const core = await (await fetch(`${coreRun!.coreMetricsUrl}/metrics`)).text();
  assert.match(core, new RegExp(`^index_points ${points}$`, "m"));
  assert.match(core, /^index_version 1$/m);
  const health = await fetch(`${coreRun!.coreMetricsUrl}/health`);
  assert.equal(health.status, 200);
  await health.text();
});

test.skipIf(SKIPPED)("Prometheus scrapes the key series after valid, 400, 401, 403 and 429 answers", async () => {
  const gw = gwRun!.gateway!.url;
  const q = { query: "javascript web framework library", limit: 5 };
  assert.equal(await status(postSearch(gw, q, key)), 200);
  assert.equal(await status(postSearch(gw, q, key)), 200, "same query again: a query-cache hit");
  assert.equal(await status(postSearch(gw, { query: 42 }, key)), 400);
  assert.equal(await status(postSearch(gw, { query: "http client" }, key)), 429, `account limit ${ACCOUNT_LIMIT} per minute`);
  assert.equal(await status(postSearch(gw, q)), 401);
  assert.equal(await status(postSearch(gw, q, "rsk_NotAKey_0000000000000000")), 401);
  assert.equal(await status(postSearch(gw, q, brokeKey)), 403);

  // Two or more scrapes after the requests.
  await waitFor(
    "the requests' counters in Prometheus",
    async () => (await scalar("sum(auth_failures_total)")) >= 3 && (await scalar("sum(credits_debited_micros_total)")) > 0,
  );
  await new Promise((r) => setTimeout(r, 2_500));

  const series: [string, string][] = [
    ["http_request_duration_seconds_bucket", `http_request_duration_seconds_bucket{job="reposearch-gateway",route="${SEARCH_PATH}",status="200"}`],
    ["a 400 in the request histogram", `http_request_duration_seconds_count{route="${SEARCH_PATH}",status="400"}`],
    ["a 429 in the request histogram", `http_request_duration_seconds_count{route="${SEARCH_PATH}",status="429"}`],
    ["grpc_server_handling_seconds_bucket", `grpc_server_handling_seconds_bucket{job="reposearch-core",grpc_method="SearchStream",grpc_code="OK"}`],
    ["grpc_server_handled_total", `grpc_server_handled_total{job="reposearch-core",grpc_method="SearchStream"}`],
    ["search_stage_duration_seconds_bucket dense", `search_stage_duration_seconds_bucket{job="reposearch-core",stage="dense"}`],
    ["rate_limit_rejections_total", `rate_limit_rejections_total{scope="account"}`],
    ["credits_debited_micros_total", "credits_debited_micros_total"],
    ["auth_failures_total", "auth_failures_total"],
    ["index_points", `index_points{job="reposearch-core"}`],
    ["index_age_seconds", `index_age_seconds{job="reposearch-core"}`],
    ["index_version", `index_version{job="reposearch-core"}`],
    ["query_cache_requests_total", "query_cache_requests_total"],
    ["store serve index_points", `index_points{job="reposearch-store"}`],
    ["serving_processes (gateway)", `serving_processes{job="reposearch-gateway"}`],
    ["serving_processes (core)", `serving_processes{job="reposearch-core"}`],
    ["GC pauses (the dashboard's GC panel)", `nodejs_gc_duration_seconds_sum{job="reposearch-core"}`],
  ];
  for (const [what, expr] of series) assert.ok((await query(expr)).length > 0, `${what}: no series for ${expr}`);

  for (const stage of ["embed", "lexical", "dense", "rank", "evidence"]) {
    assert.equal(
      await scalar(`sum(search_stage_duration_seconds_count{stage="${stage}"})`),
      1,
      `${stage}: one core search (the cache hit never reached the core)`,
    );
  }
  assert.equal(await scalar("sum(credits_debited_micros_total)"), 2_000, "two paid searches of 1000 micro-dollars (a cache hit is charged too)");
  assert.equal(await scalar("sum(credits_refunded_micros_total)"), 0, "nothing failed after a debit");
  assert.equal(await scalar('sum(auth_failures_total{reason="missing"})'), 1);
  assert.equal(await scalar('sum(auth_failures_total{reason="invalid"})'), 1);
  assert.equal(await scalar('sum(auth_failures_total{reason="insufficient_credits"})'), 1);
  assert.equal(await scalar('sum(rate_limit_rejections_total{scope="account"})'), 1);
  assert.equal(await scalar('sum(query_cache_requests_total{result="hit"})'), 1);
  assert.equal(await scalar('sum(query_cache_requests_total{result="miss"})'), 1);
  assert.equal(await scalar('sum(grpc_server_handled_total{grpc_method="SearchStream",grpc_code="OK"})'), 1);
  assert.equal(await scalar('index_points{job="reposearch-core"}'), points);
  assert.equal(await scalar('index_version{job="reposearch-core"}'), 1);
  assert.ok((await scalar('index_age_seconds{job="reposearch-core"}')) >= 0);
  for (const job of ["reposearch-gateway", "reposearch-core", "reposearch-store"]) assert.equal(await scalar(`up{job="${job}"}`), 1, `${job} is up`);
  // No series carries a key, an account or a query.
  const labels = await promApi<string[]>("/api/v1/labels");
  for (const forbidden of ["key", "api_key", "account", "account_id", "query"]) assert.ok(!labels.includes(forbidden), `no ${forbidden} label`);
});

test.skipIf(SKIPPED)("the alert rules evaluate against the live series without errors", async () => {
  interface Rule {
    readonly name: string;
    readonly health: string;
    readonly lastError?: string;
  }
  let rules: Rule[] = [];
  await waitFor("every rule to be evaluated", async () => {
    const data = await promApi<{ groups: { rules: Rule[] }[] }>("/api/v1/rules");
    rules = data.groups.flatMap((g) => g.rules);
    return rules.length > 0 && rules.every((r) => r.health !== "unknown");
  });
  for (const r of rules) assert.equal(r.health, "ok", `${r.name}: ${r.lastError ?? ""}`);
  const firing = await promApi<{ alerts: { labels: Record<string, string>; state: string }[] }>("/api/v1/alerts");
  const names = firing.alerts.map((a) => a.labels.alertname);
  assert.ok(!names.includes("ReposearchCoreAbsent") && !names.includes("ReposearchIndexStale"), `unexpected alerts: ${names.join(", ")}`);
});

test.skipIf(SKIPPED)("every Grafana dashboard query is valid PromQL on the live data", async () => {
  type Obj = Record<string, any>;
  const d = JSON.parse(readFileSync(path.join(projectRoot, "deploy", "grafana", "dashboards", "reposearch.json"), "utf8")) as Obj;
  const panels = (d.panels as Obj[]).flatMap((p) => (p.type === "row" ? ((p.panels ?? []) as Obj[]) : [p]));
  const exprs = panels.flatMap((p) => ((p.targets ?? []) as Obj[]).map((t) => ({ title: String(p.title), expr: String(t.expr) })));
  assert.ok(exprs.length >= 10);
  let withData = 0;
  for (const { title, expr } of exprs) {
    const q = expr.replace(/\$\{?__rate_interval\}?|\$\{?__interval\}?|\$\{?__range\}?/g, "1m");
    const data = await promApi<{ resultType: string; result: unknown }>(`/api/v1/query?query=${encodeURIComponent(q)}`).catch((e: unknown) =>
      assert.fail(`panel "${title}": ${q}: ${(e as Error).message}`),
    );
    if (Array.isArray(data.result) ? data.result.length > 0 : data.result !== null) withData++;
  }
  assert.ok(withData >= exprs.length / 2, `most dashboard queries return data (${withData}/${exprs.length})`);
});

test.skipIf(SKIPPED)("role \"all\" shares one registry: the gateway's /metrics carries the core's metrics", async () => {
  allRun = await serve(configFor({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "100" }), "all", VERSION);
  assert.equal(allRun.coreMetricsUrl, null, "no separate metrics port in role all");
  const k = (await fundedAccount(allRun.gateway!.accounts, uniqueName("prom-all"), 5)).key;
  assert.equal(await status(postSearch(allRun.gateway!.url, { query: "command line tool" }, k)), 200);
  const text = await (await fetch(`${allRun.gateway!.url}/metrics`)).text();
  assert.match(text, new RegExp(`^index_points ${points}$`, "m"));
  assert.match(text, /^search_stage_duration_seconds_count\{stage="lexical"\} 1$/m);
  assert.match(text, /^grpc_server_handled_total\{grpc_service="reposearch\.v1\.SearchService",grpc_method="SearchStream",grpc_code="OK"\} 1$/m);
  assert.match(text, /^http_request_duration_seconds_count\{method="POST",route="\/v1\/codehost\/search",status="200"\} 1$/m);
  assert.equal(text.match(/^# TYPE process_cpu_user_seconds_total/gm)?.length, 1, "default metrics once");
});
