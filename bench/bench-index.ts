/**
 * `npm run bench:index`: the full build of the dataset into a fresh data dir, then a no-change re-run,
 * then an index load, each in its own process as a user would run them. Peak RSS is sampled from
 * /proc (VmHWM) of the build process, which includes its embedding worker threads.
 * Writes results/bench-index.json and prints a table.
 */
import { spawn } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir, totalmem } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { embeddedStoreFromConfig } from "../src/store/embedded/store.js";

const { values } = parseArgs({
  options: { dataset: { type: "string" }, "data-dir": { type: "string" }, limit: { type: "string" }, keep: { type: "boolean" } },
});

interface RunResult {
  seconds: number;
  peakRssMiB: number;
  code: number | null;
  report: Record<string, unknown> | null;
}

function readHwmKiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function runIndex(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult> {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [path.join(projectRoot, "bin", "reposearch.js"), "index", ...args], {
    env: { ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "inherit", "pipe"],
  });
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, readHwmKiB(child.pid!))), 200);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
    process.stderr.write(d);
  });
  const code: number | null = await new Promise((r) => child.on("close", r));
  clearInterval(timer);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const line = stderr
    .split("\n")
    .filter((l) => l.includes('"index run finished"'))
    .pop();
  return { seconds, peakRssMiB: peak / 1024, code, report: line ? (JSON.parse(line) as Record<string, unknown>) : null };
}

async function main(): Promise<void> {
  const config0 = loadConfig();
  const dataset = values.dataset ?? config0.dataset;
  if (!dataset) throw new Error("no dataset: pass --dataset");
  const dataDir = values["data-dir"] ?? (await mkdtemp(path.join(tmpdir(), "reposearch-bench-index-")));
  const fresh = !values["data-dir"];
  const args = ["--dataset", dataset, "--data-dir", dataDir, ...(values.limit ? ["--limit", values.limit] : [])];

  console.log(`bench:index: dataset ${dataset} → ${dataDir}`);
  const full = await runIndex(args, process.env);
  if (full.code !== 0) throw new Error(`full build failed with exit code ${full.code}`);
  const rerun = await runIndex(args, process.env);
  if (rerun.code !== 0) throw new Error(`re-run failed with exit code ${rerun.code}`);

  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const rss0 = process.memoryUsage().rss;
  const t0 = process.hrtime.bigint();
  const store = await embeddedStoreFromConfig(config);
  const info = await store.info();
  const loadSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const loadRssMiB = (process.memoryUsage().rss - rss0) / 2 ** 20;
  await store.close();

  const result = {
    benchmark: "index",
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    dataset,
    embedder: config.embedder.kind,
    count: info.count,
    dims: info.dims,
    fullBuild: { seconds: full.seconds, peakRssMiB: full.peakRssMiB, stages: full.report?.seconds ?? null, embedded: full.report?.embedded ?? null },
    noChangeRerun: { seconds: rerun.seconds, peakRssMiB: rerun.peakRssMiB, embedded: rerun.report?.embedded ?? null },
    load: { seconds: loadSeconds, rssMiB: loadRssMiB },
    targets: { fullBuildSeconds: 900, peakRssMiB: 4096, noChangeRerunSeconds: 60, loadSeconds: 5 },
  };
  await mkdir(path.join(projectRoot, "results"), { recursive: true });
  await writeFile(path.join(projectRoot, "results", "bench-index.json"), JSON.stringify(result, null, 2) + "\n");
  const row = (k: string, v: string, target: string) => console.log(`| ${k.padEnd(22)} | ${v.padStart(14)} | ${target.padStart(10)} |`);
  console.log(`\n| measure                | value          | target     |\n|------------------------|----------------|------------|`);
  row("repositories indexed", info.count.toLocaleString("en-US"), "204,339");
  row("full build", `${full.seconds.toFixed(1)} s`, "≤ 900 s");
  row("full build peak RSS", `${full.peakRssMiB.toFixed(0)} MiB`, "≤ 4096 MiB");
  row("no-change re-run", `${rerun.seconds.toFixed(1)} s`, "≤ 60 s");
  row("index load", `${loadSeconds.toFixed(2)} s`, "≤ 5 s");
  console.log(`\nstages of the full build (s): ${JSON.stringify(full.report?.seconds ?? {})}`);
  if (fresh && !values.keep) await rm(dataDir, { recursive: true, force: true });
  else if (existsSync(dataDir)) console.log(`index kept in ${dataDir}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
