/**
 * Evidence: 1–3 short plain-text snippets per result saying why it matched, plus the compact tree
 * and llms.txt address. README and description text is untrusted: markup, badges and control
 * characters are stripped and every snippet is capped.
 */
import type { RepoPayload } from "../dataset/record.js";
import { analyze, collapseWhitespace, stripMarkup } from "../text/analyzer.js";
import type { AppliedFilters } from "./types.js";
import { languageServes, saysLanguage, type QueryUnderstanding } from "./query.js";

export const MAX_EVIDENCE = 3;
export const MAX_SNIPPET_CHARS = 200;
export const TREE_MAX_ENTRIES = 200;
export const TREE_MAX_DEPTH = 2;

// C0/C1 controls, bidi overrides and zero-width characters: they can hide or reorder text shown to an agent.
const UNSAFE_CHARS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/** `text` without control, bidi-override and zero-width characters; newlines and tabs stay (a README keeps its lines). */
export function stripUnsafe(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(UNSAFE_CHARS, "");
}

/** Plain, single-line, capped text. */
export function sanitizeSnippet(text: string, maxChars = MAX_SNIPPET_CHARS): string {
  let s = collapseWhitespace(stripMarkup(text).replace(UNSAFE_CHARS, " ")).trim();
  if (s.length > maxChars) {
    const cut = s.lastIndexOf(" ", maxChars - 1);
    s = `${s.slice(0, cut > maxChars / 2 ? cut : maxChars - 1).trimEnd()}…`;
  }
  return s;
}

/**
 * `analyze` of one word, memoised: evidence analyses every word of up to 50 results' names and
 * descriptions per search, and those words repeat (Zipf), so most lookups hit. Bounded: cleared
 * when full, which costs one cold search.
 */
const WORD_MEMO_MAX = 50_000;
const wordMemo = new Map<string, readonly string[]>();
function analyzeWord(word: string): readonly string[] {
  let t = wordMemo.get(word);
  if (t === undefined) {
    if (wordMemo.size >= WORD_MEMO_MAX) wordMemo.clear();
    t = analyze(word);
    wordMemo.set(word, t);
  }
  return t;
}

/** The first sentence-ish window of `text` containing one of `terms` (analysed forms). */
function windowAround(text: string, terms: ReadonlySet<string>, maxChars: number): string | null {
  const plain = sanitizeSnippet(text, 100_000);
  if (!plain) return null;
  const words = plain.split(" ");
  for (let i = 0; i < words.length; i++) {
    const t = analyzeWord(words[i]!);
    if (t.some((x) => terms.has(x))) {
      const start = Math.max(0, i - 6);
      let out = words.slice(start, start + 30).join(" ");
      if (out.length > maxChars) out = sanitizeSnippet(out, maxChars);
      return `${start > 0 ? "…" : ""}${out}${start + 30 < words.length && !out.endsWith("…") ? "…" : ""}`;
    }
  }
  return null;
}

/** A word of a name or description: how evidence shows it, and its analysed terms. */
interface Word {
  readonly shown: string;
  readonly terms: readonly string[];
}

function wordsOf(text: string | null | undefined): readonly Word[] {
  if (!text) return [];
  const out: Word[] = [];
  for (const w of sanitizeSnippet(text, 100_000).split(/[\s,;:()/]+/)) {
    const terms = analyzeWord(w);
    // "node.js" keeps its dot; a sentence's last word ("system.") does not.
    if (terms.length > 0)
      out.push({
        shown: w
          .toLowerCase()
          .replace(/[^\p{L}\p{N}+#.-]/gu, "")
          .replace(/^[.-]+|[.-]+$/g, ""),
        terms,
      });
  }
  return out;
}

/** The words whose every term the query has, as shown. */
function matched(words: readonly Word[], terms: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const w of words) if (w.terms.every((x) => terms.has(x))) out.add(w.shown);
  out.delete("");
  return [...out];
}

/** What evidence reads of a repository, whatever the query: sanitised and analysed once. */
interface PreparedText {
  readonly name: readonly Word[];
  readonly description: readonly Word[];
  readonly topicTerms: readonly (readonly string[])[];
  /** Each alias (an older owner/repo name) with its words. */
  readonly aliases: readonly { readonly name: string; readonly words: readonly Word[] }[];
  /** The anchor text: how other repositories describe the project. */
  readonly anchor: readonly Word[];
  /** Debian's package description of the project (src/corpus/packages.ts). */
  readonly packaged: readonly Word[];
  /** The description as the semantic-match line quotes it. */
  readonly descriptionSnippet: string | null;
}

/**
 * Per-repository memo of PreparedText: the same repositories answer many queries, and sanitising and
 * analysing their text was most of evidence's cost. Bounded like the word memo (cleared when full).
 */
export const TEXT_MEMO_MAX = 20_000;
const textMemo = new Map<RepoPayload, PreparedText>();

function preparedText(p: RepoPayload): PreparedText {
  let t = textMemo.get(p);
  if (t === undefined) {
    if (textMemo.size >= TEXT_MEMO_MAX) textMemo.clear();
    t = {
      name: wordsOf(p.name.replace(/[-_./]+/g, " ")),
      description: wordsOf(p.description),
      topicTerms: p.topics.map((topic) => analyzeWord(topic.replace(/-/g, " "))),
      aliases: p.aliases.map((name) => ({ name, words: wordsOf(name.replace(/[-_./]+/g, " ")) })),
      anchor: wordsOf(p.anchor),
      packaged: wordsOf(p.packaged),
      descriptionSnippet: p.description ? sanitizeSnippet(p.description, 120) : null,
    };
    textMemo.set(p, t);
  }
  return t;
}

/** Entries in the per-repository memo (tests). */
export function evidenceMemoSize(): number {
  return textMemo.size;
}

const fmt = new Intl.NumberFormat("en-US");

/** `n` with en-US thousands separators, as Intl.NumberFormat("en-US") writes it; by hand for safe integers (format() costs ~1 µs a call). */
export function groupThousands(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return fmt.format(n);
  const digits = String(n < 0 ? -n : n);
  let out = digits.length % 3 === 0 ? "" : digits.slice(0, digits.length % 3);
  for (let i = digits.length % 3; i < digits.length; i += 3) out += (out === "" ? "" : ",") + digits.slice(i, i + 3);
  return n < 0 ? `-${out}` : out;
}

export interface EvidenceInput {
  readonly payload: RepoPayload;
  readonly queryTerms: ReadonlySet<string>;
  /** Cosine similarity of the query and the repository's embedding, when dense retrieval scored it. */
  readonly semantic: number | null;
  readonly applied: AppliedFilters;
  readonly understanding: QueryUnderstanding;
}

export function buildEvidence(x: EvidenceInput): string[] {
  const p = x.payload;
  const text = preparedText(p);
  const out: string[] = [];
  const terms = x.queryTerms;
  if (terms.size > 0) {
    const inName = matched(text.name, terms);
    const inTopics = p.topics.filter((_, i) => text.topicTerms[i]!.some((a) => terms.has(a)));
    const inDesc = matched(text.description, terms);
    const alias = text.aliases.find((a) => matched(a.words, terms).some((w) => !inName.includes(w)));
    const ownWord = (w: string) => inName.includes(w) || inDesc.includes(w) || inTopics.includes(w);
    // What only the corpus says: words of the anchor text the repository's own text lacks.
    const inAnchor = matched(text.anchor, terms).filter((w) => !ownWord(w));
    // And what only its Debian package says (a mirror's own description often says nothing).
    const inPackage = matched(text.packaged, terms).filter((w) => !ownWord(w) && !inAnchor.includes(w));
    const parts: string[] = [];
    if (inName.length) parts.push(`name (${inName.slice(0, 4).join(", ")})`);
    if (alias) parts.push(`former name ${alias.name}`);
    if (inTopics.length) parts.push(`topics (${inTopics.slice(0, 4).join(", ")})`);
    if (inDesc.length) parts.push(`description (${inDesc.slice(0, 5).join(", ")})`);
    if (inAnchor.length) parts.push(`how ${groupThousands(p.mentions)} other repositories describe it (${inAnchor.slice(0, 4).join(", ")})`);
    if (inPackage.length) parts.push(`its Debian package description (${inPackage.slice(0, 4).join(", ")})`);
    if (parts.length) out.push(sanitizeSnippet(`Matched terms in ${parts.join("; ")}`));
    else if (p.readme) {
      const w = windowAround(p.readme, terms, 160);
      if (w) out.push(sanitizeSnippet(`README: "${w}"`));
    }
  }
  if (x.semantic !== null && out.length < MAX_EVIDENCE) {
    const what = text.descriptionSnippet !== null ? `: "${text.descriptionSnippet}"` : "";
    out.push(`Semantic match ${x.semantic.toFixed(2)} (cosine) with the repository's description and topics${what}`);
  }
  const facts: string[] = [];
  const a = x.applied;
  if (a.language !== null && p.language) facts.push(`language ${p.language} (filter)`);
  else if (x.understanding.language !== null && p.languageLc !== null && languageServes(x.understanding.language, p.languageLc))
    facts.push(`language ${p.language} (${p.languageLc === x.understanding.language ? "named in the query" : `the query names ${x.understanding.language}`})`);
  else if (x.understanding.language !== null && saysLanguage(p, x.understanding.language))
    facts.push(`${p.language ? `language ${p.language}, ` : ""}for ${x.understanding.language} in its own words`);
  if (p.stars !== null && (a.minStars !== null || a.maxStars !== null || p.stars >= 1000)) facts.push(`${groupThousands(p.stars)} stars`);
  if (a.topics.length) {
    const hit = p.topics.filter((t) => a.topics.some((f) => f.toLowerCase() === t));
    if (hit.length) facts.push(`topic ${hit.slice(0, 3).join(", ")} (filter)`);
  }
  if (p.category) facts.push(`category ${p.category}`);
  if (p.pushedAt && (a.staleAfterMonths !== null || facts.length < 3)) facts.push(`last push ${p.pushedAt.slice(0, 10)}`);
  if (p.isArchived === true) facts.push("archived");
  if (facts.length && out.length < MAX_EVIDENCE) out.push(sanitizeSnippet(`Facts: ${facts.join("; ")}`));
  if (x.understanding.notes.length && out.length < MAX_EVIDENCE) out.push(sanitizeSnippet(`Query understood as: ${x.understanding.notes.join("; ")}`));
  return out.slice(0, MAX_EVIDENCE);
}

/**
 * The compact file tree: one path per line, directories end with "/", depth ≤ 2, ≤ 200 entries,
 * sorted as the index stored them; null when the index has no tree for the repository.
 */
export function compactTree(tree: readonly string[] | null): string | null {
  if (tree === null) return null;
  const out: string[] = [];
  for (const raw of tree) {
    if (out.length >= TREE_MAX_ENTRIES) break;
    const path = raw.replace(UNSAFE_CHARS, "").replace(/\\/g, "/").replace(/^\/+/, "").trim();
    if (!path || path.includes("\n")) continue;
    const isDir = path.endsWith("/");
    const depth = path.replace(/\/$/, "").split("/").length;
    if (depth > TREE_MAX_DEPTH) continue;
    out.push(isDir ? path : path);
  }
  return out.join("\n");
}

/**
 * The address of the repository's llms.txt (preferred) or llms-full.txt, as a raw-file URL on the
 * code host when the repository URL is a GitHub one; null when the index knows of none.
 */
export function llmsUrlOf(p: Pick<RepoPayload, "url" | "name" | "llmsTxtPaths">): string | null {
  const paths = p.llmsTxtPaths;
  if (!paths || paths.length === 0) return null;
  const pick = paths.find((x) => /(^|\/)llms\.txt$/i.test(x)) ?? paths[0]!;
  const clean = pick.replace(/^\/+/, "");
  if (!/^[\w.\-/]+$/.test(clean) || clean.includes("..")) return null;
  const gh = p.url?.match(/^https?:\/\/github\.com\/([^/\s]+)\/([^/\s#?]+)/i);
  if (gh) return `https://raw.githubusercontent.com/${gh[1]}/${gh[2]!.replace(/\.git$/, "")}/HEAD/${clean}`;
  if (p.url && /^https?:\/\//.test(p.url)) return `${p.url.replace(/\/+$/, "")}/${clean}`;
  return null;
}
