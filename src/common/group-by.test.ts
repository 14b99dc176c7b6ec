import assert from "node:assert/strict";
import { test } from "vitest";
import { groupBy } from "./group-by.js";

test("groups items by key in the items' order, leaving out those keyed null", () => {
  const got = groupBy(["b1", "a1", "x", "b2", "a2"], (s) => (s === "x" ? null : s[0]!));
  assert.deepEqual(
    [...got],
    [
      ["b", ["b1", "b2"]],
      ["a", ["a1", "a2"]],
    ],
  );
});
