/**
 * Fuzzing the REST facade: thousands of random and malformed search bodies against a real gateway
 * and a real gRPC core over a small real index, with a valid key, plenty of credits and high limits.
 *
 * The contract under test: only 200, 400, 403 and 429 may come back (a 500 or any other status
 * fails); every 4xx body validates against the Error schema and every 200 against SearchResponse;
 * a body the published schema rejects is never answered 200 and one it accepts is never refused by
 * the core (the published rules are the enforced rules); the ledger charges exactly one price
 * per 200; no prototype is polluted; nothing is logged at error level.
 *
 * Reproduce a failure with FUZZ_SEED=<seed printed in the failure>; FUZZ_CASES sets the count.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, test } from "vitest";
import { gzipSync } from "node:zlib";
import { setLogLevel, setLogSink } from "../src/common/logger.js";
import { seededRandom } from "../src/common/random.js";
import { loadConfig } from "../src/config/config.js";
import { SEARCH_PRICE_MICROS } from "../src/gateway/accounts/types.js";
import { unpairedSurrogateDetails } from "../src/contract/unicode.js";
import { validateResponse, validateSearchRequest } from "../src/gateway/validation.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, tempDir } from "./helpers.js";
import { buildIndex, fundedAccount, stackEnv } from "./stack.js";

const CASES = Number(process.env.FUZZ_CASES ?? 5_000);
const CONCURRENCY = 16;
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const MAX_BODY_BYTES = 16_384;
const ALLOWED = new Set([200, 400, 403, 429]);

// Only warnings and errors are kept: 5,000 access-log lines are of no use here.
const problems: string[] = [];
const restoreSink = setLogSink((line) => {
  if (line.includes('"level":"error"')) problems.push(line);
});
setLogLevel("warn");

let dir: string;
let core: CoreHandle;
let gw: GatewayHandle;
let key: string;
const ACCOUNT = "fuzzer";

beforeAll(async () => {
  dir = await tempDir("gw-fuzz");
  await buildIndex(dir, await datasetLines(1500));
  const config = loadConfig(
    stackEnv(dir, {
      RATE_LIMIT_IP_PER_MINUTE: "1000000",
      RATE_LIMIT_ACCOUNT_PER_MINUTE: "1000000",
      MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      CORE_TIMEOUT_MS: "10000",
    }),
  );
  core = await startCore(config, { version: "fuzz" });
  gw = await startGateway(config, { version: "fuzz", coreAddress: core.grpc.address });
  key = (await fundedAccount(gw.accounts, ACCOUNT, 1000)).key;
});

afterAll(async () => {
  await gw?.close();
  await core?.close();
  setLogSink(restoreSink);
  if (dir) await rm(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- generators

interface Case {
  readonly kind: string;
  readonly body: string | Uint8Array;
  /** undefined: no Content-Type header at all. */
  readonly contentType: string | undefined;
  readonly contentEncoding?: string;
}

const rnd = seededRandom(SEED);
const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const chance = (p: number): boolean => rnd() < p;

const WORDS = [
  "http",
  "client",
  "library",
  "rust",
  "parser",
  "json",
  "web",
  "framework",
  "cli",
  "database",
  "orm",
  "async",
  "graph",
  "neural",
  "agent",
  "llm",
  "react",
  "kubernetes",
  "logging",
  "test",
  "markdown",
  "compiler",
  "game",
  "engine",
  "editor",
];
const CATEGORIES = [
  "library",
  "framework",
  "tool",
  "application",
  "infrastructure",
  "ai-ml",
  "agent",
  "frontend",
  "data",
  "starter",
  "curated-list",
  "educational",
  "plugin",
];
const LANGUAGES = ["Python", "python", "Rust", "Go", "TypeScript", "javascript", "C++", "Jupyter Notebook", "N/A", "Zig"];

/** Random Unicode: ASCII, Latin, CJK, emoji, combining marks, controls, NUL, RTL marks, lone surrogates. */
function unicodeString(n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) {
    switch (int(0, 9)) {
      case 0:
        s += String.fromCharCode(int(0, 31)); // controls, NUL included
        break;
      case 1:
        s += String.fromCharCode(int(0xd800, 0xdfff)); // lone surrogate (JSON.stringify escapes it)
        break;
      case 2:
        s += String.fromCodePoint(int(0x1f300, 0x1faff)); // emoji
        break;
      case 3:
        s += String.fromCodePoint(int(0x4e00, 0x9fff)); // CJK
        break;
      case 4:
        s += pick(["\u200f", "\u202e", "\ufeff", "\u0301", "\u00a0", "\u2028", "\u2029", "\uffff", "\ufffd"]);
        break;
      case 5:
        s += String.fromCodePoint(int(0x80, 0x7ff));
        break;
      default:
        s += String.fromCharCode(int(32, 126));
    }
  }
  return s;
}

function words(n: number): string {
  return Array.from({ length: n }, () => pick(WORDS)).join(" ");
}

/** A random JSON value of bounded size. */
function randomJson(depth = 0): unknown {
  const k = depth > 3 ? int(0, 4) : int(0, 7);
  switch (k) {
    case 0:
      return null;
    case 1:
      return chance(0.5);
    case 2:
      return pick([0, -0, 1, -1, 1.5, 2 ** 53, -(2 ** 53) - 2, 1e308, -1e-308, 5, 10, 50, 51, 600, 601]);
    case 3:
      return chance(0.7) ? words(int(0, 4)) : unicodeString(int(0, 30));
    case 4:
      return pick(["", "NaN", "Infinity", "-0", "1e309", "5", "true", "null", "owner/repo", "__proto__"]);
    case 5:
      return Array.from({ length: int(0, 5) }, () => randomJson(depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = int(0, 5); i > 0; i--) o[pick([...FIELD_NAMES, "__proto__", "constructor", "prototype", unicodeString(3), ""])] = randomJson(depth + 1);
      return o;
    }
  }
}

const FIELD_NAMES = [
  "query",
  "limit",
  "includeTree",
  "filters",
  "minStars",
  "maxStars",
  "minForks",
  "maxForks",
  "language",
  "excludeRepos",
  "categories",
  "topics",
  "excludeArchived",
  "staleAfterMonths",
  "rerank",
];

/** A schema-valid request with random filters. */
function validRequest(): Record<string, unknown> {
  const req: Record<string, unknown> = { query: chance(0.1) ? unicodeString(int(1, 40)) : words(int(1, 8)) };
  if (chance(0.5)) req.limit = int(1, 50);
  if (chance(0.3)) req.includeTree = chance(0.5);
  if (chance(0.6)) {
    const f: Record<string, unknown> = {};
    if (chance(0.3)) f.minStars = int(0, 5000);
    if (chance(0.2)) f.maxStars = int(0, 500000);
    if (chance(0.2)) f.minForks = int(0, 500);
    if (chance(0.2)) f.maxForks = int(0, 50000);
    if (chance(0.3)) f.language = pick(LANGUAGES);
    if (chance(0.2)) f.excludeRepos = Array.from({ length: int(0, 50) }, () => `${pick(WORDS)}/${pick(WORDS)}`);
    if (chance(0.3)) f.categories = Array.from({ length: int(0, 4) }, () => pick(CATEGORIES));
    if (chance(0.2)) f.topics = Array.from({ length: int(1, 4) }, () => pick(WORDS));
    if (chance(0.3)) f.excludeArchived = chance(0.5);
    if (chance(0.2)) f.staleAfterMonths = int(1, 600);
    req.filters = f;
  }
  return req;
}

/** Every place in a (full) request where a value can go. */
const PATHS: readonly string[][] = [
  ["query"],
  ["limit"],
  ["includeTree"],
  ["filters"],
  ...["minStars", "maxStars", "minForks", "maxForks", "language", "excludeRepos", "categories", "topics", "excludeArchived", "staleAfterMonths"].map((f) => [
    "filters",
    f,
  ]),
  ["filters", "excludeRepos", "0"],
  ["filters", "categories", "0"],
  ["filters", "topics", "0"],
];

/** A full valid request with one field replaced by a random (usually wrong-typed) value. */
function wrongTypeAtField(): Record<string, unknown> {
  const req: Record<string, unknown> = {
    query: words(3),
    limit: 5,
    includeTree: false,
    filters: {
      minStars: 1,
      maxStars: 100000,
      minForks: 0,
      maxForks: 100000,
      language: "Python",
      excludeRepos: ["a/b"],
      categories: ["library"],
      topics: ["json"],
      excludeArchived: true,
      staleAfterMonths: 120,
    },
  };
  const p = pick(PATHS);
  let node: Record<string, unknown> = req;
  for (const seg of p.slice(0, -1)) node = node[seg] as Record<string, unknown>;
  const value = chance(0.8) ? randomJson(2) : undefined;
  if (value === undefined) delete node[p[p.length - 1]!];
  else node[p[p.length - 1]!] = value;
  return req;
}

/** JSON text with raw number tokens JSON.stringify cannot produce (some are not JSON at all). */
function rawNumberCase(): string {
  const token = pick([
    "1e309",
    "-1e309",
    "-0",
    "-0.0",
    "0e0",
    "1e-400",
    "12345678901234567890",
    "1E1",
    "10.0",
    "5.000000000000001",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "010",
    "+1",
    ".5",
    "5.",
    "1_000",
    '"5"',
    "null",
  ]);
  const field = pick(["limit", "filters.minStars", "filters.maxForks", "filters.staleAfterMonths", "query"]);
  return field.startsWith("filters.") ? `{"query":"json parser","filters":{"${field.slice(8)}":${token}}}` : `{"query":"json parser","${field}":${token}}`;
}

function deepNesting(): string {
  const n = int(1, 6_000);
  const open = pick(["[", '{"a":']);
  const close = open === "[" ? "]" : "}";
  const inner = `${open.repeat(n)}1${close.repeat(n)}`;
  return pick([inner, `{"query":"x","filters":{"topics":${inner}}}`, `{"query":${inner}}`, `{"query":"x","deep":${inner}}`]);
}

function prototypePollution(): string {
  return pick([
    '{"__proto__":{"query":"x","polluted":"yes"}}',
    '{"query":"x","__proto__":{"polluted":"yes"}}',
    '{"query":"x","constructor":{"prototype":{"polluted":"yes"}}}',
    '{"query":"x","filters":{"__proto__":{"minStars":-1,"polluted":"yes"}}}',
    '{"query":"x","filters":{"constructor":{"prototype":{"polluted":"yes"}}}}',
    '{"query":"x","filters":{"categories":["__proto__"]}}',
    '{"query":"x","filters":{"topics":["__proto__","constructor"],"excludeRepos":["__proto__/constructor"]}}',
    '{"query":"__proto__","limit":1}',
    '[{"__proto__":{"polluted":"yes"}}]',
    '{"query":"x","hasOwnProperty":1}',
    '{"query":"x","toString":"y","valueOf":{}}',
    '{"query":"x","query":{"__proto__":null}}',
  ]);
}

function truncated(): string {
  const full = JSON.stringify(chance(0.5) ? validRequest() : wrongTypeAtField());
  return full.slice(0, int(0, full.length - 1));
}

const JSON_TYPES = ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"];
const ODD_TYPES = [
  undefined,
  "",
  "text/plain",
  "application/x-www-form-urlencoded",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "application/jsonx",
  "multipart/form-data; boundary=x",
  "application/*",
  "*/*",
];

function nextCase(): Case {
  const ct = (): string | undefined => (chance(0.93) ? pick(JSON_TYPES) : pick(ODD_TYPES));
  const r = rnd();
  if (r < 0.22) return { kind: "valid", body: JSON.stringify(validRequest()), contentType: ct() };
  if (r < 0.42) return { kind: "wrong-type-at-field", body: JSON.stringify(wrongTypeAtField()), contentType: ct() };
  if (r < 0.52) return { kind: "random-json", body: JSON.stringify(randomJson()), contentType: ct() };
  if (r < 0.58) return { kind: "raw-number", body: rawNumberCase(), contentType: ct() };
  if (r < 0.63) {
    const n = pick([499, 500, 501, int(0, 600), int(1000, 20_000)]);
    return {
      kind: "huge-string",
      body: JSON.stringify({
        query: chance(0.5) ? "x".repeat(n) : unicodeString(n),
        ...(chance(0.3) ? { filters: { language: "y".repeat(int(90, 120)) } } : {}),
      }),
      contentType: ct(),
    };
  }
  if (r < 0.68) return { kind: "deep-nesting", body: deepNesting(), contentType: ct() };
  if (r < 0.74) return { kind: "random-bytes", body: new Uint8Array(randomBytes(int(0, 3000))), contentType: ct() };
  if (r < 0.8) return { kind: "truncated", body: truncated(), contentType: ct() };
  if (r < 0.86)
    return {
      kind: "unicode",
      body: JSON.stringify({
        query: unicodeString(int(1, 200)),
        filters: chance(0.5) ? { topics: [unicodeString(int(1, 10))], language: unicodeString(int(1, 20)) } : {},
      }),
      contentType: ct(),
    };
  if (r < 0.92) return { kind: "prototype-pollution", body: prototypePollution(), contentType: ct() };
  if (r < 0.95) {
    const s = JSON.stringify(validRequest());
    return pick<Case>([
      { kind: "gzip", body: new Uint8Array(gzipSync(s)), contentType: "application/json", contentEncoding: "gzip" },
      { kind: "bad-gzip", body: new Uint8Array(randomBytes(int(1, 200))), contentType: "application/json", contentEncoding: "gzip" },
      { kind: "unknown-encoding", body: s, contentType: "application/json", contentEncoding: pick(["br", "zstd", "x-nope", "identity, gzip"]) },
      {
        kind: "gzip-bomb-ish",
        body: new Uint8Array(gzipSync(JSON.stringify({ query: "x", pad: "a".repeat(200_000) }))),
        contentType: "application/json",
        contentEncoding: "gzip",
      },
    ]);
  }
  return {
    kind: "edge-literals",
    body: pick([
      "",
      " ",
      "null",
      "true",
      "0",
      '"query"',
      "[]",
      "{}",
      "[[]]",
      '{"query":null}',
      '{"query":"x",}',
      "{\"query\":'x'}",
      '{"query":"x"}garbage',
      '{"query":"x"}{"query":"y"}',
      '\ufeff{"query":"x"}',
      '{"query":"\\ud800"}',
      '{"query":"\\u0000"}',
      '{"query":"x","limit":10,"limit":99}',
    ]),
    contentType: ct(),
  };
}

// ---------------------------------------------------------------- the run

interface Outcome {
  readonly c: Case;
  readonly status: number;
  readonly text: string;
}

function describeCase(c: Case): string {
  const body = typeof c.body === "string" ? c.body : `<${c.body.length} bytes>`;
  return `${c.kind} [content-type ${JSON.stringify(c.contentType)}${c.contentEncoding ? `, encoding ${c.contentEncoding}` : ""}] ${body.length > 300 ? `${body.slice(0, 300)}… (${body.length} chars)` : body}`;
}

/** What the published schema says about a case, when the case reaches schema validation unchanged. */
function schemaVerdict(c: Case): "valid" | "invalid" | "unknown" {
  if (typeof c.body !== "string" || c.contentEncoding) return "unknown";
  if (c.contentType === undefined || c.contentType.split(";")[0]!.trim().toLowerCase() !== "application/json") return "unknown";
  if (/charset=(?!utf-8)/i.test(c.contentType)) return "unknown";
  if (Buffer.byteLength(c.body) > MAX_BODY_BYTES || c.body.startsWith("\ufeff")) return "unknown";
  let parsed: unknown;
  try {
    parsed = c.body.trim() === "" ? {} : JSON.parse(c.body);
  } catch {
    return "invalid";
  }
  if (parsed === null || typeof parsed !== "object") return "invalid"; // body-parser's strict mode: object or array only
  // Strings must be valid Unicode too: an unpaired surrogate is refused beside the schema (src/gateway/unicode.ts).
  return validateSearchRequest(parsed).ok && unpairedSurrogateDetails(parsed).length === 0 ? "valid" : "invalid";
}

test(`fuzz: ${CASES} random and malformed bodies → only 200/400/403/429, every body per the schema (seed ${SEED})`, async () => {
  const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();
  const balanceBefore = await gw.accounts.balance(ACCOUNT);
  const cases = Array.from({ length: CASES }, nextCase);
  const outcomes: Outcome[] = [];
  const failures: string[] = [];
  let next = 0;

  async function worker(): Promise<void> {
    while (next < cases.length) {
      const c = cases[next++]!;
      const headers: Record<string, string> = { "x-api-key": key };
      if (c.contentType !== undefined) headers["content-type"] = c.contentType;
      if (c.contentEncoding) headers["content-encoding"] = c.contentEncoding;
      let res: Response;
      try {
        res = await fetch(`${gw.url}/v1/codehost/search`, { method: "POST", headers, body: c.body });
      } catch (err) {
        failures.push(`transport error ${(err as Error).message}: ${describeCase(c)}`);
        continue;
      }
      const text = await res.text();
      outcomes.push({ c, status: res.status, text });
    }
  }
  const t0 = Date.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsedMs = Date.now() - t0;

  const byStatus = new Map<number, number>();
  const byKind = new Map<string, Map<number, number>>();
  let coreValidation400 = 0;
  for (const { c, status, text } of outcomes) {
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    const k = byKind.get(c.kind) ?? new Map<number, number>();
    k.set(status, (k.get(status) ?? 0) + 1);
    byKind.set(c.kind, k);
    if (failures.length >= 20) continue;
    if (!ALLOWED.has(status)) {
      failures.push(`status ${status}: ${describeCase(c)}\n    → ${text.slice(0, 300)}`);
      continue;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      failures.push(`non-JSON ${status} body: ${describeCase(c)}\n    → ${text.slice(0, 300)}`);
      continue;
    }
    const schema = status === 200 ? "SearchResponse" : "Error";
    const v = validateResponse(schema, body);
    if (!v.valid) {
      failures.push(`${status} body breaks the ${schema} schema (${JSON.stringify(v.errors)}): ${describeCase(c)}\n    → ${text.slice(0, 300)}`);
      continue;
    }
    if (status !== 200) {
      const e = (body as { error: { status: number; code: string } }).error;
      if (e.status !== status) failures.push(`error.status ${e.status} on a ${status}: ${describeCase(c)}`);
      if (status === 400 && e.code !== "VALIDATION_ERROR") failures.push(`400 with code ${e.code}: ${describeCase(c)}`);
      if (/\bat .+:\d+:\d+/.test(text)) failures.push(`stack trace in a body: ${describeCase(c)}`);
    }
    const verdict = schemaVerdict(c);
    if (verdict === "invalid" && status === 200) failures.push(`schema-invalid body answered 200: ${describeCase(c)}`);
    if (verdict === "valid" && status === 400) coreValidation400++;
  }

  const summary = `seed ${SEED}, ${outcomes.length} answers in ${elapsedMs} ms; statuses ${JSON.stringify(Object.fromEntries(byStatus))}; by kind ${JSON.stringify(
    Object.fromEntries([...byKind].map(([k, m]) => [k, Object.fromEntries(m)])),
  )}; schema-valid bodies refused by the core: ${coreValidation400}`;
  console.log(summary);
  assert.deepEqual(failures, [], `FUZZ_SEED=${SEED} reproduces this run\n${summary}`);
  assert.equal(outcomes.length, CASES);
  // The published schema and the core's own validation agree: what passes one passes the other.
  assert.equal(coreValidation400, 0, `schema-valid bodies refused by the core\n${summary}`);
  // The run exercised both paths for real.
  assert.ok((byStatus.get(200) ?? 0) > CASES * 0.1, summary);
  assert.ok((byStatus.get(400) ?? 0) > CASES * 0.3, summary);

  // Exactly one price per answered search, nothing for the rest.
  const balanceAfter = await gw.accounts.balance(ACCOUNT);
  assert.equal(balanceBefore - balanceAfter, (byStatus.get(200) ?? 0) * SEARCH_PRICE_MICROS, "ledger: one debit per 200");

  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), protoBefore, "Object.prototype unchanged");
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(problems, [], "nothing logged at error level");

  // Still serving normally afterwards.
  const h = await fetch(`${gw.url}/health`);
  assert.equal(h.status, 200);
  assert.equal(((await h.json()) as { status: string }).status, "healthy");
});
