/**
 * The load tests' request mix: dev.jsonl queries crossed with the filter combinations of
 * loadtest/k6/query-mix.json (the same file the k6 scripts open, so both generators send the same
 * kind of traffic). The k6 side (lib.js) picks at random per iteration; this side builds a fixed,
 * seeded sequence of request bodies so runs are repeatable.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { projectRoot } from "../src/config/config.js";
import { loadEvalQueries } from "../src/eval/metrics.js";

export interface MixEntry {
  readonly name: string;
  readonly weight: number;
  /** A request body without `query`; may hold the "$language" and "$category" placeholders. */
  readonly body: Readonly<Record<string, unknown>>;
}

export interface QueryMix {
  readonly fallbackLanguage: string;
  readonly fallbackCategory: string;
  readonly entries: readonly MixEntry[];
}

/** What the mix needs of a dev.jsonl line. */
export interface MixQuery {
  readonly query: string;
  readonly language: string | null;
  readonly category_guess: string | null;
}

export interface MixRequest {
  /** The mix entry's name (a tag for per-entry figures). */
  readonly mix: string;
  readonly body: Record<string, unknown>;
}

export const DEFAULT_MIX_PATH = path.join(projectRoot, "loadtest", "k6", "query-mix.json");
export const DEFAULT_QUERIES_PATH = path.resolve(projectRoot, "..", "shared", "eval", "dev.jsonl");

export function loadMix(file: string = DEFAULT_MIX_PATH): QueryMix {
  const raw = JSON.parse(readFileSync(file, "utf8")) as Partial<QueryMix>;
  const entries = raw.entries ?? [];
  if (entries.length === 0) throw new Error(`${file}: no entries`);
  for (const e of entries) {
    if (typeof e.name !== "string" || !(typeof e.weight === "number" && e.weight > 0) || typeof e.body !== "object" || e.body === null) {
      throw new Error(`${file}: bad entry ${JSON.stringify(e)}`);
    }
  }
  return { fallbackLanguage: raw.fallbackLanguage ?? "Python", fallbackCategory: raw.fallbackCategory ?? "library", entries };
}

export async function loadMixQueries(file: string = DEFAULT_QUERIES_PATH): Promise<MixQuery[]> {
  const all = await loadEvalQueries(file);
  if (all.length === 0) throw new Error(`${file}: no queries`);
  return all.map((q) => ({ query: q.query, language: q.language ?? null, category_guess: q.category_guess ?? null }));
}

/** The body of one request: the entry's template with placeholders filled from `q`, plus the query. */
export function resolveBody(mix: QueryMix, entry: MixEntry, q: MixQuery): Record<string, unknown> {
  const sub = (v: unknown): unknown => {
    if (v === "$language") return q.language ?? mix.fallbackLanguage;
    if (v === "$category") return q.category_guess ?? mix.fallbackCategory;
    if (Array.isArray(v)) return [...new Set(v.map(sub))];
    if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sub(x)]));
    return v;
  };
  return { query: q.query, ...(sub(entry.body) as Record<string, unknown>) };
}

/** mulberry32: a small seeded PRNG, so a run's request sequence is repeatable. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An entry picked by weight with `r` in [0, 1). */
export function pickEntry(entries: readonly MixEntry[], r: number): MixEntry {
  const total = entries.reduce((s, e) => s + e.weight, 0);
  let x = r * total;
  for (const e of entries) {
    if ((x -= e.weight) < 0) return e;
  }
  return entries[entries.length - 1]!;
}

/** `n` requests: a uniformly random query and a weight-picked mix entry each, from a seeded PRNG. */
export function buildRequests(mix: QueryMix, queries: readonly MixQuery[], n: number, seed = 1): MixRequest[] {
  const rnd = prng(seed);
  return Array.from({ length: n }, () => {
    const q = queries[Math.floor(rnd() * queries.length)]!;
    const entry = pickEntry(mix.entries, rnd());
    return { mix: entry.name, body: resolveBody(mix, entry, q) };
  });
}
