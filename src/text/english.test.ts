import assert from "node:assert/strict";
import { test } from "vitest";
import { isEnglishWord } from "./english.js";

test("common English words are known in any case; coined tool names are not", () => {
  for (const w of ["library", "Container", "QUERY", "terminal", "colour", "color"]) assert.ok(isEnglishWord(w), w);
  for (const w of ["pytest", "ffmpeg", "fzf", "kubernetes", "git", ""]) assert.ok(!isEnglishWord(w), w);
});
