/**
 * Query understanding: what an agent's description says beyond its words. Each finding is a soft
 * signal for ranking (a boost, never a filter the caller did not ask for) and is reported in evidence.
 */
import { carriedOver } from "../dataset/payload-lineage.js";
import type { Category, RepoRecord } from "../dataset/record.js";
import { collapseWhitespace } from "../text/analyzer.js";

export interface QueryUnderstanding {
  /** Lowercased primary language named in the query (as stored in languageLc), or null. */
  readonly language: string | null;
  /** Repository kinds the wording points to, strongest first. */
  readonly categories: readonly Category[];
  /** Human-readable notes for evidence. */
  readonly notes: readonly string[];
}

/** A query read as naming no language and no kind of repository (understanding off, or not asked for). */
export const NO_UNDERSTANDING: QueryUnderstanding = Object.freeze({ language: null, categories: [], notes: [] });

// Surface form (lowercase) → languageLc. Ambiguous English words ("go", "rust") only count in
// phrases that name a programming language; see LANGUAGE_CONTEXT.
const LANGUAGE_ALIASES: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /\b(?:golang|go(?= (?:library|libraries|package|packages|module|modules|cli|framework|server|client|sdk|implementation|port|code|project|app|tool|web)))\b/,
    "go",
  ],
  [/\bin go\b|\bgo\b(?=[,.]?$)|\bwritten in go\b|\bfor go\b/, "go"],
  [/\brust(?:lang)?\b(?! (?:removal|proof))/, "rust"],
  [/\bpython(?:3)?\b|\bpypi\b|\bdjango\b|\bflask\b|\bfastapi\b/, "python"],
  [/\btypescript\b|\bts\b(?= (?:library|types))/, "typescript"],
  // "node" is Node.js, except a graph's or a cluster's node: "node-based editor", "bitcoin full node",
  // "kubernetes node autoscaler".
  [
    /\bjavascript\b|\bnode\.?js\b|(?<!\b(?:full|kubernetes|k8s|cluster|worker|master|edge|compute|bitcoin|lightning|validator) )\bnode\b(?![- ]based\b| pools?\b| autoscal)|\bnpm\b|\bjs\b/,
    "javascript",
  ],
  [/\bjava\b(?!script)|\bspring boot\b|\bjvm\b/, "java"],
  [/\bkotlin\b|\bandroid jetpack\b/, "kotlin"],
  [/\bswift\b|\bswiftui\b|\bios\b/, "swift"],
  [/\bc\+\+|\bcpp\b/, "c++"],
  [/\bc#|\bcsharp\b|\.net\b|\bdotnet\b/, "c#"],
  [/\bruby\b|\brails\b/, "ruby"],
  [/\bphp\b|\blaravel\b|\bsymfony\b/, "php"],
  [/\bdart\b|\bflutter\b/, "dart"],
  [/\bscala\b/, "scala"],
  [/\belixir\b|\bphoenix framework\b/, "elixir"],
  [/\bhaskell\b/, "haskell"],
  [/\bzig\b/, "zig"],
  [/\blua\b|\bneovim plugin\b/, "lua"],
  [/\bclojure\b/, "clojure"],
  [/\bjulia\b/, "julia"],
  [/\bc language\b|\bin c\b|\bwritten in c\b|\bc library\b/, "c"],
  [/\bshell script|\bbash\b/, "shell"],
  [/\bvue(?:\.?js)?\b/, "vue"],
  [/\bsvelte\b/, "svelte"],
  [/\bocaml\b/, "ocaml"],
  [/\bnim\b/, "nim"],
  [/\bperl\b/, "perl"],
  [/\b(?:r language|in r\b|r package)/, "r"],
];

/** Kinds of client that are applications ("git gui client"), where any other client is a library ("http client"). */
const APP_CLIENT = "(?:gui|desktop|mobile|torrent|bittorrent|e-?mail|mail|irc|chat|music)";
/** Libraries of media ("ebook library"): applications that manage a collection, not code libraries. */
const MEDIA_LIBRARY = "(?:e-?book|music|comic|manga|audiobook)";

const KIND_CUES: ReadonlyArray<readonly [RegExp, Category, string]> = [
  [/\bawesome(?:[- ]lists?)?\b|\bcurated (?:list|collection)\b|\blist of (?:resources|tools|libraries)\b/, "curated-list", "a curated list"],
  // "learning" names learning material, except as a kind of machine learning ("deep learning framework").
  // A cue a word or two before a software noun is what the software handles: "learning management
  // system", "course platform", "book reader" (the classifier's rule for descriptions, docs/classifier.md).
  [
    /(?:\btutorials?\b|\bcourses?\b|\blearn\b|(?<!\b(?:machine|deep|reinforcement|federated|transfer|(?:self-|semi-|un)?supervised|meta|online|active|contrastive|representation|metric|few-shot|zero-shot|ensemble|statistical|incremental|continual)[ -])\blearning\b|\bexercises?\b|\bbook\b)(?!(?: [a-z]+)? (?:system|platform|app|application|software|server|service|tool|editor|viewer|reader|manager|engine|generator|player|client|library|framework)\b)|\binterview prep/,
    "educational",
    "learning material",
  ],
  // Each cue counts where it names the thing asked for, not where it qualifies another noun: "flashcards
  // app" and "app for android" ask for an application, "web application security scanner" and "app
  // framework" do not; "template-based scanner" is no template, an "ebook library" no code library, a
  // "metrics collection agent" no AI agent, a "package manager" a tool and a "desktop client" an
  // application.
  [
    new RegExp(
      `\\bself[- ]hosted\\b|\\bapp(?:lication)?\\b(?=$|[,.;:!?)]| (?:for|with|that|which|in|on|to|written|without|and|or|like|from|using|built|based|by|of)\\b)|\\bdashboard\\b|\\b${APP_CLIENT} clients?\\b|\\b${MEDIA_LIBRARY} librar(?:y|ies)\\b`,
    ),
    "application",
    "an application",
  ],
  [/\b(?:boilerplate|template)\b(?![- ](?:based|free|reduction))|\bstarter(?: kit| template)?\b|\bscaffold/, "starter", "a starter template"],
  [/\bplugins?\b|\bextensions?\b|\badd-?ons?\b/, "plugin", "a plugin or extension"],
  [/\bcli\b|\bcommand[- ]line\b|\btool(?:s|ing)?\b|\blinter\b|\bpackage managers?\b/, "tool", "a tool"],
  [
    new RegExp(`(?<!\\b${MEDIA_LIBRARY} )\\blibrar(?:y|ies)\\b|\\bpackage\\b(?! managers?\\b)|\\bsdk\\b|(?<!\\b${APP_CLIENT} )\\bclient\\b`),
    "library",
    "a library",
  ],
  [/\bframework\b/, "framework", "a framework"],
  [/(?<!\b(?:collection|monitoring|metrics|logging|telemetry|ssh|build|backup|deployment|update) )\bagents?\b|\bagentic\b|\bmcp\b/, "agent", "agents"],
];

/** Head nouns that ask for a programming language itself. */
const LANGUAGE_NOUNS = new Set(["language", "languages"]);

export function understandQuery(query: string): QueryUnderstanding {
  const q = normalize(query);
  let language = languageIn(q);
  // A query for a language names others only as what it runs on, compiles to or looks like ("jvm
  // language by jetbrains", "functional language that compiles to javascript"): Kotlin is written in
  // Kotlin, Elm's compiler in Haskell. The language it names as itself ("zig programming language")
  // stays.
  const head = headPhrase(q);
  if (language !== null && LANGUAGE_NOUNS.has(head.at(-1) ?? "") && !head.includes(language)) language = null;
  const categories: Category[] = [];
  const kinds: string[] = [];
  for (const [re, cat, label] of KIND_CUES) {
    if (re.test(q) && !categories.includes(cat)) {
      categories.push(cat);
      kinds.push(label);
    }
  }
  const notes: string[] = [];
  if (language !== null) notes.push(`language ${language}`);
  if (kinds.length) notes.push(`looking for ${kinds.slice(0, 2).join(" or ")}`);
  return { language, categories: categories.slice(0, 2), notes };
}

/** The programming language a text names (as stored in languageLc), or null; the ranker asks it of single query words. */
export function languageNamed(text: string): string | null {
  return languageIn(normalize(text));
}

/**
 * Languages whose code serves a query that names another: the JavaScript ecosystem is written in
 * TypeScript as often as not (answers to head queries naming JavaScript or Node: 48 in TypeScript, 73 in
 * JavaScript; dev.jsonl's judged repositories: 52 and 168), and a Vue or Svelte component library in either.
 * The other way round does not hold: a query naming TypeScript asks for types.
 */
const SERVED_BY: Readonly<Record<string, readonly string[]>> = {
  javascript: ["typescript"],
  vue: ["typescript", "javascript"],
  svelte: ["typescript", "javascript"],
};

/** Whether a repository written in `repoLanguage` (languageLc) is in the language a query names. */
export function languageServes(queryLanguage: string, repoLanguage: string): boolean {
  return repoLanguage === queryLanguage || (SERVED_BY[queryLanguage]?.includes(repoLanguage) ?? false);
}

/** Each language's aliases, for asking whether a text names one language in particular. */
const ALIASES_OF: ReadonlyMap<string, readonly RegExp[]> = (() => {
  const m = new Map<string, RegExp[]>();
  for (const [re, lang] of LANGUAGE_ALIASES) m.set(lang, [...(m.get(lang) ?? []), re]);
  return m;
})();

/** A repository's own words about what it is: the repository part of its name, its description and topics. */
function ownWords(p: OwnWords): string {
  return `${p.name.slice(p.name.indexOf("/") + 1)} ${p.description ?? ""} ${p.topics.join(" ")}`;
}

type OwnWords = Pick<RepoRecord, "name" | "description" | "topics">;
/**
 * saysLanguage's answers per repository and language, filled as searches ask: a repository is asked of
 * a few languages at most (by ranking, for a repository not written in the query's language, and by its
 * evidence), and payloads live as long as their index version.
 */
const saidCache = new WeakMap<OwnWords, Map<string, boolean>>();

/** languageSaid of a repository's own words (ownWords), cached per repository and language. */
export function saysLanguage(p: OwnWords, language: string): boolean {
  let byLanguage = saidCache.get(p);
  if (!byLanguage) {
    // The answers of the payload p replaced carry over when its own words are unchanged (payload-lineage.ts).
    byLanguage = carriedOver(saidCache, p, ["name", "description", "topics"]) ?? new Map();
    saidCache.set(p, byLanguage);
  }
  let said = byLanguage.get(language);
  if (said === undefined) byLanguage.set(language, (said = languageSaid(language, ownWords(p))));
  return said;
}

/**
 * Whether a repository's own words (its name, description and topics) say the language a query names,
 * whatever its code is written in. Tools for an ecosystem are often written in another language: ruff
 * ("An extremely fast Python linter … written in Rust"), nvm ("Node Version Manager - … bash script"),
 * pyenv, bun. Of the head set's answers to queries naming a language, 67 are written in another and 44
 * of them say it; of dev.jsonl's judged repositories, 126 (83 say it), and 1,470 have no language (929).
 */
export function languageSaid(queryLanguage: string, ownWords: string): boolean {
  const text = normalize(ownWords.replace(/[-_/]/g, " "));
  return ALIASES_OF.get(queryLanguage)?.some((re) => re.test(text)) ?? false;
}

function normalize(text: string): string {
  return collapseWhitespace(text.toLowerCase()).trim();
}

/** The first language whose alias matches the normalised text. */
function languageIn(q: string): string | null {
  for (const [re, lang] of LANGUAGE_ALIASES) if (re.test(q)) return lang;
  return null;
}

/** Words after which a query's head noun has been said: "web framework for rust" → "framework". */
const AFTER_HEAD = new Set([
  "for",
  "with",
  "in",
  "on",
  "of",
  "that",
  "to",
  "from",
  "without",
  "by",
  "using",
  "via",
  "into",
  "over",
  "like",
  "as",
  "which",
  "who",
  "where",
  "at",
  "under",
  "across",
  "between",
  "inside",
  "within",
  "than",
  "when",
  "written",
  "built",
  "based",
]);
/** Words ending in "s" that are not plurals, or name one thing. */
const NOT_PLURAL = new Set([
  "kubernetes",
  "postgres",
  "redis",
  "ios",
  "macos",
  "aws",
  "news",
  "series",
  "analysis",
  "status",
  "sass",
  "less",
  "express",
  "windows",
  "css",
  "sms",
  "dns",
  "https",
  "tls",
  "ssl",
  "rails",
  "pandas",
  "numpy",
  "graphics",
  "physics",
  "mathematics",
  "statistics",
  "analytics",
  "devops",
  "gitops",
  "mlops",
  "chaos",
  "canvas",
  "atlas",
  "paas",
  "saas",
  "iaas",
  "faas",
  "k8s",
  "cms",
  "lens",
  "pages",
  "emacs",
  "ops",
]);

/**
 * Whether the query asks for a kind of thing in the plural ("Python libraries for image processing",
 * "Terminal web browsers"): options to choose from, where a singular query ("web server", "password
 * manager") asks for the thing, usually the one everybody names. `head` is the query's headPhrase: its
 * last word is the head noun.
 */
export function asksForMany(head: readonly string[]): boolean {
  const noun = head.at(-1);
  if (noun === undefined || noun.length < 4 || NOT_PLURAL.has(noun)) return false;
  return noun.endsWith("s") && !/(?:ss|us|is|'s)$/.test(noun);
}

/**
 * The words that say what is asked for: those before the first word that qualifies them ("web
 * framework" of "web framework for rust"), the last of them being the head noun.
 */
export function headPhrase(text: string): readonly string[] {
  const words =
    text
      .toLowerCase()
      .replace(/\([^)]*\)/g, " ")
      .match(/[a-z0-9][a-z0-9.+#'-]*/g) ?? [];
  const out: string[] = [];
  for (const w of words) {
    if (out.length && AFTER_HEAD.has(w)) break;
    out.push(w);
  }
  return out;
}
