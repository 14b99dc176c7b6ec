import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "vitest";
import { normalizePointId } from "./filter.js";

/** The spellings Qdrant accepts, normalised by the regular expressions alone (no fast path). */
function byDefinition(id: string): string {
  const hex = id.replace(/^urn:uuid:/i, "").replace(/^\{(.*)\}$/, "$1");
  const m = /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/i.exec(hex);
  return m === null ? id : `${m[1]}-${m[2]}-${m[3]}-${m[4]}-${m[5]}`.toLowerCase();
}

describe("normalizePointId", () => {
  it("gives every spelling of a UUID one canonical form, and leaves other ids alone", () => {
    const canonical = "0f8fad5b-d9cb-469f-a165-70867728950e";
    for (const spelling of [
      canonical,
      canonical.toUpperCase(),
      canonical.replaceAll("-", ""),
      `{${canonical}}`,
      `urn:uuid:${canonical}`,
      `URN:UUID:{${canonical.toUpperCase()}}`,
    ])
      assert.equal(normalizePointId(spelling), canonical, spelling);
    for (const other of [
      "42",
      "owner/repo",
      "0f8fad5b-d9cb-469f-a165-70867728950",
      "0f8fad5b-d9cb-469f-a165-70867728950g",
      "0f8fad5bd-9cb-469f-a165-70867728950e",
    ])
      assert.equal(normalizePointId(other), other);
  });

  it("the canonical-form shortcut agrees with the definition on random ids and near misses", () => {
    const rand = (n: number) => Math.floor(Math.random() * n);
    for (let i = 0; i < 5_000; i++) {
      let id: string = randomUUID();
      if (i % 2) {
        // A near miss: one character changed, upper-cased, moved or dropped.
        const at = rand(id.length);
        const pick = rand(4);
        const c = id[at]!;
        id =
          pick === 0
            ? id.slice(0, at) + "ghx-Z{"[rand(6)]! + id.slice(at + 1)
            : pick === 1
              ? id.slice(0, at) + c.toUpperCase() + id.slice(at + 1)
              : pick === 2
                ? id.slice(0, at) + id.slice(at + 1) + c
                : id.slice(0, at) + id.slice(at + 1);
      }
      assert.equal(normalizePointId(id), byDefinition(id), id);
    }
  });
});
