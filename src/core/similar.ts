/**
 * Repositories like a given one ("alternatives to X"): the core of POST /v1/codehost/similar and the
 * Similar RPC.
 *
 * The seed is found by name (current or former, `key` or `aliasKeys`) with its stored vector. Two
 * candidate lists under the caller's filters, as a search has:
 *   - dense: the nearest neighbours of the seed's own stored vector (no query embedding);
 *   - lexical: BM25F over the seed's words: its topics and description (the README's opening when it
 *     has neither), without the words of its own name, which would bring its plugins and wrappers
 *     ("flask-login" for pallets/flask) rather than alternatives.
 * The joined pool is explained by the store against the seed (cosine of the stored vectors, the
 * idf-weighted share of the seed's terms each candidate has) and scored by a fixed linear blend:
 *
 *   score = 1.0·cosine + 0.6·coverage/max coverage + 0.5·topic overlap (set cosine)
 *         + 0.1·same language + 0.15·log10(1 + stars)/6
 *         − 0.5·same repository name (a fork or copy) − 0.25·name contains the seed's (a plugin)
 *
 * The learned ranker (./rank) is not reused: its features describe how an agent's wording matches a
 * repository (named matches, query understanding, the query's own lexical statistics), which have no
 * meaning for a repository taken as the query, and no judged similar pairs exist to retrain it on. The
 * weights were set by reading the top 10 of a few dozen well-known repositories on a 30,000-repository
 * index (docs/ranking.md, "Similar repositories"): the cosine alone returns near-identical forks and
 * tutorials, the popularity term and the name penalties make the list read as alternatives.
 *
 * The seed itself is excluded by its point and by every name (its key and aliases) after retrieval,
 * not in the store filter: a per-seed filter would be a new entry in the store's filter cache on every
 * call, evicting the few filters searches reuse.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { RepoPayload } from "../dataset/record.js";
import type { Filter } from "../store/filter.js";
import type { PointId, StoredPoint, VectorStore } from "../store/types.js";
import { analyze, stripMarkup } from "../text/analyzer.js";
import { compactTree, groupThousands, llmsUrlOf, sanitizeSnippet } from "./evidence.js";
import type { AppliedFilters, MethodStats, SearchResponse, SearchResult } from "./types.js";

export const SIMILAR_LEXICAL_CANDIDATES = 100;
export const SIMILAR_DENSE_CANDIDATES = 100;

/** The blend's weights (see the module header). */
export const SIMILAR_WEIGHTS = {
  dense: 1.0,
  lexical: 0.6,
  topics: 0.5,
  language: 0.1,
  stars: 0.15,
  sameName: -0.5,
  containsName: -0.25,
} as const;

/** Longest seed text sent to the lexical index, in characters (a description is rarely longer). */
const SEED_TEXT_MAX_CHARS = 600;
/** The most distinctive seed terms that evidence looks for in a candidate. */
const DISTINCTIVE_TERMS = 12;

/** The project `name` (current or former, any case) names, with its stored vector; NOT_FOUND when none. */
export async function resolveRepository(store: VectorStore, name: string, withVector: boolean): Promise<StoredPoint> {
  const key = name.toLowerCase();
  const hits = await store.scroll({
    filter: {
      should: [
        { key: "key", match: { value: key } },
        { key: "aliasKeys", match: { value: key } },
      ],
    },
    limit: 2,
    withVectors: withVector,
  });
  const found = hits.find((h) => h.payload.key === key) ?? hits[0];
  if (!found) throw new ReposearchError(ErrorCode.NotFound, `no indexed repository named ${name}`);
  return found;
}

/** The repository part of `owner/repo`, lowercased. */
function repoPart(key: string): string {
  return key.slice(key.indexOf("/") + 1).toLowerCase();
}

const compact = (s: string): string => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

/**
 * Whether a word of its text names the repository itself: its analysed terms are all words of a name
 * ("go-chi/chi" → chi; "pallets/flask" → flask), or it is a name written together ("ZapDB" for zap-db).
 */
function namesItself(p: RepoPayload): (word: string) => boolean {
  const names = [p.key, ...p.aliasKeys].map(repoPart);
  const terms = new Set(names.flatMap((n) => analyze(n.replace(/[-_.]+/g, " "))));
  const whole = new Set(names.map(compact));
  return (word) => {
    const t = analyze(word);
    return whole.has(compact(word)) || (t.length > 0 && t.every((x) => terms.has(x)));
  };
}

/** What the seed is, as lexical query text: topics and description, else the README's opening, else its name. */
export function seedText(p: RepoPayload): string {
  const ownName = namesItself(p);
  const parts: string[] = [];
  if (p.topics.length) parts.push(p.topics.map((t) => t.replace(/-/g, " ")).join(" "));
  if (p.description) parts.push(p.description);
  if (parts.length === 0 && p.readme) parts.push(stripMarkup(p.readme).slice(0, SEED_TEXT_MAX_CHARS));
  // Words that analyse to nothing (stop words, punctuation) would only cost postings lookups.
  const words = parts
    .join(" ")
    .split(/\s+/)
    .filter((w) => analyze(w).length > 0 && !ownName(w));
  const text = words.join(" ").slice(0, SEED_TEXT_MAX_CHARS);
  return text || repoPart(p.key).replace(/[-_.]+/g, " ");
}

interface Scored {
  readonly id: PointId;
  readonly payload: RepoPayload;
  readonly cosine: number | null;
  readonly coverage: number;
  readonly sharedTopics: readonly string[];
  readonly sameLanguage: boolean;
  score: number;
}

export interface SimilarOptions {
  readonly store: VectorStore;
  readonly limit: number;
  readonly includeTree: boolean;
  readonly applied: AppliedFilters;
  readonly filter: Filter | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Called once per stage with its duration. */
  readonly onStage?: ((stage: "lexical" | "dense" | "rank" | "evidence", seconds: number) => void) | undefined;
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  const reason: unknown = signal.reason;
  if (reason instanceof ReposearchError) throw reason;
  throw new ReposearchError(ErrorCode.DeadlineExceeded, "the request was cancelled or ran past its deadline");
}

async function timed<T>(fn: () => Promise<T>, stage: "lexical" | "dense", hook: SimilarOptions["onStage"]): Promise<T> {
  const t = performance.now();
  try {
    return await fn();
  } finally {
    hook?.(stage, (performance.now() - t) / 1000);
  }
}

/** Set cosine of two topic lists: shared / √(|a|·|b|); 0 when either is empty. */
function topicOverlap(a: readonly string[], b: readonly string[], shared: number): number {
  return a.length && b.length ? shared / Math.sqrt(a.length * b.length) : 0;
}

/** The ranked repositories like `seed` under the options' filters, as a search response whose `query` is the seed's name. */
export async function findSimilar(seed: StoredPoint, o: SimilarOptions): Promise<SearchResponse> {
  const t0 = performance.now();
  const { store, filter } = o;
  const s = seed.payload;
  const own = new Set([s.key, ...s.aliasKeys]);
  const isSeed = (p: RepoPayload): boolean => own.has(p.key) || p.aliasKeys.some((k) => own.has(k));
  const vector = seed.vector !== null && seed.vector.some((x) => x !== 0) ? seed.vector : null;
  const text = seedText(s);

  // One extra of each: the seed is usually its own best match.
  const [lexHits, denseHits] = await Promise.all([
    timed(() => store.lexicalSearch({ text, filter, limit: SIMILAR_LEXICAL_CANDIDATES + 1 }), "lexical", o.onStage),
    vector ? timed(() => store.denseSearch({ vector, filter, limit: SIMILAR_DENSE_CANDIDATES + 1 }), "dense", o.onStage) : Promise.resolve(null),
  ]);
  checkAborted(o.signal);

  const tr = performance.now();
  const pool = new Map<string, { id: PointId; payload: RepoPayload }>();
  for (const h of [...lexHits, ...(denseHits ?? [])]) if (!isSeed(h.payload) && !pool.has(h.payload.key)) pool.set(h.payload.key, h);
  const joined = [...pool.values()];
  const explanation = await store.explain({ text, vector, ids: joined.map((c) => c.id), payloads: joined.map((c) => c.payload) });
  checkAborted(o.signal);
  const maxCoverage = Math.max(1e-6, ...Array.from(explanation.coverage));
  const seedTopics = new Set(s.topics);
  const seedName = repoPart(s.key);
  const W = SIMILAR_WEIGHTS;
  const scored: Scored[] = joined.map((c, i) => {
    const p = c.payload;
    const cosine = explanation.dense ? explanation.dense[i]! : null;
    const coverage = explanation.coverage[i]!;
    const sharedTopics = p.topics.filter((t) => seedTopics.has(t));
    const sameLanguage = s.languageLc !== null && p.languageLc === s.languageLc;
    const name = repoPart(p.key);
    const score =
      W.dense * (cosine ?? 0) +
      W.lexical * (coverage / maxCoverage) +
      W.topics * topicOverlap(s.topics, p.topics, sharedTopics.length) +
      (sameLanguage ? W.language : 0) +
      (W.stars * Math.log10(1 + Math.max(0, p.stars ?? 0))) / 6 +
      (name === seedName ? W.sameName : seedName.length >= 3 && name.includes(seedName) ? W.containsName : 0);
    return { id: c.id, payload: p, cosine, coverage, sharedTopics, sameLanguage, score };
  });
  scored.sort((a, b) => b.score - a.score || (a.payload.key < b.payload.key ? -1 : 1));
  o.onStage?.("rank", (performance.now() - tr) / 1000);

  const te = performance.now();
  const top = scored.slice(0, o.limit);
  const best = top[0]?.score ?? 0;
  const idf = new Map(explanation.terms.map((t) => [t.term, t.idf]));
  const distinctive = [...new Set(analyze(text))].sort((a, b) => (idf.get(b) ?? 0) - (idf.get(a) ?? 0)).slice(0, DISTINCTIVE_TERMS);
  const results: SearchResult[] = top.map((c) => toResult(c, best, s, distinctive, o.includeTree));
  o.onStage?.("evidence", (performance.now() - te) / 1000);

  const methods: Record<string, MethodStats> = { lexical: { hits: lexHits.filter((h) => !isSeed(h.payload)).length, weight: W.lexical } };
  if (denseHits) methods.dense = { hits: denseHits.filter((h) => !isSeed(h.payload)).length, weight: W.dense };
  return {
    query: s.name,
    results,
    meta: { total: scored.length, timeMs: Math.round((performance.now() - t0) * 100) / 100, methods, appliedFilters: o.applied },
  };
}

/** The words of `p`'s name and description whose every analysed term is one of `terms`, in the order of `terms`. */
function sharedWords(p: RepoPayload, terms: readonly string[]): string[] {
  const wanted = new Set(terms);
  const out = new Map<string, number>();
  for (const w of `${p.name.replace(/[-_./]+/g, " ")} ${p.description ?? ""} ${p.topics.join(" ").replace(/-/g, " ")}`.split(/[\s,;:()/]+/)) {
    const t = analyze(w);
    if (t.length === 0 || !t.every((x) => wanted.has(x))) continue;
    const shown = w
      .toLowerCase()
      .replace(/[^\p{L}\p{N}+#.-]/gu, "")
      .replace(/\.$/, "");
    if (shown && !out.has(shown)) out.set(shown, Math.min(...t.map((x) => terms.indexOf(x))));
  }
  return [...out.entries()].sort((a, b) => a[1] - b[1]).map(([w]) => w);
}

function toResult(c: Scored, best: number, seed: RepoPayload, distinctive: readonly string[], includeTree: boolean): SearchResult {
  const p = c.payload;
  const evidence: string[] = [];
  const shared: string[] = [];
  if (c.sharedTopics.length) shared.push(`topics (${c.sharedTopics.slice(0, 5).join(", ")})`);
  if (c.sameLanguage && p.language) shared.push(`language ${p.language}`);
  const words = sharedWords(p, distinctive).filter((w) => !c.sharedTopics.includes(w));
  if (words.length) shared.push(`terms (${words.slice(0, 5).join(", ")})`);
  if (shared.length) evidence.push(sanitizeSnippet(`Shares with ${seed.name}: ${shared.join("; ")}`));
  if (c.cosine !== null) {
    const what = p.description ? `: "${sanitizeSnippet(p.description, 120)}"` : "";
    evidence.push(sanitizeSnippet(`Semantic similarity ${c.cosine.toFixed(2)} (cosine) to ${seed.name}'s embedding${what}`));
  }
  const facts: string[] = [];
  if (p.stars !== null) facts.push(`${groupThousands(p.stars)} stars`);
  if (p.category) facts.push(`category ${p.category}`);
  if (p.pushedAt) facts.push(`last push ${p.pushedAt.slice(0, 10)}`);
  if (p.isArchived === true) facts.push("archived");
  if (facts.length) evidence.push(sanitizeSnippet(`Facts: ${facts.join("; ")}`));
  const result: SearchResult = {
    url: p.url,
    name: p.name,
    description: p.description,
    // exp(score − best): 1 for the best result, in (0, 1] for the rest, as a search reports it.
    score: Math.round(Math.exp(Math.min(0, c.score - best)) * 10_000) / 10_000,
    language: p.language,
    stars: p.stars,
    forks: p.forks,
    topics: [...p.topics],
    pushedAt: p.pushedAt,
    isArchived: p.isArchived,
    llmsUrl: llmsUrlOf(p),
    evidence: evidence.slice(0, 3),
  };
  const named = p.aliases.length ? { ...result, aliases: [...p.aliases] } : result;
  return includeTree ? { ...named, tree: compactTree(p.tree) } : named;
}
