/**
 * `npm run bench:search`: end-to-end search latency at concurrency 1 over the published index:
 *   - the gRPC core (a real @grpc/grpc-js client over loopback), without and with rerank, after its
 *     start-up warm-up (src/core/warmup.ts; `WARMUP_QUERIES=0` measures a cold process);
 *   - the REST gateway in front of it (real HTTP), and the gateway overhead (REST p50 − core p50);
 *   - the same searches right before and right after the core swaps in a newly published version: a copy
 *     of the index (hard links) is published again under the next label, so the core loads it as a new
 *     version, first with every payload unchanged, then with the stars of every repository with ≥ 100
 *     moved by one (as a daily update moves them), in turn.
 * Queries are dev.jsonl's, with a mix of filters; the query cache is off so every search is real.
 *
 *   node dist/bench/bench-search.js [--data-dir ./data] [--queries 400] [--swaps 4] [--out results/bench-search.json]
 */
import { copyFile, link, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
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
import { asciiJson } from "../src/store/embedded/segment.js";
import { formatLabel, IndexDir, parseLabel } from "../src/store/embedded/writer.js";

const { values } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    queries: { type: "string", default: "400" },
    out: { type: "string", default: path.join("results", "bench-search.json") },
    swaps: { type: "string", default: "4" },
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

/** Repositories with at least this many stars get one more in the `moved` copy of the index (republishable). */
const MOVED_MIN_STARS = 100;

/**
 * A data dir whose index serves the same version as `dataDir`'s, and publish() puts that version out
 * again under the next label: files hard-linked (copied across file systems), the manifest relabelled.
 * With `moved`, its payloads.json instead gives every repository with ≥ MOVED_MIN_STARS stars one star
 * more and another content hash, as a daily update moves the popular repositories' stars.
 */
async function republishable(dataDir: string, into: string): Promise<{ moved: number; publish(moved: boolean): Promise<string> }> {
  const from = new IndexDir(dataDir);
  const label = await from.readCurrent();
  if (label === null) throw new Error(`no published index in ${dataDir}`);
  await symlink(path.join(dataDir, "models"), path.join(into, "models"));
  const to = new IndexDir(into);
  await to.ensure();
  const source = from.versionDir(label);
  let moved = 0;
  const payloads = (JSON.parse(await readFile(path.join(source, "payloads.json"), "utf8")) as { stars: number | null; hash: string }[]).map((p) =>
    p.stars !== null && p.stars >= MOVED_MIN_STARS ? (moved++, { ...p, stars: p.stars + 1, hash: `${p.hash}+1` }) : p,
  );
  const movedPayloads = Buffer.from(asciiJson(JSON.stringify(payloads)), "latin1"); // ASCII, as the writer writes it
  const movedFile = { bytes: movedPayloads.byteLength, sha256: createHash("sha256").update(movedPayloads).digest("hex") };
  let served = label;
  const place = async (as: string, withMoved: boolean) => {
    const dir = to.versionDir(as);
    await mkdir(dir);
    const manifest = JSON.parse(await readFile(path.join(source, "manifest.json"), "utf8")) as {
      version: string;
      files: Record<string, { bytes: number; sha256: string }>;
    };
    for (const name of await readdir(source)) {
      const src = path.join(source, name);
      if (name === "manifest.json") continue;
      if (name === "payloads.json" && withMoved) {
        await writeFile(path.join(dir, name), movedPayloads);
        manifest.files[name] = movedFile;
      } else {
        await link(src, path.join(dir, name)).catch(() => copyFile(src, path.join(dir, name)));
      }
    }
    await writeFile(path.join(dir, "manifest.json"), JSON.stringify({ ...manifest, version: as }, null, 2) + "\n");
    await to.writeCurrent(as);
    served = as;
    return as;
  };
  await place(label, false);
  return { moved, publish: (withMoved) => place(formatLabel(parseLabel(served)! + 1), withMoved) };
}

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
  const timed = async (client: CoreClient): Promise<number[]> => {
    const coreMs: number[] = [];
    for (const r of requests) {
      const t = performance.now();
      await client.search(r);
      coreMs.push(performance.now() - t);
    }
    return coreMs;
  };
  const measure = async (client: CoreClient): Promise<ReturnType<typeof summary>> => {
    for (let i = 0; i < 30; i++) await client.search(requests[i % requests.length]!); // the client's own warm-up
    return summary(await timed(client));
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

  // The same searches right before and right after each of SWAPS version swaps (one swap's first
  // searches are too few to tell apart): first versions that change no payload, then versions that move
  // the popular repositories' stars, each swap in turn to and from the moved copy. Embedded store only:
  // the copies are made of its version's files.
  const swaps = Number(values.swaps);
  if (swaps > 0 && loadConfig(env).vectorStore.kind === "embedded") {
    const swapDir = mkdtempSync(path.join(dataDir, ".bench-swap-"));
    try {
      const index = await republishable(dataDir, swapDir);
      const config = loadConfig({ ...env, DATA_DIR: swapDir, RERANKER: "off", INDEX_WATCH_INTERVAL_MS: "200" });
      const core = await startCore(config, { version: "bench" });
      const client = new CoreClient(core.grpc.address, { defaultDeadlineMs: 10_000 });
      await measure(client);
      const kinds = [
        { name: "no payload changed", moved: (): boolean => false },
        { name: `stars moved for ${index.moved.toLocaleString("en-US")} repositories`, moved: (i: number): boolean => i % 2 === 0 },
      ];
      for (const kind of kinds) {
        const before: number[] = [];
        const after: number[] = [];
        const servedAfter: number[] = [];
        for (let i = 0; i < swaps; i++) {
          before.push(...(await timed(client)));
          const label = await index.publish(kind.moved(i));
          const started = performance.now();
          while ((await core.engine.stats()).version !== label) await new Promise((r) => setTimeout(r, 50));
          servedAfter.push(Math.round(performance.now() - started) / 1000);
          after.push(...(await timed(client)));
        }
        results[`grpc core, ${n} searches right before each of ${swaps} version swaps (${kind.name})`] = summary(before);
        results[`grpc core, the same right after each swap (${kind.name})`] = summary(after);
        results[`version swaps (${kind.name}): published to served (s)`] = servedAfter;
      }
      client.close();
      await core.close();
    } finally {
      await rm(swapDir, { recursive: true, force: true });
    }
  }
  await rm(ledgerDir, { recursive: true, force: true });

  console.log(`\nsearch latency at concurrency 1, ${n} dev queries with a filter mix (ms)`);
  console.log("| path | p50 | p95 | p99 | mean |\n|---|---:|---:|---:|---:|");
  for (const [k, v] of Object.entries(results)) {
    if (typeof v === "number" || Array.isArray(v) || k === "core start-up") continue;
    const s = v as ReturnType<typeof summary>;
    console.log(`| ${k} | ${s.p50} | ${s.p95} | ${s.p99} | ${s.mean} |`);
  }
  console.log(`gateway overhead (REST p50 − core p50): ${results["gateway overhead p50 ms (rest p50 − core p50)"]} ms`);
  const startUp = results["core start-up"] as { seconds: number; warmupSearches: number; warmupSeconds: number };
  console.log(`core start-up ${startUp.seconds} s, of which the warm-up ${startUp.warmupSearches} searches in ${startUp.warmupSeconds} s`);
  for (const [k, v] of Object.entries(results)) if (Array.isArray(v)) console.log(`${k}: ${v.join(", ")}`);
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
