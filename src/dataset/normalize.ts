/**
 * Validation and normalisation of one raw dataset line. Strict about types (a wrong type rejects the
 * record with a reason, which the indexer counts and reports with the line number), lenient about the
 * dataset's conventions for "unknown" ("N/A", "" and null all become null).
 */
import type { RepoRecord } from "./record.js";

/** GitHub's rules: owner 1–39 of [A-Za-z0-9-]; repository 1–100 of [A-Za-z0-9._-]. */
const NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;
const NULLISH_STRINGS = new Set(["", "n/a", "na", "null", "none"]);
const MAX_DESCRIPTION = 1000;
const MAX_README = 4000;
const MAX_TREE = 200;

export type NormalizeResult = { ok: true; record: RepoRecord } | { ok: false; reason: string };

class FieldError extends Error {}

function str(raw: Record<string, unknown>, field: string, max = 10_000): string | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw new FieldError(`${field}: expected string or null, got ${typeof v}`);
  const t = v.trim();
  if (NULLISH_STRINGS.has(t.toLowerCase())) return null;
  return t.length > max ? t.slice(0, max) : t;
}

function count(raw: Record<string, unknown>, field: string): number | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v === "string" && NULLISH_STRINGS.has(v.trim().toLowerCase())) return null;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new FieldError(`${field}: expected a number or null`);
  if (v < 0) throw new FieldError(`${field}: must be >= 0, got ${v}`);
  return Math.round(v);
}

function bool(raw: Record<string, unknown>, field: string): boolean | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "boolean") throw new FieldError(`${field}: expected boolean or null`);
  return v;
}

/** Any parseable date → ISO 8601 UTC; date-only values become midnight UTC. */
function date(raw: Record<string, unknown>, field: string): string | null {
  const s = str(raw, field, 64);
  if (s === null) return null;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : s);
  if (!Number.isFinite(ms)) throw new FieldError(`${field}: not a date: ${JSON.stringify(s.slice(0, 40))}`);
  return new Date(ms).toISOString();
}

function stringArray(raw: Record<string, unknown>, field: string, max: number): string[] | null {
  const v = raw[field];
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) throw new FieldError(`${field}: expected an array or null`);
  const out: string[] = [];
  for (const item of v) {
    if (typeof item !== "string") throw new FieldError(`${field}: items must be strings`);
    if (out.length < max) out.push(item);
  }
  return out;
}

function normalizeTopics(topics: string[] | null): string[] {
  if (!topics) return [];
  const seen = new Set<string>();
  for (const t of topics) {
    const v = t.trim().toLowerCase();
    if (v && v.length <= 100) seen.add(v);
  }
  return [...seen];
}

export function normalizeRecord(raw: unknown): NormalizeResult {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { ok: false, reason: "not a JSON object" };
  const r = raw as Record<string, unknown>;
  try {
    const name = str(r, "name", 200);
    if (name === null) return { ok: false, reason: "name: missing" };
    if (!NAME_RE.test(name)) return { ok: false, reason: `name: not an owner/repo name: ${JSON.stringify(name.slice(0, 80))}` };
    let url = str(r, "url", 500);
    if (url !== null && !/^https?:\/\//i.test(url)) throw new FieldError("url: not an http(s) URL");
    url ??= `https://github.com/${name}`;

    const llmsTxt = bool(r, "llmsTxt");
    const llmsPaths = stringArray(r, "llmsTxtPaths", 20);
    const record: RepoRecord = {
      key: name.toLowerCase(),
      name,
      url,
      description: str(r, "description", MAX_DESCRIPTION),
      stars: count(r, "stars"),
      forks: count(r, "forks"),
      language: str(r, "language", 100),
      topics: normalizeTopics(stringArray(r, "topics", 100)),
      pushedAt: date(r, "pushedAt"),
      isArchived: bool(r, "isArchived"),
      homepage: str(r, "homepage", 500),
      license: str(r, "license", 100),
      createdAt: date(r, "createdAt"),
      readme: str(r, "readme", MAX_README),
      tree: stringArray(r, "tree", MAX_TREE),
      llmsTxtPaths: llmsTxt === null ? (llmsPaths && llmsPaths.length ? llmsPaths : null) : llmsTxt ? (llmsPaths ?? ["llms.txt"]) : [],
      lastSeen: date(r, "lastSeen"),
      aliases: [],
    };
    return { ok: true, record };
  } catch (e) {
    if (e instanceof FieldError) return { ok: false, reason: e.message };
    throw e;
  }
}

/** True when `a` should replace `b` as the record for the same key (newest snapshot wins; later line on ties). */
export function isNewer(a: RepoRecord, b: RepoRecord): boolean {
  const ta = a.lastSeen ? Date.parse(a.lastSeen) : -Infinity;
  const tb = b.lastSeen ? Date.parse(b.lastSeen) : -Infinity;
  return ta >= tb;
}
