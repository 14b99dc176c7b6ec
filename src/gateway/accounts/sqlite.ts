/**
 * AccountStore on SQLite (better-sqlite3): the embedded default. One file, WAL mode so readers never
 * block the writer, and a busy timeout so several connections (processes, worker threads or store
 * instances) on the same file queue for the write lock instead of failing.
 *
 * Every write runs in a BEGIN IMMEDIATE transaction: the write lock is taken up front, so a
 * read-then-write sequence (debit: look for the request id, then decrement, then append) cannot be
 * interleaved with another connection's, and there is no read→write lock upgrade to deadlock on.
 * synchronous=NORMAL in WAL mode keeps the file consistent on any crash; a power loss can drop the
 * last few commits (under-charging, never double-charging).
 *
 * A debit also opens a reservation (types.ts) in the same transaction; the commits of one turn ride in
 * the same group transaction as that turn's debits.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { TurnBatch } from "../../common/turn-batch.js";
import { generateKey, hashKey, KEY_PREFIX_RE, parseKey, principalOf, redactKeys } from "./keys.js";
import { PROCESS_OWNER } from "./owner.js";
import type { Account, AccountStatus, AccountStore, CreatedKey, DebitOutcome, Principal, Reservation, ReservationOwner, StoreHealth } from "./types.js";
import { validateAccountName, validateDebitMicros, validateRequestId, validateScopes, validateStatus, validateTopupMicros } from "./validation.js";

interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Applied in order, each once, recorded in schema_migrations. Never edit a shipped migration; append a new one. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "accounts, api_keys, append-only ledger",
    sql: `
      CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
        created_at TEXT NOT NULL,
        balance_micros INTEGER NOT NULL DEFAULT 0 CHECK (balance_micros >= 0)
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        prefix TEXT NOT NULL UNIQUE,
        key_hash TEXT NOT NULL,
        scopes TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE INDEX api_keys_account_idx ON api_keys (account_id);
      CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        kind TEXT NOT NULL CHECK (kind IN ('topup', 'debit', 'refund')),
        amount_micros INTEGER NOT NULL CHECK (CASE kind WHEN 'debit' THEN amount_micros < 0 ELSE amount_micros > 0 END),
        request_id TEXT,
        reference TEXT,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX ledger_request_kind_key ON ledger (request_id, kind) WHERE request_id IS NOT NULL;
      CREATE INDEX ledger_account_idx ON ledger (account_id, id);
      CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
        BEGIN SELECT RAISE(ABORT, 'ledger is append-only: UPDATE refused'); END;
      CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
        BEGIN SELECT RAISE(ABORT, 'ledger is append-only: DELETE refused'); END;
    `,
  },
  {
    version: 2,
    name: "reservations: debits whose answer is not written yet",
    sql: `
      CREATE TABLE reservations (
        request_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        amount_micros INTEGER NOT NULL CHECK (amount_micros > 0),
        owner_host TEXT NOT NULL,
        owner_pid INTEGER NOT NULL,
        owner_instance TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX reservations_created_idx ON reservations (created_at);
    `,
  },
];

export interface SqliteAccountStoreOptions {
  /** How long a connection waits for another's write lock before SQLITE_BUSY (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /** Who holds this store's reservations (default: this process, owner.ts). */
  readonly owner?: ReservationOwner;
}

interface AccountRow {
  readonly id: string;
  readonly name: string;
  readonly status: AccountStatus;
  readonly created_at: string;
}

interface KeyRow {
  readonly key_hash: string;
  readonly scopes: string;
  readonly revoked_at: string | null;
  readonly prefix: string;
  readonly account_id: string;
  readonly account_name: string;
  readonly account_status: AccountStatus;
}

function toAccount(r: AccountRow): Account {
  return { id: r.id, name: r.name, status: r.status, createdAt: r.created_at };
}

function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

function notFound(name: string): ReposearchError {
  return new ReposearchError(ErrorCode.NotFound, `account ${JSON.stringify(name)} not found`);
}

const now = (): string => new Date().toISOString();

/** Brings the file to the newest schema; one IMMEDIATE transaction, so concurrent openers apply each migration once. */
function migrate(db: Database.Database): void {
  const run = db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    const applied = new Set(db.prepare("SELECT version FROM schema_migrations").pluck().all() as number[]);
    const newest = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;
    for (const v of applied) {
      if (v > newest) throw new ReposearchError(ErrorCode.Internal, `ledger database has schema version ${v}, newer than this build knows (${newest})`);
    }
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const m of SQLITE_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, now());
    }
  });
  run.immediate();
}

interface PendingDebit {
  readonly kind: "debit";
  readonly accountId: string;
  readonly micros: number;
  readonly requestId: string;
  readonly resolve: (o: DebitOutcome) => void;
  readonly reject: (err: unknown) => void;
}

interface PendingCommit {
  readonly kind: "commit";
  readonly requestId: string;
  readonly resolve: (committed: boolean) => void;
  readonly reject: (err: unknown) => void;
}

type PendingWrite = PendingDebit | PendingCommit;

interface ReservationRow {
  readonly request_id: string;
  readonly account_id: string;
  readonly amount_micros: number;
  readonly owner_host: string;
  readonly owner_pid: number;
  readonly owner_instance: string;
  readonly created_at: string;
}

export class SqliteAccountStore implements AccountStore {
  readonly backend = "sqlite" as const;
  /** The database file. */
  readonly file: string;
  readonly owner: ReservationOwner;
  private closed = false;
  private readonly db: Database.Database;
  private readonly stmts: ReturnType<typeof prepare>;
  private readonly topupTx: Database.Transaction<(accountName: string, micros: number, reference: string | null) => number>;
  private readonly debitTx: Database.Transaction<(accountId: string, micros: number, requestId: string) => DebitOutcome>;
  private readonly refundTx: Database.Transaction<(requestId: string, reason: string) => boolean>;
  private readonly expireTx: Database.Transaction<(requestId: string, reason: string) => boolean>;
  /** Each debit (or commit) in its own savepoint, so one that throws leaves the others of its batch standing. */
  private readonly debitBatchTx: Database.Transaction<(batch: readonly PendingWrite[]) => (DebitOutcome | boolean | Error)[]>;
  private readonly debits = new TurnBatch<PendingWrite>((batch) => this.commitDebits(batch));

  private constructor(db: Database.Database, file: string, owner: ReservationOwner) {
    this.db = db;
    this.file = file;
    this.owner = owner;
    this.stmts = prepare(db);
    this.topupTx = db.transaction((accountName: string, micros: number, reference: string | null) => this.topupStep(accountName, micros, reference));
    this.debitTx = db.transaction((accountId: string, micros: number, requestId: string) => this.debitStep(accountId, micros, requestId));
    this.refundTx = db.transaction((requestId: string, reason: string) => this.refundStep(requestId, reason));
    this.expireTx = db.transaction(
      (requestId: string, reason: string) => this.stmts.deleteReservation.run(requestId).changes > 0 && this.refundStep(requestId, reason),
    );
    this.debitBatchTx = db.transaction((batch: readonly PendingWrite[]) =>
      batch.map((d) => {
        try {
          return d.kind === "commit" ? this.stmts.deleteReservation.run(d.requestId).changes > 0 : this.debitTx(d.accountId, d.micros, d.requestId);
        } catch (err) {
          return err instanceof Error ? err : new Error(String(err));
        }
      }),
    );
  }

  /** Opens (creating if needed) the ledger file and applies pending migrations. The directory must exist. */
  static open(file: string, opts: SqliteAccountStoreOptions = {}): SqliteAccountStore {
    const db = new Database(file);
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("foreign_keys = ON");
      migrate(db);
      return new SqliteAccountStore(db, file, opts.owner ?? PROCESS_OWNER);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  async createAccount(name: string): Promise<Account> {
    validateAccountName(name);
    const row: AccountRow = { id: randomUUID(), name, status: "active", created_at: now() };
    try {
      this.stmts.insertAccount.run(row.id, row.name, row.status, row.created_at);
    } catch (e) {
      if (isUniqueViolation(e)) throw new ReposearchError(ErrorCode.ValidationError, `account ${JSON.stringify(name)} already exists`);
      throw e;
    }
    return toAccount(row);
  }

  async setAccountStatus(name: string, status: AccountStatus): Promise<Account> {
    validateStatus(status);
    const row = this.stmts.setStatus.get(status, name) as AccountRow | undefined;
    if (!row) throw notFound(name);
    return toAccount(row);
  }

  async createKey(accountName: string, opts: { scopes?: readonly string[] } = {}): Promise<CreatedKey> {
    const scopes = validateScopes(opts.scopes);
    const account = this.stmts.accountByName.get(accountName) as AccountRow | undefined;
    if (!account) throw notFound(accountName);
    // A public-id collision (~1 in 2^47 per pair) is retried with a fresh key rather than surfaced.
    for (let attempt = 0; ; attempt++) {
      const { key, prefix } = generateKey();
      try {
        this.stmts.insertKey.run(randomUUID(), account.id, prefix, hashKey(key), scopes.join(","), now());
        return { key, prefix, accountName: account.name, scopes };
      } catch (e) {
        if (!isUniqueViolation(e) || attempt >= 4) throw e;
      }
    }
  }

  async revokeKey(prefix: string): Promise<number> {
    if (typeof prefix !== "string" || !KEY_PREFIX_RE.test(prefix)) return 0;
    return this.stmts.revokeKey.run(now(), prefix).changes;
  }

  async authenticate(key: string): Promise<Principal | null> {
    const parsed = parseKey(key);
    if (!parsed) return null;
    return principalOf(key, this.stmts.keyByPrefix.get(parsed.prefix) as KeyRow | undefined);
  }

  async topup(accountName: string, micros: number, opts: { reference?: string } = {}): Promise<number> {
    validateTopupMicros(micros);
    return this.topupTx.immediate(accountName, micros, opts.reference ?? null);
  }

  async balance(accountName: string): Promise<number> {
    const b = this.stmts.balanceByName.get(accountName) as number | undefined;
    if (b === undefined) throw notFound(accountName);
    return b;
  }

  /**
   * Group commit: the debits of one event-loop turn share one IMMEDIATE transaction (committed at
   * setImmediate), each in its own savepoint. Under load that is one write lock and one WAL append
   * per turn instead of per search, fewer lock waits between serving processes (SQLite's busy
   * handler sleeps on the event loop) and fewer checkpoints. If the commit fails, every debit of
   * the batch fails, and none of them was charged.
   */
  debit(accountId: string, micros: number, requestId: string): Promise<DebitOutcome> {
    try {
      validateDebitMicros(micros);
      validateRequestId(requestId);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => this.debits.push({ kind: "debit", accountId, micros, requestId, resolve, reject }));
  }

  /** Rides in the turn's group transaction with the debits (see debit()). */
  commit(requestId: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return Promise.resolve(false);
    return new Promise((resolve, reject) => this.debits.push({ kind: "commit", requestId, resolve, reject }));
  }

  async openReservations(limit: number): Promise<readonly Reservation[]> {
    const now = Date.now();
    return (this.stmts.openReservations.all(Math.max(0, Math.floor(limit))) as ReservationRow[]).map((r) => ({
      requestId: r.request_id,
      accountId: r.account_id,
      micros: r.amount_micros,
      owner: { host: r.owner_host, pid: r.owner_pid, instance: r.owner_instance },
      ageMs: Math.max(0, now - Date.parse(r.created_at)),
    }));
  }

  async expire(requestId: string, reason: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return false;
    return this.expireTx.immediate(requestId, reason);
  }

  private commitDebits(batch: readonly PendingWrite[]): void {
    let results: (DebitOutcome | boolean | Error)[];
    try {
      results = this.debitBatchTx.immediate(batch);
    } catch (err) {
      for (const d of batch) d.reject(err);
      return;
    }
    batch.forEach((d, i) => {
      const r = results[i]!;
      if (r instanceof Error) d.reject(r);
      else if (d.kind === "commit") d.resolve(r === true);
      else d.resolve(r as DebitOutcome);
    });
  }

  async refund(requestId: string, reason: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return false;
    return this.refundTx.immediate(requestId, reason);
  }

  async health(): Promise<StoreHealth> {
    const t0 = performance.now();
    try {
      this.db.prepare("SELECT 1").get();
      return { status: "up", latencyMs: performance.now() - t0 };
    } catch (e) {
      return { status: "down", latencyMs: performance.now() - t0, error: redactKeys(e instanceof Error ? e.message : String(e)) };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Debits and commits still gathering this turn are written before the file closes.
    const pending = this.debits.take();
    if (pending.length > 0) this.commitDebits(pending);
    this.db.close();
  }

  private topupStep(accountName: string, micros: number, reference: string | null): number {
    const row = this.stmts.creditByName.get(micros, accountName) as { id: string; balance_micros: number } | undefined;
    if (!row) throw notFound(accountName);
    this.stmts.insertLedger.run(row.id, "topup", micros, null, reference, now());
    return row.balance_micros;
  }

  /** Look for the request id, then one conditional decrement, then the append: all under the write lock. */
  private debitStep(accountId: string, micros: number, requestId: string): DebitOutcome {
    const existing = this.stmts.debitByRequest.get(requestId) as { account_id: string } | undefined;
    if (existing) {
      if (existing.account_id !== accountId) {
        throw new ReposearchError(ErrorCode.ValidationError, `request id ${JSON.stringify(requestId)} was already charged to another account`);
      }
      return { ok: true, balanceMicros: this.stmts.balanceById.get(accountId) as number };
    }
    const row = this.stmts.conditionalDebit.get(micros, accountId, micros) as { balance_micros: number } | undefined;
    if (!row) {
      const balance = this.stmts.balanceById.get(accountId) as number | undefined;
      if (balance === undefined) throw new ReposearchError(ErrorCode.NotFound, `account id ${JSON.stringify(accountId)} not found`);
      return { ok: false, reason: "insufficient_credits", balanceMicros: balance };
    }
    const at = now();
    this.stmts.insertLedger.run(accountId, "debit", -micros, requestId, null, at);
    this.stmts.insertReservation.run(requestId, accountId, micros, this.owner.host, this.owner.pid, this.owner.instance, at);
    return { ok: true, balanceMicros: row.balance_micros };
  }

  private refundStep(requestId: string, reason: string): boolean {
    const debit = this.stmts.debitByRequest.get(requestId) as { account_id: string; amount_micros: number } | undefined;
    if (!debit) return false;
    if (this.stmts.refundByRequest.get(requestId) !== undefined) return false;
    this.stmts.deleteReservation.run(requestId);
    this.stmts.insertLedger.run(debit.account_id, "refund", -debit.amount_micros, requestId, reason, now());
    this.stmts.creditById.run(-debit.amount_micros, debit.account_id);
    return true;
  }
}

function prepare(db: Database.Database) {
  return {
    insertAccount: db.prepare("INSERT INTO accounts (id, name, status, created_at, balance_micros) VALUES (?, ?, ?, ?, 0)"),
    setStatus: db.prepare("UPDATE accounts SET status = ? WHERE name = ? RETURNING id, name, status, created_at"),
    accountByName: db.prepare("SELECT id, name, status, created_at FROM accounts WHERE name = ?"),
    balanceByName: db.prepare("SELECT balance_micros FROM accounts WHERE name = ?").pluck(),
    balanceById: db.prepare("SELECT balance_micros FROM accounts WHERE id = ?").pluck(),
    creditByName: db.prepare("UPDATE accounts SET balance_micros = balance_micros + ? WHERE name = ? RETURNING id, balance_micros"),
    creditById: db.prepare("UPDATE accounts SET balance_micros = balance_micros + ? WHERE id = ?"),
    conditionalDebit: db.prepare("UPDATE accounts SET balance_micros = balance_micros - ? WHERE id = ? AND balance_micros >= ? RETURNING balance_micros"),
    insertLedger: db.prepare("INSERT INTO ledger (account_id, kind, amount_micros, request_id, reference, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
    debitByRequest: db.prepare("SELECT account_id, amount_micros FROM ledger WHERE request_id = ? AND kind = 'debit'"),
    refundByRequest: db.prepare("SELECT 1 FROM ledger WHERE request_id = ? AND kind = 'refund'"),
    insertReservation: db.prepare(
      "INSERT INTO reservations (request_id, account_id, amount_micros, owner_host, owner_pid, owner_instance, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    deleteReservation: db.prepare("DELETE FROM reservations WHERE request_id = ?"),
    openReservations: db.prepare(
      "SELECT request_id, account_id, amount_micros, owner_host, owner_pid, owner_instance, created_at FROM reservations ORDER BY created_at, request_id LIMIT ?",
    ),
    insertKey: db.prepare("INSERT INTO api_keys (id, account_id, prefix, key_hash, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?)"),
    revokeKey: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL"),
    keyByPrefix: db.prepare(
      `SELECT k.key_hash, k.scopes, k.revoked_at, k.prefix, a.id AS account_id, a.name AS account_name, a.status AS account_status
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.prefix = ?`,
    ),
  };
}
