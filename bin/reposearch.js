#!/usr/bin/env node
// Thin launcher: the CLI is compiled from src/cli by `npm run build` (run by `npm ci` through `prepare`).
import { main } from "../dist/src/cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
