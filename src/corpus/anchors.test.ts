import assert from "node:assert/strict";
import { test } from "vitest";
import { rec } from "../../test/support/test-records.js";
import type { RepoRecord } from "../dataset/record.js";
import { anchorRepeats, nameForm, projectEvidence } from "./anchors.js";

/** `n` small repositories `<owner><i>/project-<i>` whose descriptions are made by `describe(i)`. */
function mentions(n: number, describe: (i: number) => string, extra: Partial<RepoRecord> = {}, owner = "user"): RepoRecord[] {
  return Array.from({ length: n }, (_, i) => rec(`${owner}${i}/project-${i}`, describe(i), { stars: 10, ...extra }));
}

test("name forms ignore case and punctuation", () => {
  assert.equal(nameForm("Next.js"), "nextjs");
  assert.equal(nameForm("react-native"), "reactnative");
});

test("repositories that name a project describe it: its anchor text and mention count", () => {
  const records = [
    rec("kubernetes/kubernetes", "Production-Grade Container Scheduling and Management", { stars: 120_000 }),
    ...mentions(6, (i) => `A Kubernetes operator for container orchestration of service ${i}`),
    rec("a/charts", "Helm charts", { stars: 10, topics: ["kubernetes"] }),
    rec("b/board", "Web dashboard", { stars: 10, topics: ["kubernetes"] }),
    rec("someone/unrelated", "A tool for orchestration", { stars: 10 }),
  ];
  const { evidence } = projectEvidence(records);
  const k8s = evidence.get("kubernetes/kubernetes")!;
  assert.equal(k8s.mentions, 8);
  const terms = k8s.anchor!.split(" ");
  for (const t of ["operator", "container", "orchestration"]) assert.ok(terms.includes(t), `${t} in ${k8s.anchor}`);
  assert.ok(!terms.includes("kubernetes"), "the name itself is not anchor text");
  assert.ok(!terms.includes("helm"), "a word of a single mentioning repository is not kept");
  assert.equal(evidence.get("someone/unrelated"), undefined);
});

test("a word more mentioning repositories use is written more often: the anchor's term frequency grows with the log of its count", () => {
  assert.deepEqual([2, 3, 4, 7, 8, 16, 64].map(anchorRepeats), [1, 1, 2, 2, 3, 4, 6]);
  const records = [
    rec("kubernetes/kubernetes", "Production-Grade Container Scheduling and Management", { stars: 120_000 }),
    ...mentions(8, (i) => `A Kubernetes operator ${i}` + (i < 2 ? " with helm" : "")),
  ];
  const words = projectEvidence(records).evidence.get("kubernetes/kubernetes")!.anchor!.split(" ");
  assert.equal(words.filter((w) => w === "operator").length, 3, "8 repositories say operator");
  assert.equal(words.filter((w) => w === "helm").length, 1, "2 say helm");
});

test("a common word that happens to be a repository name is not a mention (lowercase mid-sentence)", () => {
  const records = [rec("acme/library", "A library", { stars: 50_000 }), ...mentions(10, (i) => `Fast parsing library number ${i} for dates`)];
  assert.equal(projectEvidence(records).evidence.get("acme/library"), undefined);
});

test("a coined name is a name however it is written: lowercase pytest is the project, lowercase library is a word", () => {
  const records = [
    rec("pytest-dev/pytest", "The pytest framework", { stars: 14_000 }),
    rec("acme/library", "A library", { stars: 50_000 }),
    ...mentions(4, (i) => `Fixtures ${i} for pytest with database snapshots`),
    ...mentions(4, (i) => `Parsing library number ${i} for dates`, {}, "other"),
  ];
  const { evidence } = projectEvidence(records);
  assert.equal(evidence.get("pytest-dev/pytest")?.mentions, 4);
  assert.ok(evidence.get("pytest-dev/pytest")!.anchor!.split(" ").includes("fixtures"));
  assert.equal(evidence.get("acme/library"), undefined);
});

test("a name written as common English words needs capitals: lowercase no-code is a phrase, not kelseyhightower/nocode", () => {
  const records = [
    rec("kelseyhightower/nocode", "The best way to write secure software", { stars: 60_000 }),
    ...mentions(6, (i) => `A no code builder ${i} for forms`),
  ];
  assert.equal(projectEvidence(records).evidence.get("kelseyhightower/nocode"), undefined);
});

test("an organisation named after a project is the name's home at 1.5× the next holder, others need 3×", () => {
  const tmux = [
    rec("tmux/tmux", "tmux source code", { stars: 48_000 }),
    rec("gpakosz/.tmux", "Oh my configuration: pretty and versatile", { stars: 25_000 }),
    ...mentions(4, (i) => `Session ${i} manager plugin for Tmux panes`),
  ];
  assert.equal(projectEvidence(tmux).evidence.get("tmux/tmux")?.mentions, 4);
  const widget = [
    rec("a/widget", "Widgets", { stars: 48_000 }),
    rec("b/widget", "Other widgets", { stars: 25_000 }),
    ...mentions(4, (i) => `Theme ${i} for Widget`),
  ];
  assert.equal(projectEvidence(widget).evidence.get("a/widget"), undefined);
});

test("a name used far more often than its holder's fame explains names something else", () => {
  const records = [rec("dockur/macos", "macOS inside a Docker container", { stars: 1_000 }), ...mentions(40, (i) => `Menu bar app ${i} for macOS`)];
  // 1,000 stars for 40 mentions is 25 per mention, below the 30 a name's holder needs.
  assert.equal(projectEvidence(records).evidence.get("dockur/macos"), undefined);
});

test("the longest name wins: Next.js is a mention of next.js, not of next", () => {
  const records = [
    rec("vercel/next.js", "The React Framework", { stars: 140_000 }),
    rec("someone/next", "Next generation thing", { stars: 20_000 }),
    ...mentions(5, (i) => `Blog starter ${i} built with Next.js and Tailwind`),
  ];
  const { evidence } = projectEvidence(records);
  assert.equal(evidence.get("vercel/next.js")?.mentions, 5);
  assert.equal(evidence.get("someone/next"), undefined);
});

test("a name right after a proper noun the project never says names another product: Jetpack Compose is not docker/compose", () => {
  const records = [
    rec("docker/compose", "Define and run multi-container applications with Docker", { stars: 35_000 }),
    rec("livewire/livewire", "A full-stack framework for Laravel", { stars: 23_000 }),
    rec("hashicorp/nomad", "A workload orchestrator", { stars: 15_000 }),
    ...mentions(6, (i) => `Sample app ${i} with Jetpack Compose and Kotlin`),
    ...mentions(3, (i) => `Local stack ${i} for Docker Compose with volumes`, {}, "dev"),
    ...mentions(3, (i) => `Admin panel ${i} built on Laravel Livewire with tables`, {}, "web"),
    ...mentions(3, (i) => `Job templates ${i} for HashiCorp Nomad with volumes`, {}, "ops"),
    // What makes a word a proper noun: the corpus capitalises it mid-sentence.
    ...mentions(5, (i) => `An Android library ${i} in the Jetpack style, for Docker and Laravel`, {}, "lib"),
  ];
  const { evidence } = projectEvidence(records);
  const compose = evidence.get("docker/compose")!;
  assert.equal(compose.mentions, 3, "Docker Compose: the project says Docker");
  assert.ok(!compose.anchor!.split(" ").includes("kotlin"), compose.anchor!);
  assert.equal(evidence.get("livewire/livewire")?.mentions, 3, "Laravel Livewire: the project says Laravel");
  assert.equal(evidence.get("hashicorp/nomad")?.mentions, 3, "HashiCorp Nomad: its owner");
  // Without the proper noun before it, the same words are a mention.
  const plain = projectEvidence([records[0]!, ...mentions(4, (i) => `Sample app ${i} with a Compose file and Kotlin`)]).evidence;
  assert.equal(plain.get("docker/compose")?.mentions, 4);
});

test("a name held by several comparable repositories belongs to none, and languages are never project names", () => {
  const records = [
    rec("a/widget", "Widgets", { stars: 10_000 }),
    rec("b/widget", "Other widgets", { stars: 5_000 }),
    rec("TheAlgorithms/Python", "All algorithms implemented in Python", { stars: 200_000 }),
    ...mentions(5, (i) => `Widget ${i} helpers written in Python`),
  ];
  const { evidence } = projectEvidence(records);
  assert.equal(evidence.get("a/widget"), undefined);
  assert.equal(evidence.get("thealgorithms/python"), undefined);
});

test("deterministic: the same records in another order give the same evidence", () => {
  const records = [rec("kubernetes/kubernetes", "Containers", { stars: 120_000 }), ...mentions(5, (i) => `Kubernetes operator ${i} for clusters`)];
  const a = projectEvidence(records).evidence;
  const b = projectEvidence([...records].reverse()).evidence;
  assert.deepEqual([...a].sort(), [...b].sort());
});

test("the anchor lists its terms in one order whatever the corpus size: records that mention nothing do not rewrite it", () => {
  // Scores are count × idf: "gizmo" (2 mentioners, rare) outscores "widget" (4 mentioners, common) in a
  // small corpus and not in a large one, where every idf has grown by the same log(n).
  const records = [
    rec("acme/zorp", "Zorp engine", { stars: 100_000 }),
    ...mentions(4, (i) => `A Zorp widget number ${i}` + (i < 2 ? " with gizmo" : "")),
    ...mentions(20, (i) => `A widget ${i}`, {}, "widgets"),
  ];
  const filler = mentions(2000, (i) => `Unrelated note ${i}`, {}, "filler");
  const small = projectEvidence(records).evidence.get("acme/zorp")!.anchor!;
  const large = projectEvidence([...records, ...filler]).evidence.get("acme/zorp")!.anchor!;
  assert.ok(small.includes("widget") && small.includes("gizmo"), small);
  assert.equal(large, small);
});
