/** Shared helpers for integration tests: real datasets sliced from the shared data, real CLI processes. */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { cp, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";
import { defaultDatasetPath, projectRoot } from "../src/config/config.js";
import { dedupeProjects, INCUBATOR_PREFIX } from "../src/corpus/dedup.js";
import { normalizeRecord } from "../src/dataset/normalize.js";

export const CLI = path.join(projectRoot, "bin", "reposearch.js");

export function sharedDataset(): string {
  const p = process.env.DATASET || defaultDatasetPath();
  if (!p || !existsSync(p)) throw new Error("integration tests need the dataset: set DATASET or provide ../shared/data/repos.jsonl.gz");
  return p;
}

/** The first `n` raw lines of the shared dataset, parsed. */
export async function datasetLines(n: number, skip = 0): Promise<Record<string, unknown>[]> {
  const rl = createInterface({ input: createReadStream(sharedDataset()).pipe(createGunzip()), crlfDelay: Infinity });
  const out: Record<string, unknown>[] = [];
  let i = 0;
  for await (const line of rl) {
    if (i++ < skip) continue;
    out.push(JSON.parse(line) as Record<string, unknown>);
    if (out.length >= n) break;
  }
  rl.close();
  return out;
}

/**
 * At most one row per repository name (the part after the owner, case-insensitive, an incubating
 * project's prefix dropped), and no row the merge makes another's alias: no two rows are one project
 * that the index merges (src/corpus/dedup.ts), so tests that count points count rows.
 */
export function oneRecordPerName(rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const seen = new Set<string>();
  const byName = rows.filter((r) => {
    const name = String(r.name);
    let repo = name.slice(name.indexOf("/") + 1).toLowerCase();
    if (repo.startsWith(INCUBATOR_PREFIX)) repo = repo.slice(INCUBATOR_PREFIX.length);
    if (seen.has(repo)) return false;
    seen.add(repo);
    return true;
  });
  // Nor two names of one repository that its owner renamed (vuejs/vue-next and vuejs/core): the merge's
  // own test decides, on the rows kept.
  const records = byName.flatMap((r) => {
    const n = normalizeRecord(r);
    return n.ok ? [n.record] : [];
  });
  const { aliasOf } = dedupeProjects(records);
  return byName.filter((r) => !aliasOf.has(String(r.name).toLowerCase()));
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `reposearch-${prefix}-`));
}

export async function writeJsonl(file: string, rows: readonly (Record<string, unknown> | string)[]): Promise<string> {
  await writeFile(file, rows.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n");
  return file;
}

/** Environment for test builds: a small static vocabulary keeps distillation to a few seconds. */
export function testEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, LOG_LEVEL: "info", STATIC_VOCAB_SIZE: "2000", EMBED_WORKERS: "2", PROGRESS_INTERVAL_MS: "100", ...extra };
}

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function startCli(args: readonly string[], env: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export async function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return startCli(args, env).done;
}

/** Copies a data dir's distilled static model into another, so each test does not distil again. */
export async function shareModel(fromDataDir: string, toDataDir: string): Promise<void> {
  await cp(path.join(fromDataDir, "models"), path.join(toDataDir, "models"), { recursive: true });
}

/** The JSON log lines a CLI process wrote to stderr. */
export function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export function lastReport(stderr: string): Record<string, unknown> {
  const r = logLines(stderr)
    .filter((l) => l.msg === "index run finished")
    .pop();
  if (!r) throw new Error(`no index report in output:\n${stderr.slice(-3000)}`);
  return r;
}

/**
 * Environment variables the service reads: the keys of the config module's schema, plus the ones the
 * distributed profile adds (vector store, tracing, metrics port) while they land.
 */
export function knownEnvVars(): Set<string> {
  const src = readFileSync(path.join(projectRoot, "src", "config", "config.ts"), "utf8");
  const start = src.indexOf("const envSchema");
  assert.ok(start >= 0, "src/config/config.ts defines envSchema");
  const body = src.slice(start, src.indexOf("\n});", start));
  const keys = new Set([...body.matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!));
  assert.ok(keys.has("DATA_DIR") && keys.has("CORE_ADDRESS"), "parsed the config schema's keys");
  for (const k of [
    "VECTOR_STORE",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "QDRANT_COLLECTION",
    "QDRANT_QUANTIZATION",
    "QDRANT_TIMEOUT_MS",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "METRICS_PORT",
  ])
    keys.add(k);
  return keys;
}
