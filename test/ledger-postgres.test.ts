/**
 * The AccountStore contract against a real Postgres (DATABASE_URL, default the local test server).
 * Each run lives in its own schema, dropped at the end.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { onTestFinished, test } from "vitest";
import pg from "pg";
import { setLogSink } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import { accountStoreContract } from "./support/account-store-contract.js";
import { openAccountStore } from "../src/gateway/accounts/index.js";
import { PostgresAccountStore } from "../src/gateway/accounts/postgres.js";
import { MICROS_PER_USD } from "../src/gateway/accounts/types.js";

const DATABASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const freshSchema = () => `ledger_test_${randomUUID().replace(/-/g, "").slice(0, 12)}`;

async function dropSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await c.end();
  }
}

accountStoreContract("postgres", async () => {
  const schema = freshSchema();
  const raw = new pg.Pool({ connectionString: DATABASE_URL, max: 2, options: `-c search_path=${schema}` });
  return {
    // The contract's race queues ~1,700 debits per store behind one account's row lock: about 400 commits/s
    // here and half that on a loaded CI machine, so the last one waits for a connection longer than the
    // default 10 s acquire bound (which bounds a request in service, not a test's deliberate burst).
    open: (opts) => PostgresAccountStore.open({ connectionString: DATABASE_URL, schema, max: 8, acquireTimeoutMillis: 120_000, ...opts }),
    exec: async (sql) => {
      await raw.query(sql);
    },
    scalar: async (sql) => {
      const r = await raw.query({ text: sql, rowMode: "array" });
      return (r.rows[0] as unknown[] | undefined)?.[0];
    },
    cleanup: async () => {
      await raw.end();
      await dropSchema(schema);
    },
  };
});

test("postgres: concurrent migrators apply each migration once; TRUNCATE of the ledger is refused", async () => {
  const schema = freshSchema();
  onTestFinished(() => dropSchema(schema));
  const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresAccountStore.open({ connectionString: DATABASE_URL, schema, max: 2 })));
  const raw = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` });
  await raw.connect();
  try {
    const versions = await raw.query("SELECT version FROM schema_migrations ORDER BY version");
    assert.deepEqual(versions.rows, [{ version: 1 }, { version: 2 }]);
    const a = await stores[0]!.createAccount("trunc");
    await stores[1]!.topup(a.name, 5 * MICROS_PER_USD);
    await assert.rejects(raw.query("TRUNCATE ledger"), /append-only/);
    assert.equal(await stores[2]!.balance(a.name), 5 * MICROS_PER_USD);
  } finally {
    await raw.end();
    for (const s of stores) await s.close();
  }
});

test("postgres: open fails fast against a server that never answers", async () => {
  // Accepts TCP connections and then stays silent: without connectionTimeoutMillis this would hang.
  const sockets: Socket[] = [];
  const server = createServer((sock) => sockets.push(sock));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  onTestFinished(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const t0 = performance.now();
  await assert.rejects(PostgresAccountStore.open({ connectionString: `postgres://postgres@127.0.0.1:${port}/test`, connectionTimeoutMillis: 300 }));
  assert.ok(performance.now() - t0 < 3_000);
});

test("postgres: dropped idle connections are logged, not fatal, and the pool recovers", async () => {
  const schema = freshSchema();
  const applicationName = `reposearch-test-${schema}`;
  const lines: string[] = [];
  const prev = setLogSink((l) => lines.push(l));
  const store = await PostgresAccountStore.open({ connectionString: DATABASE_URL, schema, max: 2, applicationName });
  try {
    assert.equal((await store.health()).status, "up");
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    try {
      const r = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [applicationName]);
      assert.ok(r.rows.length >= 1);
    } finally {
      await admin.end();
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(
      lines.some((l) => l.includes("idle postgres connection failed")),
      "the pool error was logged",
    );
    assert.equal((await store.health()).status, "up");
  } finally {
    setLogSink(prev);
    await store.close();
    await dropSchema(schema);
  }
});

test("openAccountStore(config) opens Postgres at DATABASE_URL in the given schema", async () => {
  const schema = freshSchema();
  onTestFinished(() => dropSchema(schema));
  const config = loadConfig({ LEDGER_BACKEND: "postgres", DATABASE_URL, DATA_DIR: "/nonexistent-reposearch-test" });
  const store = await openAccountStore(config, { schema });
  try {
    assert.equal(store.backend, "postgres");
    const h = await store.health();
    assert.equal(h.status, "up");
    assert.equal(typeof h.latencyMs, "number");
  } finally {
    await store.close();
  }
});
