import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { inlineRefs, type JsonSchema } from "./json-schema.js";
import { coreSearchRequestSchema, filtersSchema, LIMITS, searchRequestSchema } from "./search-request.js";
import { compileSchema } from "./validator.js";

describe("the request contract", () => {
  it("the self-contained schemas carry no reference and compile in strict mode", () => {
    for (const schema of [searchRequestSchema, filtersSchema, coreSearchRequestSchema]) {
      assert.ok(!JSON.stringify(schema).includes("$ref"));
      compileSchema(schema);
    }
  });

  it("states LIMITS in the schema", () => {
    const props = searchRequestSchema.properties ?? {};
    assert.equal(props.query?.maxLength, LIMITS.queryMaxLength);
    assert.equal(props.limit?.maximum, LIMITS.limitMax);
    assert.equal(props.limit?.default, LIMITS.limitDefault);
    assert.equal(filtersSchema.properties?.excludeRepos?.maxItems, LIMITS.excludeReposMaxItems);
    assert.equal(filtersSchema.properties?.staleAfterMonths?.maximum, LIMITS.staleAfterMonthsMax);
  });

  it("the public validator refuses rerank, the core's accepts it", () => {
    const publicCheck = compileSchema(searchRequestSchema);
    const coreCheck = compileSchema(coreSearchRequestSchema);
    assert.equal(publicCheck({ query: "q", rerank: true }), false);
    assert.equal(coreCheck({ query: "q", rerank: true }), true);
    assert.equal(coreCheck({ query: "q", filters: { excludeRepos: ["not a repo"] } }), false);
  });

  it("inlineRefs: siblings of a $ref win over the target; unknown and recursive references throw", () => {
    const named: Record<string, JsonSchema> = { A: { type: "string", description: "target" }, Loop: { $ref: "#/components/schemas/Loop" } };
    assert.deepEqual(inlineRefs({ $ref: "#/components/schemas/A", description: "here" }, named), { type: "string", description: "here" });
    assert.throws(() => inlineRefs({ $ref: "#/components/schemas/Missing" }, named), /unknown schema reference/);
    assert.throws(() => inlineRefs({ $ref: "#/components/schemas/Loop" }, named), /recursive schema reference/);
  });
});

describe("the repository requests' contract", () => {
  it("compiles in strict mode, self-contained; similar shares the search's limit, includeTree and filters", async () => {
    const { repositoryRequestSchema, similarRequestSchema } = await import("./repository-requests.js");
    for (const schema of [similarRequestSchema, repositoryRequestSchema]) {
      assert.ok(!JSON.stringify(schema).includes("$ref"));
      compileSchema(schema);
    }
    const props = similarRequestSchema.properties ?? {};
    assert.deepEqual(props.limit, searchRequestSchema.properties?.limit);
    assert.deepEqual(props.filters?.properties, filtersSchema.properties);
    const check = compileSchema(similarRequestSchema);
    assert.equal(check({ repo: "expressjs/express", limit: 5, filters: { language: "Go" } }), true);
    assert.equal(check({ repo: "express" }), false);
    assert.equal(check({ repo: `a/${"b".repeat(LIMITS.repoMaxLength)}` }), false);
    assert.equal(check({ repo: "a/b", query: "x" }), false);
    assert.equal(check({ repo: "a/b", filters: { minstars: 1 } }), false);
    assert.equal(compileSchema(repositoryRequestSchema)({ repo: "a/b c" }), false);
  });
});
