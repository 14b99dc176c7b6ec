import assert from "node:assert/strict";
import { test } from "vitest";
import { constantTimeEqualHex, generateKey, hashKey, KEY_LENGTH, parseKey, redactKeys } from "./keys.js";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

test("generated keys have the documented shape and parse back to their prefix", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const { key, prefix } = generateKey();
    assert.equal(key.length, KEY_LENGTH);
    assert.match(key, /^rsk_[0-9A-Za-z]{8}_[0-9A-Za-z]{38}$/);
    assert.match(prefix, /^rsk_[0-9A-Za-z]{8}$/);
    assert.ok(key.startsWith(prefix + "_"));
    assert.deepEqual(parseKey(key), { prefix });
    seen.add(key);
  }
  assert.equal(seen.size, 200);
});

test("the checksum rejects every one-character change", () => {
  const { key } = generateKey();
  for (let i = 0; i < key.length; i++) {
    if (key[i] === "_") continue;
    if (i < 4) continue; // the "rsk_" tag is checked by format, below
    const replacement = ALPHABET[(ALPHABET.indexOf(key[i]!) + 1 + (i % 61)) % 62]!;
    const changed = key.slice(0, i) + replacement + key.slice(i + 1);
    assert.notEqual(changed, key);
    assert.equal(parseKey(changed), null, `position ${i}`);
  }
  // Two adjacent characters swapped (a classic typo).
  const swapped = key.slice(0, 20) + key[21] + key[20] + key.slice(22);
  if (swapped !== key) assert.equal(parseKey(swapped), null);
});

test("wrong tag, wrong length, bad characters and random strings are rejected", () => {
  const { key } = generateKey();
  assert.equal(parseKey("rsx_" + key.slice(4)), null);
  assert.equal(parseKey("RSK_" + key.slice(4)), null);
  assert.equal(parseKey(key.slice(0, -1)), null);
  assert.equal(parseKey(key + "a"), null);
  assert.equal(parseKey(key.slice(0, 12) + "-" + key.slice(13)), null);
  assert.equal(parseKey(""), null);
  assert.equal(parseKey(" " + key.slice(1)), null);
  assert.equal(parseKey(key + "\n"), null);
  for (let i = 0; i < 100; i++) {
    const { key: other } = generateKey();
    // Same shape, random checksum: valid only by a ~2e-11 chance.
    const forged = other.slice(0, -6) + key.slice(-6);
    if (forged !== other) assert.equal(parseKey(forged), null);
  }
});

test("hashKey is hex SHA-256 and constantTimeEqualHex compares digests", () => {
  const { key } = generateKey();
  const h = hashKey(key);
  assert.match(h, /^[0-9a-f]{64}$/);
  assert.equal(hashKey(key), h);
  assert.ok(constantTimeEqualHex(h, hashKey(key)));
  assert.ok(constantTimeEqualHex(h, h.toUpperCase()));
  assert.ok(!constantTimeEqualHex(h, hashKey(key + "x")));
  assert.ok(!constantTimeEqualHex(h, h.slice(0, 62)));
  assert.ok(!constantTimeEqualHex(h, h.slice(0, 63) + "g"));
  assert.ok(!constantTimeEqualHex("abc", "abc"));
  assert.ok(constantTimeEqualHex("", ""));
});

test("redactKeys keeps only the prefix of anything key-shaped", () => {
  const { key, prefix } = generateKey();
  assert.equal(redactKeys(`auth failed for ${key}.`), `auth failed for ${prefix}….`);
  assert.equal(redactKeys(`Authorization: Bearer ${key}`), `Authorization: Bearer ${prefix}…`);
  assert.equal(redactKeys(JSON.stringify({ key })), JSON.stringify({ key: `${prefix}…` }));
  // Truncated or mistyped keys are secrets too.
  assert.equal(redactKeys(key.slice(0, 20)), `${prefix}…`);
  const two = generateKey();
  assert.equal(redactKeys(`${key},${two.key}`), `${prefix}…,${two.prefix}…`);
  // Already-redacted text and bare prefixes are left alone.
  assert.equal(redactKeys(`${prefix}…`), `${prefix}…`);
  assert.equal(redactKeys(`revoked ${prefix}`), `revoked ${prefix}`);
  assert.equal(redactKeys("nothing to see"), "nothing to see");
});
