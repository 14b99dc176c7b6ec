import cluster from "node:cluster";
import { ReposearchError, ErrorCode } from "../common/errors.js";
import { logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import type { IndexReport } from "../indexer/indexer.js";
import type { Role } from "../server/serve.js";
import type { VectorStore } from "../store/types.js";
import type { AccountStore } from "../gateway/accounts/types.js";
import { VERSION, type Command } from "./command.js";

// A command imports what it runs when it runs: the server's modules alone take 1.1 s to load here, which
// `reposearch admin`, `search --url` or a mistyped flag should not wait for.
const serverModule = () => import("../server/serve.js");
const clusterModule = () => import("../server/cluster.js");
const embeddedModule = () => import("../store/embedded/index.js");

async function openStore(config: Config): Promise<VectorStore> {
  return (await import("../store/factory.js")).openStore(config);
}

async function openAccountStore(config: Config): Promise<AccountStore> {
  return (await import("../gateway/accounts/index.js")).openAccountStore(config);
}

/** What `reposearch start` prints once it serves. */
function startBanner(url: string, grpcAddress: string, key: string, firstBuild: boolean, processes: number): string {
  return [
    "",
    `reposearch ${VERSION} is serving at ${url}  (gRPC core at ${grpcAddress}${processes > 1 ? `; ${processes} processes` : ""})`,
    `development API key (account ${DEV_ACCOUNT}, shown once): ${key}`,
    "",
    "try:",
    `  curl -s ${url}/v1/codehost/search -H 'Content-Type: application/json' -H 'X-API-Key: ${key}' \\`,
    `    -d '{"query": "Go library for building CLIs with subcommands", "limit": 5}'`,
    "",
    `docs: ${url}/docs   health: ${url}/health   stop: Ctrl-C`,
    ...(firstBuild ? ["", "first run: searches answer lexical-only until the full index is built (a few minutes; meta.methods shows which ran)"] : []),
  ].join("\n");
}

/** Whether the configured store has a published version, without loading an embedded index. */
async function hasPublishedIndex(config: Config): Promise<boolean> {
  if (config.vectorStore.kind === "embedded") return await (await embeddedModule()).hasPublishedIndex(config.dataDir);
  const store = await openStore(config);
  try {
    return (await store.info()).version !== null;
  } finally {
    await store.close();
  }
}

/** A cluster worker of `serve` or `start`: serves the role, tells the primary, and exits after a graceful close. */
async function serveAsWorker(config: Config, role: Role): Promise<number> {
  const [{ serve, closeOnSignals }, { reportWorkerReady }] = await Promise.all([serverModule(), clusterModule()]);
  try {
    const running = await serve(config, role, VERSION);
    reportWorkerReady(running);
    await closeOnSignals(running);
    return 0;
  } finally {
    // The IPC channel to the primary would keep this process alive after everything else closed (or failed).
    cluster.worker?.disconnect();
  }
}

/** The account `npm start` creates local development keys for. */
const DEV_ACCOUNT = "local-dev";

/** A fresh key for the development account, with credits topped up when the balance is low. */
async function devKey(accounts: AccountStore): Promise<string> {
  try {
    await accounts.createAccount(DEV_ACCOUNT);
  } catch (e) {
    if (!(e instanceof ReposearchError && e.code === ErrorCode.ValidationError)) throw e; // already exists
  }
  if ((await accounts.balance(DEV_ACCOUNT)) < 1_000_000) await accounts.topup(DEV_ACCOUNT, 10_000_000, { reference: "npm start development credits" });
  return (await accounts.createKey(DEV_ACCOUNT)).key;
}
import { adminCommands } from "./admin-commands.js";
import { searchCommands } from "./search-commands.js";
import { storeCommands } from "./store-commands.js";
import { trainCommands } from "./train-commands.js";

function positiveInt(flag: string, v: string | boolean | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== "string" || !Number.isInteger(n) || n < 1) {
    throw new ReposearchError(ErrorCode.ValidationError, `--${flag} must be a positive integer (got ${JSON.stringify(v)})`);
  }
  return n;
}

async function buildIndex(config: Config, opts: { limit?: number | undefined; shard?: string | undefined; retrain?: boolean }): Promise<IndexReport> {
  if (!config.dataset) {
    throw new ReposearchError(
      ErrorCode.ValidationError,
      "no dataset: pass --dataset PATH_OR_URL or set DATASET (the default ../shared/data/repos.jsonl.gz does not exist)",
    );
  }
  const [{ runIndex, parseShard }, { Progress }] = await Promise.all([import("../indexer/indexer.js"), import("../indexer/progress.js")]);
  const store = await openStore(config);
  try {
    return await runIndex({
      config,
      store,
      dataset: config.dataset,
      limit: opts.limit,
      shard: opts.shard ? parseShard(opts.shard) : null,
      retrainEmbedder: opts.retrain,
      logger: logger.child({ component: "indexer" }),
      progress: new Progress({ logger: logger.child({ component: "indexer" }), stream: process.stderr, intervalMs: config.indexer.progressIntervalMs }),
    });
  } finally {
    await store.close();
  }
}

function printReport(r: IndexReport): void {
  const lines = [
    `dataset        ${r.dataset}${r.shard ? ` (shard ${r.shard})` : ""}`,
    `records        ${r.valid} valid, ${r.rejected} rejected, ${r.duplicates} duplicates, ${r.inSlice} in this slice`,
    `changes        ${r.embedded} embedded, ${r.unchanged} unchanged, ${r.deleted} deleted`,
    `version        ${r.version ?? "(none)"}${r.published ? " (published)" : " (nothing to publish)"}`,
    `embedder       ${r.embedderId}`,
    `time           ${Object.entries(r.seconds)
      .map(([k, v]) => `${k} ${v.toFixed(1)}s`)
      .join(", ")}`,
    `report         ${r.reportFile}`,
  ];
  if (r.rejected) {
    lines.push(`rejected lines (first ${Math.min(10, r.rejects.length)} of ${r.rejected}; all kept lines are in the report):`);
    for (const x of r.rejects.slice(0, 10)) lines.push(`  line ${x.line}: ${x.reason}`);
  }
  console.log(lines.join("\n"));
}

export const commands: Record<string, Command> = {
  index: {
    summary: "build or update the index from a JSONL dataset (incremental, resumable, shardable)",
    usage: "reposearch index [--dataset PATH_OR_URL] [--data-dir DIR] [--limit N] [--shard I/N] [--retrain-embedder]",
    options: {
      dataset: { type: "string" },
      limit: { type: "string" },
      shard: { type: "string" },
      "retrain-embedder": { type: "boolean" },
    },
    async run({ config, values }) {
      const report = await buildIndex(config, {
        limit: positiveInt("limit", values.limit),
        shard: values.shard as string | undefined,
        retrain: Boolean(values["retrain-embedder"]),
      });
      printReport(report);
      return 0;
    },
  },
  info: {
    summary: "show the published index version, size, embedder and age",
    usage: "reposearch info [--data-dir DIR]",
    options: {},
    async run({ config }) {
      const store = await openStore(config);
      try {
        const info = await store.info();
        const ageS = info.publishedAt ? Math.round((Date.now() - Date.parse(info.publishedAt)) / 1000) : null;
        console.log(JSON.stringify({ dataDir: config.dataDir, ...info, ageSeconds: ageS }, null, 2));
        return info.version ? 0 : 1;
      } finally {
        await store.close();
      }
    },
  },
  serve: {
    summary: "run the gRPC search core and the REST gateway (or one of them, with --role) on the published index",
    usage: "reposearch serve [--data-dir DIR] [--role all|core|gateway]",
    options: { role: { type: "string" } },
    async run({ config, values }) {
      const role = (values.role as string | undefined) ?? "all";
      if (role !== "all" && role !== "core" && role !== "gateway") throw new ReposearchError(ErrorCode.ValidationError, "--role must be all, core or gateway");
      const { isClusterPrimary, runClusterPrimary } = await clusterModule();
      if (isClusterPrimary(config)) {
        // SERVE_PROCESSES > 1: this process forks the workers (each re-runs this command) and serves nothing itself.
        await runClusterPrimary(config, role, {
          onReady(r) {
            if (r.url) console.log(`reposearch ${VERSION} serving at ${r.url} (${r.processes} processes)`);
            if (r.grpcAddress) console.log(`search core (gRPC) at ${r.grpcAddress}`);
            if (r.connectUrl) console.log(`search core (Connect, gRPC-Web) at ${r.connectUrl}`);
          },
        });
        return 0;
      }
      if (cluster.isWorker) return serveAsWorker(config, role);
      const { serve, closeOnSignals } = await serverModule();
      const running = await serve(config, role, VERSION);
      if (running.gateway) console.log(`reposearch ${VERSION} serving at ${running.gateway.url}`);
      if (running.core) console.log(`search core (gRPC) at ${running.core.grpc.address}`);
      if (running.core) console.log(`search core (Connect, gRPC-Web) at ${running.core.connect.url}`);
      await closeOnSignals(running);
      return 0;
    },
  },
  start: {
    summary: "the main job on the embedded default: build the index when none is published, then serve it and print a development key",
    usage: "reposearch start [--data-dir DIR] [--dataset PATH_OR_URL]",
    options: { dataset: { type: "string" } },
    async run({ config }) {
      // A worker forked by the branch below serves; it builds nothing and prints nothing.
      if (cluster.isWorker) return serveAsWorker(config, "all");
      const { isClusterPrimary, runClusterPrimary } = await clusterModule();
      if (isClusterPrimary(config) && (await hasPublishedIndex(config))) {
        // An index is published: serve it from SERVE_PROCESSES workers, as `serve` does. (A first run
        // builds in this process beside a one-process bootstrap server: see below.)
        const accounts = await openAccountStore(config);
        let key: string;
        try {
          key = await devKey(accounts);
        } finally {
          await accounts.close();
        }
        await runClusterPrimary(config, "all", {
          onReady(r) {
            console.log(startBanner(r.url!, r.grpcAddress!, key, false, r.processes));
          },
        });
        return 0;
      }
      const store = await openStore(config);
      const info = await store.info();
      let servedStore: VectorStore | undefined;
      let firstBuild = false;
      if (!info.version && config.dataset && store.local) {
        // First run: answer lexical-only from an in-memory index within seconds while the full index
        // builds; the served store switches to the published version as soon as it appears.
        logger.info("no published index: serving a lexical-only bootstrap index while the full index builds", { dataDir: config.dataDir });
        const { BootstrapStore, FallbackStore } = await embeddedModule();
        store.watch(config.server.indexWatchIntervalMs);
        servedStore = new FallbackStore(store, await BootstrapStore.build(config.dataset, { logger }), () =>
          logger.info("the full index is published; serving it (lexical and dense)"),
        );
        firstBuild = true;
      } else {
        await store.close();
        if (!info.version) {
          logger.info("no published index; building one", { dataDir: config.dataDir, dataset: config.dataset });
          printReport(await buildIndex(config, {}));
        }
      }
      const { serve, closeOnSignals } = await serverModule();
      const running = await serve(config, "all", VERSION, servedStore ? { store: servedStore } : {});
      const key = await devKey(running.gateway!.accounts);
      console.log(startBanner(running.gateway!.url, running.core!.grpc.address, key, firstBuild, 1));
      const stopped = closeOnSignals(running);
      if (firstBuild) {
        // The build runs beside the server in this process; a failed build leaves the bootstrap serving.
        buildIndex(config, {}).then(printReport, (e: unknown) =>
          logger.error("index build failed; still serving the bootstrap index", { error: (e as Error).message }),
        );
      }
      await stopped;
      return 0;
    },
  },
  ...searchCommands,
  ...adminCommands,
  ...storeCommands,
  ...trainCommands,
};
