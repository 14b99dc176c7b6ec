/**
 * Two projects: `unit` (beside the code, no Postgres, Redis or dataset needed) and `integration`
 * (test/: real processes, servers, Postgres, Redis and slices of the dataset). `npm test` runs both,
 * unit first; `npm run test:unit` / `npm run test:integration` one. See docs/testing.md.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Every file in its own child process, as node --test did: native addons (better-sqlite3,
    // onnxruntime) and process-wide state (log sinks, signal handlers) stay per file.
    pool: "forks",
    // Two files at a time on this project's 2-core machines (the old runner's --test-concurrency=2).
    maxWorkers: 2,
    reporters: ["default"],
    // The core's start-up warm-up (src/core/warmup.ts) off: suites start dozens of cores on small
    // indexes, and only test/warmup.test.ts is about it.
    env: { WARMUP_QUERIES: "0" },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "bench/**/*.test.ts", "loadtest/**/*.test.ts"],
          globalSetup: ["test/support/build-dist.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/support/build-dist.ts"],
          // Suites build small real indexes with the real CLI in their hooks, and some tests load a
          // real stack for a while: minutes, not vitest's default of seconds.
          testTimeout: 300_000,
          hookTimeout: 600_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
