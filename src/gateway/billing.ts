/**
 * What a search costs, charged on the credits ledger: debit first (atomic, conditional, idempotent on
 * the request's ledger id), refund when no answer follows. A refund the ledger cannot take right away is
 * retried in the background: when the connection drops after a debit committed but before its result
 * arrived, the ledger is usually unreachable for the immediate refund too. Refunds are idempotent and a
 * no-op for a debit that never committed; a background retry is lost if the process exits first (then
 * logged as needing manual reversal). The credit counters follow the ledger entry for entry.
 *
 * Crash safety: a debit is a reservation (accounts/types.ts) until commit(), which the route calls once
 * the answer has been written to the connection. A process that dies in between (kill -9, OOM) leaves
 * its reservations open; the sweep refunds them, each with a warn line: at start, those whose process
 * is certainly gone (same host, dead pid: a restart in place reclaims at once), and on every run, those
 * older than BILLING_RESERVATION_TTL_MS (a gateway that died for good, or on another host). So a debit
 * never outlives a crash without an answer. The one window left is between writing the answer and
 * committing it: a crash there refunds a search that was answered (under-charging, never the reverse).
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { SEARCH_PRICE_MICROS, type AccountStore } from "./accounts/types.js";
import { describeError } from "./errors.js";
import type { GatewayMetrics } from "./metrics.js";
import { ownerIsGone } from "./accounts/owner.js";

/** Waits between background retries of a refund the ledger could not take (about 9 minutes in all). */
const REFUND_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000];

export interface Billing {
  /**
   * Debits one search. False when the account lacks the credits (nothing charged). A ledger failure is
   * a 502 EXTERNAL_SERVICE_ERROR after undoing whatever may have committed.
   */
  charge(accountId: string, ledgerId: string): Promise<boolean>;
  /** Refunds a charged search that got no answer; `secret` is scrubbed from the log line. */
  refund(accountId: string, ledgerId: string, reason: string, secret: string | undefined): Promise<void>;
  /** Settles a charged search whose answer was written (in the background; never throws). */
  commit(accountId: string, ledgerId: string): void;
}

export function createBilling(deps: { accounts: Pick<AccountStore, "debit" | "refund" | "commit">; metrics: GatewayMetrics; log: Logger }): Billing {
  const { accounts, metrics, log } = deps;

  /** A commit the ledger could not take is retried like a refund; if it never lands, the sweep refunds the search. */
  function commitWithRetries(ledgerId: string, accountId: string, attempt = 0): void {
    accounts.commit(ledgerId).then(
      (committed) => {
        // Not open any more: a sweep took it for abandoned (the request outlived BILLING_RESERVATION_TTL_MS).
        if (!committed) log.warn("answered search was refunded before its charge was settled", { requestId: ledgerId, accountId });
      },
      (err: unknown) => {
        if (attempt >= REFUND_RETRY_DELAYS_MS.length) {
          log.error("could not settle an answered search; the sweep will refund it", { requestId: ledgerId, accountId, error: describeError(err, undefined) });
          return;
        }
        setTimeout(() => commitWithRetries(ledgerId, accountId, attempt + 1), REFUND_RETRY_DELAYS_MS[attempt]).unref();
      },
    );
  }

  function retryRefund(ledgerId: string, reason: string, accountId: string, onRefunded: () => void, attempt = 0): void {
    const timer = setTimeout(() => {
      accounts.refund(ledgerId, reason).then(
        (refunded) => {
          if (!refunded) return;
          onRefunded();
          log.warn("refund completed after the ledger came back", { requestId: ledgerId, accountId, attempts: attempt + 2 });
        },
        (err: unknown) => {
          if (attempt + 1 < REFUND_RETRY_DELAYS_MS.length) return retryRefund(ledgerId, reason, accountId, onRefunded, attempt + 1);
          log.error("refund failed; the ledger entry needs manual reversal", { requestId: ledgerId, accountId, error: describeError(err, undefined) });
        },
      );
    }, REFUND_RETRY_DELAYS_MS[attempt]);
    timer.unref();
  }

  return {
    async charge(accountId, ledgerId) {
      try {
        const debit = await accounts.debit(accountId, SEARCH_PRICE_MICROS, ledgerId);
        if (debit.ok) metrics.creditsDebited.inc(SEARCH_PRICE_MICROS);
        return debit.ok;
      } catch (err) {
        // The debit may have committed before the failure surfaced: undo it (a no-op when it did not).
        // It had committed when the refund succeeds: the ledger holds both entries, and so do the counters.
        const countBoth = (): void => {
          metrics.creditsDebited.inc(SEARCH_PRICE_MICROS);
          metrics.creditsRefunded.inc(SEARCH_PRICE_MICROS);
        };
        const refunded = await accounts.refund(ledgerId, "debit failed").catch(() => {
          retryRefund(ledgerId, "debit failed", accountId, countBoth);
          return false;
        });
        if (refunded) countBoth();
        throw new ReposearchError(ErrorCode.ExternalService, "credits ledger unavailable; nothing was charged, retry later", { cause: err });
      }
    },
    async refund(accountId, ledgerId, reason, secret) {
      try {
        if (await accounts.refund(ledgerId, reason)) metrics.creditsRefunded.inc(SEARCH_PRICE_MICROS);
      } catch (refundErr) {
        log.warn("refund failed; retrying in the background", { requestId: ledgerId, accountId, error: describeError(refundErr, secret) });
        retryRefund(ledgerId, reason, accountId, () => metrics.creditsRefunded.inc(SEARCH_PRICE_MICROS));
      }
    },
    commit(accountId, ledgerId) {
      commitWithRetries(ledgerId, accountId);
    },
  };
}

/** Most reservations one sweep looks at (reservations open at once are bounded by requests in flight). */
const SWEEP_BATCH = 10_000;

export interface ReservationSweepDeps {
  readonly accounts: Pick<AccountStore, "openReservations" | "expire" | "owner">;
  readonly metrics: Pick<GatewayMetrics, "creditsRefunded">;
  readonly log: Logger;
  /** Reservations older than this are refunded whoever holds them (BILLING_RESERVATION_TTL_MS). */
  readonly ttlMs: number;
}

/**
 * Refunds the open reservations whose search can no longer be answered: held by a process that is
 * certainly gone (owner.ts), or older than `ttlMs`. Each refund is logged at warn. Returns how many
 * were refunded. Safe to run from every gateway at once: a reservation is refunded once, and never one
 * that its process commits meanwhile.
 */
export async function sweepReservations(deps: ReservationSweepDeps): Promise<number> {
  const { accounts, metrics, log, ttlMs } = deps;
  const open = await accounts.openReservations(SWEEP_BATCH);
  let refunded = 0;
  for (const r of open) {
    const why = ownerIsGone(r.owner, accounts.owner) ? "its process is gone" : r.ageMs > ttlMs ? "older than BILLING_RESERVATION_TTL_MS" : null;
    if (why === null) continue;
    if (!(await accounts.expire(r.requestId, `no answer written: ${why}`))) continue;
    refunded++;
    metrics.creditsRefunded.inc(r.micros);
    log.warn("refunded a search that was charged but never answered", {
      requestId: r.requestId,
      accountId: r.accountId,
      micros: r.micros,
      reason: why,
      owner: `${r.owner.host} pid ${r.owner.pid}`,
      ageMs: Math.round(r.ageMs),
    });
  }
  if (open.length === SWEEP_BATCH) log.warn("more open reservations than one sweep looks at; the next sweep goes on", { batch: SWEEP_BATCH });
  return refunded;
}

export interface ReservationSweeper {
  /** The first sweep (run at once); resolves with how many it refunded, 0 when it failed (logged). */
  readonly initial: Promise<number>;
  stop(): void;
}

/** Sweeps at once, then every ttlMs / 4 (between 1 s and 60 s). Never throws: a failed sweep is logged and retried on the next run. */
export function startReservationSweeper(deps: ReservationSweepDeps): ReservationSweeper {
  const intervalMs = Math.min(60_000, Math.max(1_000, Math.floor(deps.ttlMs / 4)));
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const run = async (): Promise<number> => {
    try {
      return await sweepReservations(deps);
    } catch (err) {
      deps.log.warn("reservation sweep failed; retrying later", { error: describeError(err, undefined) });
      return 0;
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void run().then(schedule), intervalMs);
    timer.unref();
  };
  const initial = run().then((n) => {
    if (n > 0) deps.log.warn("refunded searches left charged by a process that died", { refunded: n });
    schedule();
    return n;
  });
  return {
    initial,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
