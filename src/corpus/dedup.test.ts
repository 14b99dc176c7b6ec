import assert from "node:assert/strict";
import { test } from "vitest";
import { rec } from "../../test/support/test-records.js";
import type { RepoRecord } from "../dataset/record.js";
import { dedupeProjects, descriptionWords, genericReason, movedHome, ownerRenamed, renamedInPlace, sameBirth, succeeded, twins } from "./dedup.js";

/** Whatever the input order, `newer` is the one project and `older` its alias. */
function assertJoined(older: RepoRecord, newer: RepoRecord): void {
  for (const order of [
    [older, newer],
    [newer, older],
  ]) {
    const d = dedupeProjects(order);
    assert.deepEqual(
      d.records.map((r) => r.key),
      [newer.key],
    );
    assert.deepEqual(d.records[0]!.aliases, [older.name]);
  }
}

const react = (name: string, extra: Partial<RepoRecord>) => rec(name, "The library for web and native user interfaces.", extra);

test("merges a renamed project into its newest record, which keeps the others as aliases", () => {
  const records = [
    react("facebook/react", {
      stars: 245_669,
      lastSeen: "2026-06-09T00:00:00.000Z",
      pushedAt: "2026-06-07T00:00:00.000Z",
      topics: ["ui", "javascript"],
      license: "MIT",
    }),
    react("react/react", { stars: 247_495, lastSeen: "2026-08-22T00:00:00.000Z", pushedAt: "2026-08-21T00:00:00.000Z" }),
    rec("vuejs/vue", "Progressive framework", { stars: 200_000 }),
  ];
  const d = dedupeProjects(records);
  assert.deepEqual(
    d.records.map((r) => r.key),
    ["react/react", "vuejs/vue"],
  );
  const canonical = d.records[0]!;
  assert.deepEqual(canonical.aliases, ["facebook/react"]);
  assert.equal(canonical.stars, 247_495, "the newest record's stars");
  assert.equal(canonical.pushedAt, "2026-08-21T00:00:00.000Z");
  // What only the alias knew fills the canonical record's gaps.
  assert.deepEqual(canonical.topics, ["ui", "javascript"]);
  assert.equal(canonical.license, "MIT");
  assert.equal(d.aliasOf.get("facebook/react"), "react/react");
  assert.deepEqual([d.groups, d.merged], [1, 1]);
});

test("descriptions compare by words, case-insensitively; repository parts must match", () => {
  const d = dedupeProjects([
    rec("stedolan/jq", "Command-line JSON processor", { stars: 24_969, lastSeen: "2023-05-28T00:00:00.000Z" }),
    rec("jqlang/jq", "Command-line JSON processor.", { stars: 35_467, lastSeen: "2026-08-22T00:00:00.000Z" }),
    rec("someone/jq-clone", "Command-line JSON processor", { stars: 5 }),
  ]);
  assert.deepEqual(
    d.records.map((r) => [r.key, r.aliases]),
    [
      ["jqlang/jq", ["stedolan/jq"]],
      ["someone/jq-clone", []],
    ],
  );
});

test("the newest record wins by lastSeen, then pushedAt, then stars; ties break by key", () => {
  const d = dedupeProjects([
    rec("a/tool", "Does the thing well", { stars: 10, lastSeen: "2026-01-01T00:00:00.000Z", pushedAt: "2025-01-01T00:00:00.000Z" }),
    rec("b/tool", "Does the thing well", { stars: 5, lastSeen: "2026-01-01T00:00:00.000Z", pushedAt: "2026-01-01T00:00:00.000Z" }),
    rec("c/tool", "Does the thing well", { stars: 20, lastSeen: "2025-01-01T00:00:00.000Z", pushedAt: null }),
  ]);
  assert.deepEqual(
    d.records.map((r) => [r.key, r.aliases, r.stars]),
    [["b/tool", ["a/tool", "c/tool"], 5]],
  );
});

test("a record with under a fifth of the group's most stars never stands for the project", () => {
  const d = dedupeProjects([
    rec("go-delve/delve", "Delve is a debugger for the Go programming language.", { stars: 24_793, lastSeen: "2026-06-24T00:00:00.000Z" }),
    rec("derekparker/delve", "Delve is a debugger for the Go programming language.", { stars: 661, lastSeen: "2026-08-21T00:00:00.000Z" }),
  ]);
  assert.deepEqual(
    d.records.map((r) => [r.key, r.aliases]),
    [["go-delve/delve", ["derekparker/delve"]]],
  );
});

test("generic groups are left alone: personal, large, or short descriptions on common or unstarred names", () => {
  const many = (repo: string, description: string, n: number, stars = 1000) =>
    Array.from({ length: n }, (_, i) => rec(`u${i}/${repo}`, description, { stars }));
  const records = [
    ...many("ama", "Ask me anything!", 12),
    ...many("dotfiles", "My dotfiles", 2),
    ...many("leetcode", "Leetcode solutions", 2),
    // Other repositories' descriptions make both words common (a short description with a rare word names something).
    ...Array.from({ length: 25 }, (_, i) => rec(`w${i}/solutions-${i}`, `LeetCode solutions in language ${i}`, { stars: 10 })),
    ...many("leetcode", "other text " + "x", 9).map((r, i) => ({ ...r, key: `v${i}/leetcode`, name: `v${i}/leetcode`, description: `solutions number ${i}` })),
    ...many("ld34", "Ludum Dare 34", 2, 3),
  ];
  const d = dedupeProjects(records);
  assert.equal(d.merged, 0);
  assert.equal(d.records.length, records.length);
  assert.equal(d.skippedGeneric, 4);
});

test("a short description with a rare word is one project even on a common name", () => {
  const holders = Array.from({ length: 10 }, (_, i) => rec(`x${i}/anchor`, `An anchor of kind ${i}`, { stars: 500 }));
  const d = dedupeProjects([
    ...holders,
    rec("project-serum/anchor", "Solana Sealevel Framework", { stars: 2156, lastSeen: "2022-06-15T00:00:00.000Z" }),
    rec("coral-xyz/anchor", "⚓ Solana Sealevel Framework", { stars: 3855, lastSeen: "2025-03-27T00:00:00.000Z" }),
  ]);
  assert.deepEqual(d.aliasOf.get("project-serum/anchor"), "coral-xyz/anchor");
  assert.equal(d.skippedGeneric, 0);
});

test("genericReason names why a look-alike group is left apart, and null for one project", () => {
  const stars = (...s: number[]) => s.map((n) => ({ stars: n }));
  const w = descriptionWords;
  const common = () => 1000;
  const rare = (word: string) => (word === "sealevel" ? 4 : 1000);
  assert.equal(genericReason(stars(...Array<number>(9).fill(5000)), w("Ask me anything about this project"), 9, common), "large group");
  assert.equal(genericReason(stars(5000, 10), w("My dotfiles for vim and zsh"), 2, common), "personal description");
  assert.equal(genericReason(stars(5000, 10), w("Leetcode solutions"), 10, common), "short description on a common name");
  assert.equal(genericReason(stars(5000, 10), w("Solana Sealevel Framework"), 11, rare), null);
  assert.equal(genericReason(stars(99, 10), w("Delphi Cryptography Library"), 2, common), "short description on little-starred records");
  assert.equal(genericReason(stars(99, 10), w("Solana Sealevel Framework"), 2, rare), "short description on little-starred records");
  assert.equal(genericReason(stars(100, 10), w("Delphi Cryptography Library"), 2, common), null);
  assert.equal(genericReason(stars(5000, 10), w("The library for web and native user interfaces."), 30, common), null);
});

test("the result does not depend on the order of the records", () => {
  const records = [
    rec("old/caffe", "Caffe: a fast open framework for deep learning.", { stars: 100, lastSeen: "2020-01-01T00:00:00.000Z" }),
    rec("BVLC/caffe", "Caffe: a fast open framework for deep learning.", { stars: 34_560, lastSeen: "2026-08-21T00:00:00.000Z" }),
    rec("fork/caffe", "Caffe: a fast open framework for deep learning.", { stars: 106, lastSeen: "2026-08-21T00:00:00.000Z" }),
  ];
  const a = dedupeProjects(records);
  const b = dedupeProjects([...records].reverse());
  assert.deepEqual(a.records, b.records);
  assert.deepEqual(a.records[0]!.aliases, ["fork/caffe", "old/caffe"]);
});

test("tier 2: a renamed project whose description was edited since joins its new name once the old one went stale", () => {
  const d = dedupeProjects([
    rec("charliermarsh/ruff", "An extremely fast Python linter, written in Rust.", { stars: 15_304, lastSeen: "2023-06-08T00:00:00.000Z" }),
    rec("astral-sh/ruff", "An extremely fast Python linter and code formatter, written in Rust.", { stars: 49_267, lastSeen: "2026-08-22T00:00:00.000Z" }),
  ]);
  assert.deepEqual(
    d.records.map((r) => [r.key, r.aliases]),
    [["astral-sh/ruff", ["charliermarsh/ruff"]]],
  );
  assert.equal(d.aliasOf.get("charliermarsh/ruff"), "astral-sh/ruff");
});

test("tier 2 leaves alone: two living repositories, new words that are not a superset, and too few words", () => {
  const d = dedupeProjects([
    // Both seen in the same crawl: a fork with a life of its own.
    rec("coolwanglu/pdf2htmlEX", "Convert PDF to HTML without losing text or format.", { stars: 10_602, lastSeen: "2026-08-22T00:00:00.000Z" }),
    rec("ricn/pdf2htmlex", "Convert PDF docs to beautiful HTML files without losing text or format.", { stars: 91, lastSeen: "2026-08-21T00:00:00.000Z" }),
    // Stale, but the old description has a word the new one lacks.
    rec("old/grid", "A fast grid library for Vue", { lastSeen: "2022-01-01T00:00:00.000Z" }),
    rec("new/grid", "A fast data grid library for React", { lastSeen: "2026-01-01T00:00:00.000Z" }),
    // Stale and contained, but only three words.
    rec("old/notes", "Simple notes app", { lastSeen: "2022-01-01T00:00:00.000Z" }),
    rec("new/notes", "Simple notes app for your phone", { lastSeen: "2026-01-01T00:00:00.000Z" }),
  ]);
  assert.equal(d.merged, 0, JSON.stringify([...d.aliasOf]));
});

test("tier 2 joins a tier-1 group to a newer name, and chains of renames end at the newest", () => {
  const d = dedupeProjects([
    rec("a/tool", "Fast tool for doing things", { stars: 100, lastSeen: "2020-01-01T00:00:00.000Z" }),
    rec("A2/tool", "Fast tool for doing things", { stars: 90, lastSeen: "2019-01-01T00:00:00.000Z" }),
    rec("b/tool", "Fast tool for doing things well", { stars: 300, lastSeen: "2023-01-01T00:00:00.000Z" }),
    rec("c/tool", "The fast tool for doing things well", { stars: 900, lastSeen: "2026-01-01T00:00:00.000Z" }),
  ]);
  assert.deepEqual(
    d.records.map((r) => [r.key, [...r.aliases].sort()]),
    [["c/tool", ["A2/tool", "a/tool", "b/tool"]]],
  );
});

test("tier 3: an incubating name joins the graduated one of the same owner, whatever its description", () => {
  const records = [
    rec("apache/incubator-doris", "Apache Doris (Incubating)", { stars: 3_240, lastSeen: "2021-05-01T00:00:00.000Z" }),
    rec("apache/doris", "Apache Doris is a real-time analytics database", { stars: 15_800, lastSeen: "2026-08-22T00:00:00.000Z" }),
    // Another owner's graduated name is another project.
    rec("someone/incubator-kit", "Tools for an incubator programme", { stars: 10 }),
    rec("other/kit", "A kit", { stars: 10 }),
  ];
  for (const order of [records, [...records].reverse()]) {
    const d = dedupeProjects(order);
    assert.deepEqual(d.records.map((r) => r.key).sort(), ["apache/doris", "other/kit", "someone/incubator-kit"]);
    assert.deepEqual(d.records.find((r) => r.key === "apache/doris")!.aliases, ["apache/incubator-doris"]);
    assert.equal(d.aliasOf.get("apache/incubator-doris"), "apache/doris");
  }
});

test("tier 3 joins whole groups: an incubating name with its own old copies lands in the graduated group", () => {
  const d = dedupeProjects([
    rec("apache/incubator-superset", "Apache Superset is a Data Visualization and Data Exploration Platform", {
      stars: 31_732,
      lastSeen: "2019-01-01T00:00:00.000Z",
    }),
    rec("airbnb/incubator-superset", "Apache Superset is a Data Visualization and Data Exploration Platform", {
      stars: 20_000,
      lastSeen: "2018-01-01T00:00:00.000Z",
    }),
    rec("apache/superset", "Apache Superset is a Data Visualization and Data Exploration Platform", { stars: 74_368, lastSeen: "2026-08-22T00:00:00.000Z" }),
  ]);
  assert.deepEqual(
    d.records.map((r) => r.key),
    ["apache/superset"],
  );
  assert.deepEqual([...d.records[0]!.aliases].sort(), ["airbnb/incubator-superset", "apache/incubator-superset"]);
  assert.equal(d.groups, 1);
});

test("tier 4: a transfer seen under both names joins by its stars and forks, though its description was edited", () => {
  const records = [
    rec("square/okhttp", "Square’s meticulous HTTP client for the JVM, Android, and GraalVM.", {
      stars: 46_998,
      forks: 9_277,
      lastSeen: "2026-07-16T00:00:00.000Z",
    }),
    rec("lysine-dev/okhttp", "A meticulous HTTP client for the JVM, Android, and GraalVM.", {
      stars: 47_048,
      forks: 9_295,
      lastSeen: "2026-08-22T00:00:00.000Z",
    }),
    // An empty description does not keep two names with the same counts apart.
    rec("microsoft/TaskMatrix", null, { stars: 34_259, forks: 3_354, lastSeen: "2023-11-06T00:00:00.000Z" }),
    rec("chenfei-wu/TaskMatrix", null, { stars: 34_008, forks: 3_311, lastSeen: "2026-08-21T00:00:00.000Z" }),
  ];
  for (const order of [records, [...records].reverse()]) {
    const d = dedupeProjects(order);
    assert.deepEqual(d.records.map((r) => r.key).sort(), ["chenfei-wu/taskmatrix", "lysine-dev/okhttp"]);
    assert.equal(d.aliasOf.get("square/okhttp"), "lysine-dev/okhttp");
    assert.equal(d.aliasOf.get("microsoft/taskmatrix"), "chenfei-wu/taskmatrix");
    assert.equal(d.merged, 2);
  }
});

test("tier 4 leaves alone: counts apart by more than 2 %, unknown forks, few stars, other names and other descriptions", () => {
  const base = { stars: 20_000, forks: 3_000, lastSeen: "2026-08-22T00:00:00.000Z" };
  const pairs: [RepoRecord, RepoRecord][] = [
    [rec("a/tool", "A fast tool for builds", base), rec("b/tool", "A fast tool for builds and tests", { ...base, stars: 20_500 })],
    [rec("a/tool", "A fast tool for builds", base), rec("b/tool", "A fast tool for builds and tests", { ...base, forks: 3_100 })],
    [rec("a/tool", "A fast tool for builds", base), rec("b/tool", "A fast tool for builds and tests", { ...base, forks: null })],
    [
      rec("a/tool", "A fast tool for builds", { ...base, stars: 400, forks: 40 }),
      rec("b/tool", "A fast tool for builds and tests", { ...base, stars: 401, forks: 40 }),
    ],
    [rec("a/tool", "A fast tool for builds", base), rec("b/other", "A fast tool for builds and tests", base)],
    [
      rec("a/blender-mcp", "Community plugin to control Blender 3D with any LLM", base),
      rec("b/blender-mcp", "Control Blender with Claude: prompt-driven modelling", base),
    ],
  ];
  for (const [x, y] of pairs) {
    assert.equal(
      twins(x, y),
      false,
      `${x.name} ${JSON.stringify([x.stars, x.forks, x.description])} / ${y.name} ${JSON.stringify([y.stars, y.forks, y.description])}`,
    );
    assert.equal(dedupeProjects([x, y]).merged, 0);
  }
  assert.equal(twins(pairs[0]![0], { ...pairs[0]![1], stars: 20_400 }), true, "2 % of the larger count is still close");
});

test("tier 4 joins whole groups: a chain of renames ends at the newest name", () => {
  const d = dedupeProjects([
    rec("nrk/predis", "Flexible and feature-complete Redis client for PHP and HHVM", { stars: 6_443, forks: 840, lastSeen: "2020-08-12T00:00:00.000Z" }),
    rec("predishq/predis", "A flexible and feature-complete Redis client for PHP.", { stars: 6_455, forks: 842, lastSeen: "2020-08-14T00:00:00.000Z" }),
    rec("predis/predis", "A flexible and feature-complete Redis client for PHP.", { stars: 7_780, forks: 1_024, lastSeen: "2026-08-21T00:00:00.000Z" }),
  ]);
  assert.deepEqual(
    d.records.map((r) => r.key),
    ["predis/predis"],
  );
  assert.deepEqual([...d.records[0]!.aliases].sort(), ["nrk/predis", "predishq/predis"]);
  assert.equal(d.groups, 1);
});

test("tier 5 joins a transfer by its creation time, whatever its counts and description did since", () => {
  const born = "2026-04-05T01:12:07.000Z";
  const records = [
    rec("milla-jovovich/mempalace", "The highest-scoring AI memory system ever benchmarked. And it's free.", {
      stars: 40_257,
      forks: 5_077,
      createdAt: born,
      lastSeen: "2026-04-11T00:00:00.000Z",
    }),
    rec("MemPalace/mempalace", "The best-benchmarked open-source AI memory system. And it's free.", {
      stars: 58_538,
      forks: 7_507,
      createdAt: born,
      lastSeen: "2026-08-22T00:00:00.000Z",
    }),
  ];
  for (const order of [records, [...records].reverse()]) {
    const d = dedupeProjects(order);
    assert.deepEqual(
      d.records.map((r) => r.key),
      ["mempalace/mempalace"],
    );
    assert.deepEqual(d.records[0]!.aliases, ["milla-jovovich/mempalace"]);
    assert.equal(d.records[0]!.stars, 58_538);
  }
  assert.equal(sameBirth(records[0]!, records[1]!), true);
  assert.equal(dedupeProjects(records, { tiers: 4 }).merged, 0, "the counts moved too far for tier 4");
});

test("tier 5 leaves alone: another second, a date-only creation time, an unknown one and another repository name", () => {
  const at = (name: string, createdAt: string | null, description = "An AI memory system") => rec(name, description, { stars: 1_000, createdAt });
  const pairs: [RepoRecord, RepoRecord][] = [
    [at("a/mem", "2026-04-05T01:12:07.000Z"), at("b/mem", "2026-04-05T01:12:08.000Z", "Memory for agents")],
    // date-only sources write midnight: every repository created that day would share it
    [at("a/mem", "2026-04-05T00:00:00.000Z"), at("b/mem", "2026-04-05T00:00:00.000Z", "Memory for agents")],
    [at("a/mem", null), at("b/mem", null, "Memory for agents")],
    [at("a/mem", "2026-04-05T01:12:07.000Z"), at("a/other", "2026-04-05T01:12:07.000Z", "Memory for agents")],
  ];
  for (const [x, y] of pairs) {
    assert.equal(sameBirth(x, y), false, `${x.name} ${x.createdAt} / ${y.name} ${y.createdAt}`);
    assert.equal(dedupeProjects([x, y]).merged, 0);
  }
});

/** A record as a crawl saw it: counts, language and the day it was last listed. */
const seen = (name: string, description: string, stars: number, forks: number | null, language: string | null, lastSeen: string) =>
  rec(name, description, { stars, forks, language, lastSeen: `${lastSeen}T00:00:00.000Z` });
const nvmOld = seen(
  "creationix/nvm",
  "Node Version Manager - Simple bash script to manage multiple active node.js versions",
  34_245,
  3_230,
  "Shell",
  "2019-04-24",
);
const nvmNew = seen(
  "nvm-sh/nvm",
  "Node Version Manager - POSIX-compliant bash script to manage multiple active node.js versions",
  94_675,
  10_386,
  "Shell",
  "2026-08-22",
);

test("tier 6 joins a name gone stale to the organisation named after the project", () => {
  assertJoined(nvmOld, nvmNew);
  assert.equal(dedupeProjects([nvmOld, nvmNew], { tiers: 5 }).merged, 0, "the description changed and the counts moved: no earlier tier joins them");
  // a project rewritten in TypeScript on the way keeps its identity
  const umamiOld = seen(
    "mikecao/umami",
    "Umami is a simple, fast, privacy-focused alternative to Google Analytics.",
    11_712,
    1_607,
    "JavaScript",
    "2022-06-14",
  );
  const umamiNew = seen(
    "umami-software/umami",
    "Umami is a privacy-first analytics platform, a Google Analytics alternative.",
    38_291,
    7_363,
    "TypeScript",
    "2026-08-21",
  );
  assert.equal(movedHome(umamiOld, umamiNew), true);
  assert.equal(movedHome(umamiNew, umamiOld), false, "the newer name is the one that stays");
  // a rewritten description meets the old one's words in another form ("testing UI components", "component dev & test")
  const storybookOld = seen(
    "storybooks/storybook",
    "UI component dev & test: React, Vue, Angular, React Native, Ember, Web Components & more!",
    38_241,
    3_092,
    "JavaScript",
    "2019-05-30",
  );
  const storybookNew = seen(
    "storybookjs/storybook",
    "Storybook is the industry standard workshop for building, documenting, and testing UI components in isolation",
    90_892,
    10_391,
    "TypeScript",
    "2026-08-22",
  );
  assert.equal(movedHome(storybookOld, storybookNew), true);
  // counts the newer name lacks are read from the records the tiers above joined to it
  const youki = [
    seen("utam0k/youki", "An experimental container runtime written in Rust", 883, 40, "Rust", "2021-05-30"),
    seen("containers/youki", "A container runtime written in Rust", 5_974, 104, "Rust", "2024-07-01"),
    seen("youki-dev/youki", "A container runtime written in Rust", 7_557, null, null, "2026-08-21"),
  ];
  for (const order of [youki, [...youki].reverse()]) {
    const d = dedupeProjects(order);
    assert.deepEqual(
      d.records.map((r) => r.key),
      ["youki-dev/youki"],
    );
    assert.deepEqual([...d.records[0]!.aliases].sort(), ["containers/youki", "utam0k/youki"]);
  }
});

test("tier 6 leaves alone: a living name, another owner, a fork's forks, another language, other words, a common name", () => {
  const cases: [string, RepoRecord, RepoRecord][] = [
    ["both names still listed", { ...nvmOld, lastSeen: "2026-03-01T00:00:00.000Z" }, nvmNew],
    ["the new owner is not named after the project", nvmOld, seen("getify/nvm", nvmNew.description!, 94_675, 10_386, "Shell", "2026-08-22")],
    ["a fork starts from no forks", nvmOld, { ...nvmNew, forks: 120 }],
    ["another language", nvmOld, { ...nvmNew, language: "Go" }],
    ["descriptions about other things", nvmOld, { ...nvmNew, description: "A fast key-value store written in shell" }],
    ["few stars", { ...nvmOld, stars: 300 }, nvmNew],
  ];
  for (const [why, older, newer] of cases) {
    assert.equal(movedHome(older, newer), false, why);
    // tier 7 may still join a pair by its own evidence (getify/nvm: the same description, grown counts)
    assert.equal(dedupeProjects([older, newer], { tiers: 6 }).merged, 0, why);
  }
  // a repository part held by ten or more records is too common to join on the owner's name
  const many = Array.from({ length: 8 }, (_, i) => rec(`someone${i}/nvm`, `Unrelated nvm number ${i}`, { stars: 10 }));
  assert.equal(dedupeProjects([nvmOld, nvmNew, ...many]).merged, 0);
  // the old name's cluster must be stale as a whole: a still-listed twin keeps it apart
  const twin = rec("someone/nvm", nvmOld.description, { stars: 900, forks: 80, lastSeen: "2026-08-21T00:00:00.000Z" });
  const withTwin = dedupeProjects([nvmOld, twin, nvmNew]);
  assert.deepEqual(withTwin.records.map((r) => r.key).sort(), ["creationix/nvm", "nvm-sh/nvm"]);
  assert.equal(withTwin.aliasOf.get("someone/nvm"), "creationix/nvm", "tier 1 still joins the twins");
});

// Tier 7, after getinsomnia/insomnia → kong/insomnia (the dataset's records, descriptions shortened).
const insomniaOld = {
  ...seen("getinsomnia/insomnia", "Cross-platform HTTP and GraphQL Client", 10_321, 601, "JavaScript", "2019-07-24"),
  pushedAt: "2019-07-15T00:00:00.000Z",
};
const insomniaNew = seen("Kong/insomnia", "The open-source, cross-platform API client for GraphQL, REST and gRPC", 39_957, 2_325, "TypeScript", "2026-08-21");

test("tier 7 joins a name that vanished mid-work to its one successor, whoever owns it", () => {
  assert.equal(succeeded(insomniaOld, insomniaNew), true);
  assert.equal(succeeded(insomniaNew, insomniaOld), false, "the newer name is the one that stays");
  assertJoined(insomniaOld, insomniaNew);
  // tiers 1–6 keep the pair apart: another owner not named after the project, another wording
  assert.equal(dedupeProjects([insomniaOld, insomniaNew], { tiers: 6 }).merged, 0);
  // an unknown last push is no evidence against a move
  assert.equal(succeeded({ ...insomniaOld, pushedAt: null }, insomniaNew), true);
});

test("tier 7 leaves alone: a copy gone quiet, a name that lived on, shrunk counts, other words, two successors", () => {
  const cases: [string, RepoRecord, RepoRecord][] = [
    ["last pushed long before it was last seen (a copy)", { ...insomniaOld, pushedAt: "2018-01-02T00:00:00.000Z" }, insomniaNew],
    ["pushed after it was last seen (it lived on)", { ...insomniaOld, pushedAt: "2020-01-02T00:00:00.000Z" }, insomniaNew],
    ["both names still listed", { ...insomniaOld, lastSeen: "2026-03-01T00:00:00.000Z", pushedAt: "2026-02-27T00:00:00.000Z" }, insomniaNew],
    ["fewer forks than the old name", insomniaOld, { ...insomniaNew, forks: 300 }],
    ["forks unknown", { ...insomniaOld, forks: null }, insomniaNew],
    ["fewer stars than the old name", insomniaOld, { ...insomniaNew, stars: 9_000 }],
    ["a description about something else", insomniaOld, { ...insomniaNew, description: "A cross-platform desktop client for Slack" }],
    ["a personal description", { ...insomniaOld, description: "My cross-platform HTTP and GraphQL client" }, insomniaNew],
    ["too few words to tell", { ...insomniaOld, description: "Level editor" }, { ...insomniaNew, description: "Level editor, flexible" }],
  ];
  for (const [why, older, newer] of cases) {
    assert.equal(succeeded(older, newer), false, why);
    assert.equal(dedupeProjects([older, newer]).merged, 0, why);
  }
  // two candidate successors: the old name is nobody's in particular
  const other = seen("someone/insomnia", "Platform-independent HTTP and GraphQL client", 12_000, 700, "Go", "2026-08-21");
  assert.equal(succeeded(insomniaOld, other), true);
  assert.equal(dedupeProjects([insomniaOld, insomniaNew, other]).merged, 0);
});

// Tier 8, after mui-org/material-ui → mui/material-ui (the dataset's records, descriptions shortened).
const muiOld = seen("mui-org/material-ui", "MUI (formerly Material-UI) is the React UI library you always wanted", 75_252, 25_923, "JavaScript", "2022-02-06");
const muiNew = seen(
  "mui/material-ui",
  "Material UI: Comprehensive React component library that implements Google's Material Design",
  98_889,
  32_561,
  "JavaScript",
  "2026-08-22",
);

test("tier 8 joins a stale name to the same repository under its owner's new name", () => {
  assert.equal(ownerRenamed(muiOld, muiNew), true);
  assert.equal(ownerRenamed(muiNew, muiOld), false, "the newer name is the one that stays");
  assertJoined(muiOld, muiNew);
  assert.equal(dedupeProjects([muiOld, muiNew], { tiers: 7 }).merged, 0, "tiers 1–7 keep the pair apart");
  // a hyphen is no new owner: mermaidjs → mermaid-js
  const live = (name: string, description: string, stars: number, lastSeen: string) => seen(name, description, stars, null, null, lastSeen);
  assert.equal(
    ownerRenamed(
      live("mermaidjs/mermaid-live-editor", "Location has moved to mermaid-js/mermaid-live-editor: a live editor for mermaid", 966, "2023-11-12"),
      live("mermaid-js/mermaid-live-editor", "Edit, preview and share mermaid charts/diagrams. New implementation of the live editor.", 6_762, "2026-08-21"),
    ),
    true,
  );
});

test("tier 8 leaves alone: another owner, other words, a living name, shrunk counts, a short owner name", () => {
  const cases: [string, RepoRecord, RepoRecord][] = [
    ["an owner whose name does not begin the other's", muiOld, { ...muiNew, key: "someone/material-ui", name: "someone/material-ui" }],
    [
      "descriptions about other things (angulardart/angular beside angular/angular)",
      muiOld,
      { ...muiNew, description: "Deliver web apps with confidence on every platform you know" },
    ],
    ["both names still listed", { ...muiOld, lastSeen: "2026-03-01T00:00:00.000Z" }, muiNew],
    ["fewer stars than the old name", muiOld, { ...muiNew, stars: 70_000 }],
    ["fewer forks than the old name", muiOld, { ...muiNew, forks: 20_000 }],
    [
      "an owner name too short to be anyone's in particular",
      { ...muiOld, key: "mu/material-ui", name: "mu/material-ui" },
      { ...muiNew, key: "mui/material-ui", name: "mui/material-ui" },
    ],
  ];
  for (const [why, older, newer] of cases) {
    assert.equal(ownerRenamed(older, newer), false, why);
    assert.equal(dedupeProjects([older, newer]).merged, 0, why);
  }
});

test("tier 8 joins on a common repository name: the owners say who moved", () => {
  const shadcnOld = seen("shadcn/ui", "Beautifully designed components built with Radix UI and Tailwind CSS.", 24_642, 1_159, "TypeScript", "2023-07-18");
  const shadcnNew = seen(
    "shadcn-ui/ui",
    "A set of beautifully-designed, accessible components and a code distribution platform.",
    121_803,
    9_939,
    "TypeScript",
    "2026-08-22",
  );
  const others = Array.from({ length: 10 }, (_, i) => rec(`someone${i}/ui`, `Unrelated ui kit number ${i}`, { stars: 10 }));
  const d = dedupeProjects([shadcnOld, ...others, shadcnNew]);
  assert.equal(d.aliasOf.get("shadcn/ui"), "shadcn-ui/ui");
  assert.equal(d.merged, 1);
});

test("tier 8 does not let a little-starred trace of the old name keep it apart", () => {
  // Consensys/mythril was muellerberndt/mythril first (53 stars, still listed: a tier-1 twin of it).
  const about = "Security analysis tool for EVM bytecode. Supports smart contracts built for Ethereum and other EVM chains.";
  const first = seen("muellerberndt/mythril", about, 53, 10, "Python", "2026-08-21");
  const older = seen("Consensys/mythril", about, 3_900, 740, "Python", "2024-03-01");
  const newer = seen(
    "ConsenSysDiligence/mythril",
    "Mythril is a symbolic-execution-based security analysis tool for EVM bytecode.",
    4_100,
    780,
    "Python",
    "2026-08-22",
  );
  const d = dedupeProjects([first, older, newer]);
  assert.equal(d.aliasOf.get("consensys/mythril"), "consensysdiligence/mythril");
  assert.equal(d.aliasOf.get("muellerberndt/mythril"), "consensysdiligence/mythril");
  // A trace with stars of its own is a living name: the pair stays apart.
  assert.equal(dedupeProjects([{ ...first, stars: 600 }, older, newer]).aliasOf.has("consensys/mythril"), false);
});

// Tier 9, after vuejs/vue-next → vuejs/core (the dataset's records).
const vueAbout = "🖖 Vue.js is a progressive, incrementally-adoptable JavaScript framework for building UI on the web.";
const vueOld = seen("vuejs/vue-next", vueAbout, 26_779, 4_739, "TypeScript", "2022-01-16");
const vueNew = seen("vuejs/core", vueAbout, 54_229, 9_188, "TypeScript", "2026-08-22");

test("tier 9 joins a stale name to its one successor under the same owner", () => {
  assert.equal(renamedInPlace(vueOld, vueNew), true);
  assert.equal(renamedInPlace(vueNew, vueOld), false, "the newer name is the one that stays");
  assertJoined(vueOld, vueNew);
  assert.equal(dedupeProjects([vueOld, vueNew], { tiers: 8 }).merged, 0, "tiers 1–8 keep the pair apart");
  // a word added still counts: 90 % of all the words (lipis/flag-icon-css → lipis/flag-icons)
  assert.equal(
    renamedInPlace(
      seen("lipis/flag-icon-css", ":flags: A collection of all country flags in SVG — plus the CSS for easier integration", 7_776, 1_234, "CSS", "2021-10-01"),
      seen(
        "lipis/flag-icons",
        ":flags: A curated collection of all country flags in SVG — plus the CSS for easier integration",
        12_356,
        1_950,
        "CSS",
        "2026-08-22",
      ),
    ),
    true,
  );
});

test("tier 9 leaves alone: another owner, added words, a living name, shrunk counts, another birth, two successors", () => {
  const cases: [string, RepoRecord, RepoRecord][] = [
    ["another owner (tiers 6 to 8 decide those)", vueOld, { ...vueNew, key: "someone/core", name: "someone/core" }],
    [
      "a description with words of its own (mmrotate beside mmdetection)",
      { ...vueOld, description: "OpenMMLab Rotated Object Detection Toolbox and Benchmark" },
      { ...vueNew, description: "OpenMMLab Detection Toolbox and Benchmark" },
    ],
    ["both names still listed", { ...vueOld, lastSeen: "2026-03-01T00:00:00.000Z" }, vueNew],
    ["fewer stars than the old name", vueOld, { ...vueNew, stars: 20_000 }],
    ["fewer forks than the old name", vueOld, { ...vueNew, forks: 4_000 }],
    ["created on another day (monero-gui beside monero)", { ...vueOld, createdAt: "2015-04-01T00:00:00Z" }, { ...vueNew, createdAt: "2014-04-30T00:00:00Z" }],
    ["a personal description", { ...vueOld, description: "My Vue.js experiments and notes" }, { ...vueNew, description: "My Vue.js experiments and notes" }],
  ];
  for (const [why, older, newer] of cases) {
    assert.equal(renamedInPlace(older, newer), false, why);
    assert.equal(dedupeProjects([older, newer]).merged, 0, why);
  }
  // the same creation day is no obstacle, whatever the time of day a source wrote
  assert.equal(renamedInPlace({ ...vueOld, createdAt: "2018-06-12T00:00:00Z" }, { ...vueNew, createdAt: "2018-06-12T13:49:36Z" }), true);
  // two successors: "Moved to Polymer/tools monorepo" on several of the owner's repositories
  const other = seen("vuejs/vue-3", vueAbout, 30_000, 5_000, "TypeScript", "2026-08-21");
  assert.equal(dedupeProjects([vueOld, vueNew, other]).aliasOf.has("vuejs/vue-next"), false);
});
