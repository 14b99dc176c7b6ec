/**
 * Crash-safe billing with real processes: `reposearch serve --role core` and `--role gateway` as child
 * processes of this test, a real index (real CLI), paid traffic from 30 concurrent clients, and the
 * ledger read with the real stores, on SQLite and on Postgres.
 *
 * The crash is made to land while every client has a search charged and in flight: the core child is
 * frozen with SIGSTOP (the gateway keeps running; each client's next search is debited and then waits
 * for the core), and once the ledger holds exactly one open reservation per client, the gateway gets
 * SIGKILL. A restarted gateway must refund those searches before it serves, logging each: then the
 * charged count equals the answered count. The answered searches are counted by the clients (a 200
 * whose body arrived in full), and matched to the ledger by the X-Request-Id the gateway echoes.
 *
 * Also: a process killed with SIGKILL leaves its Unix socket in the temp dir; the next start removes
 * it (and only sockets whose pid is dead).
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, test } from "vitest";
import pg from "pg";
import { SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { PostgresAccountStore } from "../src/gateway/accounts/postgres.js";
import { SqliteAccountStore } from "../src/gateway/accounts/sqlite.js";
import { datasetLines, logLines, oneRecordPerName, startCli, tempDir } from "./helpers.js";
import { buildIndex, freePort, fundedAccount, postSearch, stackEnv } from "./stack.js";
import { waitUntil } from "./support/grpc-testkit.js";

const DATABASE_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const CLIENTS = 30;
const CORE_TOKEN = "gateway-token-0123456789abcdef";

let dataDir = "";
const children: ChildProcess[] = [];

interface Started {
  readonly child: ChildProcess;
  /** Everything the child wrote to stderr so far (JSON log lines). */
  stderr(): string;
}

/** Starts `reposearch serve --role ROLE` and resolves once it prints `ready` on stdout. */
async function serve(role: "all" | "core" | "gateway", env: NodeJS.ProcessEnv, ready: RegExp): Promise<Started> {
  const { child, done } = startCli(["serve", "--role", role], env);
  children.push(child);
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve --role ${role}: not ready within 60 s\n${err.slice(-3000)}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void done.then((r) => {
      clearTimeout(timer);
      reject(new Error(`serve --role ${role} exited with ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}`));
    });
  });
  return { child, stderr: () => err };
}

function killed(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once("exit", () => resolve()));
}

beforeAll(async () => {
  dataDir = await tempDir("billing-crash");
  await buildIndex(dataDir, oneRecordPerName(await datasetLines(340)).slice(0, 300), { env: stackEnv(dataDir, { STATIC_TRAIN_EPOCHS: "0" }) });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await Promise.all(children.map(killed));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface Backend {
  readonly name: "sqlite" | "postgres";
  /** Environment of the gateway processes for this ledger. */
  readonly env: Record<string, string>;
  open(): Promise<AccountStore>;
  /** [debits, refunds] of the account, per request id: the ledger's own rows. */
  entries(accountId: string): Promise<{ debits: Set<string>; refunds: Set<string> }>;
  cleanup(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const file = path.join(dataDir, `ledger-${randomUUID().slice(0, 8)}.sqlite`);
  return {
    name: "sqlite",
    env: { LEDGER_BACKEND: "sqlite", LEDGER_SQLITE_PATH: file },
    open: async () => SqliteAccountStore.open(file),
    async entries(accountId) {
      const { default: Database } = await import("better-sqlite3");
      const db = new Database(file, { readonly: true });
      try {
        const rows = db.prepare("SELECT kind, request_id FROM ledger WHERE account_id = ? AND kind <> 'topup'").all(accountId) as {
          kind: string;
          request_id: string;
        }[];
        return ledgerSets(rows);
      } finally {
        db.close();
      }
    },
    cleanup: async () => undefined,
  };
}

async function postgresBackend(): Promise<Backend> {
  const schema = `billing_crash_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  // The store creates the schema and its tables; the children reach it through search_path.
  await (await PostgresAccountStore.open({ connectionString: DATABASE_URL, schema })).close();
  const url = new URL(DATABASE_URL);
  url.searchParams.set("options", `-c search_path=${schema}`);
  const raw = new pg.Pool({ connectionString: DATABASE_URL, max: 1, options: `-c search_path=${schema}` });
  return {
    name: "postgres",
    env: { LEDGER_BACKEND: "postgres", DATABASE_URL: url.toString() },
    open: () => PostgresAccountStore.open({ connectionString: DATABASE_URL, schema }),
    async entries(accountId) {
      const r = await raw.query<{ kind: string; request_id: string }>("SELECT kind, request_id FROM ledger WHERE account_id = $1 AND kind <> 'topup'", [
        accountId,
      ]);
      return ledgerSets(r.rows);
    },
    async cleanup() {
      await raw.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await raw.end();
    },
  };
}

function ledgerSets(rows: readonly { kind: string; request_id: string }[]): { debits: Set<string>; refunds: Set<string> } {
  const debits = new Set<string>();
  const refunds = new Set<string>();
  for (const r of rows) (r.kind === "debit" ? debits : refunds).add(r.request_id);
  return { debits, refunds };
}

describe.each([["sqlite"], ["postgres"]] as const)("kill -9 under paid traffic (%s ledger)", (which) => {
  test("every search charged but never answered is refunded when the gateway starts again: charged = answered", async () => {
    const backend = which === "sqlite" ? await sqliteBackend() : await postgresBackend();
    try {
      const tmp = path.join(dataDir, `tmp-${which}`);
      await mkdir(tmp, { recursive: true });
      const grpcPort = await freePort();
      const base = stackEnv(dataDir, {
        TMPDIR: tmp,
        SERVE_PROCESSES: "1",
        QUERY_CACHE_TTL_MS: "0",
        CORE_AUTH_TOKENS: `gateway=${CORE_TOKEN}`,
        CORE_TOKEN,
        // The frozen core must hold the searches, not the deadline.
        CORE_TIMEOUT_MS: "120000",
        ...backend.env,
      });
      const coreEnv = { ...base, GRPC_PORT: String(grpcPort), CONNECT_PORT: String(await freePort()), METRICS_PORT: String(await freePort()) };
      const gatewayEnv = { ...base, PORT: String(await freePort()), CORE_ADDRESS: `127.0.0.1:${grpcPort}` };
      const core = await serve("core", coreEnv, /search core \(gRPC\) at/);
      const gatewayUrl = `http://127.0.0.1:${gatewayEnv.PORT}`;
      let gateway = await serve("gateway", gatewayEnv, /serving at/);

      const store = await backend.open();
      const account = await fundedAccount(store, `crash-${which}-${randomUUID().slice(0, 6)}`, 5);

      // Paid traffic: 30 clients, each one search after another, until the gateway dies.
      const answered = new Set<string>();
      // Clients waiting for an answer: when all of them are, every answer received is in `answered`.
      const waiting = new Set<number>();
      let stop = false;
      const client = async (i: number): Promise<void> => {
        for (let n = 0; !stop; n++) {
          try {
            waiting.add(i);
            const res = await postSearch(gatewayUrl, { query: `command line parser ${i} ${n}`, limit: 5 }, account.key);
            const body = (await res.json()) as { results?: unknown[] };
            waiting.delete(i);
            assert.equal(res.status, 200, JSON.stringify(body));
            answered.add(res.headers.get("x-request-id")!);
          } catch {
            return; // the gateway is gone: this client's search in flight never got its answer
          }
        }
      };
      const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));
      assert.ok(await waitUntil(() => answered.size >= 90, 60_000), `answered ${answered.size}`);

      // Freeze the core: every client's next search is charged, then waits for it.
      process.kill(core.child.pid!, "SIGSTOP");
      try {
        // Each client's next search charged and stuck, and every answered one settled. An answer's charge
        // settles after the answer has left (src/gateway/app.ts), so a count of open reservations alone
        // can be met by stuck searches plus answered ones not yet settled, which a kill then refunds.
        // The same reservations and answers on two polls a second apart, too: on a loaded machine an
        // answer the core sent just before it froze can still be on its way through the gateway, and
        // would reach its client (charged, not refunded) after the check.
        let last = "";
        const stuck = await waitUntil(
          async () => {
            const open = waiting.size === CLIENTS ? await store.openReservations(1_000) : [];
            const ok = open.length === CLIENTS && open.every((r) => !answered.has(r.requestId));
            const ids = open.map((r) => r.requestId).sort();
            const now = ok ? `${answered.size} ${ids.join(" ")}` : "";
            const steady = ok && now === last;
            last = now;
            return steady;
          },
          60_000,
          1_000,
        );
        assert.ok(stuck, `open reservations: ${(await store.openReservations(1_000)).length}`);
        const before = await backend.entries(account.id);
        assert.equal(before.debits.size - before.refunds.size, answered.size + CLIENTS, "each client has one search charged in flight");

        stop = true;
        gateway.child.kill("SIGKILL");
        await killed(gateway.child);
        await Promise.all(clients);
      } finally {
        process.kill(core.child.pid!, "SIGCONT");
      }

      // What a dead gateway left: 30 debits without an answer. The next gateway settles them before serving.
      gateway = await serve("gateway", gatewayEnv, /serving at/);
      const after = await backend.entries(account.id);
      const charged = [...after.debits].filter((id) => !after.refunds.has(id));
      assert.equal(charged.length, answered.size, "charged = answered");
      assert.deepEqual(
        charged.filter((id) => !answered.has(id)),
        [],
        "no search charged without an answer",
      );
      assert.equal(after.refunds.size, CLIENTS);
      assert.equal(await store.balance(account.name), 5_000_000 - answered.size * SEARCH_PRICE_MICROS);
      assert.deepEqual(await store.openReservations(1_000), []);
      const refundLines = logLines(gateway.stderr()).filter((l) => l.msg === "refunded a search that was charged but never answered");
      assert.equal(refundLines.length, CLIENTS);
      assert.ok(refundLines.every((l) => l.reason === "its process is gone" && after.refunds.has(String(l.requestId))));

      // The restarted gateway bills as before: an answer is charged once and settled.
      const res = await postSearch(gatewayUrl, { query: "http router" }, account.key);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.ok(await waitUntil(async () => (await store.openReservations(10)).length === 0, 10_000));
      assert.equal(await store.balance(account.name), 5_000_000 - (answered.size + 1) * SEARCH_PRICE_MICROS);

      gateway.child.kill("SIGTERM");
      core.child.kill("SIGTERM");
      await Promise.all([killed(gateway.child), killed(core.child)]);
      await store.close();
    } finally {
      await backend.cleanup();
    }
  });
});

test("a process killed with SIGKILL leaves its Unix socket; the next start removes it, and no live process's socket", async () => {
  const tmp = path.join(dataDir, "tmp-sockets");
  await mkdir(tmp, { recursive: true });
  // A socket of a live process (this one) that must survive.
  const live: Server = createServer();
  const liveSocket = path.join(tmp, `reposearch-gateway-${process.pid}.sock`);
  await new Promise<void>((resolve) => live.listen(liveSocket, resolve));
  try {
    const env = stackEnv(dataDir, {
      TMPDIR: tmp,
      SERVE_PROCESSES: "1",
      PORT: String(await freePort()),
      GRPC_PORT: String(await freePort()),
      CONNECT_PORT: String(await freePort()),
      LEDGER_SQLITE_PATH: path.join(dataDir, "ledger-sockets.sqlite"),
    });
    const first = await serve("all", env, /serving at/);
    const stale = path.join(tmp, `reposearch-core-${first.child.pid}.sock`);
    assert.ok(existsSync(stale), "role all listens on its private socket");
    first.child.kill("SIGKILL");
    await killed(first.child);
    assert.ok(existsSync(stale), "SIGKILL leaves the socket behind");

    const second = await serve("all", env, /serving at/);
    assert.ok(!existsSync(stale), "the next start removed the dead process's socket");
    assert.ok(existsSync(liveSocket), "a live process's socket is left alone");
    assert.ok(existsSync(path.join(tmp, `reposearch-core-${second.child.pid}.sock`)));
    const removed = logLines(second.stderr()).filter((l) => l.msg === "removed a stale socket of a process that is gone");
    assert.deepEqual(
      removed.map((l) => l.socket),
      [stale],
    );
    second.child.kill("SIGTERM");
    await killed(second.child);
  } finally {
    await new Promise<void>((resolve) => live.close(() => resolve()));
  }
});
