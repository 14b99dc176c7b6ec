/**
 * The proto boundary of the core's RPC API: loading proto/reposearch/v1/search.proto, and pure
 * conversions between wire objects and the TS types of src/core/types.ts, plus the error ⇄ status
 * mapping that lets a client rebuild the server's ReposearchError.
 *
 * The message types come from the code protoc-gen-es generates from the proto (src/gen/, `npm run
 * generate`). The grpc-js server and client keep proto-loader (protobufjs) for the wire, several times
 * faster than protobuf-es at encoding, so what they send is `Wire<M>`: the generated message type M in
 * the form proto-loader reads and writes. The Connect server (connect.ts) turns the same objects into
 * protobuf-es messages (messageFromWire).
 *
 * proto-loader options (one set, used by server and client alike):
 *   keepCase: false  → camelCase field names, identical to the TS/REST names;
 *   longs: Number    → int64 arrives as a JS number (counts stay far below 2^53);
 *   enums: Number    → enum values by number: the generated enum (e.g. CategoryMode.DEFAULT);
 *   defaults: false  → an unset field is absent from the object, which is how proto3 `optional`
 *                      and message presence survive decoding;
 *   arrays/objects   → repeated and map fields are always [] / {} (they have no presence anyway);
 *   oneofs: false    → no `_field` markers for `optional` fields (presence is the key itself): they
 *                      would double the properties of every decoded result.
 * Decoded objects are treated as `unknown` and narrowed field by field.
 */
import path from "node:path";
import { fromJson, type DescMessage, type JsonValue, type Message, type MessageShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { ErrorCode, ReposearchError, type ErrorDetail } from "../../common/errors.js";
import { projectRoot } from "../../config/config.js";
import type { Category } from "../../dataset/record.js";
import {
  CategoryMode as ProtoCategoryMode,
  type AppliedFilters as AppliedFiltersMessage,
  type AppliedQualifier as AppliedQualifierMessage,
  type Filters as FiltersMessage,
  type GetRepositoryRequest as GetRepositoryRequestMessage,
  type Repository as RepositoryMessage,
  type IndexStats as IndexStatsMessage,
  type Meta as MetaMessage,
  type Result as ResultMessage,
  type SearchError as SearchErrorMessage,
  type SearchRequest as SearchRequestMessage,
  type SearchResponse as SearchResponseMessage,
  type SearchStreamRequest as SearchStreamRequestMessage,
  type SimilarRequest as SimilarRequestMessage,
  type StreamSearch as StreamSearchMessage,
} from "../../gen/reposearch/v1/search_pb.js";
import { isCategory } from "../validate.js";
import type {
  AppliedFilters,
  AppliedQualifier,
  CategoryMode,
  GetRepositoryRequest,
  IndexStats,
  MethodStats,
  RepositoryCard,
  SearchFilters,
  SearchMeta,
  SearchRequest,
  SearchResponse,
  SearchResult,
  SimilarRequest,
} from "../types.js";

// ---------------------------------------------------------------------------------------------
// Loading

/** Top-level proto folder; not compiled, so it is found from the project root, not from dist/. */
export const PROTO_DIR = path.join(projectRoot, "proto");
export const SEARCH_PROTO_FILE = "reposearch/v1/search.proto";
export const SEARCH_SERVICE_NAME = "reposearch.v1.SearchService";
export const HEALTH_SERVICE_NAME = "grpc.health.v1.Health";
/** Folder that holds grpc-health-check's `health/v1/health.proto`. */
const HEALTH_PROTO_DIR = path.resolve(path.dirname(healthProtoPath), "..", "..");

export const PROTO_LOADER_OPTIONS: Readonly<protoLoader.Options> = {
  keepCase: false,
  longs: Number,
  enums: Number,
  defaults: false,
  arrays: true,
  objects: true,
  oneofs: false,
};

export interface LoadedProtos {
  /** reposearch.v1 package definition (carries the file descriptors reflection serves). */
  readonly searchPackage: protoLoader.PackageDefinition;
  /** grpc.health.v1 package definition, loaded with the same options but enums by name ("SERVING"; client side and reflection). */
  readonly healthPackage: protoLoader.PackageDefinition;
  readonly searchService: protoLoader.ServiceDefinition;
  readonly healthService: protoLoader.ServiceDefinition;
  /**
   * Both packages again with keepCase: true, only for server reflection: proto-loader renames fields
   * in the descriptors it serves, and tools (grpcurl describe) should show the proto's snake_case names.
   */
  readonly reflectionPackage: protoLoader.PackageDefinition;
}

function serviceOf(pkg: protoLoader.PackageDefinition, name: string): protoLoader.ServiceDefinition {
  const def = pkg[name];
  // Message and enum definitions carry `format`; a service definition is a map of methods.
  if (def === undefined || "format" in def) throw new Error(`proto: service ${name} not found`);
  return def as protoLoader.ServiceDefinition;
}

let loaded: LoadedProtos | undefined;

/** Parses the protos once per process (synchronous: it runs at start-up, before serving). */
export function loadProtos(): LoadedProtos {
  if (loaded) return loaded;
  const searchPackage = protoLoader.loadSync(SEARCH_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  const healthPackage = protoLoader.loadSync("health/v1/health.proto", { ...PROTO_LOADER_OPTIONS, enums: String, includeDirs: [HEALTH_PROTO_DIR] });
  const reflectionPackage = {
    ...protoLoader.loadSync(SEARCH_PROTO_FILE, { ...PROTO_LOADER_OPTIONS, keepCase: true, includeDirs: [PROTO_DIR] }),
    ...protoLoader.loadSync("health/v1/health.proto", { ...PROTO_LOADER_OPTIONS, keepCase: true, includeDirs: [HEALTH_PROTO_DIR] }),
  };
  loaded = {
    reflectionPackage,
    searchPackage,
    healthPackage,
    searchService: serviceOf(searchPackage, SEARCH_SERVICE_NAME),
    healthService: serviceOf(healthPackage, HEALTH_SERVICE_NAME),
  };
  return loaded;
}

// ---------------------------------------------------------------------------------------------
// Wire shapes: the generated message types as proto-loader serialises them

/** protobuf-es's form of a oneof group: `{ case: "response", value }`, or `{ case: undefined }` when unset. */
type OneofGroup = { readonly case: string | undefined; readonly value?: unknown };

/** The keys of T that hold a oneof group. */
type OneofKeys<T> = { [K in keyof T]-?: T[K] extends OneofGroup ? K : never }[keyof T];

/** The members of oneof groups G as proto-loader has them (oneofs: false): fields side by side, at most one set. */
type OneofMembers<G> = {
  readonly [C in G extends { readonly case: infer K extends string } ? K : never]?: Wire<G extends { readonly case: C; readonly value: infer V } ? V : never>;
};

/**
 * A message type generated by protoc-gen-es (src/gen/) in the form proto-loader reads and writes with
 * PROTO_LOADER_OPTIONS: without `$typeName`, int64 as number (longs: Number), enums as the generated
 * enum's numbers (enums: Number), each oneof as its member fields (oneofs: false), read-only. Fields
 * keep the generated names and presence (`optional` scalars and messages may be absent).
 */
export type Wire<T> = T extends bigint
  ? number
  : T extends readonly (infer E)[]
    ? readonly Wire<E>[]
    : T extends Message
      ? { readonly [K in keyof T as K extends `$${string}` | OneofKeys<T> ? never : K]: Wire<T[K]> } & OneofMembers<T[OneofKeys<T>]>
      : T extends object
        ? { readonly [K in keyof T]: Wire<T[K]> }
        : T;

export type ProtoSearchRequest = Wire<SearchRequestMessage>;
export type ProtoSimilarRequest = Wire<SimilarRequestMessage>;
export type ProtoGetRepositoryRequest = Wire<GetRepositoryRequestMessage>;
export type ProtoStreamSearch = Wire<StreamSearchMessage>;
export type ProtoSearchStreamRequest = Wire<SearchStreamRequestMessage>;

/**
 * The protobuf-es message for a wire object (what the Connect server sends for what the grpc-js server
 * sends). A wire object is valid proto3 JSON as it is: camelCase names, int64 and enums as numbers,
 * maps as objects, unset fields absent.
 */
export function messageFromWire<Desc extends DescMessage>(schema: Desc, wire: Wire<MessageShape<Desc>>): MessageShape<Desc> {
  return fromJson(schema, wire as unknown as JsonValue);
}

// ---------------------------------------------------------------------------------------------
// Narrowing decoded objects

type Obj = Readonly<Record<string, unknown>>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads fields of one decoded message. A type mismatch cannot come out of protobufjs decoding, so it
 * means a programming error (or a hand-built object); `code` decides how it is reported.
 */
class Reader {
  constructor(
    private readonly o: Obj,
    private readonly at: string,
    private readonly code: ErrorCode,
  ) {}

  static of(v: unknown, at: string, code: ErrorCode): Reader {
    if (!isObj(v)) throw malformed(code, at, "a message");
    return new Reader(v, at, code);
  }

  private has(k: string): boolean {
    return this.o[k] !== undefined && this.o[k] !== null;
  }
  private bad(k: string, expected: string): ReposearchError {
    return malformed(this.code, this.at ? `${this.at}.${k}` : k, expected);
  }

  optString(k: string): string | undefined {
    if (!this.has(k)) return undefined;
    const v = this.o[k];
    if (typeof v !== "string") throw this.bad(k, "a string");
    return v;
  }
  /** int64 fields arrive as numbers from proto-loader and as bigints from protobuf-es (the Connect server). */
  optNumber(k: string): number | undefined {
    if (!this.has(k)) return undefined;
    const v = this.o[k];
    if (typeof v === "bigint") return Number(v);
    if (typeof v !== "number") throw this.bad(k, "a number");
    return v;
  }
  optBool(k: string): boolean | undefined {
    if (!this.has(k)) return undefined;
    const v = this.o[k];
    if (typeof v !== "boolean") throw this.bad(k, "a boolean");
    return v;
  }
  /** Scalars without presence: absent means the proto3 zero value. */
  string(k: string): string {
    return this.optString(k) ?? "";
  }
  number(k: string): number {
    return this.optNumber(k) ?? 0;
  }
  bool(k: string): boolean {
    return this.optBool(k) ?? false;
  }
  strings(k: string): string[] {
    if (!this.has(k)) return [];
    const v = this.o[k];
    if (!Array.isArray(v) || !v.every((x): x is string => typeof x === "string")) throw this.bad(k, "a list of strings");
    return v;
  }
  list(k: string): unknown[] {
    if (!this.has(k)) return [];
    const v = this.o[k];
    if (!Array.isArray(v)) throw this.bad(k, "a list");
    return v;
  }
  optMessage(k: string): Reader | undefined {
    if (!this.has(k)) return undefined;
    return Reader.of(this.o[k], this.at ? `${this.at}.${k}` : k, this.code);
  }
  message(k: string): Reader {
    const m = this.optMessage(k);
    if (!m) throw this.bad(k, "a message (required)");
    return m;
  }
  entries(k: string): [string, unknown][] {
    if (!this.has(k)) return [];
    const v = this.o[k];
    if (!isObj(v)) throw this.bad(k, "a map");
    return Object.entries(v);
  }
}

function malformed(code: ErrorCode, at: string, expected: string): ReposearchError {
  // The public message stays generic for INTERNAL; the field path goes to the cause (logs).
  const where = `field ${at || "(root)"} is not ${expected}`;
  return new ReposearchError(code, code === ErrorCode.Internal ? "malformed message from the search core" : `malformed request: ${where}`, {
    cause: new Error(`malformed proto object: ${where}`),
  });
}

/** Copies only the set keys, so proto-loader sees "unset" rather than `undefined`. */
function defined<T extends object>(o: { [K in keyof T]: T[K] | undefined | null }): T {
  const out: Record<string, unknown> = {};
  // for-in, not Object.entries: this runs for every result of every response (no pair arrays).
  for (const k in o) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined && v !== null) out[k] = v;
  }
  return out as T;
}

// ---------------------------------------------------------------------------------------------
// SearchRequest

function filtersToProto(f: SearchFilters | undefined): Wire<FiltersMessage> | undefined {
  return f === undefined
    ? undefined
    : defined<Wire<FiltersMessage>>({
        minStars: f.minStars,
        maxStars: f.maxStars,
        minForks: f.minForks,
        maxForks: f.maxForks,
        language: f.language,
        excludeRepos: f.excludeRepos,
        categories: f.categories === undefined ? undefined : { values: f.categories },
        topics: f.topics === undefined ? undefined : { values: f.topics },
        excludeArchived: f.excludeArchived,
        staleAfterMonths: f.staleAfterMonths,
      });
}

export function requestToProto(req: SearchRequest): ProtoSearchRequest {
  return defined<ProtoSearchRequest>({
    query: req.query,
    limit: req.limit,
    includeTree: req.includeTree,
    rerank: req.rerank,
    filters: filtersToProto(req.filters),
  });
}

/**
 * Decodes a request as received. Not validated: the server runs validateSearchRequest next, which
 * also checks that `categories` holds taxonomy names (hence the unchecked Category cast here).
 * An empty `excludeRepos` decodes as absent: proto3 repeated fields have no presence, and the two
 * mean the same (nothing excluded).
 */
export function requestFromProto(obj: unknown): SearchRequest {
  const r = Reader.of(obj, "", ErrorCode.ValidationError);
  return defined<SearchRequest>({
    query: r.string("query"),
    limit: r.optNumber("limit"),
    includeTree: r.optBool("includeTree"),
    filters: filtersFromProto(r),
    rerank: r.optBool("rerank"),
  });
}

function filtersFromProto(r: Reader): SearchFilters | undefined {
  const fr = r.optMessage("filters");
  if (!fr) return undefined;
  const excludeRepos = fr.strings("excludeRepos");
  const categories = fr.optMessage("categories")?.strings("values");
  return defined<SearchFilters>({
    minStars: fr.optNumber("minStars"),
    maxStars: fr.optNumber("maxStars"),
    minForks: fr.optNumber("minForks"),
    maxForks: fr.optNumber("maxForks"),
    language: fr.optString("language"),
    excludeRepos: excludeRepos.length > 0 ? excludeRepos : undefined,
    categories: categories as readonly Category[] | undefined,
    topics: fr.optMessage("topics")?.strings("values"),
    excludeArchived: fr.optBool("excludeArchived"),
    staleAfterMonths: fr.optNumber("staleAfterMonths"),
  });
}

// ---------------------------------------------------------------------------------------------
// SimilarRequest, GetRepositoryRequest, Repository

export function similarRequestToProto(req: SimilarRequest): ProtoSimilarRequest {
  return defined<ProtoSimilarRequest>({ repo: req.repo, limit: req.limit, includeTree: req.includeTree, filters: filtersToProto(req.filters) });
}

/** Decodes a SimilarRequest as received; not validated (the server runs validateSimilarRequest next). */
export function similarRequestFromProto(obj: unknown): SimilarRequest {
  const r = Reader.of(obj, "", ErrorCode.ValidationError);
  return defined<SimilarRequest>({ repo: r.string("repo"), limit: r.optNumber("limit"), includeTree: r.optBool("includeTree"), filters: filtersFromProto(r) });
}

export function repositoryRequestToProto(req: GetRepositoryRequest): ProtoGetRepositoryRequest {
  return { repo: req.repo };
}

export function repositoryRequestFromProto(obj: unknown): GetRepositoryRequest {
  return { repo: Reader.of(obj, "", ErrorCode.ValidationError).string("repo") };
}

export function repositoryToProto(c: RepositoryCard): Wire<RepositoryMessage> {
  return defined<Wire<RepositoryMessage>>({
    name: c.name,
    url: c.url,
    description: c.description,
    language: c.language,
    stars: c.stars,
    forks: c.forks,
    topics: c.topics,
    pushedAt: c.pushedAt,
    createdAt: c.createdAt,
    isArchived: c.isArchived,
    category: c.category,
    license: c.license,
    homepage: c.homepage,
    llmsUrl: c.llmsUrl,
    tree: c.tree,
    aliases: c.aliases,
    readme: c.readme,
    mentions: c.mentions,
    lastSeen: c.lastSeen,
  });
}

export function repositoryFromProto(obj: unknown): RepositoryCard {
  const r = Reader.of(obj, "", ErrorCode.Internal);
  const category = r.optString("category") ?? null;
  if (category !== null && !isCategory(category)) throw malformed(ErrorCode.Internal, "category", `a category (got ${JSON.stringify(category)})`);
  return {
    name: r.string("name"),
    url: r.optString("url") ?? null,
    description: r.optString("description") ?? null,
    language: r.optString("language") ?? null,
    stars: r.optNumber("stars") ?? null,
    forks: r.optNumber("forks") ?? null,
    topics: r.strings("topics"),
    pushedAt: r.optString("pushedAt") ?? null,
    createdAt: r.optString("createdAt") ?? null,
    isArchived: r.optBool("isArchived") ?? null,
    category,
    license: r.optString("license") ?? null,
    homepage: r.optString("homepage") ?? null,
    llmsUrl: r.optString("llmsUrl") ?? null,
    tree: r.optString("tree") ?? null,
    aliases: r.strings("aliases"),
    readme: r.optString("readme") ?? null,
    mentions: r.number("mentions"),
    lastSeen: r.optString("lastSeen") ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// SearchResponse

const MODE_TO_PROTO: Readonly<Record<CategoryMode, ProtoCategoryMode>> = {
  default: ProtoCategoryMode.DEFAULT,
  explicit: ProtoCategoryMode.EXPLICIT,
  all: ProtoCategoryMode.ALL,
};
const MODE_FROM_PROTO: ReadonlyMap<number, CategoryMode> = new Map(Object.entries(MODE_TO_PROTO).map(([k, v]) => [v, k as CategoryMode]));

function resultToProto(r: SearchResult): Wire<ResultMessage> {
  return defined<Wire<ResultMessage>>({
    url: r.url,
    name: r.name,
    description: r.description,
    score: r.score,
    language: r.language,
    stars: r.stars,
    forks: r.forks,
    topics: r.topics,
    pushedAt: r.pushedAt,
    isArchived: r.isArchived,
    llmsUrl: r.llmsUrl,
    // undefined → no Tree message (not requested); null → empty Tree (requested, none).
    tree: r.tree === undefined ? undefined : r.tree === null ? {} : { text: r.tree },
    evidence: r.evidence,
    aliases: r.aliases,
  });
}

function appliedFiltersToProto(a: AppliedFilters): Wire<AppliedFiltersMessage> {
  return defined<Wire<AppliedFiltersMessage>>({
    categories: { mode: MODE_TO_PROTO[a.categories.mode], values: a.categories.values, includeUncategorized: a.categories.includeUncategorized },
    excludeArchived: a.excludeArchived,
    minStars: a.minStars,
    maxStars: a.maxStars,
    minForks: a.minForks,
    maxForks: a.maxForks,
    language: a.language,
    excludeRepos: a.excludeRepos,
    topics: a.topics,
    staleAfterMonths: a.staleAfterMonths,
    pushedAfter: a.pushedAfter,
    pushedBefore: a.pushedBefore,
  });
}

function qualifierToProto(q: AppliedQualifier): Wire<AppliedQualifierMessage> {
  return { qualifier: q.qualifier, fields: q.fields, overridden: q.overridden };
}

export function responseToProto(res: SearchResponse): Wire<SearchResponseMessage> {
  const m = res.meta;
  return {
    query: res.query,
    results: res.results.map(resultToProto),
    meta: defined<Wire<MetaMessage>>({
      total: m.total,
      timeMs: m.timeMs,
      methods: Object.fromEntries(Object.entries(m.methods).map(([k, v]) => [k, { hits: v.hits, weight: v.weight }])),
      appliedFilters: appliedFiltersToProto(m.appliedFilters),
      reranked: m.reranked,
      rerankMs: m.rerankMs,
      qualifiers: m.qualifiers?.map(qualifierToProto),
      queryText: m.queryText,
    }),
  };
}

function categoriesFrom(r: Reader, k: string): Category[] {
  const values = r.strings(k);
  for (const v of values) if (!isCategory(v)) throw malformed(ErrorCode.Internal, k, `a category (got ${JSON.stringify(v)})`);
  return values.filter(isCategory);
}

function resultFromProto(v: unknown, i: number): SearchResult {
  const r = Reader.of(v, `results[${i}]`, ErrorCode.Internal);
  const tree = r.optMessage("tree");
  const out: SearchResult = {
    url: r.optString("url") ?? null,
    name: r.string("name"),
    description: r.optString("description") ?? null,
    score: r.number("score"),
    language: r.optString("language") ?? null,
    stars: r.optNumber("stars") ?? null,
    forks: r.optNumber("forks") ?? null,
    topics: r.strings("topics"),
    pushedAt: r.optString("pushedAt") ?? null,
    isArchived: r.optBool("isArchived") ?? null,
    llmsUrl: r.optString("llmsUrl") ?? null,
    evidence: r.strings("evidence"),
  };
  const aliases = r.strings("aliases");
  // The keys are set only when present: tree when requested (so "not requested" stays distinguishable
  // from null), aliases when the project has any.
  const withAliases = aliases.length ? { ...out, aliases } : out;
  return tree === undefined ? withAliases : { ...withAliases, tree: tree.optString("text") ?? null };
}

function appliedFiltersFromProto(r: Reader): AppliedFilters {
  const c = r.message("categories");
  const modeValue = c.number("mode");
  const mode = MODE_FROM_PROTO.get(modeValue);
  if (mode === undefined) throw malformed(ErrorCode.Internal, "meta.appliedFilters.categories.mode", `a category mode (got ${modeValue})`);
  return {
    categories: { mode, values: categoriesFrom(c, "values"), includeUncategorized: c.bool("includeUncategorized") },
    excludeArchived: r.bool("excludeArchived"),
    minStars: r.optNumber("minStars") ?? null,
    maxStars: r.optNumber("maxStars") ?? null,
    minForks: r.optNumber("minForks") ?? null,
    maxForks: r.optNumber("maxForks") ?? null,
    language: r.optString("language") ?? null,
    excludeRepos: r.strings("excludeRepos"),
    topics: r.strings("topics"),
    staleAfterMonths: r.optNumber("staleAfterMonths") ?? null,
    ...defined<{ pushedAfter?: string; pushedBefore?: string }>({ pushedAfter: r.optString("pushedAfter"), pushedBefore: r.optString("pushedBefore") }),
  };
}

export function responseFromProto(obj: unknown): SearchResponse {
  const r = Reader.of(obj, "", ErrorCode.Internal);
  const m = r.message("meta");
  const methods: Record<string, MethodStats> = {};
  for (const [k, v] of m.entries("methods")) {
    const s = Reader.of(v, `meta.methods.${k}`, ErrorCode.Internal);
    methods[k] = { hits: s.number("hits"), weight: s.number("weight") };
  }
  const qualifiers = m.list("qualifiers").map((v, i): AppliedQualifier => {
    const q = Reader.of(v, `meta.qualifiers[${i}]`, ErrorCode.Internal);
    return { qualifier: q.string("qualifier"), fields: q.strings("fields"), overridden: q.strings("overridden") };
  });
  const meta: SearchMeta = defined<SearchMeta>({
    total: m.number("total"),
    timeMs: m.number("timeMs"),
    methods,
    appliedFilters: appliedFiltersFromProto(m.message("appliedFilters")),
    reranked: m.optBool("reranked"),
    rerankMs: m.optNumber("rerankMs"),
    qualifiers: qualifiers.length ? qualifiers : undefined,
    queryText: m.optString("queryText"),
  });
  return { query: r.string("query"), results: r.list("results").map(resultFromProto), meta };
}

// ---------------------------------------------------------------------------------------------
// IndexStats

export function statsToProto(s: IndexStats): Wire<IndexStatsMessage> {
  return defined<Wire<IndexStatsMessage>>({
    version: s.version,
    count: s.count,
    dims: s.dims,
    embedderId: s.embedderId,
    publishedAt: s.publishedAt,
    ageSeconds: s.ageSeconds,
    methods: s.methods,
    rerankerId: s.rerankerId,
  });
}

export function statsFromProto(obj: unknown): IndexStats {
  const r = Reader.of(obj, "", ErrorCode.Internal);
  return {
    version: r.optString("version") ?? null,
    count: r.number("count"),
    dims: r.number("dims"),
    embedderId: r.optString("embedderId") ?? null,
    publishedAt: r.optString("publishedAt") ?? null,
    ageSeconds: r.optNumber("ageSeconds") ?? null,
    methods: r.strings("methods"),
    rerankerId: r.optString("rerankerId") ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// Errors ⇄ gRPC status

/** Trailer carrying the ErrorCode name, so a client gets the exact code back (not just the gRPC status). */
export const ERROR_CODE_TRAILER = "reposearch-error-code";
/** Binary trailer (`-bin`: any bytes allowed) carrying the ErrorDetail[] as UTF-8 JSON. */
export const ERROR_DETAILS_TRAILER = "reposearch-error-details-bin";

const ERROR_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));
function isErrorCode(v: unknown): v is ErrorCode {
  return typeof v === "string" && ERROR_CODES.has(v);
}

/** The status object a grpc-js handler passes to its callback: public message only, code in trailers. */
export function errorToStatus(err: ReposearchError): { code: grpc.status; details: string; metadata: grpc.Metadata } {
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_CODE_TRAILER, err.code);
  if (err.details && err.details.length > 0) metadata.set(ERROR_DETAILS_TRAILER, Buffer.from(JSON.stringify(err.details), "utf8"));
  return { code: err.grpcStatus, details: err.message, metadata };
}

/** ErrorDetail[] from a decoded list (the details trailer's JSON, or SearchError.details). */
function detailList(list: readonly unknown[]): ErrorDetail[] {
  return list.filter(isObj).map((d) => ({ path: String(d.path ?? ""), rule: String(d.rule ?? ""), message: String(d.message ?? "") }));
}

function detailsFrom(metadata: grpc.Metadata | undefined): ErrorDetail[] | undefined {
  const raw = metadata?.get(ERROR_DETAILS_TRAILER)[0];
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.isBuffer(raw) ? raw.toString("utf8") : raw);
    return Array.isArray(parsed) ? detailList(parsed) : undefined;
  } catch {
    return undefined;
  }
}

/** What a failed call looks like on the client (grpc.ServiceError, narrowed to what is used). */
export interface StatusLike {
  readonly code: number;
  readonly details: string;
  readonly metadata?: grpc.Metadata | undefined;
}

/**
 * Rebuilds the server's ReposearchError from a failed call. With the trailer (the server answered),
 * code, message and details come back unchanged. Without it the failure happened below the service
 * (transport, proxy, grpc-js itself) and is mapped by status: UNAVAILABLE/CANCELLED → UNAVAILABLE
 * (retryable), DEADLINE_EXCEEDED → DEADLINE_EXCEEDED, everything else → INTERNAL_ERROR.
 * The original error is kept as `cause` for logs.
 */
export function errorFromStatus(err: StatusLike, cause: unknown = err): ReposearchError {
  const code = err.metadata?.get(ERROR_CODE_TRAILER)[0];
  return errorFromParts(err.code, err.details, code, () => detailsFrom(err.metadata), cause);
}

function errorFromParts(status: number, message: string, code: unknown, details: () => ErrorDetail[] | undefined, cause: unknown): ReposearchError {
  if (isErrorCode(code)) {
    const d = details();
    return new ReposearchError(code, message, d ? { details: d, cause } : { cause });
  }
  switch (status) {
    case grpc.status.UNAVAILABLE:
    case grpc.status.CANCELLED:
      return new ReposearchError(ErrorCode.Unavailable, "search core unavailable", { cause });
    case grpc.status.DEADLINE_EXCEEDED:
      return new ReposearchError(ErrorCode.DeadlineExceeded, "search core deadline exceeded", { cause });
    default:
      return new ReposearchError(ErrorCode.Internal, "search core error", { cause });
  }
}

// ---------------------------------------------------------------------------------------------
// SearchStream messages

/**
 * Most searches, or outcomes, either end puts in one SearchStream message: a 50-result answer with
 * trees can reach ~200 KB, and a client's receive limit is 16 MiB (the server's 4 MiB).
 */
export const STREAM_BATCH_MAX = 32;

/** A StreamSearch read and checked on the server. */
export interface StreamStart {
  readonly id: number;
  /** The SearchRequest as decoded (requestFromProto reads it in the search's own call). */
  readonly request: unknown;
  /** ms the search may take, from now; undefined: no deadline. */
  readonly timeoutMs: number | undefined;
  readonly metadata: Readonly<Record<string, string>>;
}

/** Reads one SearchStreamRequest; a malformed one throws VALIDATION_ERROR (the stream then fails). */
export function streamRequestFromProto(obj: unknown): { readonly searches: StreamStart[]; readonly cancel: number[] } {
  const r = Reader.of(obj, "", ErrorCode.ValidationError);
  const searches = r.list("searches").map((item, i): StreamStart => {
    const s = Reader.of(item, `searches[${i}]`, ErrorCode.ValidationError);
    if (!s.optMessage("request")) throw malformed(ErrorCode.ValidationError, `searches[${i}].request`, "a message (required)");
    const metadata: Record<string, string> = {};
    for (const [k, v] of s.entries("metadata")) if (typeof v === "string") metadata[k] = v;
    return { id: s.number("id"), request: (item as Obj).request, timeoutMs: s.optNumber("timeoutMs"), metadata };
  });
  const cancel = r.list("cancel").map((v, i) => {
    if (typeof v !== "number") throw malformed(ErrorCode.ValidationError, `cancel[${i}]`, "an id");
    return v;
  });
  return { searches, cancel };
}

/** The SearchError for a failed search; `null` is a search cancelled by its caller. */
export function errorToProto(err: ReposearchError | null): Wire<SearchErrorMessage> {
  if (err === null) return { status: grpc.status.CANCELLED, message: "cancelled", details: [] };
  return { status: err.grpcStatus, message: err.message, code: err.code, details: err.details ?? [] };
}

/** Rebuilds the server's ReposearchError from a SearchError, exactly as errorFromStatus does for a unary call. */
export function errorFromProto(obj: unknown): ReposearchError {
  const r = Reader.of(obj, "error", ErrorCode.Internal);
  const details = (): ErrorDetail[] | undefined => {
    const list = detailList(r.list("details"));
    return list.length > 0 ? list : undefined;
  };
  const status = r.number("status");
  const message = r.string("message");
  // The cause looks like a unary call's grpc.ServiceError (code, details), so logs and callers read both alike.
  const cause = Object.assign(new Error(`${status} ${grpc.status[status] ?? ""}: ${message}`), { code: status, details: message });
  return errorFromParts(status, message, r.optString("code"), details, cause);
}
