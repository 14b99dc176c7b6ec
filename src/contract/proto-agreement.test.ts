/**
 * The proto is the gRPC wire contract; the request schema (search-request.ts) is the one source of
 * the rules. This test reads the proto's field descriptors and their `(reposearch.v1.limits)` options
 * through the generated code and fails when the two disagree on a field, its type or a limit.
 */
import assert from "node:assert/strict";
import { getOption, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { describe, it } from "vitest";
import { CATEGORIES } from "../dataset/record.js";
import { limits as limitsOption } from "../gen/reposearch/v1/limits_pb.js";
import { GetRepositoryRequestSchema, SearchRequestSchema, SimilarRequestSchema } from "../gen/reposearch/v1/search_pb.js";
import type { JsonSchema } from "./json-schema.js";
import { repositoryRequestSchema, similarRequestSchema } from "./repository-requests.js";
import { coreSearchRequestSchema, searchRequestSchema } from "./search-request.js";

/** One field's shape and bounds, in a form both sides can be brought to. */
interface FieldFacts {
  type: string;
  required?: boolean;
  min?: number;
  max?: number;
  minChars?: number;
  maxChars?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
}

const INTEGER_SCALARS = new Set([ScalarType.INT32, ScalarType.INT64, ScalarType.UINT32, ScalarType.UINT64, ScalarType.SINT32, ScalarType.SINT64]);

function scalarType(t: ScalarType): string {
  if (INTEGER_SCALARS.has(t)) return "integer";
  if (t === ScalarType.STRING) return "string";
  if (t === ScalarType.BOOL) return "boolean";
  if (t === ScalarType.DOUBLE || t === ScalarType.FLOAT) return "number";
  return `scalar ${t}`;
}

/** Wrapper messages whose presence is meaningful stand for a JSON array of their `values`. */
const LIST_WRAPPERS: Record<string, string> = {
  "reposearch.v1.CategoryList": "array<category>",
  "reposearch.v1.StringList": "array<string>",
};

function protoType(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return scalarType(f.scalar);
    case "list":
      return f.listKind === "scalar" ? `array<${scalarType(f.scalar)}>` : `array<${f.listKind}>`;
    case "message":
      return LIST_WRAPPERS[f.message.typeName] ?? "object";
    default:
      return f.fieldKind;
  }
}

function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function protoFacts(f: DescField): FieldFacts {
  const l = getOption(f, limitsOption);
  const num = (v: bigint | undefined) => (v === undefined ? undefined : Number(v));
  return defined({
    type: protoType(f),
    required: l.required,
    min: num(l.min),
    max: num(l.max),
    minChars: l.minChars,
    maxChars: l.maxChars,
    minItems: l.minItems,
    maxItems: l.maxItems,
    pattern: l.pattern,
  });
}

function schemaType(s: JsonSchema): string {
  if (s.type === "array") {
    const items = s.items ?? {};
    const isCategory = Array.isArray(items.enum) && items.enum.length === CATEGORIES.length && CATEGORIES.every((c) => items.enum!.includes(c));
    return `array<${isCategory ? "category" : String(items.type)}>`;
  }
  return String(s.type);
}

function schemaFacts(s: JsonSchema, required: boolean): FieldFacts {
  const strings = s.type === "array" ? (s.items ?? {}) : s;
  // For integers "greater than 0" and "at least 1" are the same bound.
  const min = s.minimum ?? (s.exclusiveMinimum !== undefined && s.type === "integer" ? s.exclusiveMinimum + 1 : undefined);
  return defined({
    type: schemaType(s),
    required: required || undefined,
    min,
    max: s.maximum,
    minChars: strings.minLength,
    maxChars: strings.maxLength,
    minItems: s.minItems,
    maxItems: s.maxItems,
    pattern: strings.pattern,
  });
}

/** Every disagreement between a proto message and an object schema, descending into nested messages. */
function disagreements(message: DescMessage, schema: JsonSchema, at = ""): string[] {
  const out: string[] = [];
  const props = schema.properties ?? {};
  const protoNames = message.fields.map((f) => f.jsonName);
  for (const name of Object.keys(props)) if (!protoNames.includes(name)) out.push(`${at}${name}: in the schema, not in ${message.typeName}`);
  for (const f of message.fields) {
    const prop = props[f.jsonName];
    if (!prop) {
      out.push(`${at}${f.jsonName}: in ${message.typeName}, not in the schema`);
      continue;
    }
    const fromProto = protoFacts(f);
    const fromSchema = schemaFacts(prop, schema.required?.includes(f.jsonName) ?? false);
    try {
      assert.deepEqual(fromProto, fromSchema);
    } catch {
      out.push(`${at}${f.jsonName}: proto ${JSON.stringify(fromProto)} ≠ schema ${JSON.stringify(fromSchema)}`);
    }
    if (f.fieldKind === "message" && fromProto.type === "object") out.push(...disagreements(f.message, prop, `${at}${f.jsonName}.`));
  }
  return out;
}

describe("the proto and the request schema agree", () => {
  it("SearchRequest and Filters: the same fields, types and limits", () => {
    assert.deepEqual(disagreements(SearchRequestSchema, coreSearchRequestSchema), []);
  });

  it("SimilarRequest (with its Filters) and GetRepositoryRequest: the same fields, types and limits", () => {
    assert.deepEqual(disagreements(SimilarRequestSchema, similarRequestSchema), []);
    assert.deepEqual(disagreements(GetRepositoryRequestSchema, repositoryRequestSchema), []);
  });

  it("a changed repo limit is reported on the new messages too", () => {
    const props = similarRequestSchema.properties ?? {};
    const altered: JsonSchema = { ...similarRequestSchema, properties: { ...props, repo: { ...props.repo, maxLength: 100 } } };
    const found = disagreements(SimilarRequestSchema, altered);
    assert.equal(found.length, 1, found.join("\n"));
    assert.ok(found[0]!.startsWith("repo:") && found[0]!.includes('"maxChars":100'));
  });

  it("the public schema is the core's without the internal rerank switch", () => {
    assert.deepEqual(Object.keys(coreSearchRequestSchema.properties ?? {}), [...Object.keys(searchRequestSchema.properties ?? {}), "rerank"]);
  });

  it("a changed limit, a missing field or an extra field is reported", () => {
    const props = coreSearchRequestSchema.properties ?? {};
    const filters = props.filters ?? {};
    const altered: JsonSchema = {
      ...coreSearchRequestSchema,
      properties: {
        ...props,
        query: { ...props.query, maxLength: 499 },
        filters: {
          ...filters,
          properties: { ...filters.properties, staleAfterMonths: { type: "integer", minimum: 1, maximum: 601 }, license: { type: "string" } },
        },
      },
    };
    const { rerank: _dropped, ...withoutRerank } = altered.properties ?? {};
    const found = disagreements(SearchRequestSchema, { ...altered, properties: withoutRerank });
    assert.equal(found.length, 4, found.join("\n"));
    assert.ok(found.some((d) => d.startsWith("query:") && d.includes('"maxChars":499')));
    assert.ok(found.some((d) => d.startsWith("filters.staleAfterMonths:")));
    assert.ok(found.some((d) => d === "filters.license: in the schema, not in reposearch.v1.Filters"));
    assert.ok(found.some((d) => d === "rerank: in reposearch.v1.SearchRequest, not in the schema"));
  });
});
