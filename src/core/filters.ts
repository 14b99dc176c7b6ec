/**
 * The spec's `filters` object → the effective filters (defaults applied, reported as
 * meta.appliedFilters) → one Qdrant filter that both stores apply before ranking.
 *
 * Semantics chosen where the spec is silent (docs/architecture.md, "Filters"):
 *   - excludeArchived drops rows whose flag is true; rows whose flag is not captured (null) stay.
 *   - star, fork and freshness bounds drop rows whose value is unknown (null): they cannot be shown
 *     to satisfy the bound.
 *   - default categories: every category but educational and curated-list, plus uncategorized rows
 *     (the classifier abstained, so nothing says they are either); explicit lists admit only the
 *     listed categories; [] disables the category filter.
 */
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { Condition, Filter } from "../store/filter.js";
import type { AppliedFilters, QualifierOnlyFilters, SearchFilters } from "./types.js";

export const DEFAULT_CATEGORIES: readonly Category[] = CATEGORIES.filter((c) => c !== "educational" && c !== "curated-list");

/** `f` may carry the qualifier-only fields (src/core/qualifiers.ts); they are reported only when set. */
export function applyFilterDefaults(f: (SearchFilters & QualifierOnlyFilters) | undefined): AppliedFilters {
  const cats = f?.categories;
  const categories =
    cats === undefined
      ? { mode: "default" as const, values: [...DEFAULT_CATEGORIES], includeUncategorized: true }
      : cats.length === 0
        ? { mode: "all" as const, values: [], includeUncategorized: true }
        : { mode: "explicit" as const, values: [...new Set(cats)], includeUncategorized: false };
  return {
    categories,
    excludeArchived: f?.excludeArchived ?? true,
    minStars: f?.minStars ?? null,
    maxStars: f?.maxStars ?? null,
    minForks: f?.minForks ?? null,
    maxForks: f?.maxForks ?? null,
    language: f?.language ?? null,
    excludeRepos: [...(f?.excludeRepos ?? [])],
    topics: [...(f?.topics ?? [])],
    staleAfterMonths: f?.staleAfterMonths ?? null,
    ...(f?.pushedAfter !== undefined ? { pushedAfter: f.pushedAfter } : {}),
    ...(f?.pushedBefore !== undefined ? { pushedBefore: f.pushedBefore } : {}),
  };
}

/** `staleAfterMonths` cutoffs are taken from `now` truncated to this (see toStoreFilter). */
export const CUTOFF_GRANULARITY_MS = 60_000;

/** The freshness cutoff: `now` minus N calendar months (UTC). */
export function staleCutoff(months: number, now: Date): Date {
  const d = new Date(now.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() - months);
  // Clamp to the month's last day (e.g. 31 March − 1 month → 28/29 February).
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, last));
  return d;
}

function range(key: string, gte: number | null, lte: number | null): Condition | null {
  if (gte === null && lte === null) return null;
  return { key, range: { ...(gte !== null ? { gte } : {}), ...(lte !== null ? { lte } : {}) } };
}

/** The Qdrant filter for the effective filters, or undefined when nothing constrains the search. */
export function toStoreFilter(a: AppliedFilters, now: Date = new Date()): Filter | undefined {
  const must: Condition[] = [];
  const mustNot: Condition[] = [];
  const should: Condition[] = [];
  const stars = range("stars", a.minStars, a.maxStars);
  if (stars) must.push(stars);
  const forks = range("forks", a.minForks, a.maxForks);
  if (forks) must.push(forks);
  if (a.language !== null) must.push({ key: "languageLc", match: { value: a.language.toLowerCase() } });
  if (a.topics.length > 0) must.push({ key: "topics", match: { any: [...new Set(a.topics.map((t) => t.toLowerCase()))] } });
  if (a.staleAfterMonths !== null) {
    // From the start of the current minute: the filter (the store's cache key for its rows) then stays
    // the same for a minute instead of changing with every request, which evaluated it afresh each time
    // and evicted cached filters. Repositories pushed up to a minute before the exact cutoff pass.
    const minute = new Date(Math.floor(now.getTime() / CUTOFF_GRANULARITY_MS) * CUTOFF_GRANULARITY_MS);
    must.push({ key: "pushedAt", datetime_range: { gte: staleCutoff(a.staleAfterMonths, minute).toISOString() } });
  }
  if (a.pushedAfter !== undefined || a.pushedBefore !== undefined) {
    must.push({
      key: "pushedAt",
      datetime_range: { ...(a.pushedAfter !== undefined ? { gte: a.pushedAfter } : {}), ...(a.pushedBefore !== undefined ? { lt: a.pushedBefore } : {}) },
    });
  }
  if (a.excludeArchived) mustNot.push({ key: "isArchived", match: { value: true } });
  if (a.excludeRepos.length > 0) {
    // A project is excluded by any of its names: its current one or an alias (an old, moved name).
    const keys = [...new Set(a.excludeRepos.map((r) => r.toLowerCase()))];
    mustNot.push({ key: "key", match: { any: keys } }, { key: "aliasKeys", match: { any: keys } });
  }
  if (a.categories.mode !== "all") {
    const inCats: Condition = { key: "category", match: { any: [...a.categories.values] } };
    if (a.categories.includeUncategorized) {
      should.push(inCats, { is_null: { key: "category" } });
    } else {
      must.push(inCats);
    }
  }
  if (must.length === 0 && mustNot.length === 0 && should.length === 0) return undefined;
  return {
    ...(must.length ? { must } : {}),
    ...(mustNot.length ? { must_not: mustNot } : {}),
    ...(should.length ? { should } : {}),
  };
}
