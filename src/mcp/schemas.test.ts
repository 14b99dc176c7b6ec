/**
 * The tools' schemas against their sources: inputs are the contract's request schemas (only
 * `includeTree` swapped for `detail`), outputs agree field by field with the OpenAPI document's
 * response schemas, and every schema compiles in ajv's strict 2020-12 mode.
 */
import assert from "node:assert/strict";
import { describe, it } from "vitest";
import type { JsonSchema } from "../contract/json-schema.js";
import { repositoryRequestSchema, similarRequestSchema } from "../contract/repository-requests.js";
import { searchRequestSchema } from "../contract/search-request.js";
import { compileSchema } from "../contract/validator.js";
import { schemas as openApiSchemas, type SchemaName } from "../gateway/openapi.js";
import { repositoryInputSchema, repositoryOutputSchema, searchInputSchema, searchOutputSchema, similarInputSchema, similarOutputSchema } from "./schemas.js";

const props = (s: JsonSchema | undefined): Readonly<Record<string, JsonSchema>> => s?.properties ?? {};

/** Every property of `mcp` that the OpenAPI schema `name` has too must have the same type; the rest are listed. */
function typeDisagreements(mcp: JsonSchema, name: SchemaName): string[] {
  const rest = props(openApiSchemas[name]);
  return Object.entries(props(mcp)).flatMap(([field, s]) => {
    const theirs = rest[field];
    if (!theirs) return [`${name}.${field}: not in the OpenAPI schema`];
    const type = (x: JsonSchema) => JSON.stringify(x.type ?? (x.$ref ? "object" : undefined));
    return type(s) === type(theirs) ? [] : [`${name}.${field}: ${type(s)} here, ${type(theirs)} in the OpenAPI schema`];
  });
}

describe("MCP tool schemas", () => {
  it("inputs are the contract's request schemas with `detail` in place of `includeTree`", () => {
    const pairs: [JsonSchema, JsonSchema, string][] = [
      [searchInputSchema, searchRequestSchema, "compact"],
      [similarInputSchema, similarRequestSchema, "compact"],
      [repositoryInputSchema, repositoryRequestSchema, "full"],
    ];
    for (const [tool, contract, byDefault] of pairs) {
      const { includeTree: _tree, ...want } = props(contract);
      const { detail, ...got } = props(tool);
      assert.deepEqual(got, want);
      assert.deepEqual(detail?.enum, ["compact", "full"]);
      assert.equal(detail?.default, byDefault);
      assert.deepEqual(tool.required, contract.required);
      assert.equal(tool.additionalProperties, false);
      assert.equal(tool.type, "object");
      assert.ok(!JSON.stringify(tool).includes("$ref"), "self-contained");
      compileSchema(tool);
    }
  });

  it("the search input keeps every filter with the contract's limits", () => {
    const check = compileSchema(searchInputSchema);
    assert.equal(check({ query: "q", detail: "full", filters: { minStars: 1, language: "Go", topics: ["cli"], categories: [], staleAfterMonths: 12 } }), true);
    assert.equal(check({ query: "q", limit: 51 }), false);
    assert.equal(check({ query: "q", includeTree: true }), false, "detail decides the tree");
    assert.equal(check({ query: "q", detail: "verbose" }), false);
    assert.equal(check({ query: "q", filters: { minstars: 1 } }), false);
  });

  it("outputs agree in type with the REST answer's schemas, field by field", () => {
    const result = props(searchOutputSchema).results?.items ?? {};
    const found = [
      ...typeDisagreements(searchOutputSchema, "SearchResponse"),
      ...typeDisagreements(result, "Result"),
      ...typeDisagreements(props(searchOutputSchema).meta ?? {}, "Meta"),
      ...typeDisagreements(repositoryOutputSchema, "Repository"),
    ];
    assert.deepEqual(found, []);
    assert.deepEqual(props(similarOutputSchema).results?.items, result, "similar lists the same results");
    for (const s of [searchOutputSchema, similarOutputSchema, repositoryOutputSchema]) compileSchema(s);
  });

  it("the agreement check catches a changed type (a made-up schema)", () => {
    const altered: JsonSchema = { type: "object", properties: { stars: { type: "string" }, license2: { type: "string" } } };
    assert.deepEqual(typeDisagreements(altered, "Result"), [
      'Result.stars: "string" here, ["number","null"] in the OpenAPI schema',
      "Result.license2: not in the OpenAPI schema",
    ]);
  });
});
