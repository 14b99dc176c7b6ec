/**
 * The API-key format.
 *
 *     rsk_<public id: 8 base62>_<secret: 32 base62><checksum: 6 base62>
 *     e.g. rsk_Ab12Cd34_9fQx…(32 chars)…Zk3P0a   (51 characters in all)
 *
 * - `rsk_` makes a leaked key recognisable to secret scanners and to {@link redactKeys}.
 * - The public id (`rsk_Ab12Cd34`, the "key prefix") identifies the key: it is the database lookup
 *   key, what `reposearch keys revoke` takes, and the only part that is ever logged.
 * - The secret is 32 characters drawn uniformly from base62 with crypto.randomBytes (~190 bits).
 * - The checksum is the first 48 bits of SHA-256 over everything before it, reduced mod 62^6 and
 *   written as 6 base62 characters. It lets a typo or a random string be rejected without touching
 *   the database (a random 51-character string passes with probability ~2e-11).
 *
 * Only SHA-256(key) is stored; a key is shown once when created and cannot be recovered.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Hex } from "../../common/hash.js";
import type { AccountStatus, Principal } from "./types.js";

export const KEY_PREFIX_TAG = "rsk_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PUBLIC_ID_LEN = 8;
const SECRET_LEN = 32;
const CHECKSUM_LEN = 6;
/** Total length of a key: "rsk_" + 8 + "_" + 32 + 6. */
export const KEY_LENGTH = KEY_PREFIX_TAG.length + PUBLIC_ID_LEN + 1 + SECRET_LEN + CHECKSUM_LEN;

const KEY_RE = /^rsk_([0-9A-Za-z]{8})_([0-9A-Za-z]{38})$/;
/** A key prefix on its own, e.g. "rsk_Ab12Cd34". */
export const KEY_PREFIX_RE = /^rsk_[0-9A-Za-z]{8}$/;
/**
 * Anything key-shaped inside free text: the tag, a public id, an underscore and at least one more
 * base62 character. Deliberately looser than {@link KEY_RE} so truncated or mistyped keys are redacted too.
 */
const KEY_IN_TEXT_RE = /(?<![0-9A-Za-z])(rsk_[0-9A-Za-z]{8})_[0-9A-Za-z]+/g;

/** `n` characters drawn uniformly from base62 (rejection sampling: bytes ≥ 248 would bias toward the first letters). */
function randomBase62(n: number): string {
  let out = "";
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b >= 248) continue;
      out += ALPHABET[b % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

function checksumOf(body: string): string {
  const digest = createHash("sha256").update(body, "utf8").digest();
  let v = digest.readUIntBE(0, 6) % 62 ** CHECKSUM_LEN;
  let s = "";
  for (let i = 0; i < CHECKSUM_LEN; i++) {
    s = ALPHABET[v % 62] + s;
    v = Math.floor(v / 62);
  }
  return s;
}

export interface GeneratedKey {
  /** The full secret key. */
  readonly key: string;
  /** The public part, safe to log and store in clear: "rsk_" + public id. */
  readonly prefix: string;
}

/** A fresh random key and its prefix. */
export function generateKey(): GeneratedKey {
  const prefix = KEY_PREFIX_TAG + randomBase62(PUBLIC_ID_LEN);
  const body = `${prefix}_${randomBase62(SECRET_LEN)}`;
  return { key: body + checksumOf(body), prefix };
}

/** Checks format and checksum; returns the key's prefix, or null for anything that is not a well-formed key. */
export function parseKey(s: string): { readonly prefix: string } | null {
  if (typeof s !== "string" || s.length !== KEY_LENGTH) return null;
  const m = KEY_RE.exec(s);
  if (!m) return null;
  const body = s.slice(0, KEY_LENGTH - CHECKSUM_LEN);
  const given = s.slice(KEY_LENGTH - CHECKSUM_LEN);
  if (checksumOf(body) !== given) return null;
  return { prefix: KEY_PREFIX_TAG + m[1] };
}

/** The stored form of a key: lowercase hex SHA-256 of the whole key string. */
export function hashKey(key: string): string {
  return sha256Hex(key);
}

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;

/** Compares two hex digests without an early exit on the first differing byte; false for malformed or unequal-length input. */
export function constantTimeEqualHex(a: string, b: string): boolean {
  if (a.length !== b.length || !HEX_RE.test(a) || !HEX_RE.test(b)) return false;
  return timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"));
}

/** A stored key joined with its account, as both ledgers' key lookups return it. */
export interface StoredKeyRow {
  readonly key_hash: string;
  readonly scopes: string;
  readonly revoked_at: unknown;
  readonly prefix: string;
  readonly account_id: string;
  readonly account_name: string;
  readonly account_status: AccountStatus;
}

/** Compared against when no key is stored under the prefix (a hash of no key: nothing matches it). */
const NO_KEY_HASH = hashKey("rsk_00000000_no-key-is-stored-under-this-prefix");

/**
 * The principal `key` authenticates as, given the row stored under its prefix: null unless the hash
 * matches and the key is live. The key is hashed and compared whether or not a row exists, so an
 * unknown prefix answers in the same time as a known one with a wrong secret.
 */
export function principalOf(key: string, row: StoredKeyRow | undefined): Principal | null {
  const matches = constantTimeEqualHex(hashKey(key), row?.key_hash ?? NO_KEY_HASH);
  if (!row || !matches) return null;
  if (row.revoked_at !== null) return null;
  return {
    accountId: row.account_id,
    accountName: row.account_name,
    accountStatus: row.account_status,
    keyPrefix: row.prefix,
    scopes: row.scopes.split(",").filter(Boolean),
  };
}

/** Replaces every key-shaped substring with its prefix and "…", so logs and error messages never carry a secret. */
export function redactKeys(text: string): string {
  return text.replace(KEY_IN_TEXT_RE, (_m, prefix: string) => `${prefix}…`);
}
