import { test } from "vitest";
import assert from "node:assert/strict";
import { staticTokens } from "./static-tokenizer.js";

test("splits identifiers and keeps compounds whole", () => {
  assert.deepEqual(staticTokens("XMLParser"), ["xmlparser", "xml", "parser"]);
  assert.deepEqual(staticTokens("CLIs"), ["clis"]);
  assert.deepEqual(staticTokens("command-line"), ["command-line", "command", "line"]);
  assert.deepEqual(staticTokens("snake_case_name"), ["snake_case_name", "snake", "case", "name"]);
  assert.deepEqual(staticTokens("C++ and C#"), ["c++", "and", "c#"]);
});

test("CJK runs become character bigrams; long digit runs are dropped", () => {
  assert.deepEqual(staticTokens("数据库"), ["数据", "据库"]);
  assert.deepEqual(staticTokens("v2 1234567"), ["v2"]);
});
