/**
 * Request validation compiled from the OpenAPI document's own schemas (openapi.ts), so the rules
 * that are enforced are exactly the rules that are published. ajv runs in the 2020-12 dialect (the
 * one OpenAPI 3.1 uses) in strict mode: a schema keyword ajv does not understand fails at start-up.
 */
import type { Ajv2020, SchemaObject, ValidateFunction } from "ajv/dist/2020.js";
import type { ErrorDetail } from "../common/errors.js";
import { COMPONENTS_REF, type JsonSchema } from "../contract/json-schema.js";
import { ajvErrorsToDetails, createAjv as createStrictAjv } from "../contract/validator.js";
import { repositoryRequestSchema, REPO_SEGMENT_PATTERN } from "../contract/repository-requests.js";
import { compileSchema } from "../contract/validator.js";
import type { GetRepositoryRequest, SearchRequest, SimilarRequest } from "../core/types.js";
import { SCHEMA_NAMES, schemas, type SchemaName } from "./openapi.js";

const SCHEMA_BASE = "https://reposearch.invalid/schemas/";

/** Deep copy of a schema with `#/components/schemas/X` refs made absolute, so ajv can resolve them outside the document. */
function toAjvSchema(name: SchemaName, schema: JsonSchema): SchemaObject {
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "$ref" && typeof v === "string" && v.startsWith(COMPONENTS_REF) ? SCHEMA_BASE + v.slice(COMPONENTS_REF.length) : rewrite(v);
    }
    return out;
  };
  return { ...(rewrite(schema) as SchemaObject), $id: SCHEMA_BASE + name };
}

/** An ajv instance holding every component schema of the document (strict: unknown keywords are errors). */
export function createAjv(): Ajv2020 {
  const ajv = createStrictAjv();
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

/** Validates a parsed similar body against the published SimilarRequest schema. */
export function validateSimilarRequest(body: unknown): ValidationResult<SimilarRequest> {
  if (body === undefined) {
    return { ok: false, details: [{ path: "", rule: "required", message: "a JSON request body is required" }] };
  }
  const v = validatorFor("SimilarRequest");
  if (v(body)) return { ok: true, value: body as SimilarRequest };
  return { ok: false, details: ajvErrorsToDetails(v.errors) };
}

const segmentPattern = new RegExp(REPO_SEGMENT_PATTERN);
let repositoryValidator: ReturnType<typeof compileSchema> | undefined;

/**
 * The path parameters of GET /v1/codehost/repos/{owner}/{repo} (as the router decoded them), checked
 * one by one (detail paths `/owner`, `/repo`) and then joined against the contract's repository
 * request (its length limit).
 */
export function validateRepositoryParams(params: { readonly owner: string; readonly repo: string }): ValidationResult<GetRepositoryRequest> {
  const details: ErrorDetail[] = [];
  for (const part of ["owner", "repo"] as const) {
    const value = params[part];
    if (typeof value !== "string" || !segmentPattern.test(value)) {
      details.push({ path: `/${part}`, rule: "pattern", message: "must be one non-empty path segment without whitespace or slash" });
    }
  }
  if (details.length) return { ok: false, details };
  const request = { repo: `${params.owner}/${params.repo}` };
  repositoryValidator ??= compileSchema(repositoryRequestSchema);
  if (repositoryValidator(request)) return { ok: true, value: request };
  return { ok: false, details: ajvErrorsToDetails(repositoryValidator.errors) };
}

/** Validates any value against a named schema of the document (tests check every response this way). */
export function validateResponse(schemaName: SchemaName, body: unknown): { readonly valid: boolean; readonly errors: ErrorDetail[] } {
  const v = validatorFor(schemaName);
  const valid = v(body) === true;
  return { valid, errors: valid ? [] : ajvErrorsToDetails(v.errors) };
}
