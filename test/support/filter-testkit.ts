/**
 * Test support for the filter engine: an independent, deliberately naive reference evaluator that
 * works on the raw filter JSON (no compile step, no indexes), plus seeded generators of payloads
 * and filters covering every condition type, nulls, missing keys and arrays. Tests compare the
 * payload index and the dense planner against this oracle.
 */
import { CATEGORIES } from "../../src/dataset/record.js";
import type { Condition, Filter } from "../../src/store/filter.js";
import { seededRandom } from "./engine-synthetic.js";

type Json = Record<string, unknown>;

function list(c: unknown): unknown[] {
  if (c === undefined || c === null) return [];
  return Array.isArray(c) ? c : [c];
}

/** Qdrant semantics, written as directly as possible from the documentation. */
export function referenceMatches(filter: Filter, payload: Json, id: string): boolean {
  const must = list(filter.must);
  const should = list(filter.should);
  const mustNot = list(filter.must_not);
  return (
    must.every((c) => referenceCondition(c as Condition, payload, id)) &&
    (should.length === 0 || should.some((c) => referenceCondition(c as Condition, payload, id))) &&
    mustNot.every((c) => !referenceCondition(c as Condition, payload, id))
  );
}

function referenceCondition(c: Condition, payload: Json, id: string): boolean {
  const o = c as Json;
  if (typeof o.key === "string") {
    const raw = Object.prototype.hasOwnProperty.call(payload, o.key) ? payload[o.key] : undefined;
    const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    return values.some((v) => referenceValue(o, v));
  }
  if (o.is_null !== undefined) {
    const v = payload[(o.is_null as Json).key as string];
    return v === null || (Array.isArray(v) && v.includes(null));
  }
  if (o.is_empty !== undefined) {
    const v = payload[(o.is_empty as Json).key as string];
    return v === undefined || v === null || (Array.isArray(v) && v.length === 0);
  }
  if (o.has_id !== undefined) return (o.has_id as unknown[]).some((x) => String(x).toLowerCase() === id.toLowerCase());
  return referenceMatches(c as Filter, payload, id);
}

function referenceValue(c: Json, v: unknown): boolean {
  if (v === null || v === undefined) return false;
  let ok = false;
  const m = c.match as Json | undefined;
  if (m !== undefined && m !== null) {
    if ("value" in m) ok ||= typeof v === typeof m.value && v === m.value;
    if ("any" in m) ok ||= (typeof v === "string" || typeof v === "number") && (m.any as unknown[]).includes(v);
    if ("except" in m) {
      const ex = m.except as unknown[];
      const sameType = ex.length === 0 || typeof ex[0] === typeof v;
      ok ||= (typeof v === "string" || typeof v === "number") && sameType ? !ex.includes(v) : true;
    }
  }
  const r = c.range as Json | undefined;
  if (r !== undefined && r !== null && typeof v === "number") ok ||= bounds(r, v, (x) => x as number);
  const d = c.datetime_range as Json | undefined;
  if (d !== undefined && d !== null && typeof v === "string" && !Number.isNaN(Date.parse(v))) {
    ok ||= bounds(d, Date.parse(v), (x) => Date.parse(x as string));
  }
  return ok;
}

function bounds(r: Json, v: number, conv: (x: unknown) => number): boolean {
  const has = (k: string) => r[k] !== undefined && r[k] !== null;
  return (!has("gt") || v > conv(r.gt)) && (!has("gte") || v >= conv(r.gte)) && (!has("lt") || v < conv(r.lt)) && (!has("lte") || v <= conv(r.lte));
}

const LANGS = ["python", "javascript", "typescript", "go", "rust", "c++"];
const TOPICS = ["cli", "ml", "web", "llm", "agent", "database", "rust", "react", "devops", "security", "game", "api"];
const LICENSES = ["MIT", "Apache-2.0", "GPL-3.0"];

export interface RandomPayloadOptions {
  /** Also add unindexed fields of mixed shape (to exercise the per-row fallback). */
  readonly extras?: boolean;
}

/**
 * Payloads shaped like RepoPayload's filterable fields with realistic gaps (forks, pushedAt,
 * isArchived mostly null), some missing keys, empty and multi-valued topic arrays.
 */
export function randomPayloads(count: number, seed: number, opts: RandomPayloadOptions = {}): Json[] {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const out: Json[] = [];
  for (let i = 0; i < count; i++) {
    const p: Json = {
      key: `owner${i % 37}/repo-${i}`,
      name: `Owner${i % 37}/Repo-${i}`,
      languageLc: rnd() < 0.45 ? null : pick(LANGS),
      topics: rnd() < 0.3 ? [] : Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick(TOPICS)),
      category: rnd() < 0.35 ? null : pick(CATEGORIES),
      stars: rnd() < 0.1 ? null : Math.floor(Math.exp(rnd() * 11)) - 1,
      forks: rnd() < 0.75 ? null : Math.floor(rnd() * 500),
      pushedAt:
        rnd() < 0.7
          ? null
          : new Date(Date.UTC(2018, 0, 1) + Math.floor(rnd() * 9 * 365) * 86_400_000 + (rnd() < 0.5 ? 0 : Math.floor(rnd() * 86_400_000))).toISOString(),
      isArchived: rnd() < 0.85 ? null : rnd() < 0.2,
      license: rnd() < 0.6 ? null : pick(LICENSES),
    };
    // A few rows miss keys entirely: missing is empty but not null.
    if (rnd() < 0.04) delete p.topics;
    if (rnd() < 0.04) delete p.category;
    if (rnd() < 0.04) delete p.forks;
    if (opts.extras === true) {
      const r = rnd();
      p.extraNum = r < 0.3 ? null : r < 0.5 ? [Math.floor(rnd() * 10), Math.floor(rnd() * 10)] : r < 0.6 ? [] : Math.floor(rnd() * 10);
      p.createdAt = rnd() < 0.5 ? null : new Date(Date.UTC(2015, 0, 1) + Math.floor(rnd() * 3000) * 86_400_000).toISOString();
      p.mixed = pick<unknown>(["x", "y", 3, true, null, ["x", 3], [null], []]);
    }
    out.push(p);
  }
  return out;
}

/** A random filter using every condition type, with nesting up to `depth`. */
export function randomFilter(rnd: () => number, ids: readonly string[], depth = 2, extras = false): Filter {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const some = <T>(xs: readonly T[], max: number): T[] => Array.from({ length: Math.floor(rnd() * (max + 1)) }, () => pick(xs));
  const date = () => new Date(Date.UTC(2018, 0, 1) + Math.floor(rnd() * 9 * 365) * 86_400_000).toISOString();
  const clause = (): Condition | Condition[] | undefined => {
    const r = rnd();
    if (r < 0.35) return undefined;
    if (r < 0.5) return cond();
    return Array.from({ length: Math.floor(rnd() * 3) }, cond);
  };
  const cond = (): Condition => {
    const kinds = [
      () => ({ key: pick(["languageLc", "category", "license"]), match: { value: pick([...LANGS, ...CATEGORIES, ...LICENSES]) } }),
      () => ({ key: "topics", match: { value: pick(TOPICS) } }),
      () => ({ key: pick(["topics", "languageLc"]), match: { any: some([...TOPICS, ...LANGS], 3) } }),
      () => ({ key: "category", match: { any: some(CATEGORIES, 3) } }),
      () => ({ key: pick(["topics", "languageLc", "key"]), match: { except: some([...TOPICS, ...LANGS, ids[0] ?? "x"], 3) } }),
      () => ({
        key: "key",
        match: {
          any: some(
            ids.map((_, i) => `owner${i % 37}/repo-${i}`),
            5,
          ),
        },
      }),
      () => ({ key: "isArchived", match: { value: rnd() < 0.5 } }),
      () => ({ key: "isArchived", match: { except: [] as string[] } }),
      () => ({ key: pick(["stars", "forks"]), match: { value: Math.floor(rnd() * 5) } }),
      () => ({ key: "stars", match: { any: [0, 1, 2, 10] } }),
      () => ({ key: "forks", match: { except: [0, 1, 2] } }),
      () => ({ key: pick(["stars", "forks"]), range: randomRange(rnd, () => Math.floor(Math.exp(rnd() * 11)) - 1) }),
      () => ({ key: "pushedAt", datetime_range: randomRange(rnd, date) }),
      () => ({ is_null: { key: pick(["category", "forks", "pushedAt", "isArchived", "topics", "languageLc", "stars"]) } }),
      () => ({ is_empty: { key: pick(["category", "forks", "pushedAt", "isArchived", "topics", "license"]) } }),
      () => ({ has_id: some(ids, 4) }),
      () => (depth > 0 ? randomFilter(rnd, ids, depth - 1, extras) : { is_null: { key: "category" } }),
      ...(extras
        ? [
            () => ({ key: "extraNum", range: randomRange(rnd, () => Math.floor(rnd() * 10)) }),
            () => ({ key: "extraNum", match: { except: [1, 2, 3] } }),
            () => ({ key: "createdAt", datetime_range: randomRange(rnd, date) }),
            () => ({ key: "mixed", match: { except: ["x"] } }),
            () => ({ key: "mixed", match: { any: ["x", "y"] } }),
            () => ({ is_null: { key: "mixed" } }),
            () => ({ is_empty: { key: "mixed" } }),
          ]
        : []),
    ];
    return pick(kinds)() as Condition;
  };
  const f: Filter = {};
  const must = clause();
  const should = clause();
  const mustNot = clause();
  if (must !== undefined) f.must = must;
  if (should !== undefined) f.should = should;
  if (mustNot !== undefined) f.must_not = mustNot;
  return f;
}

function randomRange<T>(rnd: () => number, value: () => T): { gt?: T; gte?: T; lt?: T; lte?: T } {
  const r: { gt?: T; gte?: T; lt?: T; lte?: T } = {};
  const a = value();
  const b = value();
  const less = typeof a === "number" ? (a as number) < (b as number) : String(a) < String(b);
  const [lo, hi] = less ? [a, b] : [b, a];
  if (rnd() < 0.7) r[rnd() < 0.5 ? "gt" : "gte"] = lo;
  if (rnd() < 0.6) r[rnd() < 0.5 ? "lt" : "lte"] = hi;
  return r;
}
