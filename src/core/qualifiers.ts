/**
 * GitHub-style search qualifiers inside `query` ("language:go stars:>1000 cli framework"), which
 * models write out of habit. Each recognised `key:value` token is parsed into a filter and removed
 * from the text that is ranked; every other token, `foo:bar` included, stays text. The core parses
 * (so gRPC, Connect, REST and MCP callers all get it); the gateway runs the same parser before it
 * charges, so a malformed qualifier costs nothing.
 *
 * | qualifier | filter |
 * |---|---|
 * | `language:go`, `language:"Jupyter Notebook"` | `language` (one language; two different ones are an error) |
 * | `stars:` / `forks:` `>N` `>=N` `<N` `<=N` `N..M` `N..*` `*..M` `N` | `minStars`/`maxStars`, `minForks`/`maxForks` (integers: `>N` is `>= N+1`); repeated: the bounds intersect |
 * | `topic:cli`, `topic:"machine learning"` | `topics` (lowercased; spaces become `-`, as GitHub topics are written); repeated: any of them, like the filter |
 * | `category:library` | `categories` (one of the 13); repeated: any of them |
 * | `archived:true` / `archived:false` | `excludeArchived: false` / `true`; `archived:true` includes archived repositories, it does not keep only them |
 * | `pushed:` with `YYYY-MM-DD` and the number operators | `pushedAfter` (inclusive) / `pushedBefore` (exclusive), UTC days: `>D` is from D+1, `<=D` up to the end of D, `D` that day |
 *
 * Keys are case-insensitive, a value is a run of non-space characters or a "double-quoted" string, and
 * a qualifier is a whole whitespace-separated token. A recognised key with a bad value (`stars:>abc`,
 * `archived:maybe`, `category:nope`, `pushed:>2024-13-45`, an empty value), a negated recognised key
 * (`-language:go`: no filter can express it) or an unterminated quote is a VALIDATION_ERROR with one
 * detail per problem, path `query`, rule `qualifier`, naming the token.
 *
 * `pushed:` has no field in the spec's filter object, which stays as the spec defines it; it sets the
 * core-internal pushedAfter/pushedBefore (types.ts QualifierOnlyFilters), reported in
 * meta.appliedFilters as `pushedAfter`/`pushedBefore`. Converting to `staleAfterMonths` would have
 * rounded to months and drifted day by day.
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { LIMITS } from "../contract/search-request.js";
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { AppliedQualifier, QualifierOnlyFilters, SearchFilters } from "./types.js";

/** The filters qualifiers may set: the spec's fields and the qualifier-only ones. */
export type QualifierFilters = SearchFilters & QualifierOnlyFilters;
type Field = keyof QualifierFilters;

export interface ParsedQualifier {
  /** As written, e.g. `stars:>1000`. */
  readonly qualifier: string;
  /** The filter fields it set. */
  readonly fields: readonly Field[];
}

export interface ParsedQuery {
  /** The query without its qualifiers, whitespace collapsed; "" when it held nothing else. */
  readonly text: string;
  /** Only the fields the qualifiers set. */
  readonly filters: QualifierFilters;
  readonly qualifiers: readonly ParsedQualifier[];
}

const KEYS = ["language", "stars", "forks", "topic", "archived", "pushed", "category"] as const;
type Key = (typeof KEYS)[number];
const KEY_SET: ReadonlySet<string> = new Set(KEYS);

/** A candidate token: optional `-`, a key of letters, `:`, a quoted or bare value, ending at whitespace or the end. */
const TOKEN = /(^|\s)(-?)([A-Za-z]+):("[^"]*"|"[^"]*$|[^\s]*)(?=\s|$)/g;
const DAY_MS = 86_400_000;

/** A bound pair from one qualifier; null members are open. */
interface Bounds<T> {
  readonly min: T | null;
  readonly max: T | null;
}

class QualifierProblem extends Error {}

function wholeNumber(s: string): number {
  if (!/^\d+$/.test(s)) throw new QualifierProblem(`"${s}" is not a whole number`);
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new QualifierProblem(`${s} is too large`);
  return n;
}

/** A calendar date `YYYY-MM-DD` as epoch ms of its UTC midnight. */
function calendarDay(s: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) throw new QualifierProblem(`"${s}" is not a date as YYYY-MM-DD`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = Date.UTC(y, mo - 1, d);
  const back = new Date(t);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) throw new QualifierProblem(`${s} is not a calendar date`);
  return t;
}

/**
 * `>N`, `>=N`, `<N`, `<=N`, `N..M`, `N..*`, `*..M`, `N` over a discrete scale whose next value after
 * `x` is `x + step` (1 for counts, a day for dates): every bound comes out inclusive.
 */
function range(value: string, parse: (s: string) => number, step: number): Bounds<number> {
  const op = /^(>=|<=|>|<)(.*)$/.exec(value);
  if (op) {
    const n = parse(op[2]!);
    switch (op[1]) {
      case ">":
        return { min: n + step, max: null };
      case ">=":
        return { min: n, max: null };
      case "<":
        return { min: null, max: n - step };
      default:
        return { min: null, max: n };
    }
  }
  const dots = value.indexOf("..");
  if (dots >= 0) {
    const [a, b] = [value.slice(0, dots), value.slice(dots + 2)];
    if (a === "*" && b === "*") throw new QualifierProblem("a range needs at least one bound");
    const min = a === "*" ? null : parse(a);
    const max = b === "*" ? null : parse(b);
    if (min !== null && max !== null && min > max) throw new QualifierProblem(`the range is empty (${a} is after ${b})`);
    return { min, max };
  }
  const n = parse(value);
  return { min: n, max: n };
}

const COUNT_FORMS = "expected >N, >=N, <N, <=N, N..M, N..*, *..M or N with whole numbers";
const DATE_FORMS = "expected >D, >=D, <D, <=D, D..E or D with dates as YYYY-MM-DD";

function countRange(value: string): Bounds<number> {
  try {
    const b = range(value, wholeNumber, 1);
    if (b.max !== null && b.max < 0) throw new QualifierProblem("no repository has fewer than 0");
    return b;
  } catch (err) {
    if (err instanceof QualifierProblem) throw new QualifierProblem(`${err.message}; ${COUNT_FORMS}`);
    throw err;
  }
}

/** Dates as [after, before): `min` inclusive, `max` the start of the day after the last one allowed. */
function dateRange(value: string): { after: string | null; before: string | null } {
  try {
    const b = range(value, calendarDay, DAY_MS);
    return { after: b.min === null ? null : new Date(b.min).toISOString(), before: b.max === null ? null : new Date(b.max + DAY_MS).toISOString() };
  } catch (err) {
    if (err instanceof QualifierProblem) throw new QualifierProblem(`${err.message}; ${DATE_FORMS}`);
    throw err;
  }
}

const CATEGORY_SET: ReadonlySet<string> = new Set(CATEGORIES);

/** Accumulates the qualifiers' filters; repeated qualifiers combine as the table in the header says. */
class Collector {
  language: string | null = null;
  stars: { min: number | null; max: number | null } = { min: null, max: null };
  forks: { min: number | null; max: number | null } = { min: null, max: null };
  pushed: { after: string | null; before: string | null } = { after: null, before: null };
  topics: string[] = [];
  categories: Category[] = [];
  archived: boolean | null = null;

  add(key: Key, value: string): Field[] {
    switch (key) {
      case "language": {
        if (value.length > LIMITS.languageMaxLength) throw new QualifierProblem(`a language is at most ${LIMITS.languageMaxLength} characters`);
        if (this.language !== null && this.language.toLowerCase() !== value.toLowerCase()) {
          throw new QualifierProblem(`only one language can be asked for (already language:${this.language})`);
        }
        this.language ??= value;
        return ["language"];
      }
      case "stars":
      case "forks": {
        const b = countRange(value);
        const acc = key === "stars" ? this.stars : this.forks;
        if (b.min !== null) acc.min = Math.max(acc.min ?? 0, b.min);
        if (b.max !== null) acc.max = Math.min(acc.max ?? Number.MAX_SAFE_INTEGER, b.max);
        const [lo, hi]: [Field, Field] = key === "stars" ? ["minStars", "maxStars"] : ["minForks", "maxForks"];
        return [...(b.min !== null ? [lo] : []), ...(b.max !== null ? [hi] : [])];
      }
      case "pushed": {
        const d = dateRange(value);
        if (d.after !== null && (this.pushed.after === null || d.after > this.pushed.after)) this.pushed.after = d.after;
        if (d.before !== null && (this.pushed.before === null || d.before < this.pushed.before)) this.pushed.before = d.before;
        return [...(d.after !== null ? (["pushedAfter"] as const) : []), ...(d.before !== null ? (["pushedBefore"] as const) : [])];
      }
      case "topic": {
        const topic = value.toLowerCase().trim().replace(/\s+/g, "-");
        if (!this.topics.includes(topic)) this.topics.push(topic);
        return ["topics"];
      }
      case "category": {
        const c = value.toLowerCase();
        if (!CATEGORY_SET.has(c)) throw new QualifierProblem(`"${value}" is not a category; one of: ${CATEGORIES.join(", ")}`);
        if (!this.categories.includes(c as Category)) this.categories.push(c as Category);
        return ["categories"];
      }
      case "archived": {
        const v = value.toLowerCase();
        if (v !== "true" && v !== "false") throw new QualifierProblem("expected archived:true or archived:false");
        const archived = v === "true";
        if (this.archived !== null && this.archived !== archived) throw new QualifierProblem("archived:true and archived:false contradict each other");
        this.archived = archived;
        return ["excludeArchived"];
      }
    }
  }

  filters(): QualifierFilters {
    const out: { -readonly [K in Field]?: QualifierFilters[K] } = {};
    if (this.language !== null) out.language = this.language;
    if (this.stars.min !== null) out.minStars = this.stars.min;
    if (this.stars.max !== null) out.maxStars = this.stars.max;
    if (this.forks.min !== null) out.minForks = this.forks.min;
    if (this.forks.max !== null) out.maxForks = this.forks.max;
    if (this.topics.length) out.topics = this.topics;
    if (this.categories.length) out.categories = this.categories;
    if (this.archived !== null) out.excludeArchived = !this.archived;
    if (this.pushed.after !== null) out.pushedAfter = this.pushed.after;
    if (this.pushed.before !== null) out.pushedBefore = this.pushed.before;
    return out;
  }
}

/**
 * Splits a query into its text and its qualifiers' filters. Throws ReposearchError(VALIDATION_ERROR),
 * one detail per malformed qualifier (path `query`, rule `qualifier`).
 */
export function parseQualifiers(query: string): ParsedQuery {
  const acc = new Collector();
  const qualifiers: ParsedQualifier[] = [];
  const problems: ErrorDetail[] = [];
  const text = query.replace(TOKEN, (whole: string, lead: string, neg: string, rawKey: string, rawValue: string) => {
    const key = rawKey.toLowerCase();
    if (!KEY_SET.has(key)) return whole;
    const token = whole.slice(lead.length);
    const fail = (why: string): string => {
      problems.push({ path: "query", rule: "qualifier", message: `malformed qualifier "${token}": ${why}` });
      return lead;
    };
    if (neg) return fail(`negated qualifiers are not supported; drop the "-" or use the filters object (e.g. excludeRepos)`);
    if (rawValue.startsWith('"') && (rawValue.length < 2 || !rawValue.endsWith('"'))) return fail("the quoted value has no closing quote");
    const value = rawValue.startsWith('"') ? rawValue.slice(1, -1).trim() : rawValue;
    if (value === "") return fail(`${key}: needs a value right after the colon`);
    try {
      qualifiers.push({ qualifier: token, fields: acc.add(key as Key, value) });
    } catch (err) {
      if (err instanceof QualifierProblem) return fail(err.message);
      throw err;
    }
    return lead;
  });
  if (problems.length) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
    throw new ReposearchError(ErrorCode.ValidationError, `invalid search request: query ${problems[0]!.message}${more}`, { details: problems });
  }
  return { text: qualifiers.length ? text.replace(/\s+/g, " ").trim() : query, filters: acc.filters(), qualifiers };
}

/** Whether the request's own filters set `field` (then the request's value wins over a qualifier's). */
function setExplicitly(explicit: SearchFilters | undefined, field: Field): boolean {
  return explicit !== undefined && field in explicit && (explicit as Record<string, unknown>)[field] !== undefined;
}

/**
 * The request's filters with the qualifiers' filled in where the request set nothing: explicit
 * filters win field by field. Also reports, per qualifier, which of its fields were overridden.
 */
export function mergeQualifierFilters(
  explicit: SearchFilters | undefined,
  parsed: ParsedQuery,
): { readonly filters: QualifierFilters | undefined; readonly applied: readonly AppliedQualifier[] } {
  if (parsed.qualifiers.length === 0) return { filters: explicit, applied: [] };
  const merged: Record<string, unknown> = { ...explicit };
  for (const [field, value] of Object.entries(parsed.filters)) if (!setExplicitly(explicit, field as Field)) merged[field] = value;
  const applied = parsed.qualifiers.map((q) => ({
    qualifier: q.qualifier,
    fields: [...q.fields],
    overridden: q.fields.filter((f) => setExplicitly(explicit, f)),
  }));
  return { filters: merged as QualifierFilters, applied };
}
