import assert from "node:assert/strict";
import { describe, it, test } from "vitest";
import type { RepoPayload } from "../dataset/record.js";
import { analyze } from "../text/analyzer.js";
import { buildEvidence, evidenceMemoSize, groupThousands, TEXT_MEMO_MAX } from "./evidence.js";
import { applyFilterDefaults } from "./filters.js";
import { understandQuery } from "./query.js";

function payload(i: number, over: Partial<RepoPayload> = {}): RepoPayload {
  return {
    key: `owner${i}/cli-kit-${i}`,
    name: `owner${i}/cli-kit-${i}`,
    url: `https://github.com/owner${i}/cli-kit-${i}`,
    description: `A **Go** library for building command-line tools with [subcommands](https://example.com) (#${i})`,
    stars: 1500 + i,
    forks: 10,
    language: "Go",
    topics: ["cli", "command-line", "golang"],
    pushedAt: "2026-10-01T00:00:00.000Z",
    isArchived: false,
    homepage: null,
    license: null,
    createdAt: null,
    readme: "# cli-kit\n\nBuild terminal apps with nested subcommands and flags.",
    tree: null,
    llmsTxtPaths: null,
    lastSeen: null,
    languageLc: "go",
    category: "library",
    hash: `h${i}`,
    aliases: [],
    aliasKeys: [],
    anchor: null,
    mentions: 0,
    ...over,
  };
}

const evidence = (p: RepoPayload, query: string, semantic: number | null = 0.61) =>
  buildEvidence({ payload: p, queryTerms: new Set(analyze(query)), semantic, applied: applyFilterDefaults({}), understanding: understandQuery(query) });

describe("evidence", () => {
  it("names the matched words of name, topics and description, and quotes the description for a semantic match", () => {
    const ev = evidence(payload(1), "go library for command line subcommands");
    assert.equal(evidence(payload(2), "cli kit")[0], "Matched terms in name (cli, kit); topics (cli)");
    assert.equal(ev[0], "Matched terms in topics (command-line); description (go, library, subcommands)");
    assert.match(ev[1]!, /^Semantic match 0\.61 \(cosine\) .*: "A Go library for building command-line tools with subcommands \(#1\)"$/);
    assert.ok(ev.length <= 3);
  });

  it("says when the repository's language is the one the query names, or one that serves it", () => {
    const facts = (p: RepoPayload, query: string) => evidence(p, query).find((e) => e.startsWith("Facts:")) ?? "";
    assert.match(facts(payload(1), "go library for building clis"), /language Go \(named in the query\)/);
    const ts = payload(2, { language: "TypeScript", languageLc: "typescript" });
    assert.match(facts(ts, "javascript bundler"), /language TypeScript \(the query names javascript\)/);
    assert.doesNotMatch(facts(ts, "python bundler"), /language/);
    const ruff = payload(3, { language: "Rust", languageLc: "rust", description: "An extremely fast Python linter, written in Rust.", topics: ["linter"] });
    assert.match(facts(ruff, "python linter"), /language Rust, for python in its own words/);
    assert.doesNotMatch(facts(ruff, "go linter"), /language/);
  });

  it("answers the same from its per-repository memo as when the repository is new to it", () => {
    const queries = ["go library for command line subcommands", "terminal apps", "nested flags parser", "kubernetes operator"];
    for (let i = 0; i < 20; i++) {
      const p = payload(1000 + i, i % 4 === 0 ? { description: null } : i % 4 === 1 ? { topics: [] } : {});
      for (const q of queries) {
        const cold = evidence({ ...p }, q); // a copy: not in the memo yet
        assert.deepEqual(evidence(p, q), cold, `${p.key} / ${q}: first`);
        assert.deepEqual(evidence(p, q), cold, `${p.key} / ${q}: from the memo`);
      }
    }
  });

  it("keeps its memo bounded", () => {
    for (let i = 0; i < TEXT_MEMO_MAX + 50; i++) evidence(payload(10_000 + i), "cli", null);
    assert.ok(evidenceMemoSize() <= TEXT_MEMO_MAX, `memo holds ${evidenceMemoSize()}`);
  });
});

test("groupThousands writes what Intl.NumberFormat(en-US) writes", () => {
  const fmt = new Intl.NumberFormat("en-US");
  const cases = [0, 1, 12, 123, 999, 1_000, 12_345, 123_456, 1_234_567, 100_000, 1_000_000, -1, -1_234, -999_999, Number.MAX_SAFE_INTEGER, 2 ** 60, 1.5, -0];
  for (let i = 0; i < 2_000; i++) cases.push(Math.floor(Math.random() * 10 ** (1 + (i % 12))));
  for (const n of cases) assert.equal(groupThousands(n), fmt.format(n), String(n));
});

describe("evidence from other names and from the corpus", () => {
  it("names a former name the query used, and what only other repositories say about the project", () => {
    const p = payload(40, {
      name: "jqlang/jq",
      description: "Command-line JSON processor",
      topics: [],
      aliases: ["stedolan/jq"],
      aliasKeys: ["stedolan/jq"],
      anchor: "json shell filter pipelines",
      mentions: 1234,
    });
    const [line] = evidence(p, "stedolan jq for shell pipelines");
    assert.equal(line, "Matched terms in name (jq); former name stedolan/jq; how 1,234 other repositories describe it (shell, pipelines)");
  });

  it("names what only the project's Debian package says, and shows words without a sentence's full stop", () => {
    const p = payload(41, {
      name: "git/git",
      description: "Git Source Code Mirror - This is a publish-only repository.",
      topics: [],
      anchor: "version",
      mentions: 1113,
      packaged: "fast, scalable, distributed revision control system. Git is popular version control system.",
    });
    const [line] = evidence(p, "distributed version control system for node.js");
    assert.equal(line, "Matched terms in how 1,113 other repositories describe it (version); its Debian package description (distributed, control, system)");
    const [desc] = evidence(payload(42, { description: "A tool for node.js." }), "node.js tool");
    assert.match(desc!, /description \(tool, node\.js\)/);
  });
});
