/**
 * The factory's spec mapping and query-embedder selection. The onnx and http paths are exercised against
 * real models/servers in onnx.test.ts and http.test.ts; here: use-lite, config mapping and id handling.
 */
import assert from "node:assert/strict";
import { describe, test } from "vitest";
import { ConfigError, ErrorCode, ReposearchError } from "../common/errors.js";
import { loadConfig } from "../config/config.js";
import { createEmbedder, loadQueryEmbedder, specFromConfig } from "./factory.js";
import { UseLiteEmbedder } from "./use-lite.js";

const base = { DATA_DIR: "/tmp/reposearch-factory-test" };

describe("specFromConfig", () => {
  test("maps every embedder kind from the config", () => {
    assert.deepEqual(specFromConfig(loadConfig({ ...base, EMBEDDER: "use-lite" })), { kind: "use-lite" });
    assert.deepEqual(specFromConfig(loadConfig({ ...base, EMBEDDER: "static" }), "/models/static/m1"), { kind: "static", modelDir: "/models/static/m1" });
    assert.deepEqual(specFromConfig(loadConfig({ ...base, EMBEDDER: "onnx", ONNX_MODEL_DIR: "/m/bge", ONNX_MAX_TOKENS: "128" })), {
      kind: "onnx",
      modelDir: "/m/bge",
      maxTokens: 128,
    });
    assert.deepEqual(
      specFromConfig(loadConfig({ ...base, EMBEDDER: "http", EMBED_HTTP_URL: "http://tei:8080", EMBED_HTTP_TIMEOUT_MS: "5000", EMBED_BATCH_SIZE: "32" })),
      { kind: "http", url: "http://tei:8080", timeoutMs: 5_000, batchSize: 32 },
    );
  });

  test("static needs a model directory", () => {
    assert.throws(() => specFromConfig(loadConfig({ ...base, EMBEDDER: "static" })), ConfigError);
  });
});

describe("createEmbedder / loadQueryEmbedder", () => {
  test("use-lite: built from its spec, and chosen for a use-lite@ index of the same version only", async () => {
    const e = await createEmbedder({ kind: "use-lite" });
    try {
      assert.ok(e instanceof UseLiteEmbedder);
      const q = await loadQueryEmbedder(loadConfig(base), e.id);
      assert.equal(q.id, e.id);
      assert.deepEqual(await q.embed(["graph database"]), await e.embed(["graph database"]));
      await q.close();
    } finally {
      await e.close();
    }
    await assert.rejects(
      loadQueryEmbedder(loadConfig(base), "use-lite@0.0.1"),
      (err: unknown) => err instanceof ConfigError && /use-lite@0\.0\.1/.test(err.message),
    );
  });

  test("onnx and http indexes need their model directory / URL configured", async () => {
    await assert.rejects(
      loadQueryEmbedder(loadConfig(base), "onnx:bge:0123456789ab"),
      (err: unknown) => err instanceof ConfigError && /ONNX_MODEL_DIR/.test(err.message),
    );
    await assert.rejects(
      loadQueryEmbedder(loadConfig(base), "http:tei:8080@BAAI/bge"),
      (err: unknown) => err instanceof ConfigError && /EMBED_HTTP_URL/.test(err.message),
    );
  });

  test("unknown prefixes and unsafe static model ids are clear errors", async () => {
    const isInternal = (pattern: RegExp) => (err: unknown) => err instanceof ReposearchError && err.code === ErrorCode.Internal && pattern.test(err.message);
    await assert.rejects(loadQueryEmbedder(loadConfig(base), "word2vec:news"), isInternal(/unknown embedder "word2vec:news"/));
    await assert.rejects(loadQueryEmbedder(loadConfig(base), "static:../../etc"), isInternal(/invalid static model id/));
    await assert.rejects(loadQueryEmbedder(loadConfig(base), "static:"), isInternal(/invalid static model id/));
  });
});
