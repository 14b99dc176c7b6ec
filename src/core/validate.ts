/**
 * The request rules of service-spec.md §2.1/§2.2, in one place. The REST facade validates bodies
 * against the OpenAPI schema first, but direct gRPC callers reach the core without it, so the core
 * validates every request itself; both layers can call this to reject exactly the same things.
 *
 * Checks runtime types too (not only ranges), so an unchecked object cast to SearchRequest is safe
 * to pass. All problems are collected, not just the first, and reported as ErrorDetail items
 * (`rule` uses the JSON Schema keyword that the OpenAPI schema would report).
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../common/errors.js";
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { SearchFilters, SearchRequest } from "./types.js";

/** The spec's limits (§8). Lengths count Unicode code points, as JSON Schema's maxLength does. */
export const SEARCH_LIMITS = {
  queryMaxChars: 500,
  limitMin: 1,
  limitMax: 50,
  languageMaxChars: 100,
  excludeReposMaxItems: 50,
  staleAfterMonthsMin: 1,
  staleAfterMonthsMax: 600,
} as const;

/** `owner/repo`: two non-empty parts, one slash, no whitespace. */
export const REPO_NAME_PATTERN = /^[^/\s]+\/[^/\s]+$/;

const REQUEST_KEYS: ReadonlySet<string> = new Set(["query", "limit", "includeTree", "filters", "rerank"]);
const CATEGORY_SET: ReadonlySet<string> = new Set(CATEGORIES);

export function isCategory(v: unknown): v is Category {
  return typeof v === "string" && CATEGORY_SET.has(v);
}

/** Code points, not UTF-16 units, so an emoji counts as one character like it does in the REST schema. */
function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function isRecord(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

class Problems {
  readonly list: ErrorDetail[] = [];
  add(path: string, rule: string, message: string): void {
    this.list.push({ path, rule, message });
  }
}

function checkBool(p: Problems, path: string, v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") {
    p.add(path, "type", "must be a boolean");
    return undefined;
  }
  return v;
}

function checkInt(p: Problems, path: string, v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    p.add(path, "type", "must be an integer");
    return undefined;
  }
  if (v < min) p.add(path, "minimum", `must be >= ${min}`);
  else if (v > max) p.add(path, "maximum", `must be <= ${max}`);
  return v;
}

function checkString(p: Problems, path: string, v: unknown, minChars: number, maxChars: number): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string") {
    p.add(path, "type", "must be a string");
    return undefined;
  }
  const n = charLength(v);
  if (n < minChars) p.add(path, "minLength", minChars === 1 ? "must not be empty" : `must be at least ${minChars} characters`);
  else if (n > maxChars) p.add(path, "maxLength", `must be at most ${maxChars} characters`);
  return v;
}

function checkArray(p: Problems, path: string, v: unknown): readonly unknown[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    p.add(path, "type", "must be an array");
    return undefined;
  }
  return v;
}

function checkFilters(p: Problems, f: unknown): SearchFilters | undefined {
  if (f === undefined) return undefined;
  if (!isRecord(f)) {
    p.add("filters", "type", "must be an object");
    return undefined;
  }
  const out: { -readonly [K in keyof SearchFilters]: SearchFilters[K] } = {};
  for (const key of ["minStars", "maxStars", "minForks", "maxForks"] as const) {
    const v = checkInt(p, `filters.${key}`, f[key], 0);
    if (v !== undefined) out[key] = v;
  }
  const language = checkString(p, "filters.language", f.language, 1, SEARCH_LIMITS.languageMaxChars);
  if (language !== undefined) out.language = language;

  const excludeRepos = checkArray(p, "filters.excludeRepos", f.excludeRepos);
  if (excludeRepos !== undefined) {
    if (excludeRepos.length > SEARCH_LIMITS.excludeReposMaxItems) {
      p.add("filters.excludeRepos", "maxItems", `must have at most ${SEARCH_LIMITS.excludeReposMaxItems} items`);
    }
    excludeRepos.forEach((r, i) => {
      if (typeof r !== "string") p.add(`filters.excludeRepos[${i}]`, "type", "must be a string");
      else if (!REPO_NAME_PATTERN.test(r)) p.add(`filters.excludeRepos[${i}]`, "pattern", "must be owner/repo (two non-empty parts, one slash, no whitespace)");
    });
    out.excludeRepos = excludeRepos.filter((r): r is string => typeof r === "string");
  }

  const categories = checkArray(p, "filters.categories", f.categories);
  if (categories !== undefined) {
    categories.forEach((c, i) => {
      if (!isCategory(c)) p.add(`filters.categories[${i}]`, "enum", `must be one of: ${CATEGORIES.join(", ")}`);
    });
    out.categories = categories.filter(isCategory);
  }

  const topics = checkArray(p, "filters.topics", f.topics);
  if (topics !== undefined) {
    if (topics.length < 1) p.add("filters.topics", "minItems", "must have at least 1 item");
    topics.forEach((t, i) => checkString(p, `filters.topics[${i}]`, t, 1, Number.MAX_SAFE_INTEGER));
    out.topics = topics.filter((t): t is string => typeof t === "string");
  }

  const excludeArchived = checkBool(p, "filters.excludeArchived", f.excludeArchived);
  if (excludeArchived !== undefined) out.excludeArchived = excludeArchived;
  const stale = checkInt(p, "filters.staleAfterMonths", f.staleAfterMonths, SEARCH_LIMITS.staleAfterMonthsMin, SEARCH_LIMITS.staleAfterMonthsMax);
  if (stale !== undefined) out.staleAfterMonths = stale;
  return out;
}

/**
 * Validates a search request and returns it normalised: a fresh object holding only the known
 * fields that are set (undefined keys dropped, arrays copied). Presence is preserved exactly:
 * absent stays absent (defaults are the engine's business), so `categories: []` and an absent
 * `categories` stay distinct. Throws ReposearchError(VALIDATION_ERROR) with one detail per problem.
 */
export function validateSearchRequest(req: SearchRequest): SearchRequest {
  const p = new Problems();
  const raw: unknown = req;
  if (!isRecord(raw)) {
    throw new ReposearchError(ErrorCode.ValidationError, "invalid search request: the body must be an object", {
      details: [{ path: "", rule: "type", message: "must be an object" }],
    });
  }
  for (const key of Object.keys(raw)) {
    if (!REQUEST_KEYS.has(key) && raw[key] !== undefined) p.add(key, "additionalProperties", "unknown property");
  }
  let query = "";
  if (raw.query === undefined) p.add("query", "required", "is required");
  else query = checkString(p, "query", raw.query, 1, SEARCH_LIMITS.queryMaxChars) ?? "";
  const limit = checkInt(p, "limit", raw.limit, SEARCH_LIMITS.limitMin, SEARCH_LIMITS.limitMax);
  const includeTree = checkBool(p, "includeTree", raw.includeTree);
  const filters = checkFilters(p, raw.filters);
  const rerank = checkBool(p, "rerank", raw.rerank);

  if (p.list.length > 0) {
    const first = p.list[0]!;
    const more = p.list.length > 1 ? ` (and ${p.list.length - 1} more)` : "";
    throw new ReposearchError(ErrorCode.ValidationError, `invalid search request: ${first.path || "body"} ${first.message}${more}`, {
      details: p.list,
    });
  }
  const out: { -readonly [K in keyof SearchRequest]: SearchRequest[K] } = { query };
  if (limit !== undefined) out.limit = limit;
  if (includeTree !== undefined) out.includeTree = includeTree;
  if (filters !== undefined) out.filters = filters;
  if (rerank !== undefined) out.rerank = rerank;
  return out;
}
