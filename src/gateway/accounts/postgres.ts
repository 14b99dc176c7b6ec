/**
 * AccountStore on Postgres (pg Pool): the distributed profile, shared by every gateway replica.
 *
 * Money-moving operations are each ONE statement: a data-modifying CTE that performs the conditional
 * balance update and the ledger append together. A single statement is its own transaction under
 * autocommit, so there is no window between the two writes, and it costs one round trip while holding
 * the account's row lock. READ COMMITTED is enough: a concurrent UPDATE of the same account waits for
 * the row lock and then re-checks `balance_micros >= amount` against the committed value, so the
 * balance can never go below zero. A concurrent duplicate request id is caught by the unique index
 * (request_id, kind): the losing statement fails as a whole (its decrement vanishes with it) and the
 * caller re-reads the winner's outcome.
 *
 * A debit also opens a reservation (types.ts) in the same statement. Commits are gathered per event-loop
 * turn into one DELETE; commit and expire each delete the reservation row first, so under the row lock
 * exactly one of them wins.
 */
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { fnv1a32 } from "../../common/hash.js";
import { logger as rootLogger, type Logger } from "../../common/logger.js";
import { TurnBatch } from "../../common/turn-batch.js";
import { PROCESS_OWNER } from "./owner.js";
import { generateKey, hashKey, KEY_PREFIX_RE, parseKey, principalOf, redactKeys } from "./keys.js";
import type { Account, AccountStatus, AccountStore, CreatedKey, DebitOutcome, Principal, Reservation, ReservationOwner, StoreHealth } from "./types.js";
import { validateAccountName, validateDebitMicros, validateRequestId, validateScopes, validateStatus, validateTopupMicros } from "./validation.js";

interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Applied in order, each once, recorded in schema_migrations. Never edit a shipped migration; append a new one. */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "accounts, api_keys, append-only ledger",
    sql: `
      CREATE TABLE accounts (
        id text PRIMARY KEY,
        name text NOT NULL UNIQUE,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
        created_at timestamptz NOT NULL DEFAULT now(),
        balance_micros bigint NOT NULL DEFAULT 0 CHECK (balance_micros >= 0)
      );
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts (id),
        prefix text NOT NULL UNIQUE,
        key_hash text NOT NULL,
        scopes text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      );
      CREATE INDEX api_keys_account_idx ON api_keys (account_id);
      CREATE TABLE ledger (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts (id),
        kind text NOT NULL CHECK (kind IN ('topup', 'debit', 'refund')),
        amount_micros bigint NOT NULL CHECK (CASE kind WHEN 'debit' THEN amount_micros < 0 ELSE amount_micros > 0 END),
        request_id text,
        reference text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX ledger_request_kind_key ON ledger (request_id, kind) WHERE request_id IS NOT NULL;
      CREATE INDEX ledger_account_idx ON ledger (account_id, id);
      CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'ledger is append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
      END
      $$;
      CREATE TRIGGER ledger_no_update_delete BEFORE UPDATE OR DELETE ON ledger
        FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
      CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
    `,
  },
  {
    version: 2,
    name: "reservations: debits whose answer is not written yet",
    sql: `
      CREATE TABLE reservations (
        request_id text PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts (id),
        amount_micros bigint NOT NULL CHECK (amount_micros > 0),
        owner_host text NOT NULL,
        owner_pid integer NOT NULL,
        owner_instance text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX reservations_created_idx ON reservations (created_at);
    `,
  },
];

export interface PostgresAccountStoreOptions {
  readonly connectionString: string;
  /**
   * Schema holding the tables (created if missing; becomes the connections' search_path). Lets tests
   * isolate themselves in a fresh schema and drop it afterwards. Default: the server's search_path.
   */
  readonly schema?: string;
  /** Pool size (default 10). */
  readonly max?: number;
  /** How long to wait for a new connection before failing (default 2000 ms), so a dead server fails fast. */
  readonly connectionTimeoutMillis?: number;
  /** How long a query may wait for a free pooled connection before failing (default 10000 ms; 0 = no bound). */
  readonly acquireTimeoutMillis?: number;
  /** Per-query deadline, enforced client-side and as the server's statement_timeout (default 5000 ms). */
  readonly queryTimeoutMillis?: number;
  /** Deadline of health()'s round trip (default 2000 ms). */
  readonly healthTimeoutMillis?: number;
  /** application_name of the connections (default "reposearch-accounts"), to find them in pg_stat_activity. */
  readonly applicationName?: string;
  readonly logger?: Logger;
  /** Who holds this store's reservations (default: this process, owner.ts). */
  readonly owner?: ReservationOwner;
}

interface PendingCommit {
  readonly requestId: string;
  readonly resolve: (committed: boolean) => void;
  readonly reject: (err: unknown) => void;
}

const SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

interface AccountRow {
  readonly id: string;
  readonly name: string;
  readonly status: AccountStatus;
  readonly created_at: Date | string;
}

interface KeyRow {
  readonly key_hash: string;
  readonly scopes: string;
  readonly revoked_at: Date | null;
  readonly prefix: string;
  readonly account_id: string;
  readonly account_name: string;
  readonly account_status: AccountStatus;
}

/** pg returns bigint as a string (it may exceed 2^53); balances stay far below that, so check and convert. */
function toMicros(v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n)) throw new ReposearchError(ErrorCode.Internal, `ledger amount out of range: ${String(v)}`);
  return n;
}

function toAccount(r: AccountRow): Account {
  return { id: r.id, name: r.name, status: r.status, createdAt: r.created_at instanceof Date ? r.created_at.toISOString() : String(r.created_at) };
}

function pgCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

const UNIQUE_VIOLATION = "23505";

function notFound(name: string): ReposearchError {
  return new ReposearchError(ErrorCode.NotFound, `account ${JSON.stringify(name)} not found`);
}

function quoteIdent(id: string): string {
  return `"${id.replace(/"/g, '""')}"`;
}

export class PostgresAccountStore implements AccountStore {
  readonly backend = "postgres" as const;
  /** The schema the store lives in, when one was given. */
  readonly schema: string | undefined;
  readonly owner: ReservationOwner;
  private closed = false;
  private readonly pool: pg.Pool;
  private readonly healthTimeoutMs: number;
  /** The commits of one turn, settled by one statement. */
  private readonly commits = new TurnBatch<PendingCommit>((batch) => void this.commitBatch(batch));

  private constructor(pool: pg.Pool, schema: string | undefined, healthTimeoutMs: number, owner: ReservationOwner) {
    this.pool = pool;
    this.schema = schema;
    this.healthTimeoutMs = healthTimeoutMs;
    this.owner = owner;
  }

  /** Connects, creates the schema if asked for one, and applies pending migrations. */
  static async open(opts: PostgresAccountStoreOptions): Promise<PostgresAccountStore> {
    const schema = opts.schema;
    if (schema !== undefined && !SCHEMA_RE.test(schema)) {
      throw new ReposearchError(ErrorCode.ValidationError, `invalid schema name ${JSON.stringify(schema)}: use lowercase letters, digits and _`);
    }
    const queryTimeout = opts.queryTimeoutMillis ?? 5000;
    const log = (opts.logger ?? rootLogger).child({ component: "accounts-postgres" });
    const connectMs = opts.connectionTimeoutMillis ?? 2000;
    // pg-pool uses its connectionTimeoutMillis both to bound a new connection and to bound the wait for a
    // free pooled client. Those are different budgets: a dead server should fail fast, while a burst
    // should queue. So the connect bound is set on the client itself and the pool's on the wait.
    class BoundedConnectClient extends pg.Client {
      constructor(config?: pg.ClientConfig) {
        super({ ...config, connectionTimeoutMillis: connectMs });
      }
    }
    const pool = new pg.Pool({
      connectionString: opts.connectionString,
      max: opts.max ?? 10,
      Client: BoundedConnectClient,
      connectionTimeoutMillis: opts.acquireTimeoutMillis ?? 10_000,
      query_timeout: queryTimeout + 1000,
      statement_timeout: queryTimeout,
      // A crashed caller must not hold an account's row lock for long.
      idle_in_transaction_session_timeout: Math.max(queryTimeout * 2, 10_000),
      application_name: opts.applicationName ?? "reposearch-accounts",
      ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
    });
    // Without a listener an idle client's dropped connection is an unhandled 'error' event and kills the process.
    pool.on("error", (err) => log.warn("idle postgres connection failed", { error: redactKeys(err.message) }));
    const store = new PostgresAccountStore(pool, schema, opts.healthTimeoutMillis ?? 2000, opts.owner ?? PROCESS_OWNER);
    try {
      await store.migrate();
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw e;
    }
    return store;
  }

  /**
   * One transaction behind a transaction-scoped advisory lock (keyed by schema), so replicas starting
   * together apply each migration exactly once; the others wait, then find nothing left to do.
   */
  private async migrate(): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [0x72737263 | 0, fnv1a32(this.schema ?? "") | 0]);
      if (this.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schema)}`);
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      const applied = new Set((await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version));
      const newest = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]!.version;
      for (const v of applied) {
        if (v > newest) throw new ReposearchError(ErrorCode.Internal, `ledger database has schema version ${v}, newer than this build knows (${newest})`);
      }
      for (const m of POSTGRES_MIGRATIONS) {
        if (applied.has(m.version)) continue;
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      }
      await client.query("COMMIT");
    } catch (e) {
      await client.query("ROLLBACK").catch((re: Error) => (broken = re));
      throw e;
    } finally {
      client.release(broken);
    }
  }

  async createAccount(name: string): Promise<Account> {
    validateAccountName(name);
    try {
      const r = await this.pool.query<AccountRow>("INSERT INTO accounts (id, name) VALUES ($1, $2) RETURNING id, name, status, created_at", [
        randomUUID(),
        name,
      ]);
      return toAccount(r.rows[0]!);
    } catch (e) {
      if (pgCode(e) === UNIQUE_VIOLATION) throw new ReposearchError(ErrorCode.ValidationError, `account ${JSON.stringify(name)} already exists`);
      throw e;
    }
  }

  async setAccountStatus(name: string, status: AccountStatus): Promise<Account> {
    validateStatus(status);
    const r = await this.pool.query<AccountRow>("UPDATE accounts SET status = $1 WHERE name = $2 RETURNING id, name, status, created_at", [status, name]);
    if (r.rows.length === 0) throw notFound(name);
    return toAccount(r.rows[0]!);
  }

  async createKey(accountName: string, opts: { scopes?: readonly string[] } = {}): Promise<CreatedKey> {
    const scopes = validateScopes(opts.scopes);
    const acc = await this.pool.query<{ id: string; name: string }>("SELECT id, name FROM accounts WHERE name = $1", [accountName]);
    const account = acc.rows[0];
    if (!account) throw notFound(accountName);
    // A public-id collision (~1 in 2^47 per pair) is retried with a fresh key rather than surfaced.
    for (let attempt = 0; ; attempt++) {
      const { key, prefix } = generateKey();
      try {
        await this.pool.query("INSERT INTO api_keys (id, account_id, prefix, key_hash, scopes) VALUES ($1, $2, $3, $4, $5)", [
          randomUUID(),
          account.id,
          prefix,
          hashKey(key),
          scopes.join(","),
        ]);
        return { key, prefix, accountName: account.name, scopes };
      } catch (e) {
        if (pgCode(e) !== UNIQUE_VIOLATION || attempt >= 4) throw e;
      }
    }
  }

  async revokeKey(prefix: string): Promise<number> {
    if (typeof prefix !== "string" || !KEY_PREFIX_RE.test(prefix)) return 0;
    const r = await this.pool.query("UPDATE api_keys SET revoked_at = now() WHERE prefix = $1 AND revoked_at IS NULL", [prefix]);
    return r.rowCount ?? 0;
  }

  async authenticate(key: string): Promise<Principal | null> {
    const parsed = parseKey(key);
    if (!parsed) return null;
    const r = await this.pool.query<KeyRow>(
      `SELECT k.key_hash, k.scopes, k.revoked_at, k.prefix, a.id AS account_id, a.name AS account_name, a.status AS account_status
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.prefix = $1`,
      [parsed.prefix],
    );
    return principalOf(key, r.rows[0]);
  }

  async topup(accountName: string, micros: number, opts: { reference?: string } = {}): Promise<number> {
    validateTopupMicros(micros);
    const r = await this.pool.query<{ balance_micros: string }>(
      `WITH upd AS (
         UPDATE accounts SET balance_micros = balance_micros + $2::bigint WHERE name = $1 RETURNING id, balance_micros
       ), ins AS (
         INSERT INTO ledger (account_id, kind, amount_micros, reference) SELECT id, 'topup', $2::bigint, $3::text FROM upd
       )
       SELECT balance_micros FROM upd`,
      [accountName, micros, opts.reference ?? null],
    );
    if (r.rows.length === 0) throw notFound(accountName);
    return toMicros(r.rows[0]!.balance_micros);
  }

  async balance(accountName: string): Promise<number> {
    const r = await this.pool.query<{ balance_micros: string }>("SELECT balance_micros FROM accounts WHERE name = $1", [accountName]);
    if (r.rows.length === 0) throw notFound(accountName);
    return toMicros(r.rows[0]!.balance_micros);
  }

  async debit(accountId: string, micros: number, requestId: string): Promise<DebitOutcome> {
    validateDebitMicros(micros);
    validateRequestId(requestId);
    const prior = await this.priorDebit(requestId, accountId);
    if (prior) return prior;
    try {
      const r = await this.pool.query<{ balance_micros: string }>(
        `WITH upd AS (
           UPDATE accounts SET balance_micros = balance_micros - $1::bigint
           WHERE id = $2 AND balance_micros >= $1::bigint RETURNING id, balance_micros
         ), ins AS (
           INSERT INTO ledger (account_id, kind, amount_micros, request_id) SELECT id, 'debit', -$1::bigint, $3::text FROM upd
         ), res AS (
           INSERT INTO reservations (request_id, account_id, amount_micros, owner_host, owner_pid, owner_instance)
           SELECT $3::text, id, $1::bigint, $4::text, $5::integer, $6::text FROM upd
         )
         SELECT balance_micros FROM upd`,
        [micros, accountId, requestId, this.owner.host, this.owner.pid, this.owner.instance],
      );
      if (r.rows.length > 0) return { ok: true, balanceMicros: toMicros(r.rows[0]!.balance_micros) };
    } catch (e) {
      // A concurrent debit with the same request id won; the whole statement (decrement included) failed.
      if (pgCode(e) !== UNIQUE_VIOLATION) throw e;
      const winner = await this.priorDebit(requestId, accountId);
      if (winner) return winner;
      throw e;
    }
    // Nothing updated: unknown account, too little credit, or a duplicate that committed meanwhile.
    const after = await this.priorDebit(requestId, accountId);
    if (after) return after;
    const b = await this.pool.query<{ balance_micros: string }>("SELECT balance_micros FROM accounts WHERE id = $1", [accountId]);
    if (b.rows.length === 0) throw new ReposearchError(ErrorCode.NotFound, `account id ${JSON.stringify(accountId)} not found`);
    return { ok: false, reason: "insufficient_credits", balanceMicros: toMicros(b.rows[0]!.balance_micros) };
  }

  /** The outcome of an earlier debit with this request id (ok, current balance), or null when there was none. */
  private async priorDebit(requestId: string, accountId: string): Promise<DebitOutcome | null> {
    const r = await this.pool.query<{ account_id: string; balance_micros: string }>(
      `SELECT l.account_id, a.balance_micros FROM ledger l JOIN accounts a ON a.id = l.account_id
       WHERE l.request_id = $1 AND l.kind = 'debit'`,
      [requestId],
    );
    const row = r.rows[0];
    if (!row) return null;
    if (row.account_id !== accountId) {
      throw new ReposearchError(ErrorCode.ValidationError, `request id ${JSON.stringify(requestId)} was already charged to another account`);
    }
    return { ok: true, balanceMicros: toMicros(row.balance_micros) };
  }

  async refund(requestId: string, reason: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return false;
    // ON CONFLICT DO NOTHING makes a concurrent second refund wait for the first and then add nothing.
    const r = await this.pool.query<{ refunded: number }>(
      `WITH d AS (
         SELECT account_id, amount_micros FROM ledger WHERE request_id = $1::text AND kind = 'debit'
       ), del AS (
         DELETE FROM reservations WHERE request_id = $1::text
       ), ins AS (
         INSERT INTO ledger (account_id, kind, amount_micros, request_id, reference)
         SELECT account_id, 'refund', -amount_micros, $1::text, $2::text FROM d
         ON CONFLICT (request_id, kind) WHERE request_id IS NOT NULL DO NOTHING
         RETURNING account_id, amount_micros
       ), upd AS (
         UPDATE accounts a SET balance_micros = a.balance_micros + ins.amount_micros FROM ins WHERE a.id = ins.account_id RETURNING a.id
       )
       SELECT count(*)::int AS refunded FROM upd`,
      [requestId, reason],
    );
    return (r.rows[0]?.refunded ?? 0) > 0;
  }

  commit(requestId: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return Promise.resolve(false);
    return new Promise((resolve, reject) => this.commits.push({ requestId, resolve, reject }));
  }

  /** Settles each commit of `batch`; never rejects. */
  private commitBatch(batch: readonly PendingCommit[]): Promise<void> {
    return this.pool
      .query<{ request_id: string }>("DELETE FROM reservations WHERE request_id = ANY($1::text[]) RETURNING request_id", [batch.map((c) => c.requestId)])
      .then(
        (r) => {
          const done = new Set(r.rows.map((row) => row.request_id));
          for (const c of batch) c.resolve(done.has(c.requestId));
        },
        (err: unknown) => {
          for (const c of batch) c.reject(err);
        },
      );
  }

  async openReservations(limit: number): Promise<readonly Reservation[]> {
    const r = await this.pool.query<{
      request_id: string;
      account_id: string;
      amount_micros: string;
      owner_host: string;
      owner_pid: number;
      owner_instance: string;
      age_ms: number;
    }>(
      `SELECT request_id, account_id, amount_micros, owner_host, owner_pid, owner_instance,
              (extract(epoch FROM now() - created_at) * 1000)::float8 AS age_ms
       FROM reservations ORDER BY created_at, request_id LIMIT $1`,
      [Math.max(0, Math.floor(limit))],
    );
    return r.rows.map((row) => ({
      requestId: row.request_id,
      accountId: row.account_id,
      micros: toMicros(row.amount_micros),
      owner: { host: row.owner_host, pid: row.owner_pid, instance: row.owner_instance },
      ageMs: Math.max(0, row.age_ms),
    }));
  }

  async expire(requestId: string, reason: string): Promise<boolean> {
    if (typeof requestId !== "string" || requestId.length === 0) return false;
    // The DELETE takes the reservation's row lock: a concurrent commit (or expire) waits and then finds nothing.
    const r = await this.pool.query<{ refunded: number }>(
      `WITH d AS (
         DELETE FROM reservations WHERE request_id = $1::text RETURNING account_id, amount_micros
       ), ins AS (
         INSERT INTO ledger (account_id, kind, amount_micros, request_id, reference)
         SELECT account_id, 'refund', amount_micros, $1::text, $2::text FROM d
         ON CONFLICT (request_id, kind) WHERE request_id IS NOT NULL DO NOTHING
         RETURNING account_id, amount_micros
       ), upd AS (
         UPDATE accounts a SET balance_micros = a.balance_micros + ins.amount_micros FROM ins WHERE a.id = ins.account_id RETURNING a.id
       )
       SELECT count(*)::int AS refunded FROM upd`,
      [requestId, reason],
    );
    return (r.rows[0]?.refunded ?? 0) > 0;
  }

  async health(): Promise<StoreHealth> {
    const t0 = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.pool.query("SELECT 1"),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${this.healthTimeoutMs} ms`)), this.healthTimeoutMs);
        }),
      ]);
      return { status: "up", latencyMs: performance.now() - t0 };
    } catch (e) {
      return { status: "down", latencyMs: performance.now() - t0, error: redactKeys(e instanceof Error ? e.message : String(e)) };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Commits still gathering this turn go out before the pool closes.
    const pending = this.commits.take();
    if (pending.length > 0) await this.commitBatch(pending);
    await this.pool.end();
  }
}
