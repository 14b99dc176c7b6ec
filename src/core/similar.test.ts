import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { payload } from "../../test/support/test-records.js";
import { seedText } from "./similar.js";

describe("seedText: what a repository is, as lexical query text", () => {
  it("topics and description, without the words of its own names (current and former)", () => {
    const p = payload("pallets/flask", "The Python micro framework for building web applications with Flask.", {
      topics: ["flask", "python", "web-framework", "wsgi"],
      aliases: ["mitsuhiko/flask"],
    });
    // Stop words go too: they match everything.
    assert.equal(seedText(p), "python web framework wsgi Python micro framework building web applications");
  });

  it("falls back to the README's opening (markup stripped), then to the name", () => {
    const readme = payload("acme/zapdb", null, { readme: "# ZapDB\n\n**ZapDB** is an *embedded* key-value store. ![badge](https://x/y.svg)" });
    assert.equal(seedText(readme), "*embedded* key-value store.");
    assert.equal(seedText(payload("acme/zap-db", null)), "zap db");
  });

  it("is capped, so a long description costs the lexical index a bounded query", () => {
    const p = payload("acme/long", "word ".repeat(400).trim());
    assert.ok(seedText(p).length <= 600);
  });
});
