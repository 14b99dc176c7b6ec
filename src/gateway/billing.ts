/**
 * What a search costs, charged on the credits ledger: debit first (atomic, conditional, idempotent on
 * the request's ledger id), refund when no answer follows. A refund the ledger cannot take right away is
 * retried in the background: when the connection drops after a debit committed but before its result
 * arrived, the ledger is usually unreachable for the immediate refund too. Refunds are idempotent and a
 * no-op for a debit that never committed; a background retry is lost if the process exits first (then
 * logged as needing manual reversal). The credit counters follow the ledger entry for entry.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { SEARCH_PRICE_MICROS, type AccountStore } from "./accounts/types.js";
import { describeError } from "./errors.js";
import type { GatewayMetrics } from "./metrics.js";

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
}

export function createBilling(deps: { accounts: Pick<AccountStore, "debit" | "refund">; metrics: GatewayMetrics; log: Logger }): Billing {
  const { accounts, metrics, log } = deps;

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
  };
}
