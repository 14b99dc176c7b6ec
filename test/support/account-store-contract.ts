/**
 * The behaviour every AccountStore backend must share, as one vitest suite. Backend test files
 * call {@link accountStoreContract} with a harness; nothing here is used at run time.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, test } from "vitest";
import { spawnSync } from "node:child_process";
import { ErrorCode, ReposearchError } from "../../src/common/errors.js";
import { Logger, setLogSink } from "../../src/common/logger.js";
import { sweepReservations } from "../../src/gateway/billing.js";
import { createGatewayMetrics } from "../../src/gateway/metrics.js";
import { PROCESS_OWNER } from "../../src/gateway/accounts/owner.js";
import { generateKey, parseKey } from "../../src/gateway/accounts/keys.js";
import {
  MICROS_PER_USD,
  SCOPE_SEARCH,
  SEARCH_PRICE_MICROS,
  type AccountStore,
  type DebitOutcome,
  type ReservationOwner,
} from "../../src/gateway/accounts/types.js";

export interface ContractHarness {
  /** Opens a new store instance on the shared database, with its own connection(s); `owner` holds its reservations. */
  open(opts?: { owner?: ReservationOwner }): Promise<AccountStore>;
  /** Runs one raw SQL statement on the shared database, bypassing the store; rejects on SQL errors. */
  exec(sql: string): Promise<void>;
  /** Runs one raw SQL query and returns the first column of the first row. */
  scalar(sql: string): Promise<unknown>;
  /** Drops the database (file or schema). Stores opened by open() are closed by the suite first. */
  cleanup(): Promise<void>;
}

function isCode(code: string): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof ReposearchError, `expected a ReposearchError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

export function accountStoreContract(backend: string, setup: () => Promise<ContractHarness>): void {
  describe(`AccountStore contract: ${backend}`, () => {
    let h: ContractHarness;
    let store: AccountStore;
    const opened: AccountStore[] = [];
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const uniqueName = (label: string) => `${label}-${run}-${++n}`;
    const openExtra = async (opts?: { owner?: ReservationOwner }) => {
      const s = await h.open(opts);
      opened.push(s);
      return s;
    };
    /** Signed sum of an account's ledger rows, read with raw SQL. */
    const ledgerSum = async (name: string) =>
      Number(await h.scalar(`SELECT COALESCE(SUM(l.amount_micros), 0) FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.name = '${name}'`));
    const ledgerRows = async (name: string, kind: string) =>
      Number(await h.scalar(`SELECT COUNT(*) FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.name = '${name}' AND l.kind = '${kind}'`));
    /** A funded account: $5 = 5,000 searches. */
    const funded = async (label: string, usd = 5) => {
      const account = await store.createAccount(uniqueName(label));
      await store.topup(account.name, usd * MICROS_PER_USD);
      return account;
    };

    beforeAll(async () => {
      h = await setup();
      store = await openExtra();
    });

    afterAll(async () => {
      for (const s of opened) await s.close();
      await h.cleanup();
    });

    test("migrations are recorded once, however many stores open the database", async () => {
      await openExtra();
      const versions = Number(await h.scalar("SELECT COUNT(*) FROM schema_migrations"));
      const distinct = Number(await h.scalar("SELECT COUNT(DISTINCT version) FROM schema_migrations"));
      assert.ok(versions >= 1);
      assert.equal(versions, distinct);
    });

    test("accounts: create, duplicate and invalid names, status changes", async () => {
      const name = uniqueName("acct");
      const a = await store.createAccount(name);
      assert.equal(a.name, name);
      assert.equal(a.status, "active");
      assert.ok(a.id.length > 0);
      assert.ok(!Number.isNaN(Date.parse(a.createdAt)));
      assert.equal(await store.balance(name), 0);
      await assert.rejects(store.createAccount(name), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.createAccount(""), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.createAccount("has space"), isCode(ErrorCode.ValidationError));
      const s = await store.setAccountStatus(name, "suspended");
      assert.equal(s.status, "suspended");
      assert.equal(s.id, a.id);
      assert.equal((await store.setAccountStatus(name, "active")).status, "active");
      await assert.rejects(store.setAccountStatus(uniqueName("nobody"), "suspended"), isCode(ErrorCode.NotFound));
      await assert.rejects(store.balance(uniqueName("nobody")), isCode(ErrorCode.NotFound));
    });

    test("keys: create, authenticate, scopes, unknown account", async () => {
      const a = await store.createAccount(uniqueName("keys"));
      const k = await store.createKey(a.name);
      assert.deepEqual(parseKey(k.key), { prefix: k.prefix });
      assert.equal(k.accountName, a.name);
      assert.deepEqual(k.scopes, [SCOPE_SEARCH]);
      const p = await store.authenticate(k.key);
      assert.deepEqual(p, { accountId: a.id, accountName: a.name, accountStatus: "active", keyPrefix: k.prefix, scopes: [SCOPE_SEARCH] });
      // Another store instance sees the same key.
      assert.deepEqual(await (await openExtra()).authenticate(k.key), p);
      const explicit = await store.createKey(a.name, { scopes: ["search", "search"] });
      assert.deepEqual(explicit.scopes, ["search"]);
      await assert.rejects(store.createKey(a.name, { scopes: ["admin"] }), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.createKey(a.name, { scopes: [] }), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.createKey(uniqueName("nobody")), isCode(ErrorCode.NotFound));
      // The secret itself is never stored.
      assert.equal(Number(await h.scalar(`SELECT COUNT(*) FROM api_keys WHERE key_hash = '${k.key}' OR prefix = '${k.key}'`)), 0);
    });

    test("unknown, malformed, tampered and revoked keys authenticate as null", async () => {
      const a = await store.createAccount(uniqueName("badkeys"));
      const k = await store.createKey(a.name);
      const other = await store.createKey(a.name);
      assert.equal(await store.authenticate(generateKey().key), null); // well-formed, never issued
      assert.equal(await store.authenticate(""), null);
      assert.equal(await store.authenticate("not a key"), null);
      assert.equal(await store.authenticate(k.key.slice(0, -1) + (k.key.endsWith("a") ? "b" : "a")), null);
      assert.equal(await store.authenticate(k.key + " "), null);
      assert.equal(await store.authenticate(k.prefix), null);
      // Same prefix, different stored hash: the constant-time comparison must reject it.
      await h.exec(`UPDATE api_keys SET key_hash = '${"0".repeat(64)}' WHERE prefix = '${other.prefix}'`);
      assert.equal(await store.authenticate(other.key), null);

      assert.ok(await store.authenticate(k.key));
      assert.equal(await store.revokeKey(k.prefix), 1);
      assert.equal(await store.authenticate(k.key), null);
      assert.equal(await store.revokeKey(k.prefix), 0);
      assert.equal(await store.revokeKey(generateKey().prefix), 0);
      assert.equal(await store.revokeKey("garbage"), 0);
      const fresh = await store.createKey(a.name);
      assert.ok(await store.authenticate(fresh.key), "revoking one key leaves the account's other keys working");
    });

    test("a suspended account's key still resolves, carrying the status", async () => {
      const a = await store.createAccount(uniqueName("susp"));
      const k = await store.createKey(a.name);
      await store.setAccountStatus(a.name, "suspended");
      assert.equal((await store.authenticate(k.key))?.accountStatus, "suspended");
      await store.setAccountStatus(a.name, "active");
      assert.equal((await store.authenticate(k.key))?.accountStatus, "active");
    });

    test("top-ups: $5..$1000 in whole micros, others rejected", async () => {
      const a = await store.createAccount(uniqueName("topup"));
      for (const bad of [4_990_000, 1_000_010_000, 5_000_000.5, 0, -5_000_000, Number.NaN, Number.POSITIVE_INFINITY]) {
        await assert.rejects(store.topup(a.name, bad), isCode(ErrorCode.ValidationError), `amount ${bad}`);
      }
      assert.equal(await store.balance(a.name), 0);
      assert.equal(await store.topup(a.name, 5 * MICROS_PER_USD), 5_000_000);
      assert.equal(await store.topup(a.name, 1000 * MICROS_PER_USD, { reference: "invoice-1" }), 1_005_000_000);
      assert.equal(await store.topup(a.name, 12_345_678), 1_017_345_678);
      assert.equal(await store.balance(a.name), 1_017_345_678);
      assert.equal(await ledgerSum(a.name), 1_017_345_678);
      assert.equal(await ledgerRows(a.name, "topup"), 3);
      await assert.rejects(store.topup(uniqueName("nobody"), 5 * MICROS_PER_USD), isCode(ErrorCode.NotFound));
    });

    test("debits: ok until the balance runs out, never below zero", async () => {
      const a = await funded("debit");
      assert.deepEqual(await store.debit(a.id, 4_999_000, "r1-" + a.id), { ok: true, balanceMicros: 1_000 });
      assert.deepEqual(await store.debit(a.id, 2_000, "r2-" + a.id), { ok: false, reason: "insufficient_credits", balanceMicros: 1_000 });
      assert.deepEqual(await store.debit(a.id, SEARCH_PRICE_MICROS, "r3-" + a.id), { ok: true, balanceMicros: 0 });
      assert.deepEqual(await store.debit(a.id, 1, "r4-" + a.id), { ok: false, reason: "insufficient_credits", balanceMicros: 0 });
      assert.equal(await store.balance(a.name), 0);
      assert.equal(await ledgerSum(a.name), 0);
      assert.equal(await ledgerRows(a.name, "debit"), 2);
      await assert.rejects(store.debit(a.id, 0, "r5-" + a.id), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.debit(a.id, -1000, "r6-" + a.id), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.debit(a.id, 1.5, "r7-" + a.id), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.debit(a.id, 1000, ""), isCode(ErrorCode.ValidationError));
      await assert.rejects(store.debit(randomUUID(), 1000, "r8-" + a.id), isCode(ErrorCode.NotFound));
    });

    test("the balance cannot be driven negative even with raw SQL", async () => {
      const a = await funded("check");
      await assert.rejects(h.exec(`UPDATE accounts SET balance_micros = -1 WHERE name = '${a.name}'`));
      assert.equal(await store.balance(a.name), 5_000_000);
    });

    test("debits are idempotent on the request id", async () => {
      const a = await funded("idem");
      const b = await funded("idem-other");
      const req = "idem-" + randomUUID();
      assert.deepEqual(await store.debit(a.id, 1_000, req), { ok: true, balanceMicros: 4_999_000 });
      assert.deepEqual(await store.debit(a.id, 1_000, req), { ok: true, balanceMicros: 4_999_000 });
      assert.deepEqual(await (await openExtra()).debit(a.id, 1_000, req), { ok: true, balanceMicros: 4_999_000 });
      assert.equal(await ledgerRows(a.name, "debit"), 1);
      assert.equal(await store.balance(a.name), 4_999_000);
      // The same request id cannot be charged to a second account.
      await assert.rejects(store.debit(b.id, 1_000, req), isCode(ErrorCode.ValidationError));
      assert.equal(await store.balance(b.name), 5_000_000);
      // A debit refused for lack of credit leaves no trace, so a retry after a top-up may succeed.
      const c = await store.createAccount(uniqueName("idem-empty"));
      const req2 = "idem-" + randomUUID();
      assert.equal((await store.debit(c.id, 1_000, req2)).ok, false);
      await store.topup(c.name, 5 * MICROS_PER_USD);
      assert.deepEqual(await store.debit(c.id, 1_000, req2), { ok: true, balanceMicros: 4_999_000 });
    });

    test("refunds reverse a debit exactly once", async () => {
      const a = await funded("refund");
      const req = "refund-" + randomUUID();
      await store.debit(a.id, 3_000, req);
      assert.equal(await store.balance(a.name), 4_997_000);
      assert.equal(await store.refund(req, "core timeout"), true);
      assert.equal(await store.balance(a.name), 5_000_000);
      assert.equal(await store.refund(req, "again"), false);
      assert.equal(await (await openExtra()).refund(req, "again"), false);
      assert.equal(await store.balance(a.name), 5_000_000);
      assert.equal(await store.refund("never-debited-" + randomUUID(), "x"), false);
      assert.equal(await store.refund("", "x"), false);
      // The debit stays settled: repeating it does not charge again.
      assert.deepEqual(await store.debit(a.id, 3_000, req), { ok: true, balanceMicros: 5_000_000 });
      assert.equal(await ledgerRows(a.name, "debit"), 1);
      assert.equal(await ledgerRows(a.name, "refund"), 1);
      assert.equal(await ledgerSum(a.name), 5_000_000);
      assert.equal(await h.scalar(`SELECT reference FROM ledger WHERE request_id = '${req}' AND kind = 'refund'`), "core timeout");
    });

    test("the ledger is append-only: raw UPDATE and DELETE fail", async () => {
      const a = await funded("append");
      await store.debit(a.id, 1_000, "append-" + a.id);
      const where = `account_id = '${a.id}'`;
      await assert.rejects(h.exec(`UPDATE ledger SET amount_micros = 1 WHERE ${where} AND kind = 'topup'`), /append-only/);
      await assert.rejects(h.exec(`UPDATE ledger SET reference = 'x' WHERE ${where}`), /append-only/);
      await assert.rejects(h.exec(`DELETE FROM ledger WHERE ${where}`), /append-only/);
      await assert.rejects(h.exec(`DELETE FROM ledger`), /append-only/);
      assert.equal(await ledgerRows(a.name, "topup"), 1);
      assert.equal(await ledgerRows(a.name, "debit"), 1);
      assert.equal(await ledgerSum(a.name), 4_999_000);
    });

    test("concurrency: 5,200 parallel debits on a $5 balance across store instances → exactly 5,000 succeed", async () => {
      const a = await funded("race");
      const stores = [store, await openExtra(), await openExtra()];
      const attempts = 5_200;
      const outcomes: DebitOutcome[] = await Promise.all(
        Array.from({ length: attempts }, (_, i) => stores[i % stores.length]!.debit(a.id, SEARCH_PRICE_MICROS, `race-${a.id}-${i}`)),
      );
      const ok = outcomes.filter((o) => o.ok).length;
      assert.equal(ok, 5_000);
      assert.equal(outcomes.filter((o) => !o.ok && o.reason === "insufficient_credits").length, 200);
      for (const o of outcomes) assert.ok(o.balanceMicros >= 0);
      assert.equal(await store.balance(a.name), 0);
      assert.equal(await ledgerSum(a.name), 0);
      assert.equal(await ledgerRows(a.name, "debit"), 5_000);
    });

    test("concurrency: parallel duplicates of a request id charge once; parallel refunds refund once", async () => {
      const a = await funded("dup");
      const stores = [store, await openExtra(), await openExtra()];
      const ids = Array.from({ length: 50 }, (_, i) => `dup-${a.id}-${i}`);
      const outcomes = await Promise.all(ids.flatMap((id) => stores.flatMap((s) => [s.debit(a.id, 1_000, id), s.debit(a.id, 1_000, id)])));
      assert.ok(outcomes.every((o) => o.ok));
      assert.equal(await store.balance(a.name), 5_000_000 - 50 * 1_000);
      assert.equal(await ledgerRows(a.name, "debit"), 50);
      const refunds = await Promise.all(ids.flatMap((id) => stores.map((s) => s.refund(id, "parallel"))));
      assert.equal(refunds.filter(Boolean).length, 50);
      assert.equal(await store.balance(a.name), 5_000_000);
      assert.equal(await ledgerRows(a.name, "refund"), 50);
      assert.equal(await ledgerSum(a.name), 5_000_000);
    });

    test("reservations: a debit opens one; commit settles it once; expire refunds only an open one; refund closes it", async () => {
      const a = await funded("reserve");
      const ids = ["r1", "r2", "r3"].map((x) => `${x}-${run}`);
      for (const id of ids) assert.equal((await store.debit(a.id, SEARCH_PRICE_MICROS, id)).ok, true);
      const mine = (await store.openReservations(100_000)).filter((r) => ids.includes(r.requestId));
      assert.deepEqual(
        mine.map((r) => [r.requestId, r.accountId, r.micros, r.owner]),
        ids.map((id) => [id, a.id, SEARCH_PRICE_MICROS, store.owner]),
      );
      assert.ok(mine.every((r) => r.ageMs >= 0 && r.ageMs < 60_000));
      // A repeated debit of the same id opens nothing new.
      await store.debit(a.id, SEARCH_PRICE_MICROS, ids[0]!);
      assert.equal((await store.openReservations(100_000)).filter((r) => r.requestId === ids[0]).length, 1);

      assert.equal(await store.commit(ids[0]!), true);
      assert.equal(await store.commit(ids[0]!), false);
      assert.equal(await store.expire(ids[0]!, "too late"), false, "a committed search is never refunded by a sweep");
      assert.equal(await store.expire(ids[1]!, "abandoned"), true);
      assert.equal(await store.expire(ids[1]!, "abandoned"), false);
      assert.equal(await store.commit(ids[1]!), false, "an expired reservation cannot be committed");
      assert.equal(await store.refund(ids[2]!, "failed"), true);
      assert.equal(await store.expire(ids[2]!, "abandoned"), false);
      assert.equal((await store.openReservations(100_000)).filter((r) => ids.includes(r.requestId)).length, 0);
      assert.equal(await store.balance(a.name), 5 * MICROS_PER_USD - SEARCH_PRICE_MICROS);
      assert.equal(await ledgerSum(a.name), 5 * MICROS_PER_USD - SEARCH_PRICE_MICROS);
      assert.equal(await ledgerRows(a.name, "refund"), 2);
    });

    test("reservations: commit and expire racing from two store instances, exactly one wins each", async () => {
      const a = await funded("race-reserve");
      const other = await openExtra();
      const ids = Array.from({ length: 40 }, (_, i) => `race-${run}-${i}`);
      await Promise.all(ids.map((id) => store.debit(a.id, SEARCH_PRICE_MICROS, id)));
      const outcomes = await Promise.all(ids.map((id) => Promise.all([store.commit(id), other.expire(id, "race")])));
      for (const [committed, expired] of outcomes) assert.notEqual(committed, expired);
      const refunded = outcomes.filter(([, expired]) => expired).length;
      assert.equal(await ledgerRows(a.name, "refund"), refunded);
      assert.equal(await store.balance(a.name), 5 * MICROS_PER_USD - (ids.length - refunded) * SEARCH_PRICE_MICROS);
      assert.equal(await ledgerSum(a.name), await store.balance(a.name));
    });

    test("reservations: the sweep refunds those of a dead process at once and others' only once too old; the ledger still sums to the balance", async () => {
      // A real process that has exited: its pid is dead on this host.
      const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
      const deadOwner: ReservationOwner = { host: PROCESS_OWNER.host, pid: Number(dead.stdout), instance: "dead-instance" };
      const remoteOwner: ReservationOwner = { host: "another-host/pid:[1]", pid: process.pid, instance: "remote-instance" };
      const crashed = await openExtra({ owner: deadOwner });
      const remote = await openExtra({ owner: remoteOwner });
      const a = await funded("sweep");
      const deadIds = [1, 2, 3].map((i) => `dead-${run}-${i}`);
      const remoteIds = [1, 2].map((i) => `remote-${run}-${i}`);
      for (const id of deadIds) await crashed.debit(a.id, SEARCH_PRICE_MICROS, id);
      for (const id of remoteIds) await remote.debit(a.id, SEARCH_PRICE_MICROS, id);
      await crashed.commit(deadIds[0]!); // answered before the crash: stays charged
      const live = `live-${run}`;
      await store.debit(a.id, SEARCH_PRICE_MICROS, live); // in flight in this very process
      const lines: string[] = [];
      const previousSink = setLogSink((l) => lines.push(l));
      const metrics = createGatewayMetrics();
      const sweep = (ttlMs: number) => sweepReservations({ accounts: store, metrics, log: new Logger({ test: "sweep" }), ttlMs });

      try {
        assert.equal(await sweep(3_600_000), 2);
      } finally {
        setLogSink(previousSink);
      }
      const open = new Set((await store.openReservations(100_000)).map((r) => r.requestId));
      assert.deepEqual(
        [...deadIds, ...remoteIds, live].map((id) => open.has(id)),
        [false, false, false, true, true, true],
      );
      const logged = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === "refunded a search that was charged but never answered");
      assert.deepEqual(logged.map((l) => [l.requestId, l.reason]).sort(), [
        [deadIds[1], "its process is gone"],
        [deadIds[2], "its process is gone"],
      ]);
      // Too old: refunded whoever holds it (here everything open in this database, the live one included).
      assert.ok((await sweep(0)) >= 3);
      assert.equal(await ledgerRows(a.name, "refund"), 5);
      assert.equal(await store.balance(a.name), 5 * MICROS_PER_USD - SEARCH_PRICE_MICROS);
      assert.equal(await ledgerSum(a.name), 5 * MICROS_PER_USD - SEARCH_PRICE_MICROS);
      assert.equal(await store.commit(live), false);
    });

    test("health: a real round trip; down (not thrown) once closed", async () => {
      const s = await openExtra();
      const up = await s.health();
      assert.equal(up.status, "up");
      assert.ok(up.latencyMs >= 0 && up.latencyMs < 2_000);
      await s.close();
      await s.close(); // idempotent
      const down = await s.health();
      assert.equal(down.status, "down");
      assert.ok(typeof down.error === "string" && down.error.length > 0);
    });
  });
}
