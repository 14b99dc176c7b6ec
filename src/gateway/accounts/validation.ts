/**
 * Input rules shared by both AccountStore backends and the admin CLI, so SQLite and Postgres reject
 * exactly the same things with exactly the same messages.
 */
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { MICROS_PER_USD, SCOPE_SEARCH, type AccountStatus } from "./types.js";

/** Scopes a key may carry. Kept closed so a typo cannot mint a key with a meaningless scope. */
export const KNOWN_SCOPES: readonly string[] = [SCOPE_SEARCH];
export const DEFAULT_SCOPES: readonly string[] = [SCOPE_SEARCH];

/** Smallest and largest single top-up: $5 and $1000. */
export const MIN_TOPUP_MICROS = 5 * MICROS_PER_USD;
export const MAX_TOPUP_MICROS = 1000 * MICROS_PER_USD;

const ACCOUNT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;

function invalid(message: string, path: string, rule: string): ReposearchError {
  return new ReposearchError(ErrorCode.ValidationError, message, { details: [{ path, rule, message }] });
}

export function validateAccountName(name: string): string {
  if (typeof name !== "string" || !ACCOUNT_NAME_RE.test(name)) {
    throw invalid(
      `invalid account name ${JSON.stringify(name)}: use 1-128 characters from letters, digits and . _ @ + -, starting with a letter or digit`,
      "account",
      "pattern",
    );
  }
  return name;
}

export function validateStatus(status: string): AccountStatus {
  if (status !== "active" && status !== "suspended")
    throw invalid(`invalid account status ${JSON.stringify(status)}: use active or suspended`, "status", "enum");
  return status;
}

/** Deduplicated, validated scopes; the default when none are given. */
export function validateScopes(scopes: readonly string[] | undefined): readonly string[] {
  if (scopes === undefined) return DEFAULT_SCOPES;
  const out = [...new Set(scopes.map((s) => s.trim()))];
  if (out.length === 0 || out.includes("")) throw invalid("a key needs at least one scope", "scopes", "minItems");
  for (const s of out) {
    if (!KNOWN_SCOPES.includes(s)) throw invalid(`unknown scope ${JSON.stringify(s)}: known scopes are ${KNOWN_SCOPES.join(", ")}`, "scopes", "enum");
  }
  return out;
}

export function validateTopupMicros(micros: number): number {
  if (typeof micros !== "number" || !Number.isInteger(micros)) {
    throw invalid(`a top-up must be a whole number of micro-dollars (got ${String(micros)})`, "amount", "integer");
  }
  if (micros < MIN_TOPUP_MICROS || micros > MAX_TOPUP_MICROS) {
    throw invalid(`a top-up must be between 5 and 1000 USD (got ${formatUsd(micros)} USD)`, "amount", "range");
  }
  return micros;
}

export function validateDebitMicros(micros: number): number {
  if (typeof micros !== "number" || !Number.isSafeInteger(micros) || micros <= 0) {
    throw invalid(`a debit must be a positive whole number of micro-dollars (got ${String(micros)})`, "amount", "integer");
  }
  return micros;
}

export function validateRequestId(requestId: string): string {
  if (typeof requestId !== "string" || requestId.length === 0 || requestId.length > 200) {
    throw invalid("a request id must be a non-empty string of at most 200 characters", "requestId", "length");
  }
  return requestId;
}

const USD_RE = /^(\d+)(?:\.(\d+))?$/;

/**
 * Exact decimal USD → integer micros ("12.345678" → 12345678) by string arithmetic, so no binary
 * floating-point rounding can change an amount. More than 6 decimals is an error, not a rounding.
 */
export function parseUsdToMicros(text: string): number {
  const s = String(text).trim();
  const m = USD_RE.exec(s);
  if (!m) throw invalid(`invalid USD amount ${JSON.stringify(text)}: use a plain decimal number such as 25 or 12.50`, "usd", "format");
  const whole = m[1]!.replace(/^0+(?=\d)/, "");
  const frac = m[2] ?? "";
  if (frac.length > 6) throw invalid(`invalid USD amount ${JSON.stringify(text)}: at most 6 decimal places (1 micro-dollar)`, "usd", "precision");
  if (whole.length > 9) throw invalid(`invalid USD amount ${JSON.stringify(text)}: too large`, "usd", "range");
  return Number(whole) * MICROS_PER_USD + Number(frac.padEnd(6, "0"));
}

/** Integer micros → "12.345678" (always 6 decimals, exact). */
export function formatUsd(micros: number): string {
  if (!Number.isInteger(micros)) return String(micros / MICROS_PER_USD);
  const neg = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_USD);
  const frac = abs % MICROS_PER_USD;
  return `${neg ? "-" : ""}${whole}.${String(frac).padStart(6, "0")}`;
}
