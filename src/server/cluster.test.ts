import assert from "node:assert/strict";
import { test } from "vitest";
import { workerExecArgv } from "./cluster.js";

test("workers get --max-semi-space-size from SERVE_SEMI_SPACE_MB, after the primary's own flags", () => {
  assert.deepEqual(workerExecArgv(["--enable-source-maps"], undefined, 64), ["--enable-source-maps", "--max-semi-space-size=64"]);
  assert.deepEqual(workerExecArgv([], "", 32), ["--max-semi-space-size=32"]);
});

test("an explicit semi-space flag wins, in the primary's flags or in NODE_OPTIONS; 0 adds nothing", () => {
  const own = ["--max-semi-space-size=8"];
  assert.equal(workerExecArgv(own, undefined, 64), own);
  assert.equal(workerExecArgv(["--max_semi_space_size=8"], undefined, 64).length, 1);
  const none: string[] = [];
  assert.equal(workerExecArgv(none, "--max-old-space-size=4096 --max-semi-space-size=16", 64), none);
  assert.equal(workerExecArgv(none, undefined, 0), none);
});
