/**
 * Validators compiled from the contract's schemas with ajv, in the 2020-12 dialect (the one
 * OpenAPI 3.1 and MCP use) and strict mode: a keyword ajv does not understand fails at start-up, so
 * a published schema is always an enforceable one. Errors become the public detail shape: `path` a
 * JSON pointer, `rule` the schema keyword, `message` a sentence; every broken rule is reported.
 */
import { Ajv2020, type ErrorObject, type SchemaObject, type ValidateFunction } from "ajv/dist/2020.js";
import formatsModule from "ajv-formats";
import type { ErrorDetail } from "../common/errors.js";
import type { JsonSchema } from "./json-schema.js";
import { OWNER_REPO_PATTERN } from "./search-request.js";

/** A strict 2020-12 ajv with the standard formats (date-time, uri, …). */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true });
  formatsModule.default(ajv);
  return ajv;
}

let standalone: Ajv2020 | undefined;

/** Compiles a self-contained schema (no `$ref` to a document) into a reusable validate function. */
export function compileSchema(schema: JsonSchema): ValidateFunction {
  standalone ??= createAjv();
  return standalone.compile(schema as SchemaObject);
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

/** Maps one ajv error onto the public detail shape. */
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

/** ajv's errors as public details, each (path, rule, message) once. */
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
