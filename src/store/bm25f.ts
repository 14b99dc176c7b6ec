/**
 * BM25F as both stores compute it: the fields of a repository's lexical document, how each is analysed
 * into terms, the tuned parameters, and one term's score in one field. The embedded store indexes with it
 * (./embedded/lexical.ts) and the Qdrant store writes sparse vectors with it (./qdrant/sparse.ts), so the
 * two agree term for term. Formulas: ./embedded/lexical.ts.
 */
import { packageSpeaksFor } from "../corpus/doc-text.js";
import type { RepoPayload } from "../dataset/record.js";
import { analyze, stripMarkup } from "../text/analyzer.js";

export interface LexicalDoc {
  readonly name: string;
  readonly description: string | null;
  readonly topics: readonly string[];
  readonly readme: string | null;
  /** Other `owner/repo` names of the project: an old name finds it. */
  readonly aliases?: readonly string[];
  readonly anchor?: string | null;
}

/**
 * The lexical document of a stored payload. The anchor field holds what others say the project is:
 * other repositories (the anchor text) and a distribution's package description (`packaged`).
 *
 * A repository without a description, or whose description is a mirror notice (packageSpeaksFor), also
 * gets the package description in its description field: the notice says where the code lives, the
 * package what the project is ("SQLite is a C library that implements an SQL database engine"). With a
 * description field that said nothing, such projects lost to projects that say the query's words in
 * their own description. 176 of the 4,980 packaged projects (docs/ranking.md, section 2).
 */
export function lexicalDocOf(p: RepoPayload): LexicalDoc {
  const anchor = p.anchor && p.packaged ? `${p.anchor} ${p.packaged}` : (p.anchor ?? p.packaged ?? null);
  const description = packageSpeaksFor(p.description, p.packaged) ? (p.description ? `${p.description} ${p.packaged}` : p.packaged) : p.description;
  return { name: p.name, description, topics: p.topics, readme: p.readme, aliases: p.aliases, anchor };
}

/** Index fields; `name` ("owner/repo") is split so owner and repo name get their own weight and length norm. */
export const LEXICAL_FIELDS = ["owner", "repo", "description", "topics", "readme", "anchor"] as const;
export type LexicalField = (typeof LEXICAL_FIELDS)[number];
export interface FieldParams {
  /** Multiplies the field's term frequency (≥ 0; 0 ignores the field). */
  readonly weight: number;
  /** Length normalisation in [0, 1]. */
  readonly b: number;
}

export interface LexicalParams {
  /** Term-frequency saturation (≥ 0). */
  readonly k1: number;
  readonly fields: Readonly<Record<LexicalField, FieldParams>>;
}

/**
 * Tuned on the dev queries (long natural-language agent queries against short fields): a low k1
 * (0.2–0.4 is a plateau) rewards matching many distinct query terms over repeating one; the name
 * parts weigh double; README excerpts exist for 5% of repositories only and weigh little, or they
 * crowd out better-described repositories.
 */
export const DEFAULT_LEXICAL_PARAMS: LexicalParams = Object.freeze({
  k1: 0.3,
  fields: Object.freeze({
    owner: Object.freeze({ weight: 2.0, b: 0.5 }),
    repo: Object.freeze({ weight: 2.0, b: 0.5 }),
    description: Object.freeze({ weight: 1.0, b: 0.75 }),
    topics: Object.freeze({ weight: 1.0, b: 0.5 }),
    readme: Object.freeze({ weight: 0.1, b: 0.75 }),
    anchor: Object.freeze({ weight: 0.5, b: 0.3 }),
  }),
});

/** Bump whenever the layout or the analyzer's output changes: old files must be rebuilt. */
export const LEXICAL_FORMAT_VERSION = 4;
/** BM25's idf, ln(1 + (N − df + 0.5) / (df + 0.5)): the embedded index and Qdrant's `idf` modifier alike. */
export function bm25Idf(docCount: number, docFreq: number): number {
  return Math.log(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5));
}

/**
 * One term's BM25 score in one field, the field scored on its own (LexicalIndex.explain, and the Qdrant
 * store's explain from payload text): idf · qtf · s(tf~), tf~ = tf / (1 − b + b · len / avg),
 * s(x) = x(k1 + 1) / (k1 + x).
 */
export function fieldTermScore(idf: number, qtf: number, tf: number, len: number, avg: number, b: number, k1: number): number {
  const norm = tf / (1 - b + (b * len) / avg);
  return qtf * idf * ((norm * (k1 + 1)) / (k1 + norm));
}

/**
 * Analysed tokens of one field of a document (by name or index in LEXICAL_FIELDS). The Qdrant
 * store's sparse vectors use it too, so both stores see the same terms.
 */
export function fieldTokens(doc: LexicalDoc, field: LexicalField | number): string[] {
  const name = typeof doc.name === "string" ? doc.name : "";
  switch (typeof field === "number" ? LEXICAL_FIELDS[field] : field) {
    case "owner":
    case "repo": {
      // The project's own name, then its aliases' (an alias's repo part only when it differs).
      const part = (n: string, owner: boolean) => {
        const i = n.indexOf("/");
        return owner ? (i < 0 ? "" : n.slice(0, i)) : i < 0 ? n : n.slice(i + 1);
      };
      const owner = (typeof field === "number" ? LEXICAL_FIELDS[field] : field) === "owner";
      const own = part(name, owner);
      const out = own ? analyze(own) : [];
      const seen = new Set([own.toLowerCase()]);
      for (const alias of doc.aliases ?? []) {
        const p = part(alias, owner);
        if (p && !seen.has(p.toLowerCase())) {
          seen.add(p.toLowerCase());
          out.push(...analyze(p));
        }
      }
      return out;
    }
    case "description":
      return doc.description ? analyze(stripMarkup(doc.description)) : [];
    case "topics": {
      const out: string[] = [];
      // One topic at a time, so joined forms never span two topics.
      for (const topic of doc.topics ?? []) for (const t of analyze(topic)) out.push(t);
      return out;
    }
    case "readme":
      return doc.readme ? analyze(stripMarkup(doc.readme)) : [];
    case "anchor":
      return doc.anchor ? analyze(doc.anchor) : [];
    default:
      return [];
  }
}

/**
 * A query's terms with their weights (BM25's qtf). Each word the query writes between spaces weighs 1
 * in all, shared by the terms the analyser makes of it: "self-hosted" gives self, host and selfhost a
 * third each, so one hyphenated word does not count three times against "wiki".
 */
export function queryTermWeights(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const { terms } of queryWords(text)) for (const t of terms) out.set(t, (out.get(t) ?? 0) + 1 / terms.length);
  return out;
}

/** The words a query writes between spaces, each with its distinct analysed terms (words without any, such as stop words, left out). */
export function queryWords(text: string): { readonly word: string; readonly terms: readonly string[] }[] {
  return text.split(/\s+/).flatMap((word) => {
    const terms = [...new Set(analyze(word))];
    return terms.length ? [{ word, terms }] : [];
  });
}
