/**
 * The one typed, validated configuration module. Every value comes from an environment variable
 * (documented in README.md, "Configuration") or a CLI flag override, and is validated once at start-up:
 * a bad value fails fast with a message naming the variable.
 */
import { existsSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ConfigError } from "../common/errors.js";

/** The project root: the nearest folder above this module that holds a package.json. */
export const projectRoot = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, "package.json"))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
})();

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? null : v.trim()));

export const EMBEDDER_KINDS = ["static", "use-lite", "onnx", "http"] as const;
export type EmbedderKind = (typeof EMBEDDER_KINDS)[number];

/** Environment variable → config field. The README's configuration table mirrors this list. */
const envSchema = z.object({
  DATA_DIR: z.string().default("./data"),
  DATASET: optionalString,
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  EMBEDDER: z.enum(EMBEDDER_KINDS).default("static"),
  EMBED_WORKERS: int(0, 64).default(0),
  EMBED_BATCH_SIZE: int(1, 4096).default(64),
  ONNX_MODEL_DIR: optionalString,
  ONNX_MAX_TOKENS: int(8, 8192).default(256),
  EMBED_HTTP_URL: optionalString,
  EMBED_HTTP_TIMEOUT_MS: int(1, 600_000).default(30_000),
  STATIC_VOCAB_SIZE: int(1000, 500_000).default(60_000),
  STATIC_DIMS: int(8, 512).default(128),
  HNSW_M: int(4, 128).default(16),
  HNSW_EF_CONSTRUCTION: int(8, 2000).default(100),
  HNSW_EF_SEARCH: int(8, 5000).default(128),
  FULL_SCAN_THRESHOLD: int(0).default(10_000),
  INDEX_KEEP_VERSIONS: int(1, 100).default(2),
  INDEX_CHECKPOINT_EVERY: int(16, 1_000_000).default(4096),
  PROGRESS_INTERVAL_MS: int(100, 3_600_000).default(10_000),
});

export interface Config {
  /** Root of everything the service writes: index versions, checkpoints, models. */
  readonly dataDir: string;
  /** Dataset path or http(s) URL; null when no default dataset exists and none was given. */
  readonly dataset: string | null;
  readonly logLevel: "debug" | "info" | "warn" | "error" | "silent";
  readonly embedder: {
    readonly kind: EmbedderKind;
    /** worker_threads used to embed documents; 0 means one per core. */
    readonly workers: number;
    readonly batchSize: number;
    readonly onnxModelDir: string | null;
    readonly onnxMaxTokens: number;
    readonly httpUrl: string | null;
    readonly httpTimeoutMs: number;
    readonly staticVocabSize: number;
    readonly staticDims: number;
  };
  readonly store: {
    readonly hnswM: number;
    readonly hnswEfConstruction: number;
    readonly hnswEfSearch: number;
    /** Filtered subsets at or below this many points are scanned exactly instead of walking HNSW. */
    readonly fullScanThreshold: number;
    /** Published index versions kept on disk (the newest is always kept). */
    readonly keepVersions: number;
  };
  readonly indexer: {
    /** Points per durable checkpoint chunk. */
    readonly checkpointEvery: number;
    readonly progressIntervalMs: number;
  };
}

/** Default dataset: ../shared/data/repos.jsonl.gz beside the project, when it exists. */
export function defaultDatasetPath(): string | null {
  for (const base of [process.cwd(), projectRoot]) {
    const p = path.resolve(base, "..", "shared", "data", "repos.jsonl.gz");
    if (existsSync(p)) return p;
  }
  return null;
}

export type ConfigOverrides = Partial<Record<keyof z.input<typeof envSchema>, string | number | undefined>>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const o = overrides[key as keyof ConfigOverrides];
    raw[key] = o !== undefined ? String(o) : env[key];
  }
  const parsed = envSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message} (got ${JSON.stringify(raw[String(i.path[0])])})`));
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (e.EMBEDDER === "onnx" && !e.ONNX_MODEL_DIR) problems.push("ONNX_MODEL_DIR: required when EMBEDDER=onnx");
  if (e.EMBEDDER === "http" && !e.EMBED_HTTP_URL) problems.push("EMBED_HTTP_URL: required when EMBEDDER=http");
  if (e.EMBED_HTTP_URL && !/^https?:\/\//.test(e.EMBED_HTTP_URL)) problems.push("EMBED_HTTP_URL: must be an http(s) URL");
  if (problems.length) throw new ConfigError(problems);

  return {
    dataDir: path.resolve(e.DATA_DIR),
    dataset: e.DATASET ?? defaultDatasetPath(),
    logLevel: e.LOG_LEVEL,
    embedder: {
      kind: e.EMBEDDER,
      workers: e.EMBED_WORKERS === 0 ? Math.max(1, cpus().length) : e.EMBED_WORKERS,
      batchSize: e.EMBED_BATCH_SIZE,
      onnxModelDir: e.ONNX_MODEL_DIR,
      onnxMaxTokens: e.ONNX_MAX_TOKENS,
      httpUrl: e.EMBED_HTTP_URL,
      httpTimeoutMs: e.EMBED_HTTP_TIMEOUT_MS,
      staticVocabSize: e.STATIC_VOCAB_SIZE,
      staticDims: e.STATIC_DIMS,
    },
    store: {
      hnswM: e.HNSW_M,
      hnswEfConstruction: e.HNSW_EF_CONSTRUCTION,
      hnswEfSearch: e.HNSW_EF_SEARCH,
      fullScanThreshold: e.FULL_SCAN_THRESHOLD,
      keepVersions: e.INDEX_KEEP_VERSIONS,
    },
    indexer: {
      checkpointEvery: e.INDEX_CHECKPOINT_EVERY,
      progressIntervalMs: e.PROGRESS_INTERVAL_MS,
    },
  };
}
