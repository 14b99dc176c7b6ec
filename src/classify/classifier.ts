/**
 * The category classifier: one category per repository, or null (uncategorized) when the evidence is weak.
 *
 * Rules (`rules.ts`) decide. The embedding is secondary: the cosine of the document vector to one
 * prototype vector per category (the mean of a few short descriptive texts embedded with the same
 * embedder) breaks near-ties between rule categories and casts a vote when the rules are weak or silent.
 * `curated-list` and `educational` hide a repository from default search, so they need more rule
 * evidence than other categories and are never assigned by the embedding alone.
 */
import { sha256Hex } from "../common/hash.js";
import { CATEGORIES, type Category, type RepoRecord } from "../dataset/record.js";
import type { Embedder } from "../embed/types.js";
import { featuresOf } from "./features.js";
import { CAT_INDEX, HIDDEN_CATEGORIES as HIDDEN, ruleScores, rulesFingerprint, type Evidence } from "./rules.js";

export interface Classification {
  readonly category: Category | null;
  /** 0..1; 0 when abstaining. Comparable within one classifier id only. */
  readonly confidence: number;
  /** Short human-readable account of the decision (top cues, runner-up, embedding vote). */
  readonly reason: string;
}

export interface Classifier {
  /** Changes whenever rules, prototype texts or the embedder change, so the index re-classifies. */
  readonly id: string;
  classify(r: RepoRecord, vector?: Float32Array): Classification;
}

/** Least rule score that names a category at all. */
export const MIN_SCORE = 3;
const HIDDEN_MIN_SCORE = 5;
const HIDDEN_MIN_RATIO = 1.3;
/**
 * A list or tutorial is always *about* something, so rival domain evidence ("kubernetes" in "awesome
 * kubernetes resources") counts only partly against it; rival form evidence ("library") counts fully.
 */
const HIDDEN_DOMAIN_RIVAL = 0.25;
/**
 * A hidden category also needs this much evidence from the repository's own words (description, name,
 * README; either hidden category's cues count), not only from its topics: products tag themselves
 * "awesome" or "education" (Grist, HumHub, CircuitPython) the way lists and courses do, and one such
 * topic weighs 5, enough to hide them on its own.
 */
const HIDDEN_MIN_TEXT = 2;
/** Rule scores this close are a tie; the embedding (when available) or the priority order decides. */
const TIE_MARGIN = 0.75;
/**
 * Embedding vote thresholds. USE-lite cosines to every prototype are high (0.5–0.75), so what carries
 * information is the best prototype's lead over the second. On 2,500 random records outside the sample,
 * the embedding's pick agreed with confident rule decisions 71% of the time at a lead ≥ 0.045 (the top
 * 20% of leads) and 79% at ≥ 0.06 (the top 10%); below that it is close to a coin toss between neighbours.
 */
const EMB_MIN_SIM = 0.3;
const EMB_MIN_MARGIN = 0.045;
/** With no rule evidence at all the embedding must be clearly ahead on its own. */
const EMB_ALONE_MIN_MARGIN = 0.06;
/** Weight of the embedding's vote when added to weak rule evidence. */
const EMB_VOTE = 1.5;

/** On an exact tie, the more specific category wins: what a repository is before what it is about. */
const PRIORITY: readonly Category[] = [
  "curated-list",
  "educational",
  "starter",
  "plugin",
  "agent",
  "ai-ml",
  "frontend",
  "data",
  "infrastructure",
  "tool",
  "framework",
  "application",
  "library",
];
const PRIORITY_RANK = new Int32Array(CATEGORIES.length);
PRIORITY.forEach((c, i) => (PRIORITY_RANK[CAT_INDEX[c]] = i));

/** Short descriptions of each category, written like repository descriptions, for the embedding prototypes. */
export const PROTOTYPE_TEXTS: Readonly<Record<Category, readonly string[]>> = {
  library: [
    "A lightweight library for parsing and formatting dates",
    "Client library and SDK for the HTTP API",
    "Fast JSON serialization package for Go",
    "Bindings and utility functions for developers",
    "A small Python module for working with images",
    "Rust crate providing async primitives",
    "Java library for reading and writing PDF files",
    "Header-only C++ library for linear algebra",
  ],
  framework: [
    "A web framework for building APIs and server applications",
    "An opinionated full-stack MVC framework",
    "Game engine and framework for 2D games",
    "Backend framework with routing, middleware and dependency injection",
    "Batteries-included framework for building web apps quickly",
    "Microframework for HTTP services in Go",
    "Application framework with conventions over configuration",
    "Framework for building cross-platform mobile apps",
  ],
  tool: [
    "A command-line tool to automate tasks in your terminal",
    "Linter and code formatter for JavaScript",
    "Build tool and bundler for web projects",
    "Developer tool for debugging and profiling",
    "CLI utility to convert files between formats",
    "Static analysis tool that finds bugs in your code",
    "A fast terminal utility for searching files",
    "Security scanner and penetration testing tool",
  ],
  application: [
    "A self-hosted web application for managing notes",
    "Desktop app for macOS, Windows and Linux",
    "Open-source Android app and music player",
    "A Discord bot and chat client",
    "Open-source alternative to a popular productivity app",
    "A text editor with a clean user interface",
    "Video game written in C++",
    "Personal finance tracker you can host yourself",
  ],
  infrastructure: [
    "Kubernetes operator for deploying and scaling services",
    "Infrastructure as code with Terraform modules for AWS",
    "Monitoring, metrics and alerting for cloud servers",
    "CI/CD pipelines and container orchestration with Docker",
    "Helm charts for running services on Kubernetes",
    "Observability: logs, traces and dashboards for DevOps teams",
    "Reverse proxy and load balancer",
    "Ansible playbooks to provision Linux servers",
  ],
  "ai-ml": [
    "Deep learning library for training neural networks with PyTorch",
    "Machine learning models for computer vision and NLP",
    "Data science toolkit for statistics and model evaluation",
    "Fast inference engine for large language models",
    "Official implementation of a research paper on image segmentation",
    "Fine-tuning transformers on custom datasets",
    "Reinforcement learning algorithms and environments",
    "Speech recognition and text-to-speech models",
  ],
  agent: [
    "Framework for building autonomous LLM agents that use tools",
    "Multi-agent AI orchestration with memory and planning",
    "An AI coding agent that writes code in your terminal",
    "MCP server that gives AI assistants access to tools",
    "Personal AI assistant that automates tasks with ChatGPT",
    "Retrieval-augmented generation pipeline with LangChain",
    "Claude Code skills, subagents and prompts",
    "Agent that browses the web and completes tasks on its own",
  ],
  frontend: [
    "React UI component library with buttons, modals and forms",
    "A CSS framework for responsive web design",
    "Vue components and design system",
    "Charts and animation library for the browser",
    "Icon set and web font",
    "Tailwind CSS themes and UI kit",
    "Date picker and dropdown widgets for Flutter",
    "SwiftUI views and custom controls for iOS",
  ],
  data: [
    "A distributed SQL database",
    "ORM and query builder for PostgreSQL and MySQL",
    "ETL data pipelines and stream processing",
    "Key-value store and data warehouse",
    "Time-series database for metrics",
    "Database migration and schema management",
    "Redis client with caching",
    "Dataframe library for large datasets",
  ],
  starter: [
    "Boilerplate starter kit for a new React app",
    "Project template with a preconfigured build, tests and CI",
    "Starter template to bootstrap a Node.js API",
    "Scaffold for a new project with best-practice defaults",
    "Cookiecutter template for Python packages",
    "Seed project for Angular applications",
    "Next.js SaaS starter with authentication and payments",
    "Template repository for GitHub Actions projects",
  ],
  "curated-list": [
    "A curated list of awesome libraries, tools and resources",
    "Awesome list of links, articles and projects",
    "A collection of useful resources and links",
    "A list of papers and reading material",
    "Curated collection of the best open source apps",
    "Awesome resources: books, courses, talks and blogs",
    "A list of public APIs",
    "Directory of tools and services for developers",
  ],
  educational: [
    "Tutorial and course to learn programming step by step",
    "Code examples and exercises from the book",
    "Interview questions and study notes for beginners",
    "Learn how to build your own database from scratch",
    "Solutions to LeetCode algorithm problems",
    "Lecture notes and homework for a university course",
    "Sample code and demos showing how to use the API",
    "A beginner's guide and cheat sheet",
  ],
  plugin: [
    "A Visual Studio Code extension",
    "Neovim plugin for better editing",
    "Browser extension for Chrome and Firefox",
    "WordPress plugin and theme add-on",
    "Obsidian plugin",
    "Plugin for webpack",
    "Home Assistant integration",
    "Zsh plugin and theme",
  ],
};

interface Prototypes {
  readonly dims: number;
  /** One L2-normalised centroid per category, indexed like CATEGORIES. */
  readonly vectors: readonly Float32Array[];
}

async function buildPrototypes(embedder: Embedder): Promise<Prototypes> {
  const texts: string[] = [];
  const owner: number[] = [];
  CATEGORIES.forEach((c, i) => {
    for (const t of PROTOTYPE_TEXTS[c]) {
      texts.push(t);
      owner.push(i);
    }
  });
  const embedded = await embedder.embed(texts);
  const dims = embedded[0]?.length ?? 0;
  const sums = CATEGORIES.map(() => new Float32Array(dims));
  embedded.forEach((v, k) => {
    const s = sums[owner[k]!]!;
    for (let d = 0; d < dims; d++) s[d]! += v[d]!;
  });
  for (const s of sums) {
    let n = 0;
    for (let d = 0; d < dims; d++) n += s[d]! * s[d]!;
    n = Math.sqrt(n) || 1;
    for (let d = 0; d < dims; d++) s[d]! /= n;
  }
  return { dims, vectors: sums };
}

function cosines(p: Prototypes, v: Float32Array): Float64Array {
  const out = new Float64Array(CATEGORIES.length);
  for (let c = 0; c < out.length; c++) {
    const q = p.vectors[c]!;
    let s = 0;
    for (let d = 0; d < p.dims; d++) s += q[d]! * v[d]!;
    out[c] = s;
  }
  return out;
}

/** Indices of categories by descending score; equal scores in priority order (insertion sort: 13 items). */
function rank(scores: Float64Array): number[] {
  const order: number[] = [];
  for (let c = 0; c < scores.length; c++) {
    let k = order.length;
    while (k > 0) {
      const o = order[k - 1]!;
      if (scores[o]! > scores[c]! || (scores[o] === scores[c] && PRIORITY_RANK[o]! < PRIORITY_RANK[c]!)) break;
      k--;
    }
    order.splice(k, 0, c);
  }
  return order;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Saturating in the score, scaled down when the runner-up is close. */
function confidenceOf(top: number, second: number): number {
  const sat = top / (top + 3);
  const sep = top > 0 ? Math.max(0, (top - second) / top) : 0;
  return round2(sat * (0.5 + 0.5 * sep));
}

function cuesFor(evidence: readonly Evidence[], cat: Category): string {
  return evidence
    .filter((e) => e.cat === cat)
    .sort((a, b) => b.w - a.w)
    .slice(0, 3)
    .map((e) => `${e.field}:"${e.cue}"`)
    .join(", ");
}

export async function createClassifier(embedder?: Embedder): Promise<Classifier> {
  const protos = embedder ? await buildPrototypes(embedder) : null;
  const id =
    "cls-" +
    sha256Hex(
      JSON.stringify([
        rulesFingerprint(),
        PROTOTYPE_TEXTS,
        embedder?.id ?? null,
        [
          MIN_SCORE,
          HIDDEN_MIN_SCORE,
          HIDDEN_MIN_RATIO,
          HIDDEN_DOMAIN_RIVAL,
          HIDDEN_MIN_TEXT,
          TIE_MARGIN,
          EMB_MIN_SIM,
          EMB_MIN_MARGIN,
          EMB_ALONE_MIN_MARGIN,
          EMB_VOTE,
          PRIORITY,
        ],
      ]),
    ).slice(0, 12);

  function classify(r: RepoRecord, vector?: Float32Array): Classification {
    const { scores, formScores, evidence } = ruleScores(featuresOf(r));
    const sims = protos && vector && vector.length === protos.dims ? cosines(protos, vector) : null;

    // The embedding's own pick, when it is confident enough to count at all.
    let emb: { cat: number; sim: number; margin: number } | null = null;
    if (sims) {
      const order = rank(sims);
      const sim = sims[order[0]!]!;
      const margin = sim - sims[order[1]!]!;
      if (sim >= EMB_MIN_SIM && margin >= EMB_MIN_MARGIN && !HIDDEN.has(CATEGORIES[order[0]!]!)) emb = { cat: order[0]!, sim, margin };
    }
    const embNote = emb ? `; embedding ${CATEGORIES[emb.cat]} cos ${round2(emb.sim)} (+${round2(emb.margin)})` : "";

    const ranked = rank(scores);
    const topScore = scores[ranked[0]!]!;

    // Weak or no rule evidence: the embedding may vote, never alone into a hidden category.
    if (topScore < MIN_SCORE) {
      if (emb) {
        const combined = scores[emb.cat]! + EMB_VOTE;
        if (combined >= MIN_SCORE || (topScore === 0 && emb.margin >= EMB_ALONE_MIN_MARGIN)) {
          const cat = CATEGORIES[emb.cat]!;
          const ruleNote = scores[emb.cat]! > 0 ? `weak rules ${cat} ${round2(scores[emb.cat]!)} + embedding vote` : "no rule evidence; embedding alone";
          return { category: cat, confidence: round2(Math.min(0.45, emb.margin * 3 + combined / 20)), reason: `${ruleNote}${embNote}` };
        }
      }
      return {
        category: null,
        confidence: 0,
        reason: topScore > 0 ? `abstain: weak evidence (${CATEGORIES[ranked[0]!]} ${round2(topScore)})${embNote}` : `abstain: no evidence${embNote}`,
      };
    }

    // A hidden category wins only with enough evidence and a clear lead over its strongest rival.
    const hidden = ranked.find((c) => HIDDEN.has(CATEGORIES[c]!))!;
    let rival = 0;
    let rivalCat = hidden;
    for (let o = 0; o < scores.length; o++) {
      if (HIDDEN.has(CATEGORIES[o]!)) continue;
      const v = formScores[o]! + HIDDEN_DOMAIN_RIVAL * (scores[o]! - formScores[o]!);
      if (v > rival) {
        rival = v;
        rivalCat = o;
      }
    }
    let text = 0;
    for (const e of evidence) if (HIDDEN.has(e.cat) && e.field !== "topic") text += e.w;
    if (scores[hidden]! >= HIDDEN_MIN_SCORE && scores[hidden]! >= HIDDEN_MIN_RATIO * rival && text >= HIDDEN_MIN_TEXT) return decided(hidden, rivalCat, "");

    // Otherwise the best visible category; a near-tie with the runner-up goes to the embedding.
    const visible = ranked.filter((c) => !HIDDEN.has(CATEGORIES[c]!));
    const [best, next] = [visible[0]!, visible[1]!];
    if (scores[best]! < MIN_SCORE) {
      return {
        category: null,
        confidence: 0,
        reason: `abstain: hidden category without clear lead (${CATEGORIES[hidden]} ${round2(scores[hidden]!)} vs ${CATEGORIES[rivalCat]} ${round2(rival)})`,
      };
    }
    if (sims && scores[best]! - scores[next]! < TIE_MARGIN && scores[next]! > 0 && sims[next]! > sims[best]!)
      return decided(next, best, "; tie broken by embedding");
    return decided(best, next, "");

    function decided(c: number, runner: number, note: string): Classification {
      const cat = CATEGORIES[c]!;
      const next = runner !== c && scores[runner]! > 0 ? `; next ${CATEGORIES[runner]} ${round2(scores[runner]!)}` : "";
      return {
        category: cat,
        confidence: confidenceOf(scores[c]!, runner !== c ? scores[runner]! : 0),
        reason: `rules ${cat} ${round2(scores[c]!)} [${cuesFor(evidence, cat)}]${next}${note}`,
      };
    }
  }

  return { id, classify };
}
