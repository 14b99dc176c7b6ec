/**
 * `structuredContent` of each tool: the REST answer, projected by `detail`. Full detail is the answer
 * as REST gives it (the search asked with `includeTree`); compact detail keeps every field a model
 * ranks or cites by and cuts what is long: the description, the evidence (one snippet), topics,
 * aliases, the tree. The cuts are what keep a default result well under 10k tokens
 * (bench/mcp-size.ts measures it).
 */
import type { RepositoryCard, SearchMeta, SearchResponse, SearchResult } from "../client/types.js";
import { COMPACT, type Detail } from "./schemas.js";

/** `text` cut to at most `max` characters at a word boundary when one is near, with an ellipsis. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.lastIndexOf(" ", max - 1);
  return `${text.slice(0, cut > max * 0.6 ? cut : max - 1).trimEnd()}…`;
}

const clipOrNull = (text: string | null, max: number): string | null => (text === null ? null : clip(text, max));

function compactResult(r: SearchResult): SearchResult {
  return {
    name: r.name,
    url: r.url,
    description: clipOrNull(r.description, COMPACT.descriptionChars),
    score: Math.round(r.score * 1000) / 1000,
    language: r.language,
    stars: r.stars,
    forks: r.forks,
    topics: r.topics.slice(0, COMPACT.topics),
    pushedAt: r.pushedAt,
    isArchived: r.isArchived,
    llmsUrl: r.llmsUrl,
    evidence: r.evidence.slice(0, COMPACT.evidence),
    ...(r.aliases && r.aliases.length > 0 ? { aliases: r.aliases.slice(0, COMPACT.aliases) } : {}),
  };
}

function compactMeta(m: SearchMeta): Pick<SearchMeta, "total" | "timeMs" | "appliedFilters"> & Partial<SearchMeta> {
  return {
    total: m.total,
    timeMs: m.timeMs,
    appliedFilters: m.appliedFilters,
    ...(m.qualifiers ? { qualifiers: m.qualifiers } : {}),
    ...(m.queryText !== undefined ? { queryText: m.queryText } : {}),
  };
}

export interface PresentedSearch {
  readonly query: string;
  readonly results: readonly SearchResult[];
  readonly meta: ReturnType<typeof compactMeta>;
}

export function presentSearch(res: SearchResponse, detail: Detail): PresentedSearch {
  if (detail === "full") return { query: res.query, results: res.results, meta: res.meta };
  return { query: res.query, results: res.results.map(compactResult), meta: compactMeta(res.meta) };
}

export interface PresentedSimilar {
  readonly repo: string;
  readonly results: readonly SearchResult[];
  readonly meta: ReturnType<typeof compactMeta>;
}

/** `repo` is the project's current name, as the answer's `query` gives it (a former name in the request resolves to it). */
export function presentSimilar(res: SearchResponse, detail: Detail): PresentedSimilar {
  const { query, results, meta } = presentSearch(res, detail);
  return { repo: query, results, meta };
}

/**
 * The most a list result may weigh, structured and text together (≈ 20k tokens at 4 characters a
 * token): MCP clients refuse tool results much over 25k tokens. Only full detail can come near it
 * (50 results, each with a 200-entry tree); then trees are left out from the lowest-ranked result up.
 */
export const RESULT_BUDGET_CHARS = 80_000;

/**
 * A list result within RESULT_BUDGET_CHARS: `render` is called again after each tree left out, with a
 * note saying so (an absent `tree` in full detail means "left out"; null means "the index has none").
 */
export function fitToBudget<T extends PresentedSearch | PresentedSimilar>(
  presented: T,
  render: (p: T, notes: readonly string[]) => string,
): { structured: T; text: string } {
  let current = presented;
  let text = render(current, []);
  let omitted = 0;
  for (let i = current.results.length - 1; i >= 0 && JSON.stringify(current).length + text.length > RESULT_BUDGET_CHARS; i--) {
    if (!current.results[i]!.tree) continue;
    current = { ...current, results: current.results.map((r, j) => (j === i ? withoutTree(r) : r)) };
    omitted++;
    text = render(current, [
      `The file trees of the ${omitted} lowest-ranked results with one are left out to keep this answer small; get_repository shows a repository's tree.`,
    ]);
  }
  return { structured: current, text };
}

function withoutTree(r: SearchResult): SearchResult {
  const { tree: _tree, ...rest } = r;
  return rest;
}

/** The card; compact detail leaves `tree` out. */
export type PresentedRepository = Omit<RepositoryCard, "tree"> & { readonly tree?: string | null };

export function presentRepository(card: RepositoryCard, detail: Detail): PresentedRepository {
  if (detail === "full") return card;
  const { tree: _tree, ...rest } = card;
  return { ...rest, readme: clipOrNull(card.readme, COMPACT.readmeChars) };
}
