/**
 * `reposearch store serve`: the embedded index under --data-dir, served over the subset of Qdrant's REST
 * API that QdrantStore uses (src/store/embedded/serve/server.ts), so indexers on other machines can write it with
 * VECTOR_STORE=qdrant QDRANT_URL=http://HOST:PORT.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import { logger } from "../common/logger.js";
import { DEFAULT_COLLECTION } from "../store/qdrant/store.js";
import { DEFAULT_STORE_SERVE_PORT, embeddedStoreFromConfig, StoreServer } from "../store/embedded/index.js";
import type { Command, CommandContext } from "./command.js";

const STORE_USAGE = `reposearch store serve --data-dir DIR [--port N (default ${DEFAULT_STORE_SERVE_PORT})] [--host H (default 127.0.0.1)] [--collection NAME (default ${DEFAULT_COLLECTION})]`;

function portOf(v: string | boolean | undefined): number {
  if (v === undefined) return DEFAULT_STORE_SERVE_PORT;
  const n = Number(v);
  if (typeof v !== "string" || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new ReposearchError(ErrorCode.ValidationError, `--port must be an integer in [0, 65535] (got ${JSON.stringify(v)})`);
  }
  return n;
}

async function serve({ config, values, positionals }: CommandContext): Promise<number> {
  if (positionals.length > 1) throw new ReposearchError(ErrorCode.ValidationError, `unexpected argument: ${positionals[1]}`);
  const port = portOf(values.port);
  const host = typeof values.host === "string" && values.host.trim() !== "" ? values.host.trim() : "127.0.0.1";
  const collection = typeof values.collection === "string" ? values.collection : DEFAULT_COLLECTION;
  const log = logger.child({ component: "store-serve" });
  const store = await embeddedStoreFromConfig(config, log);
  let server: StoreServer;
  try {
    // Versions published by other processes on this data dir (e.g. `reposearch index`) are picked up too.
    store.watch(config.server.indexWatchIntervalMs);
    server = await StoreServer.start({ store, collection, host, port, logger: log, closeGraceMs: config.server.shutdownGraceMs });
  } catch (err) {
    await store.close();
    throw err;
  }
  // The first stdout line is the address, so scripts (and tests) can start it on port 0.
  console.log(`store serve listening on ${server.url} (collection ${server.collection}, data dir ${config.dataDir})`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  log.info("shutting down", { signal });
  await server.close();
  await store.close();
  return 0;
}

export const storeCommands: Record<string, Command> = {
  store: {
    summary: "serve the embedded index over a Qdrant-compatible REST subset (store serve)",
    usage: STORE_USAGE,
    options: { port: { type: "string" }, host: { type: "string" }, collection: { type: "string" } },
    allowPositionals: true,
    async run(ctx) {
      const [sub] = ctx.positionals;
      if (sub !== "serve") {
        console.error(`${sub === undefined ? "a subcommand is required" : `unknown subcommand: ${sub}`}\n\nusage: ${STORE_USAGE}`);
        return 2;
      }
      return serve(ctx);
    },
  },
};
