import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { onTestFinished, test } from "vitest";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { loadConfig } from "../../config/config.js";
import { compiledModuleUrl } from "../../common/compiled-url.js";
import { accountStoreContract } from "../../../test/support/account-store-contract.js";
import { openAccountStore } from "./index.js";
import { SqliteAccountStore } from "./sqlite.js";
import { MICROS_PER_USD } from "./types.js";

async function tempFile(): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), "reposearch-accounts-"));
  return { dir, file: path.join(dir, "ledger.sqlite") };
}

accountStoreContract("sqlite", async () => {
  const { dir, file } = await tempFile();
  let raw: Database.Database | undefined;
  // Opened lazily: the first store creates and migrates the file.
  const conn = () => {
    if (!raw) {
      raw = new Database(file);
      raw.pragma("busy_timeout = 5000");
    }
    return raw;
  };
  return {
    open: async (opts) => SqliteAccountStore.open(file, opts),
    exec: async (sql) => {
      conn().exec(sql);
    },
    scalar: async (sql) => conn().prepare(sql).pluck().get(),
    cleanup: async () => {
      raw?.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

test("sqlite: WAL mode, busy timeout and migrations in schema_migrations", async () => {
  const { dir, file } = await tempFile();
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = SqliteAccountStore.open(file);
  const second = SqliteAccountStore.open(file);
  const raw = new Database(file, { readonly: true });
  try {
    assert.equal(raw.pragma("journal_mode", { simple: true }), "wal");
    assert.deepEqual(raw.prepare("SELECT version FROM schema_migrations").pluck().all(), [1, 2]);
    const triggers = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").pluck().all();
    assert.deepEqual(triggers, ["ledger_no_delete", "ledger_no_update"]);
  } finally {
    raw.close();
    await store.close();
    await second.close();
  }
});

test("sqlite group commit: the debits of one turn commit together, each with its own outcome", async () => {
  const { dir, file } = await tempFile();
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = SqliteAccountStore.open(file);
  onTestFinished(() => store.close());
  const rich = await store.createAccount("rich");
  const poor = await store.createAccount("poor");
  await store.topup("rich", 5 * MICROS_PER_USD);
  await store.topup("poor", 5 * MICROS_PER_USD);
  await store.debit(poor.id, 5 * MICROS_PER_USD - 1_500, "poor-0"); // leaves 1,500 micros: one more search
  const raw = new Database(file);
  onTestFinished(() => {
    raw.close();
  });
  // WAL frames written since the last truncation: one commit writes each page it changed once.
  const walFrames = () => (raw.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0]!.log;
  const truncateWal = () => raw.pragma("wal_checkpoint(TRUNCATE)");
  truncateWal();
  await store.debit(rich.id, 1_000, "r-0");
  const oneCommit = walFrames();
  truncateWal();
  // One turn: ordinary debits, a repeat of one of them, an overdraft, and a request id already charged elsewhere.
  const outcomes = await Promise.allSettled([
    store.debit(rich.id, 1_000, "r-1"),
    store.debit(poor.id, 1_000, "p-1"),
    store.debit(poor.id, 1_000, "p-2"),
    store.debit(rich.id, 1_000, "r-1"),
    store.debit(rich.id, 1_000, "poor-0"),
    store.debit(rich.id, 1_000, "r-2"),
  ]);
  assert.deepEqual(
    outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message)),
    [
      { ok: true, balanceMicros: 4_998_000 },
      { ok: true, balanceMicros: 500 },
      { ok: false, reason: "insufficient_credits", balanceMicros: 500 },
      { ok: true, balanceMicros: 4_998_000 },
      'request id "poor-0" was already charged to another account',
      { ok: true, balanceMicros: 4_997_000 },
    ],
  );
  // One commit for the six: separate ones would each write the account and ledger pages again.
  assert.ok(oneCommit > 0 && walFrames() <= oneCommit, `WAL frames ${walFrames()} for the batch, ${oneCommit} for one debit`);
  assert.equal(await store.balance("rich"), 4_997_000);
  assert.equal(raw.prepare("SELECT COUNT(*) FROM ledger WHERE kind = 'debit'").pluck().get(), 5);
});

test("sqlite group commit: a batch whose transaction cannot start fails whole, and charges nothing", async () => {
  const { dir, file } = await tempFile();
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = SqliteAccountStore.open(file, { busyTimeoutMs: 50 });
  onTestFinished(() => store.close());
  const a = await store.createAccount("a");
  await store.topup("a", 5 * MICROS_PER_USD);
  const locker = new Database(file);
  onTestFinished(() => {
    locker.close();
  });
  locker.exec("BEGIN IMMEDIATE");
  const outcomes = await Promise.allSettled([store.debit(a.id, 1_000, "x-1"), store.debit(a.id, 1_000, "x-2")]);
  locker.exec("ROLLBACK");
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ["rejected", "rejected"],
  );
  assert.match(String((outcomes[0] as PromiseRejectedResult).reason), /locked|busy/i);
  assert.equal(await store.balance("a"), 5 * MICROS_PER_USD);
  assert.deepEqual(await store.debit(a.id, 1_000, "x-1"), { ok: true, balanceMicros: 5 * MICROS_PER_USD - 1_000 });
});

test("openAccountStore(config) opens SQLite at LEDGER path, creating its directory", async () => {
  const { dir } = await tempFile();
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const config = loadConfig({ DATA_DIR: path.join(dir, "nested", "data") });
  const store = await openAccountStore(config);
  try {
    assert.equal(store.backend, "sqlite");
    assert.equal((await store.health()).status, "up");
    assert.ok(existsSync(path.join(dir, "nested", "data", "ledger.sqlite")));
  } finally {
    await store.close();
  }
});

interface WorkerResult {
  readonly ok: number;
  readonly refused: number;
  readonly sharedOk: number;
}

/**
 * True parallelism: better-sqlite3 is synchronous, so store instances in one thread take turns. Worker
 * threads, each with its own connection, race for the write lock for real.
 */
const WORKER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
import(workerData.moduleUrl).then(async ({ SqliteAccountStore }) => {
  const s = SqliteAccountStore.open(workerData.file, { busyTimeoutMs: 30000 });
  let ok = 0, refused = 0, sharedOk = 0;
  for (let i = 0; i < workerData.count; i++) {
    const o = await s.debit(workerData.accountId, 1000, workerData.tag + "-" + i);
    if (o.ok) ok++; else refused++;
    if (i < workerData.shared) {
      const d = await s.debit(workerData.sharedAccountId, 1000, "shared-" + workerData.sharedAccountId + "-" + i);
      if (d.ok) sharedOk++;
    }
  }
  await s.close();
  parentPort.postMessage({ ok, refused, sharedOk });
});
`;

test("sqlite concurrency across worker threads: exactly 5,000 of 5,400 debits succeed; shared request ids charge once", async () => {
  const { dir, file } = await tempFile();
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = SqliteAccountStore.open(file);
  try {
    const a = await store.createAccount("race");
    const b = await store.createAccount("shared");
    await store.topup(a.name, 5 * MICROS_PER_USD);
    await store.topup(b.name, 5 * MICROS_PER_USD);
    // Worker threads load JavaScript: the compiled module from dist/ (built by `npm test`).
    const moduleUrl = compiledModuleUrl("./sqlite.js", import.meta.url).href;
    const workers = 3;
    const results = await Promise.all(
      Array.from(
        { length: workers },
        (_, k) =>
          new Promise<WorkerResult>((resolve, reject) => {
            const w = new Worker(WORKER_SOURCE, {
              eval: true,
              workerData: { moduleUrl, file, accountId: a.id, sharedAccountId: b.id, tag: `w${k}`, count: 1_800, shared: 200 },
            });
            w.once("message", (m: WorkerResult) => resolve(m));
            w.once("error", reject);
          }),
      ),
    );
    assert.equal(
      results.reduce((s, r) => s + r.ok, 0),
      5_000,
    );
    assert.equal(
      results.reduce((s, r) => s + r.refused, 0),
      400,
    );
    // Every worker sees every shared id as charged; the account pays for each once.
    for (const r of results) assert.equal(r.sharedOk, 200);
    assert.equal(await store.balance(a.name), 0);
    assert.equal(await store.balance(b.name), 5_000_000 - 200 * 1_000);
    const raw = new Database(file, { readonly: true });
    try {
      const sum = (id: string) => raw.prepare("SELECT COALESCE(SUM(amount_micros), 0) FROM ledger WHERE account_id = ?").pluck().get(id);
      assert.equal(sum(a.id), 0);
      assert.equal(sum(b.id), 4_800_000);
      assert.equal(raw.prepare("SELECT COUNT(*) FROM ledger WHERE account_id = ? AND kind = 'debit'").pluck().get(b.id), 200);
    } finally {
      raw.close();
    }
  } finally {
    await store.close();
  }
});
