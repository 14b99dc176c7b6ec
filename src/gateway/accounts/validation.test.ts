import assert from "node:assert/strict";
import { test } from "vitest";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { formatUsd, parseUsdToMicros, validateScopes, validateTopupMicros } from "./validation.js";

const isValidation = (e: unknown) => e instanceof ReposearchError && e.code === ErrorCode.ValidationError;

test("parseUsdToMicros is exact decimal arithmetic", () => {
  const cases: [string, number][] = [
    ["12.345678", 12_345_678],
    ["5", 5_000_000],
    ["5.00", 5_000_000],
    ["0.29", 290_000], // 0.29 * 1e6 is 290000.00000000006 in floating point
    ["4.35", 4_350_000],
    ["1000.000000", 1_000_000_000],
    ["1000.01", 1_000_010_000],
    ["0.000001", 1],
    ["007.5", 7_500_000],
    [" 25 ", 25_000_000],
  ];
  for (const [text, micros] of cases) assert.equal(parseUsdToMicros(text), micros, text);
  for (const bad of ["1.1234567", "-5", "+5", "1e3", "", " ", "5.", ".5", "0x10", "5,00", "NaN", "Infinity", "12345678901"]) {
    assert.throws(() => parseUsdToMicros(bad), isValidation, bad);
  }
  assert.throws(() => parseUsdToMicros("1.1234567"), /6 decimal places/);
});

test("formatUsd always shows 6 decimals", () => {
  assert.equal(formatUsd(0), "0.000000");
  assert.equal(formatUsd(1), "0.000001");
  assert.equal(formatUsd(12_345_678), "12.345678");
  assert.equal(formatUsd(1_000_000_000), "1000.000000");
  assert.equal(formatUsd(-1_000), "-0.001000");
});

test("top-up range and scope rules", () => {
  assert.equal(validateTopupMicros(5_000_000), 5_000_000);
  assert.equal(validateTopupMicros(1_000_000_000), 1_000_000_000);
  for (const bad of [4_999_999, 1_000_000_001, 5_000_000.5, Number.NaN]) assert.throws(() => validateTopupMicros(bad), isValidation, String(bad));
  assert.deepEqual(validateScopes(undefined), ["search"]);
  assert.deepEqual(validateScopes([" search ", "search"]), ["search"]);
  assert.throws(() => validateScopes(["search", "admin"]), isValidation);
  assert.throws(() => validateScopes([]), isValidation);
});
