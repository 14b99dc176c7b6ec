/**
 * The search request contract (service-spec.md §2.1, §2.2, §8), once. Everything that states or
 * enforces a request rule is derived from here:
 *   - the OpenAPI document's request schemas (src/gateway/openapi.ts) and so the REST validator;
 *   - the core's validator (src/core/validate.ts), which gRPC and Connect callers meet;
 *   - the MCP tool input schemas, llms.txt and the docs' limits;
 *   - the proto (proto/reposearch/v1/search.proto) restates the limits as field options, and
 *     proto-agreement.test.ts fails when a field or limit there disagrees with this file.
 *
 * Schemas are plain JSON Schema 2020-12 and refer to each other as `#/components/schemas/<Name>`;
 * `inlineRefs` makes a self-contained copy where no document surrounds them.
 */
import { CATEGORIES } from "../dataset/record.js";
import { COMPONENTS_REF, inlineRefs, type JsonSchema } from "./json-schema.js";

/** Request limits. Lengths count Unicode code points, as JSON Schema's maxLength does. */
export const LIMITS = {
  queryMinLength: 1,
  queryMaxLength: 500,
  limitMin: 1,
  limitMax: 50,
  limitDefault: 10,
  languageMaxLength: 100,
  excludeReposMaxItems: 50,
  staleAfterMonthsMax: 600,
  /** `owner/repo` of /similar and /repos (not a spec limit: GitHub names are at most 39 + 1 + 100 characters). */
  repoMaxLength: 200,
} as const;

/** `owner/repo`: two non-empty parts, one slash, no whitespace. */
export const OWNER_REPO_PATTERN = "^[^/\\s]+/[^/\\s]+$";
export const OWNER_REPO_REGEXP = new RegExp(OWNER_REPO_PATTERN);

export const REQUEST_SCHEMA_NAMES = ["SearchRequest", "Filters", "Category"] as const;
export type RequestSchemaName = (typeof REQUEST_SCHEMA_NAMES)[number];

const ref = (name: RequestSchemaName): JsonSchema => ({ $ref: `${COMPONENTS_REF}${name}` });
// The upper bound keeps every count a safe integer: without it 12345678901234567890 passed the REST
// schema, was debited, then refused by the core (and refunded).
const nonNegativeInt = (description: string): JsonSchema => ({ type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

const category: JsonSchema = {
  type: "string",
  enum: [...CATEGORIES],
  description:
    "One of the 13 fixed repository categories: library, framework, tool, application, infrastructure, ai-ml, agent, frontend, data, starter, curated-list, educational, plugin.",
};

const searchRequest: JsonSchema = {
  type: "object",
  title: "SearchRequest",
  description: "A search. Only `query` is required. Unknown top-level properties are rejected with 400 VALIDATION_ERROR (rule `additionalProperties`).",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: {
      type: "string",
      minLength: LIMITS.queryMinLength,
      maxLength: LIMITS.queryMaxLength,
      description:
        "Natural-language description of what you are looking for: an implementation pattern, architecture, library capability or repository type. 1 to 500 characters. A whitespace-only query is accepted and returns no results. GitHub-style qualifiers in it (`language:go`, `stars:>1000`, `forks:`, `topic:`, `category:`, `archived:`, `pushed:>YYYY-MM-DD`) become filters; explicit `filters` win over them.",
      examples: [
        "rate limiter middleware for express backed by redis",
        "rust library for parsing TOML with serde support",
        "language:go stars:>1000 cli framework",
      ],
    },
    limit: {
      type: "integer",
      minimum: LIMITS.limitMin,
      maximum: LIMITS.limitMax,
      default: LIMITS.limitDefault,
      description: "Maximum number of results, 1 to 50. Default 10.",
    },
    includeTree: {
      type: "boolean",
      default: false,
      description: "When true, every result carries `tree`, a compact file tree of the repository. Default false.",
    },
    filters: {
      ...ref("Filters"),
      default: { excludeArchived: true },
      description: 'Metadata constraints applied before ranking. Default `{"excludeArchived": true}`.',
    },
  },
};

const filters: JsonSchema = {
  type: "object",
  title: "Filters",
  description:
    "Metadata constraints, applied before ranking; all given constraints must hold. Unknown properties are rejected (400, rule `additionalProperties`) so that a misspelt filter never silently widens a search.",
  additionalProperties: false,
  properties: {
    minStars: nonNegativeInt("At least this many stars."),
    maxStars: nonNegativeInt("At most this many stars; with minStars forms a band."),
    minForks: nonNegativeInt("At least this many forks."),
    maxForks: nonNegativeInt("At most this many forks; with minForks forms a band."),
    language: {
      type: "string",
      minLength: 1,
      maxLength: LIMITS.languageMaxLength,
      description: "Exact primary-language match, case-insensitive (`Rust` and `rust` both match). 1 to 100 characters.",
      examples: ["TypeScript"],
    },
    excludeRepos: {
      type: "array",
      maxItems: LIMITS.excludeReposMaxItems,
      description:
        "Repositories to omit from the results, as `owner/repo`. At most 50 items. A project known under several names (see Result.aliases) is omitted by any of them.",
      items: {
        type: "string",
        pattern: OWNER_REPO_PATTERN,
        description: "`owner/repo`: two non-empty parts separated by one slash, no whitespace.",
      },
      examples: [["expressjs/express"]],
    },
    categories: {
      type: "array",
      description:
        "Category allow-list. Omitted: the default implementation-focused list (every category except `educational` and `curated-list`). One or more values: only those categories (listing `educational` or `curated-list` searches those). `[]`: no category filtering at all.",
      items: ref("Category"),
      examples: [["library", "framework"]],
    },
    topics: {
      type: "array",
      minItems: 1,
      description: "A repository must carry at least one of these topics (owner-set, freeform tags). At least 1 item.",
      items: { type: "string", minLength: 1 },
      examples: [["rate-limiting"]],
    },
    excludeArchived: {
      type: "boolean",
      default: true,
      description: "When true (the default) archived repositories are excluded; false includes them.",
    },
    staleAfterMonths: {
      type: "integer",
      exclusiveMinimum: 0,
      maximum: LIMITS.staleAfterMonthsMax,
      description: "Exclude repositories not pushed within the last N months (1 to 600). No default: when omitted there is no freshness cutoff.",
    },
  },
};

/** The request schemas, as the OpenAPI document publishes them (refs between them by component name). */
export const requestSchemas: Readonly<Record<RequestSchemaName, JsonSchema>> = { SearchRequest: searchRequest, Filters: filters, Category: category };

/** `Filters`, self-contained (MCP tools and other request shapes that embed the filter object). */
export const filtersSchema: JsonSchema = inlineRefs(ref("Filters"), requestSchemas);

/** The public search request (REST, MCP), self-contained. */
export const searchRequestSchema: JsonSchema = inlineRefs(ref("SearchRequest"), requestSchemas);

/**
 * The search request as the core accepts it: the public one plus `rerank`, the per-request switch
 * that internal callers (gRPC, Connect) may set and the REST API does not expose.
 */
export const coreSearchRequestSchema: JsonSchema = {
  ...searchRequestSchema,
  properties: {
    ...searchRequestSchema.properties,
    rerank: { type: "boolean", description: "Per-request rerank switch; absent: the server's default. Internal callers only." },
  },
};
