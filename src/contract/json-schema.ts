/**
 * The subset of JSON Schema 2020-12 (the dialect of OpenAPI 3.1 and of MCP tool schemas) that the
 * contract uses. Every keyword here is one ajv understands in strict mode, so a schema that compiles
 * is also a schema every publisher of it (OpenAPI, MCP) can carry verbatim.
 */
export type JsonType = "object" | "array" | "string" | "integer" | "number" | "boolean" | "null";

export interface JsonSchema {
  readonly $ref?: string;
  readonly type?: JsonType | readonly JsonType[];
  readonly title?: string;
  readonly description?: string;
  readonly default?: unknown;
  readonly examples?: readonly unknown[];
  readonly enum?: readonly (string | number | boolean | null)[];
  readonly const?: unknown;
  readonly format?: string;
  readonly pattern?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly items?: JsonSchema;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
}

/** Where named schemas live in the OpenAPI document; contract schemas refer to each other this way. */
export const COMPONENTS_REF = "#/components/schemas/";

/**
 * `schema` with every `#/components/schemas/<Name>` reference replaced by a copy of the named schema
 * (sibling keywords such as a description next to the `$ref` win over the target's). The result is
 * self-contained: an MCP tool schema or a standalone validator needs no document around it.
 */
export function inlineRefs(schema: JsonSchema, named: Readonly<Record<string, JsonSchema>>): JsonSchema {
  const walk = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, seen));
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    const { $ref, ...rest } = node as Record<string, unknown>;
    if (typeof $ref === "string" && $ref.startsWith(COMPONENTS_REF)) {
      const name = $ref.slice(COMPONENTS_REF.length);
      const target = named[name];
      if (!target) throw new Error(`unknown schema reference ${$ref}`);
      if (seen.includes(name)) throw new Error(`recursive schema reference ${$ref}`);
      Object.assign(out, walk(target, [...seen, name]));
    } else if ($ref !== undefined) {
      out.$ref = $ref;
    }
    for (const [k, v] of Object.entries(rest)) out[k] = k === "examples" || k === "default" || k === "enum" || k === "const" ? v : walk(v, seen);
    return out;
  };
  return walk(schema, []) as JsonSchema;
}
