/**
 * Validates a Qdrant filter (the subset in ../filter.ts) and turns it into a small typed tree that the
 * payload index executes. Everything a malformed filter can get wrong is caught here, once, with a
 * path per problem, so evaluation never meets a surprise. Qdrant rejects the same shapes.
 */
import { ErrorCode, ReposearchError, type ErrorDetail } from "../../common/errors.js";
import { parseDatetimeMs } from "./filter-datetime.js";
import { normalizePointId } from "../filter.js";

export { normalizePointId };

/** A list of match operands, typed the way Qdrant's AnyVariants is (keywords or integers). */
export interface CList {
  readonly type: "strings" | "integers" | "empty";
  readonly strings: readonly string[];
  readonly integers: readonly number[];
}

export type CMatch =
  | { readonly kind: "value"; readonly value: string | number | boolean }
  | { readonly kind: "any"; readonly list: CList }
  | { readonly kind: "except"; readonly list: CList };

/** Bounds of a range; an absent bound is undefined. Datetime ranges hold epoch milliseconds. */
export interface CRange {
  readonly gt: number | undefined;
  readonly gte: number | undefined;
  readonly lt: number | undefined;
  readonly lte: number | undefined;
}

export interface CField {
  readonly kind: "field";
  readonly key: string;
  readonly match: CMatch | undefined;
  readonly range: CRange | undefined;
  readonly datetimeRange: CRange | undefined;
}

export type CNode =
  | CField
  | { readonly kind: "isNull"; readonly key: string }
  | { readonly kind: "isEmpty"; readonly key: string }
  | { readonly kind: "hasId"; readonly ids: readonly string[] }
  | CFilter;

export interface CFilter {
  readonly kind: "filter";
  readonly must: readonly CNode[];
  readonly should: readonly CNode[];
  readonly mustNot: readonly CNode[];
}

const FILTER_KEYS = new Set(["must", "should", "must_not"]);
const FIELD_KEYS = new Set(["key", "match", "range", "datetime_range"]);
const RANGE_KEYS = ["gt", "gte", "lt", "lte"] as const;

/** Compiles `filter`; throws ReposearchError(VALIDATION_ERROR) listing every problem. */
export function compileFilter(filter: unknown, path = "filter"): CFilter {
  const problems: ErrorDetail[] = [];
  const out = compileFilterObject(filter, path, problems);
  if (problems.length > 0) {
    const first = problems[0]!;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
    throw new ReposearchError(ErrorCode.ValidationError, `invalid filter: ${first.path}: ${first.message}${more}`, {
      details: problems,
    });
  }
  return out;
}

/** True when the compiled filter cannot exclude any row. */
export function isUnconstrained(f: CFilter): boolean {
  return f.should.length === 0 && f.mustNot.length === 0 && f.must.every((c) => c.kind === "filter" && isUnconstrained(c));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function compileFilterObject(f: unknown, path: string, problems: ErrorDetail[]): CFilter {
  const empty: CFilter = { kind: "filter", must: [], should: [], mustNot: [] };
  if (!isPlainObject(f)) {
    problems.push({ path, rule: "type", message: "a filter must be an object" });
    return empty;
  }
  for (const k of Object.keys(f)) {
    if (!FILTER_KEYS.has(k)) problems.push({ path: `${path}.${k}`, rule: "unsupported", message: `unsupported filter clause "${k}"` });
  }
  return {
    kind: "filter",
    must: compileClause(f.must, `${path}.must`, problems),
    should: compileClause(f.should, `${path}.should`, problems),
    mustNot: compileClause(f.must_not, `${path}.must_not`, problems),
  };
}

function compileClause(c: unknown, path: string, problems: ErrorDetail[]): CNode[] {
  if (c === undefined || c === null) return [];
  if (Array.isArray(c)) return c.map((x, i) => compileCondition(x, `${path}[${i}]`, problems));
  return [compileCondition(c, path, problems)];
}

function compileCondition(c: unknown, path: string, problems: ErrorDetail[]): CNode {
  const never: CNode = { kind: "filter", must: [], should: [], mustNot: [] };
  if (!isPlainObject(c)) {
    problems.push({ path, rule: "type", message: "a condition must be an object" });
    return never;
  }
  const keys = Object.keys(c);
  if ("key" in c) return compileField(c, path, problems);
  if (keys.length === 1 && keys[0] === "is_null") return { kind: "isNull", key: payloadKeyOf(c.is_null, `${path}.is_null`, problems) };
  if (keys.length === 1 && keys[0] === "is_empty") return { kind: "isEmpty", key: payloadKeyOf(c.is_empty, `${path}.is_empty`, problems) };
  if (keys.length === 1 && keys[0] === "has_id") return { kind: "hasId", ids: pointIdsOf(c.has_id, `${path}.has_id`, problems) };
  // Anything else must be a nested filter; `{}` is an empty filter, as in Qdrant.
  if (keys.every((k) => FILTER_KEYS.has(k))) return compileFilterObject(c, path, problems);
  problems.push({
    path,
    rule: "condition",
    message: `unknown condition shape with keys [${keys.join(", ")}]; expected a field condition, is_null, is_empty, has_id or a nested filter`,
  });
  return never;
}

function payloadKeyOf(v: unknown, path: string, problems: ErrorDetail[]): string {
  if (isPlainObject(v) && typeof v.key === "string" && v.key !== "" && Object.keys(v).length === 1) return v.key;
  problems.push({ path, rule: "type", message: 'expected {"key": "<payload key>"}' });
  return "";
}

function pointIdsOf(v: unknown, path: string, problems: ErrorDetail[]): string[] {
  if (!Array.isArray(v)) {
    problems.push({ path, rule: "type", message: "has_id must be an array of point ids" });
    return [];
  }
  const ids: string[] = [];
  v.forEach((id, i) => {
    if (typeof id === "string") ids.push(normalizePointId(id));
    else if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0) ids.push(String(id));
    else problems.push({ path: `${path}[${i}]`, rule: "type", message: "a point id is a UUID string or a non-negative integer" });
  });
  return ids;
}

function compileField(c: Record<string, unknown>, path: string, problems: ErrorDetail[]): CField {
  const key = typeof c.key === "string" && c.key !== "" ? c.key : "";
  if (key === "") problems.push({ path: `${path}.key`, rule: "type", message: "key must be a non-empty string" });
  for (const k of Object.keys(c)) {
    if (!FIELD_KEYS.has(k)) problems.push({ path: `${path}.${k}`, rule: "unsupported", message: `unsupported field condition "${k}"` });
  }
  const match = c.match === undefined || c.match === null ? undefined : compileMatch(c.match, `${path}.match`, problems);
  const range = c.range === undefined || c.range === null ? undefined : compileRange(c.range, `${path}.range`, problems, "number");
  const datetimeRange =
    c.datetime_range === undefined || c.datetime_range === null ? undefined : compileRange(c.datetime_range, `${path}.datetime_range`, problems, "datetime");
  const given = (k: string) => c[k] !== undefined && c[k] !== null;
  if (!given("match") && !given("range") && !given("datetime_range")) {
    problems.push({ path, rule: "condition", message: "a field condition needs match, range or datetime_range" });
  }
  return { kind: "field", key, match, range, datetimeRange };
}

function compileMatch(m: unknown, path: string, problems: ErrorDetail[]): CMatch | undefined {
  if (!isPlainObject(m)) {
    problems.push({ path, rule: "type", message: "match must be an object" });
    return undefined;
  }
  const keys = Object.keys(m);
  if (keys.length !== 1 || !["value", "any", "except"].includes(keys[0]!)) {
    problems.push({ path, rule: "match", message: 'match needs exactly one of "value", "any", "except"' });
    return undefined;
  }
  if ("value" in m) {
    const v = m.value;
    if (typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isSafeInteger(v))) return { kind: "value", value: v };
    problems.push({ path: `${path}.value`, rule: "type", message: "match value must be a string, an integer or a boolean" });
    return undefined;
  }
  const kind = "any" in m ? "any" : "except";
  const list = compileList(m[kind], `${path}.${kind}`, problems);
  return list === undefined ? undefined : { kind, list };
}

function compileList(v: unknown, path: string, problems: ErrorDetail[]): CList | undefined {
  if (!Array.isArray(v)) {
    problems.push({ path, rule: "type", message: "expected an array of strings or of integers" });
    return undefined;
  }
  if (v.length === 0) return { type: "empty", strings: [], integers: [] };
  if (v.every((x) => typeof x === "string")) return { type: "strings", strings: v as string[], integers: [] };
  if (v.every((x) => typeof x === "number" && Number.isSafeInteger(x))) return { type: "integers", strings: [], integers: v as number[] };
  problems.push({ path, rule: "type", message: "all values must be strings, or all integers" });
  return undefined;
}

function compileRange(r: unknown, path: string, problems: ErrorDetail[], type: "number" | "datetime"): CRange | undefined {
  if (!isPlainObject(r)) {
    problems.push({ path, rule: "type", message: "a range must be an object" });
    return undefined;
  }
  const out: { gt?: number; gte?: number; lt?: number; lte?: number } = {};
  let ok = true;
  for (const k of Object.keys(r)) {
    if (!(RANGE_KEYS as readonly string[]).includes(k)) {
      problems.push({ path: `${path}.${k}`, rule: "unsupported", message: `unsupported range bound "${k}"` });
      ok = false;
    }
  }
  for (const k of RANGE_KEYS) {
    const v = r[k];
    if (v === undefined || v === null) continue;
    if (type === "number") {
      if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
      else {
        problems.push({ path: `${path}.${k}`, rule: "type", message: "range bounds must be finite numbers" });
        ok = false;
      }
    } else {
      const ms = typeof v === "string" ? parseDatetimeMs(v) : null;
      if (ms !== null) out[k] = ms;
      else {
        problems.push({ path: `${path}.${k}`, rule: "format", message: "datetime bounds must be RFC 3339 strings" });
        ok = false;
      }
    }
  }
  return ok ? { gt: out.gt, gte: out.gte, lt: out.lt, lte: out.lte } : undefined;
}

/** Whether a number satisfies every bound of the range. */
export function inRange(r: CRange, v: number): boolean {
  return (r.gt === undefined || v > r.gt) && (r.gte === undefined || v >= r.gte) && (r.lt === undefined || v < r.lt) && (r.lte === undefined || v <= r.lte);
}
