/**
 * Accounts, API keys and the credit ledger behind one interface. Two implementations: SQLite
 * (better-sqlite3, the embedded default) and Postgres (pg, the distributed profile).
 * Amounts are integer micro-dollars (1 USD = 1_000_000) everywhere; never floats.
 */

export const MICROS_PER_USD = 1_000_000;
/** The price of one search: $0.001 (service-spec.md §8). */
export const SEARCH_PRICE_MICROS = 1_000;
export const SCOPE_SEARCH = "search";

export type AccountStatus = "active" | "suspended";

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly status: AccountStatus;
  readonly createdAt: string;
}

/** What a valid, unrevoked key resolves to. */
export interface Principal {
  readonly accountId: string;
  readonly accountName: string;
  readonly accountStatus: AccountStatus;
  /** The key's public prefix (safe to log), e.g. "rsk_AbCd1234". */
  readonly keyPrefix: string;
  readonly scopes: readonly string[];
}

export interface CreatedKey {
  /** The full secret key. Shown once; only its SHA-256 hash is stored. */
  readonly key: string;
  readonly prefix: string;
  readonly accountName: string;
  readonly scopes: readonly string[];
}

export type DebitOutcome =
  { readonly ok: true; readonly balanceMicros: number } | { readonly ok: false; readonly reason: "insufficient_credits"; readonly balanceMicros: number };

/** The serving process that holds a reservation (owner.ts). */
export interface ReservationOwner {
  /** The host name and its process-id namespace: pids are comparable only within one. */
  readonly host: string;
  readonly pid: number;
  /** Random per process, so a later process that gets the same pid is told apart. */
  readonly instance: string;
}

/**
 * A search's debit whose answer has not been written yet. The debit is in the ledger and the balance
 * (so it cannot overdraw); commit() settles it once the answer is written, refund() or expire() undoes it.
 */
export interface Reservation {
  readonly requestId: string;
  readonly accountId: string;
  readonly micros: number;
  readonly owner: ReservationOwner;
  /** How long ago it was made, by the ledger's clock. */
  readonly ageMs: number;
}

export interface StoreHealth {
  readonly status: "up" | "down";
  readonly latencyMs: number;
  readonly error?: string | undefined;
}

export interface AccountStore {
  readonly backend: "sqlite" | "postgres";
  createAccount(name: string): Promise<Account>;
  setAccountStatus(name: string, status: AccountStatus): Promise<Account>;
  createKey(accountName: string, opts?: { scopes?: readonly string[] }): Promise<CreatedKey>;
  /** Revokes every key whose public prefix is `prefix`; returns how many were revoked. */
  revokeKey(prefix: string): Promise<number>;
  /** Resolves a presented key; null for unknown, malformed or revoked keys (indistinguishable on purpose). */
  authenticate(key: string): Promise<Principal | null>;
  /** Appends a top-up entry; returns the new balance. */
  topup(accountName: string, micros: number, opts?: { reference?: string }): Promise<number>;
  balance(accountName: string): Promise<number>;
  /**
   * One atomic conditional debit: succeeds only when the balance covers `micros`. Idempotent on
   * `requestId`: a second debit with the same id changes nothing and reports the first outcome.
   * A new debit is also an open reservation held by this process, until commit() or refund().
   */
  debit(accountId: string, micros: number, requestId: string): Promise<DebitOutcome>;
  /** Reverses the debit of `requestId` once (closing its reservation); later calls and unknown ids are no-ops. Returns whether it refunded. */
  refund(requestId: string, reason: string): Promise<boolean>;
  /** Settles the reservation of `requestId`: its answer was written, the debit stands. False when none was open. */
  commit(requestId: string): Promise<boolean>;
  /** Open reservations, oldest first, at most `limit`. */
  openReservations(limit: number): Promise<readonly Reservation[]>;
  /** Refunds the debit of `requestId` only while its reservation is open (exactly one of commit and expire wins). */
  expire(requestId: string, reason: string): Promise<boolean>;
  /** The process this store's reservations are held by. */
  readonly owner: ReservationOwner;
  /** A real round trip to the database. */
  health(): Promise<StoreHealth>;
  close(): Promise<void>;
}
