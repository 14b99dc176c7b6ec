/**
 * Key lookup through the gateway's authenticate() and a real SQLite account store: an unknown key
 * prefix costs the same work as a known prefix with a wrong secret, so the answer's timing does not
 * tell an attacker which prefixes exist.
 *
 * Timing itself is measured, not asserted here (see the report of issue 24 for the figures); this
 * test counts the work that made the difference: the SHA-256 of the presented key and the
 * constant-time comparison, which used to run only on a prefix hit. node:crypto is wrapped with
 * counting pass-throughs (the real functions still run), synced into its ESM bindings.
 */
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { test } from "vitest";
import { sha256Hex } from "../common/hash.js";
import { generateKey } from "./accounts/keys.js";
import { SqliteAccountStore } from "./accounts/sqlite.js";
import { authenticate } from "./auth.js";

/** How often createHash and timingSafeEqual run during `fn`. */
async function countCrypto(fn: () => Promise<unknown>): Promise<{ createHash: number; timingSafeEqual: number }> {
  const counts = { createHash: 0, timingSafeEqual: 0 };
  const { createHash, timingSafeEqual } = crypto;
  crypto.createHash = ((...args: Parameters<typeof createHash>) => {
    counts.createHash++;
    return createHash(...args);
  }) as typeof createHash;
  crypto.timingSafeEqual = ((a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    counts.timingSafeEqual++;
    return timingSafeEqual(a, b);
  }) as typeof timingSafeEqual;
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    crypto.createHash = createHash;
    crypto.timingSafeEqual = timingSafeEqual;
    syncBuiltinESMExports();
  }
  return counts;
}

test("key lookup: an unknown prefix costs the same SHA-256 and comparison as a known prefix with a wrong secret", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "reposearch-auth-"));
  const file = path.join(dir, "ledger.sqlite");
  const store = SqliteAccountStore.open(file);
  try {
    await store.createAccount("timing");
    const good = await store.createKey("timing");
    // The stored hash of the same prefix, made to belong to another secret: `good.key` is now a known prefix with a wrong secret.
    const raw = new Database(file);
    raw.prepare("UPDATE api_keys SET key_hash = ? WHERE prefix = ?").run(sha256Hex("another secret"), good.prefix);
    raw.close();
    const unknown = generateKey().key; // well-formed, valid checksum, a prefix no row has

    const lookup = (key: string) => () =>
      authenticate(
        key,
        store,
        () => {},
        () => {},
      ).catch(() => null);
    const known = await countCrypto(lookup(good.key));
    const missing = await countCrypto(lookup(unknown));
    assert.ok(known.createHash >= 2 && known.timingSafeEqual >= 1, `the counting sees the work: ${JSON.stringify(known)}`);
    assert.deepEqual(missing, known, "the same hashing and comparison whether or not the prefix exists");
    for (const key of [good.key, unknown]) {
      await assert.rejects(
        authenticate(
          key,
          store,
          () => {},
          () => {},
        ),
        /invalid API key/,
      );
    }
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
