/** The load tests' request mix sends only valid bodies, and the runner's statistics are right. */
import assert from "node:assert/strict";
import { describe, test } from "vitest";
import { validateSearchRequest } from "../src/gateway/validation.js";
import { Latencies, percentile } from "./loadgen.js";
import { loadMix, resolveBody, type MixQuery } from "./mix.js";
import { mixTable, scenarioPhases, summarize } from "./runner.js";
import { machineTicks, parseCpuLine, stealPctBetween } from "./server.js";

const mix = loadMix();

// Every language and category dev.jsonl guesses, plus the no-guess fallbacks.
const SYNTHETIC: MixQuery[] = [
  { query: "Python libraries for building AI agents", language: "Python", category_guess: "agent" },
  { query: "C# ORM", language: "C#", category_guess: "data" },
  { query: "curated list of Flutter packages", language: "Dart", category_guess: "curated-list" },
  { query: "tutorials for Ruby on Rails", language: "Ruby", category_guess: "educational" },
  { query: "no guesses at all", language: null, category_guess: null },
];

describe("query mix", () => {
  test("every entry, resolved for every kind of query, is a valid SearchRequest", () => {
    for (const entry of mix.entries) {
      for (const q of SYNTHETIC) {
        const body = resolveBody(mix, entry, q);
        const v = validateSearchRequest(body);
        assert.ok(v.ok, `${entry.name} × ${JSON.stringify(q)}: ${JSON.stringify(body)} → ${v.ok ? "" : JSON.stringify(v.details)}`);
        assert.doesNotMatch(JSON.stringify(body), /\$(language|category)/, "placeholders are filled");
      }
    }
  });

  test("placeholders take the query's guesses, else the fallbacks; arrays are de-duplicated", () => {
    const combined = mix.entries.find((e) => e.name === "combined")!;
    const lib = resolveBody(mix, combined, { query: "q", language: "Ruby", category_guess: "library" });
    assert.deepEqual(lib.filters, { language: "Ruby", minStars: 100, staleAfterMonths: 24, categories: ["library"] });
    const none = resolveBody(mix, combined, { query: "q", language: null, category_guess: null });
    assert.equal((none.filters as { language: string }).language, mix.fallbackLanguage);
  });

  test("the mix covers the filter kinds the load tests promise", () => {
    const text = JSON.stringify(mix.entries.map((e) => e.body));
    for (const k of [
      "language",
      "minStars",
      "maxStars",
      "minForks",
      "topics",
      "categories",
      "staleAfterMonths",
      "excludeArchived",
      "excludeRepos",
      "includeTree",
      "limit",
    ]) {
      assert.ok(text.includes(`"${k}"`), k);
    }
    assert.ok(
      mix.entries.some((e) => JSON.stringify(e.body).includes('"categories":[]')),
      "categories: [] (all)",
    );
    assert.ok(
      mix.entries.some((e) => JSON.stringify(e.body).includes('"excludeArchived":false')),
      "excludeArchived: false",
    );
  });
});

describe("runner statistics", () => {
  test("nearest-rank percentiles", () => {
    const l = new Latencies();
    for (let i = 100; i >= 1; i--) l.push(i); // unsorted on purpose
    const s = l.sorted();
    assert.equal(percentile(s, 50), 50);
    assert.equal(percentile(s, 99), 99);
    assert.equal(percentile(s, 100), 100);
    assert.ok(Number.isNaN(percentile(new Float64Array(0), 50)));
  });

  test("Latencies grows past its first buffer", () => {
    const l = new Latencies();
    for (let i = 0; i < 40_000; i++) l.push(40_000 - i);
    assert.equal(l.length, 40_000);
    const s = l.sorted();
    assert.equal(s[0], 1);
    assert.equal(s[39_999], 40_000);
  });

  test("summaries: RPS counts 2xx only, non-2xx and errors apart, CPU as % of one core and per answered request", () => {
    const lat = new Latencies();
    for (const x of [10, 20, 30, 40]) lat.push(x);
    const s = summarize(
      "t",
      [
        {
          label: "t",
          connections: 2,
          seconds: 2,
          statuses: { "200": 3, "429": 1 },
          errors: { ECONNRESET: 1 },
          invalidBodies: 0,
          sampledBodies: 1,
          byMix: { defaults: 5 },
          mixLatencies: { defaults: lat },
        },
      ],
      1,
      0.5,
    );
    assert.equal(s.requests, 5);
    assert.equal(s.ok2xx, 3);
    assert.equal(s.rps, 1.5);
    assert.equal(s.non2xx, 1);
    assert.equal(s.errors, 1);
    assert.equal(s.latencyMs.p50, 20);
    assert.equal(s.latencyMs.max, 40);
    assert.equal(s.serverCpuPct, 50);
    assert.equal(s.serverCpuMsPerRequest, 250); // 1 s of server CPU over 4 answers (the reset got none)
    assert.equal(s.loadgenCpuPct, 25);
    assert.equal(s.stealPct, null);
    assert.equal(summarize("t", [], 0, 0, null, 12.5).stealPct, 12.5);
    assert.equal(
      summarize(
        "t",
        [{ label: "t", connections: 1, seconds: 1, statuses: {}, errors: {}, invalidBodies: 0, sampledBodies: 0, byMix: {}, mixLatencies: {} }],
        1,
        0,
      ).serverCpuMsPerRequest,
      null,
    );
  });

  test("per-mix latency: percentiles per entry, and which entries hold the requests above the overall p99", () => {
    const of = (xs: number[]) => {
      const l = new Latencies();
      for (const x of xs) l.push(x);
      return l;
    };
    // 200 requests: "heavy" holds the two slowest, "light" the rest; split over two phases.
    const light = Array.from({ length: 198 }, (_, i) => 10 + (i % 10));
    const rec = (label: string, mix: Record<string, Latencies>) => {
      const answered = Object.values(mix).reduce((n, l) => n + l.length, 0);
      return { label, connections: 1, seconds: 1, statuses: { "200": answered }, errors: {}, invalidBodies: 0, sampledBodies: 0, byMix: {}, mixLatencies: mix };
    };
    const s = summarize(
      "t",
      [rec("a", { light: of(light.slice(0, 100)), heavy: of([500]) }), rec("b", { light: of(light.slice(100)), heavy: of([400]) })],
      null,
      0,
    );
    assert.deepEqual(Object.keys(s.latencyByMix), ["heavy", "light"], "sorted by tail share");
    assert.equal(s.latencyByMix.heavy!.answered, 2);
    assert.equal(s.latencyByMix.heavy!.p99Ms, 500);
    assert.equal(s.latencyByMix.light!.answered, 198);
    assert.equal(s.latencyByMix.light!.p50Ms, 14);
    // The overall p99 (rank 198 of 200) is a light request's 19 ms: both heavy ones are above it.
    assert.equal(s.latencyByMix.heavy!.slowestSharePct, 100);
    assert.equal(s.latencyByMix.light!.slowestSharePct, 0);
    assert.match(mixTable(s), /\| heavy \| 2 \| 400 \| 500 \| 100 \|/);
  });

  test("scenarios: defaults and overrides", () => {
    assert.deepEqual(
      scenarioPhases("load").map((p) => [p.connections, p.seconds]),
      [[50, 60]],
    );
    assert.deepEqual(
      scenarioPhases("load", 5, 8).map((p) => [p.connections, p.seconds]),
      [[8, 5]],
    );
    assert.deepEqual(
      scenarioPhases("spike").map((p) => [p.connections, p.seconds]),
      [
        [10, 10],
        [100, 10],
        [10, 10],
      ],
    );
  });
});

describe("machine steal", () => {
  test("parses /proc/stat's aggregate line and takes the stolen share of the ticks between two readings", () => {
    const a = parseCpuLine("cpu  100 0 50 800 10 0 5 35 0 0");
    assert.deepEqual(a, { total: 1000, steal: 35 });
    // Guest time (the last two fields) is already counted in user, so it is not added again.
    const b = parseCpuLine("cpu  300 0 100 1300 10 0 5 85 40 0");
    assert.deepEqual(b, { total: 1800, steal: 85 });
    assert.equal(stealPctBetween(a, b), 6.3); // 50 of 800 ticks
    assert.equal(stealPctBetween(b, a), null);
    assert.equal(stealPctBetween(null, b), null);
    assert.equal(parseCpuLine("cpu0 1 2 3 4 5 6 7 8"), null);
    assert.equal(parseCpuLine("cpu  1 2 3"), null);
    const live = machineTicks();
    if (process.platform === "linux") assert.ok(live !== null && live.total > 0 && live.steal >= 0 && live.steal <= live.total);
  });
});
