/**
 * The filter flags of `reposearch search` and `reposearch similar`, shaped after `gh search repos`:
 * each flag becomes one field of the contract's filter object. `--stars` and `--forks` take the query
 * qualifiers' range syntax (`">100"`, `">=10"`, `"<5"`, `"10..50"`, `"100"`), parsed by the same
 * parser (src/core/qualifiers.ts); list flags repeat or take commas. The request is then checked
 * against the contract's schema here, so a bad flag is named before anything is loaded or sent.
 */
import type { ParseArgsConfig } from "node:util";
import { ReposearchError } from "../common/errors.js";
import type { JsonSchema } from "../contract/json-schema.js";
import { ajvErrorsToDetails, compileSchema } from "../contract/validator.js";
import { parseQualifiers } from "../core/qualifiers.js";
import type { Filters } from "../client/types.js";
import { UsageError } from "./command.js";

export const FILTER_OPTIONS = {
  limit: { type: "string" },
  language: { type: "string" },
  stars: { type: "string" },
  forks: { type: "string" },
  topic: { type: "string", multiple: true },
  category: { type: "string", multiple: true },
  "include-archived": { type: "boolean" },
  "stale-after-months": { type: "string" },
  exclude: { type: "string", multiple: true },
  tree: { type: "boolean" },
  json: { type: "boolean" },
} as const satisfies NonNullable<ParseArgsConfig["options"]>;

export const FILTER_USAGE =
  "[--limit N] [--language LANG] [--stars RANGE] [--forks RANGE] [--topic T]... [--category C]... [--include-archived] [--stale-after-months N] [--exclude OWNER/REPO]... [--tree] [--json]";

/** Where a request field came from, for messages: JSON pointer prefix → flag. */
const FLAG_OF: readonly (readonly [string, string])[] = [
  ["/query", "the query"],
  ["/repo", "OWNER/REPO"],
  ["/limit", "--limit"],
  ["/filters/language", "--language"],
  ["/filters/minStars", "--stars"],
  ["/filters/maxStars", "--stars"],
  ["/filters/minForks", "--forks"],
  ["/filters/maxForks", "--forks"],
  ["/filters/topics", "--topic"],
  ["/filters/categories", "--category"],
  ["/filters/staleAfterMonths", "--stale-after-months"],
  ["/filters/excludeRepos", "--exclude"],
];

function flagOf(pointer: string): string {
  return FLAG_OF.find(([prefix]) => pointer === prefix || pointer.startsWith(`${prefix}/`))?.[1] ?? (pointer || "the request");
}

/** A list flag's values: repeated, comma-separated, or both; blanks dropped. */
function list(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const items = (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(",")).map((x) => x.trim());
  return items.filter((x) => x !== "");
}

function integer(flag: string, v: unknown): number | undefined {
  if (v === undefined) return undefined;
  const s = String(v).trim();
  if (!/^-?\d+$/.test(s)) throw new UsageError(`--${flag} must be a whole number (got ${JSON.stringify(v)})`);
  return Number(s);
}

/** `--stars`/`--forks` through the qualifier parser: `">100"` is `stars:>100`. */
function range(flag: "stars" | "forks", v: unknown): Pick<Filters, "minStars" | "maxStars" | "minForks" | "maxForks"> {
  if (v === undefined) return {};
  const s = String(v).trim();
  if (s === "" || /\s/.test(s)) throw new UsageError(`--${flag} takes one range such as ">100", ">=10", "<5", "10..50" or "100" (got ${JSON.stringify(v)})`);
  try {
    const { filters } = parseQualifiers(`${flag}:${s}`);
    return flag === "stars" ? { minStars: filters.minStars, maxStars: filters.maxStars } : { minForks: filters.minForks, maxForks: filters.maxForks };
  } catch (err) {
    const why = err instanceof ReposearchError ? (err.details?.[0]?.message ?? err.message) : String(err);
    throw new UsageError(`--${flag}: ${why.replace(/^malformed qualifier "[^"]*": /, "")}`);
  }
}

/** The filter object the flags describe; undefined when no filter flag was given. */
export function filtersFromFlags(values: Readonly<Record<string, unknown>>): Filters | undefined {
  const f: Record<string, unknown> = {
    language: typeof values.language === "string" ? values.language.trim() : undefined,
    ...range("stars", values.stars),
    ...range("forks", values.forks),
    topics: list(values.topic),
    categories: list(values.category),
    excludeArchived: values["include-archived"] ? false : undefined,
    staleAfterMonths: integer("stale-after-months", values["stale-after-months"]),
    excludeRepos: list(values.exclude),
  };
  const set = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
  return Object.keys(set).length ? (set as Filters) : undefined;
}

export function limitFromFlags(values: Readonly<Record<string, unknown>>): number | undefined {
  return integer("limit", values.limit);
}

const checkers = new Map<JsonSchema, ReturnType<typeof compileSchema>>();

/** Checks a request built from flags against the contract's schema; every problem is named by its flag. */
export function checkRequest(schema: JsonSchema, request: unknown): void {
  let validate = checkers.get(schema);
  if (!validate) checkers.set(schema, (validate = compileSchema(schema)));
  if (validate(request)) return;
  const problems = ajvErrorsToDetails(validate.errors).map((d) => `${flagOf(d.path)}: ${d.message}`);
  throw new UsageError([...new Set(problems)].join("\n"));
}
