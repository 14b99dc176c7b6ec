/**
 * `npm run bench:search`: end-to-end search latency at concurrency 1 over the published index:
 *   - the gRPC core (a real @grpc/grpc-js client over loopback), without and with rerank, after its
 *     start-up warm-up (src/core/warmup.ts; `WARMUP_QUERIES=0` measures a cold process);
 *   - the REST gateway in front of it (real HTTP), and the gateway overhead (REST p50 − core p50).
 * Queries are dev.jsonl's, with a mix of filters; the query cache is off so every search is real.
 *
 *   node dist/bench/bench-search.js [--data-dir ./data] [--queries 400] [--out results/bench-search.json]
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { mkdtempSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot } from "../src/config/config.js";
import type { SearchFilters, SearchRequest } from "../src/core/types.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { loadEvalQueries } from "../src/eval/metrics.js";
import { startCore, startGateway } from "../src/server/serve.js";

const { values } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    queries: { type: "string", default: "400" },
    out: { type: "string", default: path.join("results", "bench-search.json") },
  },
});

const FILTER_MIX: (SearchFilters | undefined)[] = [
  undefined,
  { categories: [], excludeArchived: false },
  { language: "Python" },
  { minStars: 1000 },
  { topics: ["cli", "command-line"] },
  { staleAfterMonths: 12 },
  { categories: ["library", "tool"] },
  { minForks: 100, maxStars: 50_000 },
];

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}
function summary(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { n: s.length, p50: r(pct(s, 50)), p95: r(pct(s, 95)), p99: r(pct(s, 99)), mean: r(s.reduce((a, b) => a + b, 0) / s.length) };
}

async function main(): Promise<void> {
  setLogLevel("warn");
  const dataDir = path.resolve(values["data-dir"] ?? process.env.DATA_DIR ?? "./data");
  const ledgerDir = mkdtempSync(path.join(tmpdir(), "reposearch-bench-"));
  const base = { ...process.env, DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "warn" };
  const env = {
    ...base,
    LEDGER_SQLITE_PATH: path.join(ledgerDir, "ledger.sqlite"),
    QUERY_CACHE_TTL_MS: "0",
    RATE_LIMIT_IP_PER_MINUTE: "100000000",
    RATE_LIMIT_ACCOUNT_PER_MINUTE: "100000000",
  };
  const all = await loadEvalQueries(process.env.EVAL_QUERIES ?? path.resolve(projectRoot, "..", "shared", "eval", "dev.jsonl"));
  const n = Number(values.queries);
  const requests: SearchRequest[] = Array.from({ length: n }, (_, i) => {
    const filters = FILTER_MIX[i % FILTER_MIX.length];
    return { query: all[i % all.length]!.query, limit: 10, ...(filters ? { filters } : {}) };
  });

  const results: Record<string, unknown> = {};
  const measure = async (client: CoreClient): Promise<ReturnType<typeof summary>> => {
    for (let i = 0; i < 30; i++) await client.search(requests[i % requests.length]!); // the client's own warm-up
    const coreMs: number[] = [];
    for (const r of requests) {
      const t = performance.now();
      await client.search(r);
      coreMs.push(performance.now() - t);
    }
    return summary(coreMs);
  };
  for (const rerank of ["off", "local"] as const) {
    const config = loadConfig({ ...env, RERANKER: rerank });
    const started = performance.now();
    const core = await startCore(config, { version: "bench" });
    if (rerank === "off") {
      results["core start-up"] = {
        seconds: Math.round(performance.now() - started) / 1000,
        warmupSearches: (await core.metrics.warmupSearches.get()).values[0]?.value ?? 0,
        warmupSeconds: (await core.metrics.warmupSeconds.get()).values[0]?.value ?? 0,
      };
    }
    const client = new CoreClient(core.grpc.address, { defaultDeadlineMs: 10_000 });
    results[`grpc core, rerank ${rerank}`] = await measure(client);

    if (rerank === "off") {
      const gw = await startGateway(config, { version: "bench", coreAddress: core.grpc.address });
      await gw.accounts.createAccount("bench").catch(() => {});
      await gw.accounts.topup("bench", 1_000_000_000);
      const { key } = await gw.accounts.createKey("bench");
      const post = async (r: SearchRequest) => {
        const res = await fetch(`${gw.url}/v1/codehost/search`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-API-Key": key },
          body: JSON.stringify(r),
        });
        if (res.status !== 200) throw new Error(`REST ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      };
      for (let i = 0; i < 30; i++) await post(requests[i % requests.length]!);
      // Interleave REST and gRPC so both see the same machine state.
      const restMs: number[] = [];
      const coreMs2: number[] = [];
      for (const r of requests) {
        let t = performance.now();
        await post(r);
        restMs.push(performance.now() - t);
        t = performance.now();
        await client.search(r);
        coreMs2.push(performance.now() - t);
      }
      const rest = summary(restMs);
      const core2 = summary(coreMs2);
      results["rest gateway, rerank off"] = rest;
      results["grpc core (interleaved with rest)"] = core2;
      results["gateway overhead p50 ms (rest p50 − core p50)"] = Math.round((rest.p50 - core2.p50) * 1000) / 1000;
      await gw.close();
    }
    client.close();
    await core.close();
  }
  await rm(ledgerDir, { recursive: true, force: true });

  console.log(`\nsearch latency at concurrency 1, ${n} dev queries with a filter mix (ms)`);
  console.log("| path | p50 | p95 | p99 | mean |\n|---|---:|---:|---:|---:|");
  for (const [k, v] of Object.entries(results)) {
    if (typeof v === "number" || k === "core start-up") continue;
    const s = v as ReturnType<typeof summary>;
    console.log(`| ${k} | ${s.p50} | ${s.p95} | ${s.p99} | ${s.mean} |`);
  }
  console.log(`gateway overhead (REST p50 − core p50): ${results["gateway overhead p50 ms (rest p50 − core p50)"]} ms`);
  const startUp = results["core start-up"] as { seconds: number; warmupSearches: number; warmupSeconds: number };
  console.log(`core start-up ${startUp.seconds} s, of which the warm-up ${startUp.warmupSearches} searches in ${startUp.warmupSeconds} s`);
  const out = path.resolve(values.out!);
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(
    out,
    JSON.stringify(
      {
        benchmark: "bench-search",
        date: new Date().toISOString(),
        cpu: cpus()[0]?.model ?? "unknown",
        cores: cpus().length,
        node: process.version,
        dataDir,
        queries: n,
        results,
      },
      null,
      2,
    ) + "\n",
  );
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
