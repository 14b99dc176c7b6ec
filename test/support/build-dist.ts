/**
 * vitest globalSetup: the production build, from nothing, before any test runs. The tests run from the
 * TypeScript sources, but the CLI they spawn (bin/reposearch.js), and the worker threads and child
 * processes the code starts (src/common/compiled-url.ts), load dist/. A fresh dist/ means a removed or
 * renamed source cannot leave a stale module behind to be run.
 *
 * It compiles into an empty folder beside dist/ and then swaps the two, so a process already running
 * from dist/ in the same checkout (a benchmark, a server) never sees a half-written tree.
 */
import { spawnSync } from "node:child_process";
import { renameSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export default function buildDist(): void {
  // Both projects list this setup; build once per vitest process.
  if (process.env.REPOSEARCH_TEST_DIST_BUILT === String(process.pid)) return;
  const t0 = performance.now();
  const dist = path.join(ROOT, "dist");
  const fresh = path.join(ROOT, `dist.build-${process.pid}`);
  const old = path.join(ROOT, `dist.old-${process.pid}`);
  rmSync(fresh, { recursive: true, force: true });
  const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const args = [tsc, "-p", "tsconfig.build.json", "--outDir", fresh, "--tsBuildInfoFile", path.join(fresh, ".tsbuildinfo")];
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0) {
    rmSync(fresh, { recursive: true, force: true });
    throw new Error(`the production build failed: tsc -p tsconfig.build.json exited with ${r.status ?? r.signal}`);
  }
  rmSync(old, { recursive: true, force: true });
  try {
    renameSync(dist, old);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  renameSync(fresh, dist);
  rmSync(old, { recursive: true, force: true });
  process.env.REPOSEARCH_TEST_DIST_BUILT = String(process.pid);
  console.log(`dist/ built from nothing in ${((performance.now() - t0) / 1000).toFixed(1)} s (tsc -p tsconfig.build.json)`);
}
