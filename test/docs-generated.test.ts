/**
 * The generated documentation: docs/configuration.md (from ENV_DOCS in src/config/config.ts) and
 * docs/benchmarks.md (from results/*.json) must equal what their generators produce now, every variable
 * of the configuration schema must be documented with a default that agrees with the schema, and the
 * benchmarks generator must survive missing, partial and unreadable result files.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "vitest";
import { BENCHMARKS_DOC, renderBenchmarksDoc } from "../bench/benchmarks-doc.js";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../bench/configuration-doc.js";
import { ENV_DOCS, ENV_SECTIONS, ENV_VARIABLES, envSchemaDefaults, projectRoot } from "../src/config/config.js";
import { knownEnvVars } from "./helpers.js";

const read = (rel: string) => readFileSync(path.join(projectRoot, rel), "utf8");

test("docs: every variable of the configuration schema is documented in ENV_DOCS, and nothing else is", () => {
  assert.deepEqual(new Set(ENV_VARIABLES), knownEnvVars(), "ENV_VARIABLES is the schema's key list (as test/helpers.ts reads it from the source)");
  const documented = Object.keys(ENV_DOCS);
  const undocumented = ENV_VARIABLES.filter((v) => !(v in ENV_DOCS));
  assert.deepEqual(undocumented, [], `variables without documentation in ENV_DOCS: ${undocumented.join(", ")}`);
  const extra = documented.filter((v) => !(ENV_VARIABLES as string[]).includes(v));
  assert.deepEqual(extra, [], `ENV_DOCS documents variables the schema does not read: ${extra.join(", ")}`);
  for (const v of ENV_VARIABLES) {
    const d = ENV_DOCS[v];
    assert.ok((ENV_SECTIONS as readonly string[]).includes(d.section), `${v}: unknown section ${d.section}`);
    assert.ok(d.default.trim() !== "", `${v}: empty default`);
    assert.ok(d.meaning.trim().length >= 8, `${v}: no meaning`);
    assert.ok(!/\n/.test(d.default + d.meaning), `${v}: documentation must be one line (it is a table cell)`);
  }
});

test("docs: each documented default agrees with the schema's default", () => {
  const defaults = envSchemaDefaults();
  for (const v of ENV_VARIABLES) {
    const schemaDefault = defaults[v];
    if (schemaDefault === null) continue; // no default in the schema: loadConfig derives one, or the setting stays off
    assert.ok(
      ENV_DOCS[v].default.startsWith(`\`${String(schemaDefault)}\``),
      `${v}: ENV_DOCS says the default is ${ENV_DOCS[v].default}, the schema says \`${String(schemaDefault)}\``,
    );
  }
});

test("docs: docs/configuration.md is generated from ENV_DOCS and up to date (npm run docs:config)", () => {
  const want = renderConfigurationDoc();
  assert.equal(read(CONFIGURATION_DOC), want, `${CONFIGURATION_DOC} is stale: run \`npm run docs:config\``);
  for (const v of ENV_VARIABLES) assert.equal(want.split(`| \`${v}\` |`).length, 2, `${v} appears exactly once in ${CONFIGURATION_DOC}`);
});

test("docs: docs/benchmarks.md is generated from results/*.json and up to date (npm run docs:benchmarks)", () => {
  const want = renderBenchmarksDoc(projectRoot);
  assert.equal(read(BENCHMARKS_DOC), want, `${BENCHMARKS_DOC} is stale against results/*.json: run \`npm run docs:benchmarks\``);
  for (const command of [
    "npm run eval",
    "npm run bench:index",
    "npm run bench:store",
    "npm run bench:search",
    "npm run loadtest",
    "npm run eval:classifier",
    "npm run eval:dedup",
  ]) {
    assert.ok(want.includes(`\`${command}`), `${BENCHMARKS_DOC} names the command ${command}`);
  }
});

test("docs: the benchmarks generator survives missing, partial and unreadable result files", () => {
  const root = mkdtempSync(path.join(tmpdir(), "reposearch-docs-"));
  try {
    // No results directory at all.
    const empty = renderBenchmarksDoc(root);
    assert.match(empty, /`results\/eval\.json` does not exist/);
    assert.match(empty, /`results\/dedup\.json` does not exist.*`npm run eval:dedup`/);

    mkdirSync(path.join(root, "results"));
    const write = (name: string, body: unknown) => writeFileSync(path.join(root, "results", name), typeof body === "string" ? body : JSON.stringify(body));
    write("eval.json", {
      benchmark: "eval",
      date: "2026-12-01T10:00:00.000Z",
      runs: [{ method: "ranker (default)", dev: { ndcg10: 0.2 } }, null, 3],
      headFramings: { "{q}": 0.859, "best {q}": 0.85, "open source {q}": "n/a" },
      headPlural: { queries: 903, asWritten: 0.855, plural: 0.8 },
      ranker: { crossValidation: { headPlural: { queries: 653, weight: 0, asWritten: 0.85, plural: 0.84 } } },
      tuning: { curve: [{}] },
      teacherSlice: null,
    });
    write("bench-index.json", { benchmark: "index" });
    write("bench-store.json", "{ not json");
    write("bench-search.json", { results: { "grpc core, rerank off": { p50: 1 }, "gateway overhead p50 ms (rest p50 − core p50)": 0.5 } });
    write("loadtest.json", { scenarios: [{}, { scenario: "load", total: { rps: 10 } }], targets: { p99: {} } });
    write("loadtest-other.json", []);
    write("classifier.json", { runs: { "rules-only": { parts: { all: {} } } } });
    write("eval-embedders.json", { full: [{}], slice: { rows: "no" } });
    write("dedup.json", { benchmark: "dedup" });
    const partial = renderBenchmarksDoc(root);
    assert.match(partial, /run on 2026-12-01/);
    assert.match(partial, /\| ranker \(default\) \| 0\.200 \| – \|/, "a run with missing metrics shows dashes");
    assert.match(partial, /`results\/bench-store\.json` is not valid JSON/);
    assert.match(partial, /`results\/loadtest-other\.json` does not hold a JSON object/);
    assert.match(partial, /the file records no run date/);
    assert.match(partial, /framed as agents write a request .*: as written 0\.859; “best …” 0\.850; “open source …” –\./);
    assert.match(
      partial,
      /Held out, the 653 head queries that ask for one thing: hit@3 0\.850 as written, 0\.840 with the head noun in the plural \(the ranker not trained on those variants;/,
    );
    assert.match(partial, /asking for many \("password managers"\): 903 queries: 0\.855 as written, 0\.800 with the head noun in the plural\./);
    assert.ok(!/undefined|NaN|\[object Object\]/.test(partial), "no undefined, NaN or [object Object] in the page");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
