/**
 * Monitoring artefacts: promtool accepts the scrape config and the alert rules and passes the rules'
 * unit tests (skipped only when promtool is not installed), the alerts encode the agreed objectives,
 * and the Grafana dashboard is well-formed with every query reading metrics the service exports.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "vitest";
import { skipTest } from "./support/skip.js";
import { parse } from "yaml";
import { projectRoot } from "../src/config/config.js";

const PROM_DIR = path.join(projectRoot, "deploy", "prometheus");
const DASHBOARD = path.join(projectRoot, "deploy", "grafana", "dashboards", "reposearch.json");

type Obj = Record<string, any>;

/** Metric names reposearch exports (its own, and prom-client's default process/Node.js ones), plus `up`. */
const SERVICE_METRICS = [
  "http_request_duration_seconds",
  "grpc_server_handling_seconds",
  "search_stage_duration_seconds",
  "rerank_fallbacks_total",
  "rate_limit_rejections_total",
  "credits_debited_micros_total",
  "auth_failures_total",
  "index_version",
  "index_points",
  "index_age_seconds",
  "query_cache_requests_total",
  "rate_limiter_unavailable_total",
  "grpc_server_handled_total",
  "credits_refunded_micros_total",
  "serving_processes",
  "search_query_embed_batch_size",
  "core_caller_calls_total",
  "core_caller_searches_running",
  "core_caller_searches_queued",
  "core_caller_queue_wait_seconds",
  "core_caller_searches_rejected_total",
  "core_auth_failures_total",
];
const RUNTIME_METRICS = [
  "process_cpu_seconds_total",
  "process_resident_memory_bytes",
  "nodejs_eventloop_lag_seconds",
  "nodejs_eventloop_lag_p99_seconds",
  "nodejs_gc_duration_seconds",
  "up",
];
const HISTOGRAMS = new Set([
  "http_request_duration_seconds",
  "grpc_server_handling_seconds",
  "search_stage_duration_seconds",
  "search_query_embed_batch_size",
  "core_caller_queue_wait_seconds",
  "nodejs_gc_duration_seconds",
]);
const KNOWN_METRICS = new Set([...SERVICE_METRICS, ...RUNTIME_METRICS]);

/** The metric a series name belongs to (histogram series carry _bucket, _count, _sum). */
function baseMetric(name: string): string {
  const m = /^(.*)_(bucket|count|sum)$/.exec(name);
  return m && HISTOGRAMS.has(m[1]!) ? m[1]! : name;
}

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"]);

/**
 * Metric names a PromQL expression reads: identifiers left after removing strings, label matchers,
 * range selectors, grouping clauses, Grafana variables and function/aggregation names.
 */
function metricsIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, " ")
    .replace(/\$\{?__\w+\}?|\$\{?\w+\}?/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/(^|[^A-Za-z0-9_:])\d+(\.\d+)?([eE][+-]?\d+)?(ms|s|m|h|d|w|y)?/g, "$1 ");
  const out: string[] = [];
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const rest = stripped.slice(m.index! + word.length);
    if (/^\s*\(/.test(rest)) continue; // a function or an aggregation
    if (PROMQL_WORDS.has(word.toLowerCase())) continue;
    if (/^\d/.test(word)) continue;
    out.push(word);
  }
  return out;
}

function promtool(): boolean {
  const r = spawnSync("promtool", ["--version"], { encoding: "utf8", timeout: 30_000 });
  return !r.error && r.status === 0;
}

function runPromtool(args: string[]): void {
  const r = spawnSync("promtool", args, { cwd: projectRoot, encoding: "utf8", timeout: 120_000 });
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.status, 0, `promtool ${args.join(" ")} failed:\n${r.stdout}${r.stderr}`);
}

const SKIP_PROMTOOL = "promtool is not installed (Debian: apt-get install prometheus)";

test("prometheus: promtool check rules deploy/prometheus/alerts.yml", (t) => {
  if (!promtool()) return skipTest(t, SKIP_PROMTOOL);
  runPromtool(["check", "rules", path.join(PROM_DIR, "alerts.yml")]);
});

test("prometheus: promtool check config deploy/prometheus/prometheus.yml", (t) => {
  if (!promtool()) return skipTest(t, SKIP_PROMTOOL);
  runPromtool(["check", "config", path.join(PROM_DIR, "prometheus.yml")]);
});

test("prometheus: the alert rules pass their unit tests (promtool test rules)", (t) => {
  if (!promtool()) return skipTest(t, SKIP_PROMTOOL);
  runPromtool(["test", "rules", path.join(PROM_DIR, "alerts.test.yml")]);
});

test("prometheus: the alert rules encode the agreed objectives and read real metrics", () => {
  const doc = parse(readFileSync(path.join(PROM_DIR, "alerts.yml"), "utf8")) as Obj;
  const rules = (doc.groups as Obj[]).flatMap((g) => g.rules as Obj[]);
  const alert = (pred: (r: Obj) => boolean, what: string): Obj => {
    const r = rules.find((x) => x.alert && pred(x));
    assert.ok(r, `an alert for ${what}`);
    return r;
  };
  const expr = (r: Obj) => String(r.expr).replace(/\s+/g, " ");
  const latency = alert((r) => /histogram_quantile\(\s*0\.99/.test(expr(r)) && expr(r).includes("http_request_duration_seconds_bucket"), "search p99 latency");
  assert.match(expr(latency), /route="\/v1\/codehost\/search"/);
  assert.match(expr(latency), />\s*0\.3\b/);
  assert.equal(latency.for, "10m");
  const errors = alert((r) => /status=~"5\.\."/.test(expr(r)), "5xx error rate");
  assert.match(expr(errors), />\s*0\.01\b/);
  assert.equal(errors.for, "10m");
  const limiter = alert((r) => expr(r).includes("rate_limiter_unavailable_total"), "rate limiter unavailable");
  assert.match(expr(limiter), /increase\(rate_limiter_unavailable_total\[\w+\]\)\)?\s*>\s*0/);
  const stale = alert((r) => expr(r).includes("index_age_seconds"), "stale index");
  const threshold = Number(
    />\s*([0-9.e+*\s]+)$/
      .exec(expr(stale))?.[1]
      ?.split("*")
      .reduce((a, b) => a * Number(b), 1),
  );
  assert.equal(threshold, 2 * 86400, "stale after 2 days");
  const down = alert((r) => /^up\{[^}]*job="reposearch-core"[^}]*\}\s*==\s*0$/.test(expr(r).trim()), "core down");
  assert.ok(down.for, "core down has a for: duration");
  for (const r of rules) {
    assert.ok(r.labels?.severity, `${r.alert ?? r.record}: severity label`);
    if (r.alert) assert.ok(r.annotations?.summary && r.annotations?.description, `${r.alert}: summary and description`);
    for (const m of metricsIn(String(r.expr))) assert.ok(KNOWN_METRICS.has(baseMetric(m)), `${r.alert}: ${m} is not a metric reposearch exports`);
  }
});

test("prometheus: the scrape config finds the gateway and the core by DNS and loads the rules", () => {
  const cfg = parse(readFileSync(path.join(PROM_DIR, "prometheus.yml"), "utf8")) as Obj;
  assert.ok(
    (cfg.rule_files as string[]).some((f) => path.resolve(PROM_DIR, f) === path.join(PROM_DIR, "alerts.yml")),
    "rule_files loads alerts.yml",
  );
  const job = (name: string): Obj => {
    const j = (cfg.scrape_configs as Obj[]).find((s) => s.job_name === name);
    assert.ok(j, `scrape job ${name}`);
    return j;
  };
  for (const [name, host, port] of [
    ["reposearch-gateway", "gateway", 8080],
    ["reposearch-core", "core", 9464],
  ] as const) {
    const sd = (job(name).dns_sd_configs as Obj[] | undefined)?.[0];
    assert.ok(sd, `${name} uses DNS service discovery`);
    assert.deepEqual(sd.names, [host]);
    assert.equal(sd.port, port);
    assert.equal(job(name).metrics_path ?? "/metrics", "/metrics");
  }
});

test("grafana: the dashboard is a well-formed Grafana dashboard", () => {
  const d = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Obj;
  assert.equal(typeof d.uid, "string");
  assert.ok(d.uid.length > 0 && d.uid.length <= 40, "uid of at most 40 characters");
  assert.equal(typeof d.title, "string");
  assert.ok(d.schemaVersion >= 36 && d.schemaVersion <= 41, `schemaVersion ${d.schemaVersion}`);
  assert.ok(Array.isArray(d.panels) && d.panels.length >= 10);
  const dsVar = (d.templating?.list as Obj[] | undefined)?.find((v) => v.type === "datasource");
  assert.equal(dsVar?.query, "prometheus", "a Prometheus datasource variable");
  const ids = new Set<number>();
  for (const p of d.panels as Obj[]) {
    assert.ok(Number.isInteger(p.id) && !ids.has(p.id), `panel ${p.title}: unique id`);
    ids.add(p.id);
    const g = p.gridPos;
    assert.ok(g && g.w > 0 && g.h > 0 && g.x >= 0 && g.x + g.w <= 24 && g.y >= 0, `panel ${p.title}: gridPos inside the 24-column grid`);
    assert.ok(typeof p.type === "string" && typeof p.title === "string" && p.title.length > 0);
    if (p.type !== "row") assert.equal(p.datasource?.uid, `\${${dsVar!.name}}`, `panel ${p.title}: uses the datasource variable`);
  }
  // No two panels overlap.
  const cells = new Map<string, string>();
  for (const p of d.panels as Obj[]) {
    for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        const k = `${x},${y}`;
        assert.ok(!cells.has(k), `panels "${cells.get(k)}" and "${p.title}" overlap`);
        cells.set(k, p.title);
      }
    }
  }
});

test("grafana: every panel queries metrics reposearch exports, and together they cover them all", () => {
  const d = JSON.parse(readFileSync(DASHBOARD, "utf8")) as Obj;
  const used = new Set<string>();
  const panels = (d.panels as Obj[]).flatMap((p) => (p.type === "row" ? ((p.panels ?? []) as Obj[]) : [p]));
  for (const p of panels) {
    assert.ok(Array.isArray(p.targets) && p.targets.length > 0, `panel ${p.title}: has targets`);
    for (const t of p.targets as Obj[]) {
      assert.ok(typeof t.expr === "string" && t.expr.trim(), `panel ${p.title} target ${t.refId}: expr`);
      assert.ok(typeof t.refId === "string");
      const names = metricsIn(t.expr);
      assert.ok(names.length > 0, `panel ${p.title}: ${t.expr} reads no metric`);
      for (const n of names) {
        assert.ok(KNOWN_METRICS.has(baseMetric(n)), `panel ${p.title}: ${n} is not a metric reposearch exports`);
        used.add(baseMetric(n));
      }
    }
  }
  const required = [
    ...SERVICE_METRICS.filter((m) => m !== "rate_limiter_unavailable_total"),
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "nodejs_eventloop_lag_seconds",
    "nodejs_gc_duration_seconds",
  ];
  for (const m of required) assert.ok(used.has(m), `the dashboard shows ${m}`);
  const exprs = panels.flatMap((p) => (p.targets as Obj[]).map((t) => String(t.expr)));
  for (const q of ["0.5", "0.95", "0.99"]) {
    assert.ok(
      exprs.some((e) => e.includes(`histogram_quantile(${q}`) && e.includes("http_request_duration_seconds_bucket") && /\broute\b/.test(e)),
      `p${Number(q) * 100} latency by route`,
    );
  }
  assert.ok(
    exprs.some((e) => /by \(status\)/.test(e) && e.includes("http_request_duration_seconds_count")),
    "errors by status",
  );
  assert.ok(
    exprs.some((e) => /by \(instance\)/.test(e) && e.includes("grpc_server_handled_total")),
    "search calls per core instance (is every replica reached?)",
  );
  assert.ok(
    exprs.some((e) => /\bkind\b/.test(e) && e.includes("nodejs_gc_duration_seconds_sum")),
    "GC pause share by kind",
  );
  assert.ok(
    exprs.some((e) => /by \([^)]*stage/.test(e) && e.includes("search_stage_duration_seconds_bucket")),
    "latency by stage",
  );
  assert.ok(
    exprs.some((e) => /by \(scope\)/.test(e) && e.includes("rate_limit_rejections_total")),
    "rate-limit rejections by scope",
  );
  assert.ok(
    exprs.some((e) => e.includes('query_cache_requests_total{result="hit"}') && e.includes("/")),
    "query-cache hit ratio",
  );
});

test("metricsIn: picks metric names out of PromQL", () => {
  assert.deepEqual(metricsIn('histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{route="/v1/x"}[$__rate_interval])))'), [
    "http_request_duration_seconds_bucket",
  ]);
  assert.deepEqual(metricsIn('sum(rate(a_total{result="hit"}[5m])) / sum(rate(b_total[5m])) * 60 / 1e6'), ["a_total", "b_total"]);
  assert.deepEqual(metricsIn('count(up{job="reposearch-core"} == 1)'), ["up"]);
  assert.deepEqual(metricsIn("max by (job, instance) (nodejs_eventloop_lag_p99_seconds)"), ["nodejs_eventloop_lag_p99_seconds"]);
  assert.deepEqual(metricsIn("sum(x_total offset 5m) > 2 * 86400 and 1.5e3 < y"), ["x_total", "y"]);
});
