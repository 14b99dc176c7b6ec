/** The load tests' request mix over the real evaluation queries (../shared/eval/dev.jsonl); the rest is in loadtest/mix.test.ts. */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { describe, test } from "vitest";
import { validateSearchRequest } from "../src/gateway/validation.js";
import { buildRequests, DEFAULT_QUERIES_PATH, loadMix, loadMixQueries } from "../loadtest/mix.js";
import { skipReason } from "./support/skip.js";

const mix = loadMix();

describe("query mix", () => {
  test.skipIf(skipReason(!existsSync(DEFAULT_QUERIES_PATH) && "dev.jsonl not present", "buildRequests"))(
    "buildRequests is repeatable and follows the weights",
    async () => {
      const queries = await loadMixQueries();
      const a = buildRequests(mix, queries, 4000, 7);
      assert.deepEqual(a, buildRequests(mix, queries, 4000, 7));
      assert.notDeepEqual(a.slice(0, 50), buildRequests(mix, queries, 50, 8));
      for (const r of a) {
        const v = validateSearchRequest(r.body);
        assert.ok(v.ok, `${r.mix}: ${JSON.stringify(r.body)}`);
      }
      const total = mix.entries.reduce((s, e) => s + e.weight, 0);
      const defaults = mix.entries.find((e) => e.name === "defaults")!;
      const share = a.filter((r) => r.mix === "defaults").length / a.length;
      assert.ok(Math.abs(share - defaults.weight / total) < 0.04, `defaults share ${share}`);
      assert.equal(new Set(a.map((r) => r.mix)).size, mix.entries.length, "every entry is used");
    },
  );
});
