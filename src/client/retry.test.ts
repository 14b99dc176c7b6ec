import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { backoffMs, isRetryable, parseRetryAfter, sleep } from "./retry.js";

describe("retry policy", () => {
  it("reads Retry-After as seconds or as an HTTP date, and nothing else", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    assert.equal(parseRetryAfter("7", now), 7);
    assert.equal(parseRetryAfter(" 0 ", now), 0);
    assert.equal(parseRetryAfter("Wed, 01 Jan 2025 00:00:30 GMT", now), 30);
    assert.equal(parseRetryAfter("Wed, 01 Jan 2025 00:00:00 GMT", now + 5_000), 0, "a date in the past waits nothing");
    for (const bad of [null, undefined, "", "-1", "1.5", "soon", "2025-01-01"]) assert.equal(parseRetryAfter(bad, now), null, String(bad));
  });

  it("retries 429, 503, 500, 502 and a failed connection; never a timeout, a 4xx or a bad argument", () => {
    for (const s of [429, 503, 500, 502]) assert.ok(isRetryable("ANY", s), String(s));
    assert.ok(isRetryable("CONNECTION_ERROR", 0));
    for (const s of [400, 401, 403, 404, 200]) assert.ok(!isRetryable("ANY", s), String(s));
    assert.ok(!isRetryable("TIMEOUT", 0));
    assert.ok(!isRetryable("INVALID_ARGUMENT", 0));
  });

  it("backs off exponentially with jitter, within half and all of a capped ceiling", () => {
    assert.equal(
      backoffMs(1, () => 0),
      125,
    );
    assert.equal(
      backoffMs(1, () => 1),
      250,
    );
    assert.equal(
      backoffMs(3, () => 1),
      1_000,
    );
    assert.equal(
      backoffMs(30, () => 1),
      8_000,
      "capped",
    );
    assert.equal(
      backoffMs(30, () => 0),
      4_000,
    );
  });

  it("sleep ends early with the signal's reason", async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const slept = sleep(10_000, ac.signal);
    ac.abort(new Error("stop"));
    await assert.rejects(slept, /stop/);
    assert.ok(performance.now() - t0 < 1_000);
  });
});
