/**
 * Where a module's compiled sibling lives, for `new Worker(…)` and child processes, which load plain
 * JavaScript. Compiled code (dist/) gets `new URL(specifier, base)` unchanged. Code that runs from its
 * TypeScript source (the tests: vitest transforms the .ts files in process) gets the same file in the
 * compiled tree instead, `<root>/dist/<path from root>`, which `npm test` builds from a clean state
 * first (test/support/build-dist.ts).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export function compiledModuleUrl(specifier: string, base: string | URL): URL {
  const url = new URL(specifier, base);
  if (!String(base).endsWith(".ts")) return url;
  let root = path.dirname(fileURLToPath(base));
  while (!existsSync(path.join(root, "package.json"))) {
    const parent = path.dirname(root);
    if (parent === root) return url;
    root = parent;
  }
  return pathToFileURL(path.join(root, "dist", path.relative(root, fileURLToPath(url))));
}
