/**
 * The layering rules of src/, checked on the imports as written (production files; tests may reach
 * anything they test):
 *   1. a folder imports only folders on a lower layer (LAYERS), or itself;
 *   2. outside src/store/embedded/, the embedded store is used through its face, index.ts;
 *   3. no import cycles between files.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "vitest";

const SRC = path.dirname(fileURLToPath(import.meta.url));

/** Each top-level folder of src/ and its layer; a folder may import folders of lower layers only. */
const LAYERS: Record<string, number> = {
  common: 0,
  config: 1,
  dataset: 1,
  text: 1,
  gen: 1,
  client: 1,
  corpus: 2,
  contract: 2,
  embed: 3,
  classify: 4,
  store: 5,
  indexer: 6,
  core: 6,
  mcp: 6,
  eval: 7,
  gateway: 7,
  server: 8,
  cli: 9,
};

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, out);
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** File → the src files it imports (".js" specifiers name their ".ts" sources). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    const targets: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2]!;
      const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, ".ts");
      if (target.startsWith(SRC + path.sep) && target.endsWith(".ts")) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

const rel = (f: string) => path.relative(SRC, f);
const folderOf = (f: string) => rel(f).split(path.sep)[0]!;

type Graph = ReadonlyMap<string, readonly string[]>;

function layerViolations(graph: Graph): string[] {
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (from.endsWith(".ts")) continue;
    for (const t of targets) {
      const to = folderOf(t);
      if (to !== from && !(LAYERS[to]! < LAYERS[from]!)) bad.push(`${rel(file)} → ${rel(t)} (${from} ${LAYERS[from]} → ${to} ${LAYERS[to]})`);
    }
  }
  return bad;
}

function embeddedViolations(graph: Graph): string[] {
  const embedded = path.join(SRC, "store", "embedded") + path.sep;
  const face = path.join(embedded, "index.ts");
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    if (file.startsWith(embedded)) continue;
    for (const t of targets) if (t.startsWith(embedded) && t !== face) bad.push(`${rel(file)} → ${rel(t)}`);
  }
  return bad;
}

/** Tarjan's strongly connected components: every component of more than one file is a cycle. */
function cycles(graph: Graph): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(rel(w));
      } while (w !== v);
      if (comp.length > 1) found.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

test("every folder of src/ has a layer", () => {
  const folders = new Set([...importGraph().keys()].map(folderOf).filter((f) => !f.endsWith(".ts")));
  assert.deepEqual(
    [...folders].filter((f) => !(f in LAYERS)),
    [],
  );
});

test("imports go down the layers, never up or across", () => {
  assert.deepEqual(layerViolations(importGraph()), []);
});

test("the embedded store's internals are used only through src/store/embedded/index.ts", () => {
  assert.deepEqual(embeddedViolations(importGraph()), []);
});

test("no import cycles between files", () => {
  assert.deepEqual(cycles(importGraph()), []);
});

test("the checks catch what they forbid (a made-up graph)", () => {
  const f = (p: string) => path.join(SRC, p);
  const graph: Graph = new Map([
    [f("store/types.ts"), [f("core/engine.ts")]], // up
    [f("core/engine.ts"), [f("store/embedded/lexical.ts"), f("store/embedded/index.ts")]], // an internal, and the face
    [f("cli/a.ts"), [f("cli/b.ts")]],
    [f("cli/b.ts"), [f("cli/a.ts")]], // a cycle
  ]);
  assert.deepEqual(layerViolations(graph), ["store/types.ts → core/engine.ts (store 5 → core 6)"]);
  assert.deepEqual(embeddedViolations(graph), ["core/engine.ts → store/embedded/lexical.ts"]);
  assert.deepEqual(cycles(graph), [["cli/a.ts", "cli/b.ts"]]);
});
