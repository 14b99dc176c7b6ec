import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { payload } from "../../test/support/test-records.js";
import { predecessorOf, recordPredecessor, sameFields } from "./payload-lineage.js";

describe("payload lineage", () => {
  it("keeps one step: a payload's predecessor, never the predecessor's own", () => {
    const v1 = payload("a/b", "one", { stars: 1 });
    const v2 = { ...v1, stars: 2 };
    const v3 = { ...v1, stars: 3 };
    assert.equal(predecessorOf(v1), undefined);
    recordPredecessor(v2, v1);
    assert.equal(predecessorOf(v2), v1);
    recordPredecessor(v3, v2);
    assert.equal(predecessorOf(v3), v2);
    assert.equal(predecessorOf(v2), undefined, "v1 is no longer reachable through v2");
  });

  it("sameFields compares strings, absent values and string arrays element by element", () => {
    const a = payload("a/b", "one two", { topics: ["x", "y"], packaged: null });
    assert.ok(sameFields(a, { ...a, stars: 99, topics: ["x", "y"] }, ["name", "description", "topics", "packaged"]));
    assert.ok(sameFields(a, { ...a, packaged: undefined }, ["packaged"]), "null and absent alike");
    assert.ok(!sameFields(a, { ...a, topics: ["x"] }, ["topics"]));
    assert.ok(!sameFields(a, { ...a, topics: ["y", "x"] }, ["topics"]));
    assert.ok(!sameFields(a, { ...a, description: "one  two" }, ["description"]));
    assert.ok(!sameFields(a, { ...a, description: null }, ["description"]));
    assert.ok(sameFields(a, { ...a, description: null }, ["name"]), "only the fields asked");
  });
});
