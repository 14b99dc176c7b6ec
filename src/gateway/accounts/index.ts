/**
 * Opens the configured AccountStore: SQLite (the embedded default, a file under DATA_DIR) or Postgres
 * (shared by gateway replicas). Callers own the store and must close() it.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Config } from "../../config/config.js";
import { PostgresAccountStore, type PostgresAccountStoreOptions } from "./postgres.js";
import { SqliteAccountStore } from "./sqlite.js";
import type { AccountStore } from "./types.js";

export * from "./types.js";

export interface OpenAccountStoreOptions {
  /** Postgres only: isolate the tables in this schema (tests). */
  readonly schema?: string;
  /** Postgres only: pool size. */
  readonly max?: number;
}

export async function openAccountStore(config: Config, opts: OpenAccountStoreOptions = {}): Promise<AccountStore> {
  const g = config.gateway;
  if (g.ledgerBackend === "postgres") {
    const pgOpts: PostgresAccountStoreOptions = {
      connectionString: g.databaseUrl,
      ...(opts.schema !== undefined ? { schema: opts.schema } : {}),
      ...(opts.max !== undefined ? { max: opts.max } : {}),
    };
    return PostgresAccountStore.open(pgOpts);
  }
  mkdirSync(path.dirname(g.sqlitePath), { recursive: true });
  return SqliteAccountStore.open(g.sqlitePath);
}
