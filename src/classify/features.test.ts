import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { featuresOf, splitName, tokenize } from "./features.js";
import { rec } from "../../test/support/test-records.js";

describe("features", () => {
  it("splits repository names into words", () => {
    assert.equal(splitName("AwesomeVue_kit"), "awesome vue kit");
    assert.equal(splitName("build-your-own-x"), "build your own x");
    assert.equal(splitName("telescope.nvim"), "telescope nvim");
    assert.equal(splitName("HTMLParser"), "html parser");
  });

  it("tokenizes on punctuation but keeps language names with symbols", () => {
    assert.deepEqual(tokenize("A Node.js CLI for C++ and C# (command-line)"), ["a", "node", "js", "cli", "for", "c++", "and", "c#", "command", "line"]);
    assert.deepEqual(tokenize("Bibliothèque d'outils"), ["bibliothèque", "d", "outils"]);
    assert.deepEqual(tokenize(""), []);
  });

  it("builds every view once, from name, description, topics and the README lead", () => {
    const f = featuresOf(
      rec("Someone/awesome-Go", "  A curated list :star: of Go   things ", {
        topics: ["awesome-list", "go"],
        language: "Go",
        readme: "# Awesome Go\n\n[![badge](https://x/y.svg)](https://x) A list of [links](https://example.com).\n```sh\nignored code\n```",
      }),
    );
    assert.equal(f.repo, "awesome-Go");
    assert.equal(f.desc, "a curated list of go things");
    assert.deepEqual(f.nameTokens, ["awesome", "go"]);
    assert.deepEqual(f.topicPhrases, ["awesome list", "go"]);
    assert.equal(f.lang, "go");
    assert.match(f.readme, /a list of links/);
    assert.doesNotMatch(f.readme, /ignored code|https/);
  });
});
