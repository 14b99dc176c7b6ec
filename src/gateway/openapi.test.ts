import assert from "node:assert/strict";
import { test } from "vitest";
import { appliedFilters, nullResult } from "../../test/support/core-testkit.js";
import { CATEGORIES } from "../dataset/record.js";
import { SCHEMA_NAMES, openApiDocument, schemas } from "./openapi.js";
import { createAjv, validateResponse, validateSearchRequest } from "./validation.js";

/** Every `$ref` in the document, with where it was found. */
function collectRefs(node: unknown, at: string, out: { ref: string; at: string }[] = []): { ref: string; at: string }[] {
  if (Array.isArray(node)) node.forEach((v, i) => collectRefs(v, `${at}/${i}`, out));
  else if (node !== null && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") out.push({ ref: v, at });
      else collectRefs(v, `${at}/${k}`, out);
    }
  }
  return out;
}

function resolvePointer(doc: unknown, ref: string): unknown {
  assert.ok(ref.startsWith("#/"), `local ref: ${ref}`);
  let cur: unknown = doc;
  for (const raw of ref.slice(2).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (cur === null || typeof cur !== "object" || !(token in cur)) return undefined;
    cur = (cur as Record<string, unknown>)[token];
  }
  return cur;
}

test("document header: OpenAPI 3.1, version 0.0.1, relative server, API key scheme", () => {
  assert.equal(openApiDocument.openapi, "3.1.0");
  assert.equal(openApiDocument.info.version, "0.0.1");
  assert.ok(openApiDocument.info.title.length > 0);
  assert.deepEqual(
    openApiDocument.servers.map((s) => s.url),
    ["/"],
  );
  assert.deepEqual(openApiDocument.components.securitySchemes.ApiKeyAuth, {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: openApiDocument.components.securitySchemes.ApiKeyAuth!.description,
  });
  // JSON round trip: the served document is plain JSON
  assert.deepEqual(JSON.parse(JSON.stringify(openApiDocument)), openApiDocument);
});

test("every $ref resolves inside the document", () => {
  const refs = collectRefs(openApiDocument, "#");
  assert.ok(refs.length > 20);
  for (const { ref, at } of refs) assert.notEqual(resolvePointer(openApiDocument, ref), undefined, `${ref} (at ${at})`);
});

test("every component schema compiles with ajv 2020-12 in strict mode", () => {
  const ajv = createAjv();
  for (const name of SCHEMA_NAMES) {
    const v = ajv.getSchema(`https://reposearch.invalid/schemas/${name}`);
    assert.ok(v, name);
  }
  assert.deepEqual(Object.keys(schemas).sort(), [...SCHEMA_NAMES].sort());
});

test("searchRepositories: operation, security, body and every response of the spec", () => {
  const op = openApiDocument.paths["/v1/codehost/search"]!.post;
  assert.ok(op);
  assert.equal(op.operationId, "searchRepositories");
  assert.deepEqual(op.tags, ["search"]);
  assert.deepEqual(op.security, [{ ApiKeyAuth: [] }]);
  assert.equal(op.requestBody?.required, true);
  assert.deepEqual(op.requestBody?.content["application/json"]!.schema, { $ref: "#/components/schemas/SearchRequest" });
  assert.deepEqual(Object.keys(op.responses).sort(), ["200", "400", "401", "403", "404", "429", "500", "502", "503"]);
  const ok = op.responses["200"]!;
  assert.ok(!("$ref" in ok));
  assert.deepEqual(ok.content?.["application/json"]!.schema, { $ref: "#/components/schemas/SearchResponse" });
  for (const code of ["400", "401", "403", "404", "429", "500", "502", "503"]) {
    const r = resolvePointer(openApiDocument, (op.responses[code] as { $ref: string }).$ref) as { content: Record<string, { schema: unknown }> };
    assert.deepEqual(r.content["application/json"]!.schema, { $ref: "#/components/schemas/Error" }, code);
  }
  const tooMany = openApiDocument.components.responses.RateLimitExceeded;
  assert.deepEqual(Object.keys(tooMany!.headers ?? {}).sort(), ["Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]);
});

test("getHealth: no security, 200 and 503 with the Health body", () => {
  const op = openApiDocument.paths["/health"]!.get;
  assert.ok(op);
  assert.equal(op.operationId, "getHealth");
  assert.deepEqual(op.tags, ["health"]);
  assert.deepEqual(op.security, []);
  for (const code of ["200", "503"]) {
    const r = op.responses[code] as { readonly content?: Readonly<Record<string, { readonly schema: unknown }>> };
    assert.deepEqual(r.content?.["application/json"]!.schema, { $ref: "#/components/schemas/Health" }, code);
  }
  for (const p of ["/.well-known/openapi.json", "/llms.txt", "/docs"]) assert.deepEqual(openApiDocument.paths[p]!.get?.security, [], p);
});

test("schemas carry the spec's shapes: categories, required response fields, error detail", () => {
  assert.deepEqual(schemas.Category.enum, [...CATEGORIES]);
  assert.equal(CATEGORIES.length, 13);
  assert.deepEqual(schemas.SearchRequest.additionalProperties, false);
  assert.deepEqual(schemas.Filters.additionalProperties, false);
  assert.deepEqual(schemas.Result.required, [
    "url",
    "name",
    "description",
    "score",
    "language",
    "stars",
    "forks",
    "topics",
    "pushedAt",
    "isArchived",
    "llmsUrl",
    "evidence",
  ]);
  assert.deepEqual(schemas.AppliedFilters.required?.length, 10);
  assert.deepEqual(schemas.ErrorDetail.required, ["path", "rule", "message"]);
  assert.deepEqual(schemas.Error.properties?.error!.required, ["code", "message", "status"]);
});

const q = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ query: "a query", ...over });
const f = (filters: Record<string, unknown>): Record<string, unknown> => q({ filters });

test("request validation accepts every boundary of spec 2.1 and 2.2", () => {
  const accepted: unknown[] = [
    { query: "a" },
    { query: "x".repeat(500) },
    { query: "😀".repeat(500) }, // 500 characters, 1000 UTF-16 units
    { query: "   " }, // whitespace-only is valid input
    q({ limit: 1 }),
    q({ limit: 50 }),
    q({ includeTree: true }),
    q({ includeTree: false }),
    q({ filters: {} }),
    f({ minStars: 0, maxStars: 0, minForks: 0, maxForks: 0 }),
    f({ minStars: 1_000_000, maxStars: 2_000_000 }),
    f({ language: "C" }),
    f({ language: "l".repeat(100) }),
    f({ excludeRepos: [] }),
    f({ excludeRepos: Array.from({ length: 50 }, (_, i) => `owner${i}/repo.name-${i}`) }),
    f({ categories: [] }),
    f({ categories: [...CATEGORIES] }),
    f({ categories: ["educational", "curated-list"] }),
    f({ topics: ["a"] }),
    f({ topics: ["rate-limiting", "redis"] }),
    f({ excludeArchived: false }),
    f({ staleAfterMonths: 1 }),
    f({ staleAfterMonths: 600 }),
    q({
      limit: 10,
      includeTree: false,
      filters: { excludeArchived: true, language: "Rust", minStars: 5, topics: ["x"], categories: ["library"], staleAfterMonths: 12 },
    }),
  ];
  for (const body of accepted) {
    const r = validateSearchRequest(body);
    assert.ok(r.ok, `${JSON.stringify(body).slice(0, 120)} → ${r.ok ? "" : JSON.stringify(r.details)}`);
  }
});

test("request validation rejects each rule with its JSON-pointer path and JSON-Schema keyword", () => {
  const cases: [unknown, string, string][] = [
    [undefined, "", "required"],
    [null, "", "type"],
    [[{ query: "x" }], "", "type"],
    ["query", "", "type"],
    [{}, "/query", "required"],
    [{ query: "" }, "/query", "minLength"],
    [{ query: "x".repeat(501) }, "/query", "maxLength"],
    [{ query: 42 }, "/query", "type"],
    [q({ rerank: true }), "/rerank", "additionalProperties"],
    [q({ unknown: 1 }), "/unknown", "additionalProperties"],
    [q({ "a/b": 1 }), "/a~1b", "additionalProperties"],
    [q({ limit: 0 }), "/limit", "minimum"],
    [q({ limit: 51 }), "/limit", "maximum"],
    [q({ limit: 2.5 }), "/limit", "type"],
    [q({ limit: "10" }), "/limit", "type"],
    [q({ includeTree: "yes" }), "/includeTree", "type"],
    [q({ filters: [] }), "/filters", "type"],
    [q({ filters: null }), "/filters", "type"],
    [f({ minstars: 5 }), "/filters/minstars", "additionalProperties"],
    [f({ minStars: -1 }), "/filters/minStars", "minimum"],
    [f({ maxStars: -1 }), "/filters/maxStars", "minimum"],
    [f({ minForks: -1 }), "/filters/minForks", "minimum"],
    [f({ maxForks: -5 }), "/filters/maxForks", "minimum"],
    [f({ minStars: 1.5 }), "/filters/minStars", "type"],
    [f({ maxForks: "3" }), "/filters/maxForks", "type"],
    [f({ language: "" }), "/filters/language", "minLength"],
    [f({ language: "l".repeat(101) }), "/filters/language", "maxLength"],
    [f({ language: ["Rust"] }), "/filters/language", "type"],
    [f({ excludeRepos: Array.from({ length: 51 }, (_, i) => `o/r${i}`) }), "/filters/excludeRepos", "maxItems"],
    [f({ excludeRepos: "owner/repo" }), "/filters/excludeRepos", "type"],
    [f({ excludeRepos: ["ok/repo", "noslash"] }), "/filters/excludeRepos/1", "pattern"],
    [f({ excludeRepos: ["a/b/c"] }), "/filters/excludeRepos/0", "pattern"],
    [f({ excludeRepos: ["a /b"] }), "/filters/excludeRepos/0", "pattern"],
    [f({ excludeRepos: ["/b"] }), "/filters/excludeRepos/0", "pattern"],
    [f({ excludeRepos: ["a/"] }), "/filters/excludeRepos/0", "pattern"],
    [f({ excludeRepos: [7] }), "/filters/excludeRepos/0", "type"],
    [f({ categories: ["library", "nope"] }), "/filters/categories/1", "enum"],
    [f({ categories: ["Library"] }), "/filters/categories/0", "enum"],
    [f({ categories: "library" }), "/filters/categories", "type"],
    [f({ topics: [] }), "/filters/topics", "minItems"],
    [f({ topics: [""] }), "/filters/topics/0", "minLength"],
    [f({ topics: "redis" }), "/filters/topics", "type"],
    [f({ excludeArchived: "false" }), "/filters/excludeArchived", "type"],
    [f({ staleAfterMonths: 0 }), "/filters/staleAfterMonths", "exclusiveMinimum"],
    [f({ staleAfterMonths: -3 }), "/filters/staleAfterMonths", "exclusiveMinimum"],
    [f({ staleAfterMonths: 601 }), "/filters/staleAfterMonths", "maximum"],
    [f({ staleAfterMonths: 1.5 }), "/filters/staleAfterMonths", "type"],
  ];
  for (const [body, path, rule] of cases) {
    const r = validateSearchRequest(body);
    const label = JSON.stringify(body)?.slice(0, 100) ?? "undefined";
    assert.ok(!r.ok, `${label} should be rejected`);
    assert.ok(
      r.details.some((d) => d.path === path && d.rule === rule),
      `${label}: expected ${path} ${rule}, got ${JSON.stringify(r.details)}`,
    );
    for (const d of r.details) assert.ok(d.message.length > 0);
  }
});

test("all problems are reported at once, with readable messages", () => {
  const r = validateSearchRequest({ limit: 100, filters: { minStars: -1, categories: ["x"], extra: true } });
  assert.ok(!r.ok);
  assert.deepEqual(r.details.map((d) => `${d.path} ${d.rule}`).sort(), [
    "/filters/categories/0 enum",
    "/filters/extra additionalProperties",
    "/filters/minStars minimum",
    "/limit maximum",
    "/query required",
  ]);
  const byPath = new Map(r.details.map((d) => [d.path, d.message]));
  assert.match(byPath.get("/filters/extra") ?? "", /unknown property "extra"; allowed: minStars, /);
  assert.match(byPath.get("/filters/categories/0") ?? "", /must be one of: library, framework/);
  assert.match(byPath.get("/query") ?? "", /missing required property "query"/);
  assert.equal(byPath.get("/limit"), "must be <= 50");
});

test("validateResponse checks bodies against the document's response schemas", () => {
  const applied = appliedFilters({ mode: "all", values: [], includeUncategorized: true });
  const result = { ...nullResult("a/b"), score: 0.5 };
  const good = {
    query: "x",
    results: [result, { ...result, tree: null }],
    meta: { total: 2, timeMs: 3, methods: { dense: { hits: 2, weight: 1 } }, appliedFilters: applied, reranked: false, rerankMs: 4 },
  };
  assert.deepEqual(validateResponse("SearchResponse", good).errors, []);
  const { staleAfterMonths: _drop, ...partial } = applied;
  void _drop;
  const missing = validateResponse("SearchResponse", { ...good, meta: { ...good.meta, appliedFilters: partial } });
  assert.ok(missing.errors.some((d) => d.path === "/meta/appliedFilters/staleAfterMonths" && d.rule === "required"));
  const badScore = validateResponse("SearchResponse", { ...good, results: [{ ...result, score: 1.5 }] });
  assert.ok(badScore.errors.some((d) => d.path === "/results/0/score" && d.rule === "maximum"));
  const badMethods = validateResponse("Meta", { ...good.meta, methods: { dense: { hits: 1 } } });
  assert.ok(badMethods.errors.some((d) => d.path === "/methods/dense/weight" && d.rule === "required"));
  assert.deepEqual(
    validateResponse("Health", {
      status: "degraded",
      services: { db: { status: "up", latencyMs: 1 }, cache: { status: "down", latencyMs: 0, error: "x" } },
      version: "1",
      uptime: 3.2,
    }).errors,
    [],
  );
  assert.ok(!validateResponse("Error", { error: { code: "UNAVAILABLE", message: "m", status: 502 } }).valid, "internal codes are not public");
});

test("findSimilarRepositories and getRepository: operations, parameters, 404s and the Repository card", () => {
  const similar = openApiDocument.paths["/v1/codehost/similar"]!.post!;
  assert.equal(similar.operationId, "findSimilarRepositories");
  assert.deepEqual(similar.requestBody?.content["application/json"]!.schema, { $ref: "#/components/schemas/SimilarRequest" });
  assert.deepEqual(similar.responses["200"], {
    ...similar.responses["200"],
    content: { "application/json": { schema: { $ref: "#/components/schemas/SearchResponse" } } },
  });
  const card = openApiDocument.paths["/v1/codehost/repos/{owner}/{repo}"]!.get!;
  assert.equal(card.operationId, "getRepository");
  assert.deepEqual(
    card.parameters?.map((p) => [p.name, p.in, p.required]),
    [
      ["owner", "path", true],
      ["repo", "path", true],
    ],
  );
  for (const op of [similar, card]) {
    assert.deepEqual(Object.keys(op.responses).sort(), ["200", "400", "401", "403", "404", "429", "500", "502", "503"]);
    assert.deepEqual(op.responses["404"], { $ref: "#/components/responses/RepositoryNotFound" });
  }
  assert.equal(validateResponse("Repository", { name: "a/b" }).valid, false);
  assert.ok(schemas.Repository.required?.includes("license") && schemas.Repository.required.includes("aliases"));
  assert.deepEqual(schemas.SimilarRequest.required, ["repo"]);
  assert.equal(schemas.SimilarRequest.additionalProperties, false);
});
