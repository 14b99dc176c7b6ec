import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { applyFilterDefaults, CUTOFF_GRANULARITY_MS, staleCutoff, toStoreFilter } from "./filters.js";

describe("toStoreFilter: staleAfterMonths", () => {
  const cutoffOf = (now: Date): string => {
    const f = toStoreFilter(applyFilterDefaults({ staleAfterMonths: 12 }), now);
    const must = f?.must === undefined ? [] : Array.isArray(f.must) ? f.must : [f.must];
    const cond = must.find((c) => c !== null && "key" in c && c.key === "pushedAt") as { datetime_range: { gte: string } } | undefined;
    assert.ok(cond, JSON.stringify(f));
    return cond.datetime_range.gte;
  };

  it("is the same filter for every request within a minute (one cache entry in the store, not one per request)", () => {
    const a = new Date("2026-11-21T15:30:00.000Z");
    assert.equal(cutoffOf(new Date(a.getTime() + 1)), cutoffOf(new Date(a.getTime() + 59_999)));
    assert.deepEqual(
      toStoreFilter(applyFilterDefaults({ staleAfterMonths: 12, language: "Go" }), new Date(a.getTime() + 5)),
      toStoreFilter(applyFilterDefaults({ staleAfterMonths: 12, language: "Go" }), new Date(a.getTime() + 45_000)),
    );
    assert.notEqual(cutoffOf(new Date(a.getTime() - 1)), cutoffOf(a), "a new minute, a new cutoff");
  });

  it("lies at most a minute before the exact calendar cutoff", () => {
    for (const iso of ["2026-03-31T23:59:59.999Z", "2026-11-21T15:30:42.123Z", "2024-02-29T00:00:30Z"]) {
      const now = new Date(iso);
      const exact = staleCutoff(12, now).getTime();
      const got = Date.parse(cutoffOf(now));
      assert.ok(got <= exact && exact - got < CUTOFF_GRANULARITY_MS, `${iso}: ${new Date(got).toISOString()} vs exact ${new Date(exact).toISOString()}`);
    }
  });
});
