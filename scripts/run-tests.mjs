#!/usr/bin/env node
// Runs every compiled test file (dist/**/*.test.js) with node's built-in test runner.
// Usage: node scripts/run-tests.mjs [substring filter ...]
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith(".test.js")) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk("dist")
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error("no test files found under dist/ (did the build run?)");
  process.exit(1);
}
const res = spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...files], { stdio: "inherit" });
process.exit(res.status ?? 1);
