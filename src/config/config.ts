/**
 * The one typed, validated configuration module. Every value comes from an environment variable
 * (documented in ENV_DOCS below, from which docs/configuration.md is generated) or a CLI flag override, and is validated once at start-up:
 * a bad value fails fast with a message naming the variable.
 */
import { existsSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ConfigError } from "../common/errors.js";

/** SERVE_BALANCING: how a cluster's REST connections are spread over its workers (src/server/balancer.ts). */
export const BALANCING_POLICIES = ["least-connections", "round-robin"] as const;
export type BalancingPolicy = (typeof BALANCING_POLICIES)[number];

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
export const VECTOR_STORE_KINDS = ["embedded", "qdrant"] as const;
export type VectorStoreKind = (typeof VECTOR_STORE_KINDS)[number];
export const DEFAULT_QDRANT_COLLECTION = "repos";

export interface QdrantSettings {
  readonly url: string;
  readonly apiKey: string | null;
  readonly collection: string;
  readonly quantization: "none" | "int8";
  readonly timeoutMs: number;
}

export const RERANKER_KINDS = ["off", "local", "onnx", "http"] as const;
export type RerankerKind = (typeof RERANKER_KINDS)[number];

/** Environment variable → config field. Every variable is documented in ENV_DOCS below. */
const envSchema = z.object({
  DATA_DIR: z.string().default("./data"),
  DATASET: optionalString,
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  EMBEDDER: z.enum(EMBEDDER_KINDS).default("static"),
  EMBED_WORKERS: int(0, 64).default(0),
  EMBED_BATCH_SIZE: int(1, 4096).default(64),
  QUERY_EMBED_MAX_BATCH: int(1, 1024).default(32),
  ONNX_MODEL_DIR: optionalString,
  ONNX_MAX_TOKENS: int(8, 8192).default(256),
  EMBED_HTTP_URL: optionalString,
  EMBED_HTTP_TIMEOUT_MS: int(1, 600_000).default(30_000),
  STATIC_VOCAB_SIZE: int(1000, 500_000).default(60_000),
  STATIC_DIMS: int(8, 512).default(128),
  STATIC_TRAIN_EPOCHS: int(0, 100).default(8),
  STATIC_TRAIN_PATIENCE: int(0, 100).default(1),
  STATIC_TRAIN_THREADS: int(0, 64).default(0),
  HNSW_M: int(4, 128).default(24),
  HNSW_EF_CONSTRUCTION: int(8, 2000).default(200),
  HNSW_EF_SEARCH: int(8, 5000).default(160),
  DENSE_EF_SEARCH: int(8, 5000).default(64),
  FULL_SCAN_THRESHOLD: int(0).default(10_000),
  INDEX_KEEP_VERSIONS: int(1, 100).default(2),
  INDEX_CHECKPOINT_EVERY: int(16, 1_000_000).default(4096),
  PROGRESS_INTERVAL_MS: int(100, 3_600_000).default(10_000),
  // Serving: the gRPC core and the REST facade.
  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: int(0, 65535).default(8080),
  GRPC_PORT: int(0, 65535).default(50051),
  // No schema default: unset, it follows GRPC_PORT (see loadConfig).
  CONNECT_PORT: int(0, 65535)
    .optional()
    .transform((v) => v ?? null),
  CORE_ADDRESS: optionalString,
  CORE_TIMEOUT_MS: int(1, 600_000).default(2_000),
  CORE_STREAMS: int(0, 64).default(1),
  CORE_STREAM_MAX_AGE_MS: int(100, 600_000).default(5_000),
  // The core's protection (src/core/grpc/auth.ts, scheduler.ts, bounds.ts; docs/threat-model.md).
  CORE_AUTH_TOKENS: optionalString,
  CORE_TOKEN: optionalString,
  CORE_DEFAULT_DEADLINE_MS: int(1, 600_000).default(10_000),
  CORE_MAX_RUNNING_SEARCHES: int(1, 4096).default(32),
  CORE_MAX_QUEUED_SEARCHES: int(0, 1_000_000).default(2_048),
  CORE_MAX_QUEUED_PER_CALLER: int(0, 1_000_000).default(512),
  CORE_STREAM_MAX_OPEN: int(1, 1_000_000).default(512),
  CORE_STREAM_MAX_BATCH: int(1, 4096).default(64),
  CORE_MAX_CONCURRENT_STREAMS: int(1, 10_000).default(100),
  CORE_MAX_MESSAGE_BYTES: int(1024, 64 * 1024 * 1024).default(4 * 1024 * 1024),
  INDEX_WATCH_INTERVAL_MS: int(100, 3_600_000).default(2_000),
  WARMUP_QUERIES: int(0, 100_000).default(1_000),
  WARMUP_MAX_MS: int(0, 600_000).default(10_000),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default(10_000),
  SHUTDOWN_DRAIN_DELAY_MS: int(0, 600_000).default(1_000),
  GRPC_MAX_CONNECTION_AGE_MS: int(0, 86_400_000).default(300_000),
  METRICS_PORT: int(0, 65535).default(9464),
  SERVE_PROCESSES: int(0, 256).default(0),
  SERVE_BALANCING: z.enum(BALANCING_POLICIES).default("least-connections"),
  SERVE_SEMI_SPACE_MB: int(0, 1024).default(64),
  // Rerank stage.
  RERANKER: z.enum(RERANKER_KINDS).default("off"),
  RERANK_MODEL_DIR: optionalString,
  RERANK_HTTP_URL: optionalString,
  RERANK_TIMEOUT_MS: int(1, 600_000).default(200),
  // Gateway: ledger, cache, limits.
  LEDGER_BACKEND: z.enum(["sqlite", "postgres"]).default("sqlite"),
  LEDGER_SQLITE_PATH: optionalString,
  DATABASE_URL: z.string().min(1).default("postgres://postgres@127.0.0.1:5432/test"),
  CACHE_BACKEND: z.enum(["memory", "redis"]).default("memory"),
  REDIS_URL: z.string().min(1).default("redis://127.0.0.1:6379"),
  REDIS_COMMAND_TIMEOUT_MS: int(10, 60_000).default(500),
  RATE_LIMIT_IP_PER_MINUTE: int(1, 1_000_000_000).default(30),
  RATE_LIMIT_ACCOUNT_PER_MINUTE: int(1, 1_000_000_000).default(60),
  RATE_LIMIT_FAIL_MODE: z.enum(["closed", "open"]).default("closed"),
  RATE_LIMIT_FAIL_OPEN_PER_MINUTE: int(1, 1_000_000_000).default(600),
  TRUSTED_PROXIES: optionalString,
  MAX_BODY_BYTES: int(256, 10_000_000).default(16_384),
  // The gateway's HTTP edge (src/gateway/http-edge.ts).
  HTTP_HEADERS_TIMEOUT_MS: int(1_000, 600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: int(1_000, 600_000).default(15_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(0, 600_000).default(5_000),
  HTTP_SOCKET_TIMEOUT_MS: int(0, 3_600_000).default(30_000),
  HTTP_MAX_REQUESTS_PER_CONNECTION: int(0, 1_000_000_000).default(1_000),
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(4_096),
  HTTP_MAX_CONNECTIONS_PER_IP: int(1, 1_000_000).default(128),
  QUERY_CACHE_TTL_MS: int(0, 86_400_000).default(60_000),
  QUERY_CACHE_SIZE: int(0, 10_000_000).default(10_000),
  BILLING_RESERVATION_TTL_MS: int(1_000, 86_400_000).default(300_000),
  // Vector store (validated below with messages that name each variable).
  VECTOR_STORE: optionalString,
  QDRANT_URL: optionalString,
  QDRANT_API_KEY: optionalString,
  QDRANT_COLLECTION: optionalString,
  QDRANT_QUANTIZATION: optionalString,
  QDRANT_TIMEOUT_MS: optionalString,
  // Tracing (OpenTelemetry); off while the endpoint is unset.
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString,
  OTEL_SERVICE_NAME: optionalString,
  // A remote reposearch for the CLI and `reposearch mcp` (src/client); unset: the local data dir.
  REPOSEARCH_URL: optionalString,
  REPOSEARCH_API_KEY: optionalString,
});

/** The name of an environment variable the configuration reads. */
export type EnvVariable = keyof z.input<typeof envSchema>;

/** Every variable of the schema, in the schema's order (docs/configuration.md lists them in this order). */
export const ENV_VARIABLES = Object.keys(envSchema.shape) as EnvVariable[];

/**
 * What the schema alone gives each variable when it is unset: a value, or null where the schema has no
 * default and loadConfig derives one (or the setting stays off). The docs test checks ENV_DOCS against it.
 */
export function envSchemaDefaults(): Record<EnvVariable, string | number | null> {
  return envSchema.parse({}) as Record<EnvVariable, string | number | null>;
}

/** The sections of docs/configuration.md, in order. */
export const ENV_SECTIONS = [
  "Data and logs",
  "Embedding",
  "Index and embedded store",
  "Serving",
  "Rerank",
  "Gateway: ledger, cache and limits",
  "Gateway: HTTP connections",
  "Vector store",
  "Tracing",
  "Remote service (CLI and MCP)",
] as const;
export type EnvSection = (typeof ENV_SECTIONS)[number];

export interface EnvDoc {
  readonly section: EnvSection;
  /** The default as docs/configuration.md shows it; starts with the schema's default in backticks when the schema has one. */
  readonly default: string;
  /** What the variable does (Markdown, one line). */
  readonly meaning: string;
}

/**
 * The documentation of every environment variable: docs/configuration.md is generated from it
 * (`npm run docs:config`). The type makes a variable added to envSchema without an entry a compile error,
 * and test/docs-generated.test.ts fails when the generated page is stale.
 */
export const ENV_DOCS: { readonly [K in EnvVariable]: EnvDoc } = {
  DATA_DIR: { section: "Data and logs", default: "`./data`", meaning: "everything the service writes: index versions, checkpoints, models, run reports" },
  DATASET: {
    section: "Data and logs",
    default: "`../shared/data/repos.jsonl.gz` when it exists",
    meaning: "dataset path or http(s) URL (JSONL, gzip or plain)",
  },
  LOG_LEVEL: { section: "Data and logs", default: "`info`", meaning: "`debug`, `info`, `warn`, `error` or `silent`; logs are JSON lines on stderr" },
  EMBEDDER: { section: "Embedding", default: "`static`", meaning: '`static`, `use-lite`, `onnx` or `http` (docs/architecture.md, "Embedders")' },
  EMBED_WORKERS: { section: "Embedding", default: "`0` (one per core)", meaning: "worker threads that embed documents" },
  EMBED_BATCH_SIZE: { section: "Embedding", default: "`64`", meaning: "texts per embedding batch" },
  QUERY_EMBED_MAX_BATCH: {
    section: "Embedding",
    default: "`32`",
    meaning:
      "most query embeddings the core sends to the model in one call when searches arrive together (one `SearchStream` message); `1` turns batching off. Static embedders are never batched (docs/grpc.md)",
  },
  ONNX_MODEL_DIR: { section: "Embedding", default: "—", meaning: "directory of a sentence-transformers ONNX export (required for `onnx`)" },
  ONNX_MAX_TOKENS: { section: "Embedding", default: "`256`", meaning: "truncation length for the `onnx` embedder" },
  EMBED_HTTP_URL: { section: "Embedding", default: "—", meaning: "base URL of a TEI-compatible server (required for `http`)" },
  EMBED_HTTP_TIMEOUT_MS: { section: "Embedding", default: "`30000`", meaning: "per-request timeout of the `http` embedder" },
  STATIC_VOCAB_SIZE: { section: "Embedding", default: "`60000`", meaning: "words in a distilled static model" },
  STATIC_DIMS: { section: "Embedding", default: "`128`", meaning: "dimensions of a distilled static model (PCA of the teacher's 512)" },
  STATIC_TRAIN_EPOCHS: {
    section: "Embedding",
    default: "`8`",
    meaning:
      "most epochs of the build's train stage, which fine-tunes a freshly distilled static model on the dataset's weak pairs before embedding (docs/embeddings.md); `0` indexes with the distilled model",
  },
  STATIC_TRAIN_PATIENCE: {
    section: "Embedding",
    default: "`1`",
    meaning:
      "the train stage stops once the held-out loss has not improved by 0.1% for this many epochs (`reposearch train --min-improvement`) and keeps the best epoch's weights; `0` = never stop early (`reposearch train --patience`)",
  },
  STATIC_TRAIN_THREADS: {
    section: "Embedding",
    default: "`0` (one per core)",
    meaning:
      "threads that share each training batch's similarity and gradient products (the train stage and `reposearch train`); the trained model is the same bit for bit whatever the count",
  },
  HNSW_M: { section: "Index and embedded store", default: "`24`", meaning: "HNSW links per node (layer 0 keeps 2·M)" },
  HNSW_EF_CONSTRUCTION: { section: "Index and embedded store", default: "`200`", meaning: "HNSW build beam width (main graph and payload subgraphs)" },
  HNSW_EF_SEARCH: { section: "Index and embedded store", default: "`160`", meaning: "HNSW search beam width (the planner fits it to a filter's selectivity)" },
  DENSE_EF_SEARCH: {
    section: "Index and embedded store",
    default: "`64`",
    meaning: "HNSW beam width of the search core's dense stage (its 50 candidates); `HNSW_EF_SEARCH` stays the store's default for direct queries",
  },
  FULL_SCAN_THRESHOLD: { section: "Index and embedded store", default: "`10000`", meaning: "filtered subsets up to this many points are scanned exactly" },
  INDEX_KEEP_VERSIONS: { section: "Index and embedded store", default: "`2`", meaning: "published versions kept on disk" },
  INDEX_CHECKPOINT_EVERY: { section: "Index and embedded store", default: "`4096`", meaning: "repositories per durable checkpoint chunk" },
  PROGRESS_INTERVAL_MS: { section: "Index and embedded store", default: "`10000`", meaning: "interval of progress log lines when stderr is not a terminal" },
  HOST: { section: "Serving", default: "`127.0.0.1`", meaning: "interface the REST, gRPC and Connect servers bind to" },
  PORT: { section: "Serving", default: "`8080`", meaning: "REST port (0 = any free port)" },
  GRPC_PORT: { section: "Serving", default: "`50051`", meaning: "gRPC port of the search core (0 = any free port)" },
  CONNECT_PORT: {
    section: "Serving",
    default: "`50052`; `0` when `GRPC_PORT` is `0`",
    meaning:
      "Connect port of the search core, on `HOST`: the Connect protocol (JSON and binary), gRPC-Web and gRPC, over HTTP/1.1 and HTTP/2, so `curl` and browsers can call it (docs/grpc.md); 0 = any free port",
  },
  CORE_ADDRESS: {
    section: "Serving",
    default: "`HOST:GRPC_PORT`",
    meaning: "where the gateway reaches the core (`host:port` or `dns:///name:port`); calls go round robin over every address the name resolves to",
  },
  CORE_TIMEOUT_MS: { section: "Serving", default: "`2000`", meaning: "deadline the gateway sets on each core call" },
  CORE_STREAMS: {
    section: "Serving",
    default: "`1`",
    meaning:
      "0–64. The gateway multiplexes its searches over this many `SearchStream` calls to the core (searches ready together share one message each way: 0.5–0.7 ms less server CPU per search than unary calls under load; docs/grpc.md); `0` sends one unary `Search` call per search. The channel balances streams, not searches: with several core replicas use a few per replica (k8s and Helm set 4)",
  },
  CORE_STREAM_MAX_AGE_MS: {
    section: "Serving",
    default: "`5000`",
    meaning:
      "a stream takes no new searches after this long and closes once its searches are answered, so streams spread over replicas and never outlive a core's `SHUTDOWN_GRACE_MS`",
  },
  CORE_AUTH_TOKENS: {
    section: "Serving",
    default: "— (no authentication: allowed only when `HOST` is loopback)",
    meaning:
      "the core's callers and their service tokens, `name=token,name=token` (name: lowercase letters, digits, `-`, `_`, up to 32; token: 24–512 visible characters). Set: every `SearchService` call on both ports must carry `authorization: Bearer <token>` (or `x-reposearch-core-token`); health stays open; the name is the caller's `caller` metric label and fair-share key. Unset on a non-loopback `HOST`, the core refuses to start (docs/threat-model.md)",
  },
  CORE_TOKEN: {
    section: "Serving",
    default: "—",
    meaning:
      "the service token the gateway sends to the core (one of the core's `CORE_AUTH_TOKENS`); a process running both uses a private per-process token instead",
  },
  CORE_DEFAULT_DEADLINE_MS: {
    section: "Serving",
    default: "`10000`",
    meaning: "deadline of a core call (or a search on `SearchStream`) whose caller sets none; waiting in the core's queue counts",
  },
  CORE_MAX_RUNNING_SEARCHES: {
    section: "Serving",
    default: "`32`",
    meaning:
      "searches the core runs at once (per process, all callers and both ports); more wait in per-caller queues served round robin, so no caller starves another (docs/grpc.md)",
  },
  CORE_MAX_QUEUED_SEARCHES: {
    section: "Serving",
    default: "`2048`",
    meaning: "searches waiting for a slot, all callers together; beyond it a search is answered `RESOURCE_EXHAUSTED`",
  },
  CORE_MAX_QUEUED_PER_CALLER: {
    section: "Serving",
    default: "`512`",
    meaning: "searches one caller may have waiting; beyond it that caller's searches are answered `RESOURCE_EXHAUSTED`",
  },
  CORE_STREAM_MAX_OPEN: {
    section: "Serving",
    default: "`512`",
    meaning: "searches open (running or waiting) on one `SearchStream`; beyond it a new search on the stream is answered `RESOURCE_EXHAUSTED`",
  },
  CORE_STREAM_MAX_BATCH: {
    section: "Serving",
    default: "`64`",
    meaning: "searches one `SearchStream` message may start (the gateway sends at most 32); the rest of the message is answered `RESOURCE_EXHAUSTED`",
  },
  CORE_MAX_CONCURRENT_STREAMS: {
    section: "Serving",
    default: "`100`",
    meaning: "HTTP/2 streams (calls) one connection may have open on either core port",
  },
  CORE_MAX_MESSAGE_BYTES: {
    section: "Serving",
    default: "`4194304` (4 MiB)",
    meaning:
      "largest request message either core port accepts (gRPC `max_receive_message_length`, Connect `readMaxBytes`); keep it above 32 × `MAX_BODY_BYTES`",
  },
  INDEX_WATCH_INTERVAL_MS: { section: "Serving", default: "`2000`", meaning: "how often the core looks for a newly published index version" },
  WARMUP_QUERIES: {
    section: "Serving",
    default: "`1000`",
    meaning:
      "searches the core runs on itself after loading the index at start and before it opens its ports (the topics of the index's most-starred repositories; `src/core/warmup.ts`); `0` turns the warm-up off",
  },
  WARMUP_MAX_MS: { section: "Serving", default: "`10000`", meaning: "the warm-up starts no new search after this long" },
  SHUTDOWN_GRACE_MS: { section: "Serving", default: "`10000`", meaning: "how long shutdown lets in-flight requests finish" },
  SHUTDOWN_DRAIN_DELAY_MS: {
    section: "Serving",
    default: "`1000`",
    meaning:
      "on SIGTERM the gateway first reports `/health` unhealthy (503) and answers every request with `Connection: close`, and keeps accepting for this long before it stops listening, so load balancers drain it; then requests in flight get `SHUTDOWN_GRACE_MS`. Behind a balancer that probes `/health`, set it above the probe period × failure threshold",
  },
  GRPC_MAX_CONNECTION_AGE_MS: {
    section: "Serving",
    default: "`300000`",
    meaning:
      "the core closes each gRPC connection after this long (GOAWAY; calls in flight get `SHUTDOWN_GRACE_MS`), so gateways re-resolve `CORE_ADDRESS` and reach core replicas added since; `0` = never",
  },
  METRICS_PORT: { section: "Serving", default: "`9464`", meaning: "HTTP port of a `serve --role core` process: `/metrics` and `/health`" },
  SERVE_PROCESSES: {
    section: "Serving",
    default: "`0` (one per CPU, at most one per 2 GiB of memory)",
    meaning:
      "serving processes of `reposearch serve` and of `reposearch start` on a published index (node:cluster workers sharing the ports); `1` = no cluster",
  },
  SERVE_BALANCING: {
    section: "Serving",
    default: "`least-connections`",
    meaning:
      "with `SERVE_PROCESSES` > 1 and a gateway: `least-connections` (the primary accepts REST connections and hands each to the worker holding fewest) or `round-robin` (node:cluster's own)",
  },
  SERVE_SEMI_SPACE_MB: {
    section: "Serving",
    default: "`64`",
    meaning:
      "V8 young-generation semi-space (`--max-semi-space-size`, MiB) the cluster primary gives each worker; `0` = V8's default (16); a flag already in the primary's `execArgv` or in `NODE_OPTIONS` wins. One-process serving takes it from `NODE_OPTIONS` (the Docker image sets 64)",
  },
  RERANKER: { section: "Rerank", default: "`off`", meaning: "`off`, `local`, `onnx` or `http` (docs/rerank.md)" },
  RERANK_MODEL_DIR: { section: "Rerank", default: "—", meaning: "cross-encoder directory (`model.onnx`, `tokenizer.json`) for `onnx`" },
  RERANK_HTTP_URL: { section: "Rerank", default: "—", meaning: "TEI base URL for `http`" },
  RERANK_TIMEOUT_MS: { section: "Rerank", default: "`200`", meaning: "budget of the rerank stage; on expiry the first-stage order stands" },
  LEDGER_BACKEND: { section: "Gateway: ledger, cache and limits", default: "`sqlite`", meaning: "`sqlite` (embedded default) or `postgres`" },
  LEDGER_SQLITE_PATH: { section: "Gateway: ledger, cache and limits", default: "`DATA_DIR/ledger.sqlite`", meaning: "SQLite ledger file" },
  DATABASE_URL: {
    section: "Gateway: ledger, cache and limits",
    default: "`postgres://postgres@127.0.0.1:5432/test`",
    meaning: "Postgres ledger (when `LEDGER_BACKEND=postgres`)",
  },
  CACHE_BACKEND: { section: "Gateway: ledger, cache and limits", default: "`memory`", meaning: "`memory` or `redis`: rate-limit counters and the query cache" },
  REDIS_URL: { section: "Gateway: ledger, cache and limits", default: "`redis://127.0.0.1:6379`", meaning: "Redis (when `CACHE_BACKEND=redis`)" },
  REDIS_COMMAND_TIMEOUT_MS: {
    section: "Gateway: ledger, cache and limits",
    default: "`500`",
    meaning: "deadline of each Redis command; a slower answer counts as Redis down (`RATE_LIMIT_FAIL_MODE` decides what follows)",
  },
  RATE_LIMIT_IP_PER_MINUTE: { section: "Gateway: ledger, cache and limits", default: "`30`", meaning: "per-IP limit on every request, before authentication" },
  RATE_LIMIT_ACCOUNT_PER_MINUTE: { section: "Gateway: ledger, cache and limits", default: "`60`", meaning: "per-account limit on search" },
  RATE_LIMIT_FAIL_MODE: {
    section: "Gateway: ledger, cache and limits",
    default: "`closed`",
    meaning: "limiter store down: `closed` answers 503, `open` admits under a per-process cap",
  },
  RATE_LIMIT_FAIL_OPEN_PER_MINUTE: { section: "Gateway: ledger, cache and limits", default: "`600`", meaning: "that per-process cap, per key" },
  TRUSTED_PROXIES: {
    section: "Gateway: ledger, cache and limits",
    default: "—",
    meaning: "comma-separated proxy IPs/CIDRs whose `X-Forwarded-For` is trusted",
  },
  MAX_BODY_BYTES: { section: "Gateway: ledger, cache and limits", default: "`16384`", meaning: "largest accepted request body" },
  HTTP_HEADERS_TIMEOUT_MS: {
    section: "Gateway: HTTP connections",
    default: "`10000`",
    meaning:
      "the request line and headers must arrive within this long of the connection (or of the previous answer on it); otherwise 408 and the connection closes",
  },
  HTTP_REQUEST_TIMEOUT_MS: {
    section: "Gateway: HTTP connections",
    default: "`15000`",
    meaning:
      "the whole request, body included, must arrive within this long (bounds a body trickled byte by byte); otherwise 408. At least `HTTP_HEADERS_TIMEOUT_MS`",
  },
  HTTP_KEEP_ALIVE_TIMEOUT_MS: {
    section: "Gateway: HTTP connections",
    default: "`5000`",
    meaning:
      "an idle keep-alive connection closes after this long (advertised as `Keep-Alive: timeout`); behind a load balancer, keep it above the balancer's own idle timeout",
  },
  HTTP_SOCKET_TIMEOUT_MS: {
    section: "Gateway: HTTP connections",
    default: "`30000`",
    meaning:
      "a connection on which no byte moves either way for this long while a request is open (a client that stopped reading its answer) is closed; `0` = never. Waiting for the core counts, so it is raised to `CORE_TIMEOUT_MS` + 5 s when lower",
  },
  HTTP_MAX_REQUESTS_PER_CONNECTION: {
    section: "Gateway: HTTP connections",
    default: "`1000`",
    meaning:
      "the answer to a connection's request number N carries `Connection: close`, so long-lived clients spread over processes and replicas; `0` = unlimited",
  },
  HTTP_MAX_CONNECTIONS: {
    section: "Gateway: HTTP connections",
    default: "`4096`",
    meaning: "open connections per serving process; one more is answered 429 `RATE_LIMIT_EXCEEDED` at once and closed",
  },
  HTTP_MAX_CONNECTIONS_PER_IP: {
    section: "Gateway: HTTP connections",
    default: "`128`",
    meaning:
      "open connections per client address and serving process (the socket peer, IPv6 by /64; `TRUSTED_PROXIES` count only towards `HTTP_MAX_CONNECTIONS`); one more is answered 429 at once and closed",
  },
  QUERY_CACHE_TTL_MS: { section: "Gateway: ledger, cache and limits", default: "`60000`", meaning: "lifetime of cached core answers (0 disables the cache)" },
  QUERY_CACHE_SIZE: { section: "Gateway: ledger, cache and limits", default: "`10000`", meaning: "entries of the in-memory query cache" },
  BILLING_RESERVATION_TTL_MS: {
    section: "Gateway: ledger, cache and limits",
    default: "`300000`",
    meaning:
      "a search's debit is a reservation until its answer is written; one still open after this long (its gateway died and no restart on the same host reclaimed it) is refunded by any gateway's sweep. Keep it above the longest request (docs/accounts.md)",
  },
  VECTOR_STORE: { section: "Vector store", default: "`embedded`", meaning: "`embedded` or `qdrant` (indexer; see docs/qdrant.md)" },
  QDRANT_URL: { section: "Vector store", default: "—", meaning: "Qdrant (or `reposearch store serve`) base URL, required for `qdrant`" },
  QDRANT_API_KEY: { section: "Vector store", default: "—", meaning: "Qdrant API key" },
  QDRANT_COLLECTION: { section: "Vector store", default: "`repos`", meaning: "collection name" },
  QDRANT_QUANTIZATION: { section: "Vector store", default: "`none`", meaning: "`none` or `int8` scalar quantization" },
  QDRANT_TIMEOUT_MS: { section: "Vector store", default: "`30000`", meaning: "per-request timeout of the Qdrant client" },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    section: "Tracing",
    default: "— (tracing off)",
    meaning:
      "OTLP/HTTP base URL (e.g. `http://otel-collector:4318`); when set, `serve`/`start` export OpenTelemetry spans to `<endpoint>/v1/traces` (docs/observability.md)",
  },
  OTEL_SERVICE_NAME: {
    section: "Tracing",
    default: "`reposearch`, `reposearch-core` or `reposearch-gateway` (by role)",
    meaning: "`service.name` of the exported spans",
  },
  REPOSEARCH_URL: {
    section: "Remote service (CLI and MCP)",
    default: "— (the local data dir)",
    meaning:
      "base URL of a reposearch gateway (e.g. `https://reposearch.example.com`); when set, `reposearch search`, `similar`, `repo` and `mcp` call it through the typed client instead of loading `DATA_DIR` (`--url` overrides it)",
  },
  REPOSEARCH_API_KEY: {
    section: "Remote service (CLI and MCP)",
    default: "—",
    meaning: "the API key those commands send to `REPOSEARCH_URL` (`--api-key` overrides it); never printed or logged",
  },
};

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
    /** Most query embeddings the core sends in one call when searches arrive together (1: no batching). */
    readonly queryMaxBatch: number;
    readonly onnxModelDir: string | null;
    readonly onnxMaxTokens: number;
    readonly httpUrl: string | null;
    readonly httpTimeoutMs: number;
    readonly staticVocabSize: number;
    readonly staticDims: number;
    /** Epochs of contrastive fine-tuning after distilling a static model (0: index with the distilled one). */
    readonly staticTrainEpochs: number;
    /** Epochs without a lower held-out loss before training stops (0 = never stop early). */
    readonly staticTrainPatience: number;
    /** Threads that share a training batch's arithmetic; the model is the same whatever the count. */
    readonly staticTrainThreads: number;
  };
  readonly store: {
    readonly hnswM: number;
    readonly hnswEfConstruction: number;
    readonly hnswEfSearch: number;
    /** Beam width of the search core's dense retrieval stage (its fusion candidates), below hnswEfSearch: see docs/performance.md. */
    readonly denseEfSearch: number;
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
  /** Which vector store the indexer writes and the core reads. */
  readonly vectorStore: {
    readonly kind: VectorStoreKind;
    /** Set when kind is "qdrant". */
    readonly qdrant: QdrantSettings | null;
  };
  readonly server: {
    /** Interface both servers bind to. */
    readonly host: string;
    /** REST port (0 = any free port). */
    readonly port: number;
    /** gRPC port (0 = any free port). */
    readonly grpcPort: number;
    /** Connect port of the core: Connect, gRPC-Web and gRPC over HTTP/1.1 and HTTP/2 (0 = any free port). */
    readonly connectPort: number;
    /** Where the gateway reaches the core (`host:port`); defaults to this process's own core. */
    readonly coreAddress: string;
    /** Deadline the gateway sets on each core call. */
    readonly coreTimeoutMs: number;
    /** 0: one unary Search call per search; N: searches multiplexed over N SearchStream calls. */
    readonly coreStreams: number;
    /** A stream takes no new searches after this long and closes once idle (keep it below the core's shutdown grace). */
    readonly coreStreamMaxAgeMs: number;
    /** How often the core checks for a newly published index version. */
    readonly indexWatchIntervalMs: number;
    /** The start-up warm-up (src/core/warmup.ts): at most this many searches, for at most this long; 0 searches: off. */
    readonly warmup: { readonly queries: number; readonly maxMs: number };
    /** The core's callers, name → service token (CORE_AUTH_TOKENS); empty: no authentication (loopback HOST only). */
    readonly coreAuthTokens: ReadonlyMap<string, string>;
    /** The token the gateway sends to the core (CORE_TOKEN); null: none. */
    readonly coreToken: string | null;
    /** Deadline of a core call whose caller sets none. */
    readonly coreDefaultDeadlineMs: number;
    /** The core's admission limits (src/core/grpc/scheduler.ts, server.ts). */
    readonly coreLimits: {
      readonly maxRunning: number;
      readonly maxQueued: number;
      readonly maxQueuedPerCaller: number;
      readonly streamMaxOpen: number;
      readonly streamMaxBatch: number;
      readonly maxConcurrentStreams: number;
      readonly maxMessageBytes: number;
    };
    /** How long shutdown waits for in-flight requests before closing connections. */
    readonly shutdownGraceMs: number;
    /** How long a draining gateway keeps accepting (health 503, `Connection: close` on every answer) before it stops listening. */
    readonly shutdownDrainDelayMs: number;
    /**
     * The core closes each gRPC connection after this long (GOAWAY; calls in flight finish), so clients
     * re-resolve the core's address and spread over core replicas added since. 0 = never.
     */
    readonly grpcMaxConnectionAgeMs: number;
    /** HTTP port of a core-only process for /metrics and /health (the gateway serves its own). */
    readonly metricsPort: number;
    /** Serving processes of `serve` (and of `start` on a published index): node:cluster workers sharing the ports; 1 = no cluster. */
    readonly processes: number;
    /**
     * How a cluster's REST connections reach its workers: "least-connections" (the primary hands each
     * to the worker holding fewest) or "round-robin" (node:cluster's own). gRPC ports use node:cluster's.
     */
    readonly balancing: BalancingPolicy;
    /** V8 young-generation semi-space of each cluster worker in MiB (--max-semi-space-size); 0 = V8's default. */
    readonly workerSemiSpaceMb: number;
  };
  readonly rerank: {
    /** Which reranker the server enables; "off" disables the stage whatever requests ask. */
    readonly kind: RerankerKind;
    /** Cross-encoder directory (model.onnx + tokenizer.json) for kind "onnx". */
    readonly modelDir: string | null;
    /** text-embeddings-inference base URL for kind "http". */
    readonly httpUrl: string | null;
    /** Budget of the whole stage; on expiry the first-stage order stands (reranked: false). */
    readonly timeoutMs: number;
  };
  readonly gateway: {
    readonly ledgerBackend: "sqlite" | "postgres";
    /** SQLite ledger file (default DATA_DIR/ledger.sqlite). */
    readonly sqlitePath: string;
    readonly databaseUrl: string;
    /** Store of rate-limit counters and the query cache. */
    readonly cacheBackend: "memory" | "redis";
    readonly redisUrl: string;
    /** Deadline of each Redis command: a slower answer counts as the store being down. */
    readonly redisCommandTimeoutMs: number;
    readonly rateLimit: {
      readonly ipPerMinute: number;
      readonly accountPerMinute: number;
      /** What happens when the limiter store is down: "closed" answers 503, "open" admits under a per-process cap. */
      readonly failMode: "closed" | "open";
      readonly failOpenPerMinute: number;
    };
    /** Proxy addresses or CIDRs whose X-Forwarded-For is trusted; empty means the socket address is the client. */
    readonly trustedProxies: readonly string[];
    readonly maxBodyBytes: number;
    /** The HTTP edge's timeouts and caps (src/gateway/http-edge.ts). */
    readonly http: {
      readonly headersTimeoutMs: number;
      readonly requestTimeoutMs: number;
      readonly keepAliveTimeoutMs: number;
      /** 0: no inactivity timeout. */
      readonly socketTimeoutMs: number;
      /** 0: unlimited. */
      readonly maxRequestsPerConnection: number;
      readonly maxConnections: number;
      readonly maxConnectionsPerIp: number;
    };
    /** Query-cache entry lifetime; 0 disables the cache. */
    readonly queryCacheTtlMs: number;
    readonly queryCacheSize: number;
    /** An open reservation older than this is refunded by the sweep (src/gateway/billing.ts). */
    readonly reservationTtlMs: number;
  };
  readonly tracing: {
    /** OTLP/HTTP base URL; spans are exported to `<endpoint>/v1/traces`. null: tracing off. */
    readonly otlpEndpoint: string | null;
    /** service.name of the spans; null: "reposearch" (role all), "reposearch-core" or "reposearch-gateway". */
    readonly serviceName: string | null;
  };
  /** A remote reposearch the CLI and `reposearch mcp` call instead of the local data dir. */
  readonly remote: {
    /** Base URL (REPOSEARCH_URL); null: use the local data dir. */
    readonly url: string | null;
    readonly apiKey: string | null;
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

/** A core caller's name: it becomes a metric label, so short and plain. */
const CALLER_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** A service token: visible ASCII (it travels in a header), long enough not to be guessed. */
const TOKEN_RE = /^[\x21-\x7e]{24,512}$/;

/**
 * CORE_AUTH_TOKENS: `name=token,name=token`. Problems are reported by name and position only: a
 * token never appears in a message.
 */
function parseCoreAuthTokens(spec: string | null, problems: string[]): ReadonlyMap<string, string> {
  const tokens = new Map<string, string>();
  if (spec === null) return tokens;
  const seen = new Set<string>();
  spec.split(",").forEach((entry, i) => {
    const trimmed = entry.trim();
    if (trimmed === "") return;
    const eq = trimmed.indexOf("=");
    const name = eq > 0 ? trimmed.slice(0, eq).trim() : "";
    const token = eq > 0 ? trimmed.slice(eq + 1).trim() : "";
    if (!CALLER_NAME_RE.test(name)) problems.push(`CORE_AUTH_TOKENS: entry ${i + 1}: expected name=token with a name of a-z, 0-9, - and _ (at most 32)`);
    else if (tokens.has(name) || name === "anonymous" || name === "local") problems.push(`CORE_AUTH_TOKENS: entry ${i + 1}: the name ${name} is taken`);
    else if (!TOKEN_RE.test(token)) problems.push(`CORE_AUTH_TOKENS: entry ${i + 1} (${name}): the token must be 24 to 512 visible ASCII characters`);
    else if (seen.has(token)) problems.push(`CORE_AUTH_TOKENS: entry ${i + 1} (${name}): the same token as another caller`);
    else {
      tokens.set(name, token);
      seen.add(token);
    }
  });
  return tokens;
}

/** Memory budgeted per serving process by SERVE_PROCESSES=0: each loads its own copy of the index (about 1 GiB for the full dataset). */
export const MEMORY_PER_SERVE_PROCESS_BYTES = 2 * 2 ** 30;

/**
 * SERVE_PROCESSES=0: one process per CPU this process may run on (like nginx's `worker_processes
 * auto`), but no more than one per MEMORY_PER_SERVE_PROCESS_BYTES of memory, and at least one.
 */
export function autoServeProcesses(cpuCount: number, memoryBytes: number): number {
  return Math.max(1, Math.min(cpuCount, Math.floor(memoryBytes / MEMORY_PER_SERVE_PROCESS_BYTES)));
}

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
  if (e.RERANKER === "onnx" && !e.RERANK_MODEL_DIR) problems.push("RERANK_MODEL_DIR: required when RERANKER=onnx");
  if (e.RERANKER === "http" && !e.RERANK_HTTP_URL) problems.push("RERANK_HTTP_URL: required when RERANKER=http");
  if (e.RERANK_HTTP_URL && !/^https?:\/\//.test(e.RERANK_HTTP_URL)) problems.push("RERANK_HTTP_URL: must be an http(s) URL");
  if (!/^redis(s)?:\/\//.test(e.REDIS_URL)) problems.push("REDIS_URL: must be a redis:// or rediss:// URL");
  if (!/^postgres(ql)?:\/\//.test(e.DATABASE_URL)) problems.push("DATABASE_URL: must be a postgres:// URL");
  if (e.OTEL_EXPORTER_OTLP_ENDPOINT !== null && !/^https?:\/\/[^/\s]+/.test(e.OTEL_EXPORTER_OTLP_ENDPOINT)) {
    problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL, OTLP over HTTP (got ${JSON.stringify(e.OTEL_EXPORTER_OTLP_ENDPOINT)})`);
  }
  const storeKind = e.VECTOR_STORE ?? "embedded";
  if (!(VECTOR_STORE_KINDS as readonly string[]).includes(storeKind))
    problems.push(`VECTOR_STORE: must be one of ${VECTOR_STORE_KINDS.join(", ")} (got ${JSON.stringify(storeKind)})`);
  if (e.QDRANT_URL !== null && !/^https?:\/\/[^/\s]+/.test(e.QDRANT_URL))
    problems.push(`QDRANT_URL: must be an http(s) URL (got ${JSON.stringify(e.QDRANT_URL)})`);
  if (storeKind === "qdrant" && e.QDRANT_URL === null) problems.push("QDRANT_URL: required when VECTOR_STORE=qdrant");
  const collection = e.QDRANT_COLLECTION ?? DEFAULT_QDRANT_COLLECTION;
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(collection)) problems.push(`QDRANT_COLLECTION: letters, digits, _ and - only (got ${JSON.stringify(collection)})`);
  const quantization = e.QDRANT_QUANTIZATION ?? "none";
  if (quantization !== "none" && quantization !== "int8") problems.push(`QDRANT_QUANTIZATION: must be none or int8 (got ${JSON.stringify(quantization)})`);
  const qTimeout = e.QDRANT_TIMEOUT_MS === null ? 30_000 : Number(e.QDRANT_TIMEOUT_MS);
  if (!Number.isInteger(qTimeout) || qTimeout < 1 || qTimeout > 3_600_000)
    problems.push(`QDRANT_TIMEOUT_MS: must be an integer in [1, 3600000] (got ${JSON.stringify(e.QDRANT_TIMEOUT_MS)})`);
  const coreAuthTokens = parseCoreAuthTokens(e.CORE_AUTH_TOKENS, problems);
  if (e.CORE_TOKEN !== null && !TOKEN_RE.test(e.CORE_TOKEN)) problems.push("CORE_TOKEN: must be 24 to 512 visible ASCII characters (value not shown)");
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push(`HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS (${e.HTTP_REQUEST_TIMEOUT_MS}; got ${e.HTTP_HEADERS_TIMEOUT_MS})`);
  }
  if (e.REPOSEARCH_URL !== null && !/^https?:\/\/[^\s]+$/i.test(e.REPOSEARCH_URL)) problems.push("REPOSEARCH_URL: must be an http(s) URL");
  if (problems.length) throw new ConfigError(problems);
  const dataDir = path.resolve(e.DATA_DIR);

  return {
    dataDir,
    dataset: e.DATASET ?? defaultDatasetPath(),
    logLevel: e.LOG_LEVEL,
    embedder: {
      kind: e.EMBEDDER,
      workers: e.EMBED_WORKERS === 0 ? Math.max(1, cpus().length) : e.EMBED_WORKERS,
      batchSize: e.EMBED_BATCH_SIZE,
      queryMaxBatch: e.QUERY_EMBED_MAX_BATCH,
      onnxModelDir: e.ONNX_MODEL_DIR,
      onnxMaxTokens: e.ONNX_MAX_TOKENS,
      httpUrl: e.EMBED_HTTP_URL,
      httpTimeoutMs: e.EMBED_HTTP_TIMEOUT_MS,
      staticVocabSize: e.STATIC_VOCAB_SIZE,
      staticDims: e.STATIC_DIMS,
      staticTrainEpochs: e.STATIC_TRAIN_EPOCHS,
      staticTrainPatience: e.STATIC_TRAIN_PATIENCE,
      staticTrainThreads: e.STATIC_TRAIN_THREADS === 0 ? Math.max(1, availableParallelism()) : e.STATIC_TRAIN_THREADS,
    },
    store: {
      hnswM: e.HNSW_M,
      hnswEfConstruction: e.HNSW_EF_CONSTRUCTION,
      hnswEfSearch: e.HNSW_EF_SEARCH,
      denseEfSearch: e.DENSE_EF_SEARCH,
      fullScanThreshold: e.FULL_SCAN_THRESHOLD,
      keepVersions: e.INDEX_KEEP_VERSIONS,
    },
    indexer: {
      checkpointEvery: e.INDEX_CHECKPOINT_EVERY,
      progressIntervalMs: e.PROGRESS_INTERVAL_MS,
    },
    vectorStore: {
      kind: storeKind as VectorStoreKind,
      qdrant:
        storeKind === "qdrant"
          ? { url: e.QDRANT_URL!, apiKey: e.QDRANT_API_KEY, collection, quantization: quantization as "none" | "int8", timeoutMs: qTimeout }
          : null,
    },
    server: {
      host: e.HOST,
      port: e.PORT,
      grpcPort: e.GRPC_PORT,
      // Unset: 50052, or any free port when the gRPC port is any free port too (tests, ephemeral cores).
      connectPort: e.CONNECT_PORT ?? (e.GRPC_PORT === 0 ? 0 : 50052),
      coreAddress: e.CORE_ADDRESS ?? `${e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST}:${e.GRPC_PORT}`,
      coreTimeoutMs: e.CORE_TIMEOUT_MS,
      coreStreams: e.CORE_STREAMS,
      coreStreamMaxAgeMs: e.CORE_STREAM_MAX_AGE_MS,
      indexWatchIntervalMs: e.INDEX_WATCH_INTERVAL_MS,
      warmup: { queries: e.WARMUP_QUERIES, maxMs: e.WARMUP_MAX_MS },
      coreAuthTokens,
      coreToken: e.CORE_TOKEN,
      coreDefaultDeadlineMs: e.CORE_DEFAULT_DEADLINE_MS,
      coreLimits: {
        maxRunning: e.CORE_MAX_RUNNING_SEARCHES,
        maxQueued: e.CORE_MAX_QUEUED_SEARCHES,
        maxQueuedPerCaller: e.CORE_MAX_QUEUED_PER_CALLER,
        streamMaxOpen: e.CORE_STREAM_MAX_OPEN,
        streamMaxBatch: e.CORE_STREAM_MAX_BATCH,
        maxConcurrentStreams: e.CORE_MAX_CONCURRENT_STREAMS,
        maxMessageBytes: e.CORE_MAX_MESSAGE_BYTES,
      },
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
      shutdownDrainDelayMs: e.SHUTDOWN_DRAIN_DELAY_MS,
      grpcMaxConnectionAgeMs: e.GRPC_MAX_CONNECTION_AGE_MS,
      metricsPort: e.METRICS_PORT,
      processes: e.SERVE_PROCESSES === 0 ? autoServeProcesses(availableParallelism(), totalmem()) : e.SERVE_PROCESSES,
      balancing: e.SERVE_BALANCING,
      workerSemiSpaceMb: e.SERVE_SEMI_SPACE_MB,
    },
    rerank: {
      kind: e.RERANKER,
      modelDir: e.RERANK_MODEL_DIR,
      httpUrl: e.RERANK_HTTP_URL,
      timeoutMs: e.RERANK_TIMEOUT_MS,
    },
    gateway: {
      ledgerBackend: e.LEDGER_BACKEND,
      sqlitePath: e.LEDGER_SQLITE_PATH ? path.resolve(e.LEDGER_SQLITE_PATH) : path.join(dataDir, "ledger.sqlite"),
      databaseUrl: e.DATABASE_URL,
      cacheBackend: e.CACHE_BACKEND,
      redisUrl: e.REDIS_URL,
      redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
      rateLimit: {
        ipPerMinute: e.RATE_LIMIT_IP_PER_MINUTE,
        accountPerMinute: e.RATE_LIMIT_ACCOUNT_PER_MINUTE,
        failMode: e.RATE_LIMIT_FAIL_MODE,
        failOpenPerMinute: e.RATE_LIMIT_FAIL_OPEN_PER_MINUTE,
      },
      trustedProxies: (e.TRUSTED_PROXIES ?? "")
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
      maxBodyBytes: e.MAX_BODY_BYTES,
      http: {
        headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
        requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
        keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
        socketTimeoutMs: e.HTTP_SOCKET_TIMEOUT_MS,
        maxRequestsPerConnection: e.HTTP_MAX_REQUESTS_PER_CONNECTION,
        maxConnections: e.HTTP_MAX_CONNECTIONS,
        maxConnectionsPerIp: e.HTTP_MAX_CONNECTIONS_PER_IP,
      },
      queryCacheTtlMs: e.QUERY_CACHE_TTL_MS,
      queryCacheSize: e.QUERY_CACHE_SIZE,
      reservationTtlMs: e.BILLING_RESERVATION_TTL_MS,
    },
    tracing: {
      otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
      serviceName: e.OTEL_SERVICE_NAME,
    },
    remote: { url: e.REPOSEARCH_URL, apiKey: e.REPOSEARCH_API_KEY },
  };
}
