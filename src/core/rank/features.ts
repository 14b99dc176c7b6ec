/**
 * The learned ranker's features: what is known about a query and each of its candidates.
 *
 * Query features let the model tell a head query ("deep learning framework": few, common words; many
 * close lexical matches) from a specific one ("Swift reflection libraries", "Python libraries for working
 * with human languages"): how many terms, how rare, how well the best match covers them, how spread out
 * the lexical scores are. Candidate features are the retrieval signals (BM25F overall and per field,
 * including the anchor text the corpus writes about a project; dense similarity; ranks), how the query
 * names the repository, and priors (stars, forks, mentions by other repositories, freshness, archived,
 * the language and kind the query asks for, and whether the owner is named after the repository).
 *
 * FEATURES is the contract with the trained model: the model file lists the names it was trained on,
 * and a model whose list differs is refused at load (./model.ts).
 */
import { carriedOver } from "../../dataset/payload-lineage.js";
import type { RepoPayload } from "../../dataset/record.js";
import { nameForm } from "../../corpus/anchors.js";
import { analyze } from "../../text/analyzer.js";
import { LEXICAL_FIELDS, queryWords } from "../../store/bm25f.js";
import type { Explanation } from "../../store/types.js";
import { asksForMany, headPhrase, languageNamed, languageServes, saysLanguage, type QueryUnderstanding } from "../query.js";

export const FEATURES = [
  // query
  "q_terms",
  "q_idf_mean",
  "q_idf_max",
  "q_language",
  "q_kinds",
  "q_lex_top",
  "q_lex_gap",
  "q_dense_top",
  // retrieval
  "lex",
  "lex_rank",
  "dense",
  "dense_gap",
  "dense_rank",
  ...LEXICAL_FIELDS.map((f) => `field_${f}` as const),
  "coverage",
  "coverage_gap",
  // naming
  "name_match",
  "name_exact",
  // priors
  "stars",
  "stars_gap",
  "forks",
  "mentions",
  "fame_rank",
  "dense_fame_rank",
  "pushed_gap",
  "archived",
  "language_match",
  "category_match",
  "category_listy",
  "description_words",
  "topics",
  // fame where the query asks for one thing (query.ts, asksForMany): "password manager" wants the
  // project everyone names, "Python libraries for image processing" a range to choose from. A query
  // feature alone cannot say this: it moves every candidate of a query alike, and the trees' first
  // split on it gains nothing, so the intent enters through the candidates' fame.
  "single_stars_gap",
  "single_fame_rank",
  // what the thing asked for is, apart from what qualifies it (query.ts, headPhrase): of "relational
  // database for java" an ORM says relational and java, a database server says database. The share of
  // the head phrase's words said, and whether the head noun is.
  "head_coverage",
  "head_said",
  // whether the owner is named after the repository, whatever the query: a project's canonical
  // repository usually lives in an organisation named after it (kubernetes/kubernetes, denoland/deno),
  // where wrappers, clones, lists and tutorials live under their authors' names. Self-named: 47 % of
  // the head set's answers, 25 % of dev.jsonl's, 29 % of repositories with ≥ 10,000 stars
  // (docs/ranking.md).
  "self_named",
  // the query's words in the order it says them: the share of its adjacent pairs of terms ("container
  // orchestration", "terminal multiplexer") that the repository's description, topics or Debian package
  // description say in that order, side by side or one term apart (the analyser writes a hyphenated
  // compound's joined form after its parts). BM25F reads fields as bags of words; a phrase said as such
  // is the classic proximity evidence of web search. 0 for a one-term query.
  "phrase",
] as const;
export type FeatureName = (typeof FEATURES)[number];
export const FEATURE_COUNT = FEATURES.length;
/** Each feature's column in a row. */
export const FEATURE_INDEX = Object.fromEntries(FEATURES.map((f, i) => [f, i])) as Readonly<Record<FeatureName, number>>;
const IX = FEATURE_INDEX;

/**
 * A candidate "matches well" when its coverage of the query is at least this share of the pool's best;
 * fame_rank ranks those by fame (stars and mentions): the everyday answer to a head query is usually
 * the best-known project among the ones that say what was asked.
 */
export const WELL_MATCHED = 0.75;
/**
 * The same for meaning: dense_fame_rank ranks by fame the candidates whose cosine is at least this
 * share of the pool's best. A famous project whose own words miss the query ("Official mirror of
 * Blender" for "3d modeling and animation software") can still be among the closest in meaning.
 */
const WELL_MEANT = 0.9;

/** Rank given to a candidate a retriever did not return (one past its list). */
export const MISSING_RANK = 256;
const YEAR_MS = 365.25 * 24 * 3600 * 1000;

export interface RankCandidate {
  readonly payload: RepoPayload;
  /** BM25F score, or null when lexical retrieval did not return it. */
  readonly lexical: number | null;
  /** 0-based rank in the lexical list, or null. */
  readonly lexicalRank: number | null;
  /** 0-based rank in the dense list, or null. */
  readonly denseRank: number | null;
}

export interface QueryContext {
  readonly text: string;
  readonly understanding: QueryUnderstanding;
  /** The store's explanation of the candidates, in candidate order. */
  readonly explanation: Explanation;
  /** Best and tenth-best lexical score of the query (0 when fewer). */
  readonly lexicalTop: number;
  readonly lexicalTenth: number;
}

/** Feature rows (candidates × FEATURE_COUNT, row-major) for one query's candidates. */
export function extractFeatures(ctx: QueryContext, cands: readonly RankCandidate[]): Float32Array {
  const F = FEATURE_COUNT;
  const LF = LEXICAL_FIELDS.length;
  const n = cands.length;
  const out = new Float32Array(n * F);
  const ex = ctx.explanation;
  const idfs = ex.terms.map((t) => t.idf);
  const idfSum = idfs.reduce((a, b) => a + b, 0) || 1;
  const queryTerms = new Set(ex.terms.map((t) => t.term));
  const T = ex.terms.length;
  const queryForm = nameForm(ctx.text);
  const queryLower = ctx.text.toLowerCase();
  let denseTop = 0;
  if (ex.dense) for (let i = 0; i < n; i++) denseTop = Math.max(denseTop, ex.dense[i]!);
  // Freshness is measured from the pool's most recently pushed candidate, not from the clock: the same
  // index then gives the same features at any time, so `npm run eval -- --tune` reproduces the model
  // file, and an index served months after its data was collected does not age every repository.
  let starsTop = 0;
  let pushedTop = -Infinity;
  for (const c of cands) {
    const facts = factsOf(c.payload);
    starsTop = Math.max(starsTop, facts.stars);
    if (facts.pushedMs !== null && facts.pushedMs > pushedTop) pushedTop = facts.pushedMs;
  }
  const coverage = conceptCoverage(ctx.text, ex, cands, ctx.understanding.language !== null);
  const head = headPhrase(ctx.text);
  const headCoverage = conceptCoverage(head.join(" "), ex, cands, ctx.understanding.language !== null);
  const headSaid = conceptCoverage(head.slice(-1).join(" "), ex, cands, false);
  let coverageTop = 0;
  for (let i = 0; i < n; i++) coverageTop = Math.max(coverageTop, coverage[i]!);
  const fameRank = famousAmongMatching(cands, coverage, coverageTop * WELL_MATCHED);
  const denseFameRank = ex.dense && denseTop > 0 ? famousAmongMatching(cands, ex.dense, denseTop * WELL_MEANT) : null;
  const u = ctx.understanding;
  const q = [
    ex.terms.length,
    idfs.length ? idfSum / idfs.length : 0,
    idfs.length ? Math.max(...idfs) : 0,
    u.language !== null ? 1 : 0,
    u.categories.length,
    ctx.lexicalTop / idfSum,
    ctx.lexicalTop > 0 ? 1 - ctx.lexicalTenth / ctx.lexicalTop : 0,
    denseTop,
  ];
  const single = !asksForMany(head);
  const queryPairs = adjacentPairs(analyze(ctx.text));
  for (let i = 0; i < n; i++) {
    const c = cands[i]!;
    const p = c.payload;
    const row = out.subarray(i * F, (i + 1) * F);
    row.set(q, 0);
    row[IX.lex] = c.lexical !== null && ctx.lexicalTop > 0 ? c.lexical / ctx.lexicalTop : 0;
    row[IX.lex_rank] = Math.log2(2 + (c.lexicalRank ?? MISSING_RANK));
    const cos = ex.dense ? ex.dense[i]! : 0;
    row[IX.dense] = cos;
    row[IX.dense_gap] = ex.dense ? denseTop - cos : 1;
    row[IX.dense_rank] = Math.log2(2 + (c.denseRank ?? MISSING_RANK));
    for (let f = 0; f < LF; f++) row[IX.field_owner + f] = ex.fields[i * LF + f]! / idfSum;
    row[IX.coverage] = coverage[i]!;
    row[IX.coverage_gap] = coverageTop - coverage[i]!;
    row[IX.fame_rank] = Math.log2(2 + fameRank[i]!);
    row[IX.dense_fame_rank] = Math.log2(2 + (denseFameRank ? denseFameRank[i]! : MISSING_RANK));
    const facts = factsOf(p);
    const names = nameMatch(facts.names, queryTerms, queryForm, queryLower);
    row[IX.name_match] = names.match;
    row[IX.name_exact] = names.exact;
    row[IX.self_named] = facts.selfNamed;
    row[IX.stars] = facts.stars;
    row[IX.stars_gap] = starsTop - Math.max(0, facts.stars);
    row[IX.forks] = facts.forks;
    row[IX.mentions] = facts.mentions;
    row[IX.pushed_gap] = facts.pushedMs === null ? -1 : (pushedTop - facts.pushedMs) / YEAR_MS;
    row[IX.archived] = p.isArchived === null ? -1 : p.isArchived ? 1 : 0;
    row[IX.language_match] = languageMatch(u.language, p);
    row[IX.category_match] = p.category !== null && u.categories.includes(p.category) ? 1 : 0;
    row[IX.category_listy] = p.category === "curated-list" || p.category === "educational" ? 1 : 0;
    row[IX.description_words] = facts.descriptionWords;
    row[IX.topics] = Math.min(20, p.topics.length);
    row[IX.single_stars_gap] = single ? row[IX.stars_gap]! : 0;
    row[IX.single_fame_rank] = single ? row[IX.fame_rank]! : Math.log2(2 + MISSING_RANK);
    row[IX.head_coverage] = headCoverage[i]!;
    row[IX.head_said] = headSaid[i]!;
    row[IX.phrase] = phraseShare(queryPairs, p, ex.found.subarray(i * T, (i + 1) * T));
  }
  return out;
}

/**
 * Per candidate: the idf-weighted share of the query's words it says. A word is what the query writes
 * between spaces, so "self-hosted" counts once, not as the three terms the analyser makes of it (self,
 * host, selfhost), and it is said when any of its terms occurs. A word that names a programming
 * language ("python", "node.js", "c++") is also said by a repository written in that language (or one
 * that serves it: TypeScript for "node.js"), which rarely repeats it in its own description.
 */
function conceptCoverage(text: string, ex: Explanation, cands: readonly RankCandidate[], namesLanguage: boolean): Float32Array {
  const T = ex.terms.length;
  const index = new Map(ex.terms.map((t, j) => [t.term, j]));
  const words: { terms: number[]; idf: number; language: string | null }[] = [];
  for (const { word, terms: analysed } of queryWords(text)) {
    const terms = analysed.flatMap((t) => (index.has(t) ? [index.get(t)!] : []));
    if (!terms.length) continue;
    const idf = Math.max(...terms.map((j) => ex.terms[j]!.idf));
    words.push({ terms, idf, language: namesLanguage ? languageNamed(word) : null });
  }
  const total = words.reduce((s, w) => s + w.idf, 0);
  const out = new Float32Array(cands.length);
  if (total <= 0) return out;
  for (let i = 0; i < cands.length; i++) {
    const lang = cands[i]!.payload.languageLc;
    let said = 0;
    for (const w of words)
      if ((w.language !== null && lang !== null && languageServes(w.language, lang)) || w.terms.some((j) => ex.found[i * T + j] === 1)) said += w.idf;
    out[i] = said / total;
  }
  return out;
}

/** What a payload says regardless of the query, computed once: payloads live as long as their index version, and searches repeat them. */
interface PayloadFacts {
  /** log1p(stars), -1 when unknown. */
  readonly stars: number;
  readonly forks: number;
  readonly mentions: number;
  /** Stars and how many repositories mention it, on log scales. */
  readonly fame: number;
  readonly pushedMs: number | null;
  readonly descriptionWords: number;
  /** Its own name and its aliases, analysed. */
  readonly names: readonly NameParts[];
  /** 1 when the owner is named after the repository (selfNamed), else 0. */
  readonly selfNamed: number;
}

const factsCache = new WeakMap<RepoPayload, PayloadFacts>();

/**
 * 1 when the repository is written in the language the query names (or one serving it), 0.5 when its
 * own words say that language though its code is in another (ruff, a Python linter written in Rust),
 * -1 when neither, 0 when the query names none or the repository's language is unknown.
 */
function languageMatch(language: string | null, p: RepoPayload): number {
  if (language === null) return 0;
  if (p.languageLc !== null && languageServes(language, p.languageLc)) return 1;
  if (saysLanguage(p, language)) return 0.5;
  return p.languageLc === null ? 0 : -1;
}

function factsOf(p: RepoPayload): PayloadFacts {
  let facts = factsCache.get(p);
  if (!facts) {
    // The text facts of the payload p replaced, when that text is unchanged (src/dataset/payload-lineage.ts).
    const text = carriedOver(factsCache, p, ["name", "aliases", "description"]);
    facts = {
      stars: p.stars === null ? -1 : Math.log1p(p.stars),
      forks: p.forks === null ? -1 : Math.log1p(p.forks),
      mentions: Math.log1p(p.mentions),
      fame: Math.log1p(p.stars ?? 0) + Math.log1p(p.mentions),
      pushedMs: p.pushedAt === null ? null : Date.parse(p.pushedAt),
      descriptionWords: text?.descriptionWords ?? (p.description ? Math.min(100, p.description.split(/\s+/).length) : 0),
      selfNamed: text?.selfNamed ?? (selfNamed(p.name) ? 1 : 0),
      names:
        text?.names ??
        [p.name, ...p.aliases].map((full) => {
          const repo = full.slice(full.indexOf("/") + 1);
          return { lower: full.toLowerCase(), form: nameForm(repo), words: analyze(repo) };
        }),
    };
    factsCache.set(p, facts);
  }
  return facts;
}

/**
 * The share of `queryPairs` the payload says (see "phrase" in FEATURES). A pair needs both its terms in
 * the repository, so a candidate that has fewer than two of the query's terms (`found`, any field) is
 * not analysed: most of a pool, whose first analysis is what the feature costs (measured in
 * docs/performance.md).
 */
function phraseShare(queryPairs: readonly string[], p: RepoPayload, found: Uint8Array): number {
  if (!queryPairs.length) return 0;
  let terms = 0;
  for (const f of found) terms += f;
  if (terms < 2) return 0;
  let pairs = pairsCache.get(p);
  if (!pairs) {
    pairs =
      carriedOver(pairsCache, p, ["description", "topics", "packaged"]) ??
      new Set([p.description, ...p.topics, p.packaged].flatMap((t) => (t ? nearPairs(analyze(t)) : [])));
    pairsCache.set(p, pairs);
  }
  let said = 0;
  for (const pair of queryPairs) if (pairs.has(pair)) said++;
  return said / queryPairs.length;
}

/** Ordered pairs of analysed terms at most one term apart in a payload's description, each topic and its package description. */
const pairsCache = new WeakMap<RepoPayload, ReadonlySet<string>>();

/** "a b", "b c" of the terms [a, b, c]. */
function adjacentPairs(terms: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < terms.length; i++) out.push(`${terms[i - 1]} ${terms[i]}`);
  return out;
}

/** "a b", "a c", "b c" of the terms [a, b, c]: in order, at most one term apart. */
function nearPairs(terms: readonly string[]): string[] {
  const out = adjacentPairs(terms);
  for (let i = 2; i < terms.length; i++) out.push(`${terms[i - 2]} ${terms[i]}`);
  return out;
}

/**
 * Whether the owner is named after the repository: kubernetes/kubernetes, denoland/deno, nodejs/node,
 * rust-lang/rust, gohugoio/hugo. A project's own organisation is where its canonical repository lives;
 * forks, mirrors, wrappers and look-alikes live under their authors' names.
 */
export function selfNamed(name: string): boolean {
  const slash = name.indexOf("/");
  const owner = nameForm(name.slice(0, slash));
  const repo = nameForm(name.slice(slash + 1));
  if (!owner || !repo) return false;
  return (
    owner === repo ||
    (repo.length >= 2 && owner.startsWith(repo)) ||
    (repo.length >= 4 && owner.includes(repo)) ||
    (owner.length >= 4 && repo.startsWith(owner))
  );
}

/** Per candidate: its rank by fame among those whose `match` (coverage or cosine) is at least `minMatch`, else MISSING_RANK. */
function famousAmongMatching(cands: readonly RankCandidate[], match: Float32Array, minMatch: number): Int32Array {
  const matching = cands.map((_, i) => i).filter((i) => match[i]! > 0 && match[i]! >= minMatch);
  const fame = matching.length > 1 ? Float64Array.from(cands, (c) => factsOf(c.payload).fame) : null;
  if (fame) matching.sort((a, b) => fame[b]! - fame[a]! || a - b);
  const rank = new Int32Array(cands.length).fill(MISSING_RANK);
  matching.forEach((i, r) => (rank[i] = r));
  return rank;
}

/**
 * How the query names the repository: `match` is the best share of a name's words (the repository
 * part of its own name or an alias) that the query holds; `exact` is 1 when the query is the name
 * ("next.js" for vercel/next.js) or contains `owner/repo` of any of its names.
 */
function nameMatch(names: readonly NameParts[], queryTerms: ReadonlySet<string>, queryForm: string, queryLower: string): { match: number; exact: number } {
  let match = 0;
  let exact = 0;
  for (const n of names) {
    if (queryLower.includes(n.lower) || (queryForm !== "" && n.form === queryForm)) exact = 1;
    if (n.words.length) {
      let hit = 0;
      for (const w of n.words) if (queryTerms.has(w)) hit++;
      match = Math.max(match, hit / n.words.length);
    }
  }
  return { match, exact };
}

interface NameParts {
  /** `owner/repo`, lowercase. */
  readonly lower: string;
  /** The repository part's word form (nameForm). */
  readonly form: string;
  /** The repository part's analysed words. */
  readonly words: readonly string[];
}
