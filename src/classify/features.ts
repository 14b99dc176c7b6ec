/**
 * The text views of a record that the rules read. Built once per record, so every rule sees the same
 * normalised strings and tokens, and the cost is paid once.
 */
import type { RepoRecord } from "../dataset/record.js";

export interface Features {
  /** Repository part of the name as written ("awesome-go"), for the few cues that depend on its punctuation. */
  readonly repo: string;
  /** Repository part of the name, split into lowercase words: "AwesomeVue_kit" → "awesome vue kit". */
  readonly name: string;
  /** Lowercased description with emoji shortcodes and symbols reduced to spaces. */
  readonly desc: string;
  /** Lowercased topics, as given. */
  readonly topics: readonly string[];
  /** The first words of the README as plain lowercased text, or "" when unknown. */
  readonly readme: string;
  /** The raw README excerpt (for link and badge counting), or "". */
  readonly readmeRaw: string;
  /** Lowercased primary language, or "". */
  readonly lang: string;
  /** Word tokens of the views above (see `tokenize`). */
  readonly nameTokens: readonly string[];
  readonly descTokens: readonly string[];
  readonly readmeTokens: readonly string[];
  /** Each topic as space-separated words: "awesome-list" → "awesome list". */
  readonly topicPhrases: readonly string[];
}

/** Only the opening of a README speaks about the repository itself; later text is contents or install steps. */
const README_LEAD_CHARS = 400;

export function splitName(repo: string): string {
  return repo
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/[-_.\s]+/g, " ")
    .trim()
    .toLowerCase();
}

export function cleanText(s: string): string {
  return s
    .replace(/:[a-z0-9_+-]+:/gi, " ") // GitHub emoji shortcodes (":fire:")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}

/** Markdown/HTML to plain words, enough for cue matching (not for display). */
export function plainReadme(md: string): string {
  return md
    .replace(/```[\s\S]*?```/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/!\[[^\]]*\]\([^)]*\)/g, " ")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/&[a-z]+;|&#\d+;/gi, " ")
    .replace(/[#>*_`|~=[\]]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Lowercase word tokens. "c++", "c#" and ".net" keep their symbols because they name languages; every
 * other punctuation splits ("command-line" → "command line", "node.js" → "node js"), so phrases in the
 * rule tables are written with plain spaces. CJK text has no spaces and is matched by substring instead.
 */
const TOKEN_RE = /[\p{L}\p{N}]+(?:\+\+|#)?/gu;
/** Same tokens for pure-ASCII text, without the cost of Unicode property classes (most descriptions). */
const ASCII_TOKEN_RE = /[a-z0-9]+(?:\+\+|#)?/g;
const NON_ASCII_RE = /[^\x00-\x7f]/;
export function tokenize(text: string): string[] {
  const t = text.toLowerCase();
  return t.match(NON_ASCII_RE.test(t) ? TOKEN_RE : ASCII_TOKEN_RE) ?? [];
}

export function featuresOf(r: RepoRecord): Features {
  const slash = r.name.indexOf("/");
  const repo = slash >= 0 ? r.name.slice(slash + 1) : r.name;
  const readmeRaw = r.readme ?? "";
  const name = splitName(repo);
  const desc = r.description ? cleanText(r.description) : "";
  const readme = readmeRaw ? cleanText(plainReadme(readmeRaw).slice(0, README_LEAD_CHARS)) : "";
  return {
    repo,
    name,
    desc,
    topics: r.topics,
    readme,
    readmeRaw,
    lang: (r.language ?? "").toLowerCase(),
    nameTokens: tokenize(name),
    descTokens: tokenize(desc),
    readmeTokens: tokenize(readme),
    topicPhrases: r.topics.map((t) => t.replace(/[-_.]+/g, " ").trim()),
  };
}
