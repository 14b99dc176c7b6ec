/**
 * Request validation compiled from the OpenAPI document's own schemas (openapi.ts), so the rules
 * that are enforced are exactly the rules that are published. ajv runs in the 2020-12 dialect (the
 * one OpenAPI 3.1 uses) in strict mode: a schema keyword ajv does not understand fails at start-up.
 */
import { Ajv2020, type ErrorObject, type SchemaObject, type ValidateFunction } from "ajv/dist/2020.js";
import formatsModule from "ajv-formats";
import type { SearchRequest } from "../core/types.js";
import type { ErrorDetail } from "../common/errors.js";
import { OWNER_REPO_PATTERN, SCHEMA_NAMES, schemas, type JsonSchema, type SchemaName } from "./openapi.js";

const SCHEMA_BASE = "https://reposearch.invalid/schemas/";
const LOCAL_REF = "#/components/schemas/";

/** Deep copy of a schema with `#/components/schemas/X` refs made absolute, so ajv can resolve them outside the document. */
function toAjvSchema(name: SchemaName, schema: JsonSchema): SchemaObject {
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "$ref" && typeof v === "string" && v.startsWith(LOCAL_REF) ? SCHEMA_BASE + v.slice(LOCAL_REF.length) : rewrite(v);
    }
    return out;
  };
  return { ...(rewrite(schema) as SchemaObject), $id: SCHEMA_BASE + name };
}

/** An ajv instance holding every component schema of the document (strict: unknown keywords are errors). */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true });
  formatsModule.default(ajv);
  for (const name of SCHEMA_NAMES) ajv.addSchema(toAjvSchema(name, schemas[name]));
  return ajv;
}

let shared: { readonly ajv: Ajv2020; readonly validators: Map<SchemaName, ValidateFunction> } | undefined;

function validatorFor(name: SchemaName): ValidateFunction {
  shared ??= { ajv: createAjv(), validators: new Map() };
  let v = shared.validators.get(name);
  if (!v) {
    v = shared.ajv.getSchema(SCHEMA_BASE + name);
    if (!v) throw new Error(`schema ${name} is not registered`);
    shared.validators.set(name, v);
  }
  return v;
}

/** RFC 6901 escaping of one reference token. */
function pointerToken(s: string): string {
  return s.replace(/~/g, "~0").replace(/\//g, "~1");
}

function allowedProperties(parentSchema: unknown): string[] {
  if (parentSchema && typeof parentSchema === "object" && "properties" in parentSchema) {
    const props = (parentSchema as { properties?: unknown }).properties;
    if (props && typeof props === "object") return Object.keys(props);
  }
  return [];
}

/** Maps one ajv error onto the public detail shape: path is a JSON pointer, rule the schema keyword. */
function toDetail(e: ErrorObject): ErrorDetail {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required": {
      const prop = String(params.missingProperty);
      return { path: `${e.instancePath}/${pointerToken(prop)}`, rule: "required", message: `missing required property "${prop}"` };
    }
    case "additionalProperties": {
      const prop = String(params.additionalProperty);
      const allowed = allowedProperties(e.parentSchema);
      return {
        path: `${e.instancePath}/${pointerToken(prop)}`,
        rule: "additionalProperties",
        message: `unknown property "${prop}"${allowed.length ? `; allowed: ${allowed.join(", ")}` : ""}`,
      };
    }
    case "enum": {
      const allowed = Array.isArray(params.allowedValues) ? params.allowedValues.map(String) : [];
      return { path: e.instancePath, rule: "enum", message: `must be one of: ${allowed.join(", ")}` };
    }
    case "pattern":
      return {
        path: e.instancePath,
        rule: "pattern",
        message:
          params.pattern === OWNER_REPO_PATTERN
            ? "must be owner/repo: two non-empty parts separated by one slash, no whitespace"
            : `must match pattern ${String(params.pattern)}`,
      };
    case "minLength":
    case "maxLength": {
      const n = Number(params.limit);
      return {
        path: e.instancePath,
        rule: e.keyword,
        message: `must be ${e.keyword === "minLength" ? "at least" : "at most"} ${n} character${n === 1 ? "" : "s"} long`,
      };
    }
    case "minItems":
    case "maxItems": {
      const n = Number(params.limit);
      return {
        path: e.instancePath,
        rule: e.keyword,
        message: `must have ${e.keyword === "minItems" ? "at least" : "at most"} ${n} item${n === 1 ? "" : "s"}`,
      };
    }
    default:
      return { path: e.instancePath, rule: e.keyword, message: e.message ?? `breaks the ${e.keyword} rule` };
  }
}

export function ajvErrorsToDetails(errors: readonly ErrorObject[] | null | undefined): ErrorDetail[] {
  const seen = new Set<string>();
  const out: ErrorDetail[] = [];
  for (const e of errors ?? []) {
    const d = toDetail(e);
    const key = `${d.path}\u0000${d.rule}\u0000${d.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  return out;
}

export type ValidationResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly details: ErrorDetail[] };

/** Validates a parsed search body; on success the body is a SearchRequest (without `rerank`, which the REST API does not expose). */
export function validateSearchRequest(body: unknown): ValidationResult<SearchRequest> {
  if (body === undefined) {
    return { ok: false, details: [{ path: "", rule: "required", message: "a JSON request body is required" }] };
  }
  const v = validatorFor("SearchRequest");
  if (v(body)) return { ok: true, value: body as SearchRequest };
  return { ok: false, details: ajvErrorsToDetails(v.errors) };
}

/** Validates any value against a named schema of the document (tests check every response this way). */
export function validateResponse(schemaName: SchemaName, body: unknown): { readonly valid: boolean; readonly errors: ErrorDetail[] } {
  const v = validatorFor(schemaName);
  const valid = v(body) === true;
  return { valid, errors: valid ? [] : ajvErrorsToDetails(v.errors) };
}
