import { test } from "vitest";
import assert from "node:assert/strict";
import { rec } from "../../test/support/test-records.js";
import { embeddingText, packageSpeaksFor } from "./doc-text.js";

const SQLITE = "SQLite is a C library that implements an SQL database engine";

test("a package description speaks for a project without a description or with a mirror notice, never beside its own words", () => {
  assert.equal(packageSpeaksFor(null, SQLITE), true);
  assert.equal(packageSpeaksFor("", SQLITE), true);
  assert.equal(packageSpeaksFor("Official Git mirror of the SQLite source tree", SQLITE), true);
  assert.equal(packageSpeaksFor("Read-only mirror of https://gitlab.gnome.org/GNOME/gimp", "GNU Image Manipulation Program"), true);
  assert.equal(packageSpeaksFor("Git Source Code Mirror - This is a publish-only repository", "fast, scalable, distributed revision control system"), true);
  assert.equal(packageSpeaksFor("A terminal multiplexer", "terminal multiplexer. tmux enables a number of terminals"), false);
  assert.equal(packageSpeaksFor(null, null), false);
  assert.equal(packageSpeaksFor("Official Git mirror of the SQLite source tree", undefined), false);
});

test("the embedded text holds the package description where it speaks for the project, after the topics", () => {
  const mirror = rec("sqlite/sqlite", "Official Git mirror of the SQLite source tree", { topics: ["sqlite"] });
  assert.equal(embeddingText(mirror, { packaged: SQLITE }), `sqlite. Official Git mirror of the SQLite source tree. sqlite. ${SQLITE}`);
  assert.equal(embeddingText(mirror), "sqlite. Official Git mirror of the SQLite source tree. sqlite");
  const own = rec("tmux/tmux", "tmux source code", { readme: "# tmux\n\ntmux is a terminal multiplexer" });
  assert.equal(embeddingText(own, { packaged: "terminal multiplexer" }), embeddingText(own));
  assert.equal(
    embeddingText(rec("lua/lua", null), { packaged: "Simple, extensible, embeddable programming language" }),
    "lua. Simple, extensible, embeddable programming language",
  );
});
