import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "vitest";
import { ConfigError, ErrorCode, ReposearchError } from "../common/errors.js";
import { loadConfig } from "../config/config.js";
import { openStore, storeSettingsFromEnv } from "./factory.js";
import { QdrantStore } from "./qdrant/store.js";

describe("store settings", () => {
  it("default to the embedded store", () => {
    assert.deepEqual(storeSettingsFromEnv({}), { kind: "embedded", qdrant: null });
  });

  it("read the Qdrant variables", () => {
    const s = storeSettingsFromEnv({
      VECTOR_STORE: "qdrant",
      QDRANT_URL: "http://q:6333",
      QDRANT_API_KEY: "k",
      QDRANT_COLLECTION: "repos_v2",
      QDRANT_QUANTIZATION: "int8",
      QDRANT_TIMEOUT_MS: "5000",
    });
    assert.deepEqual(s, { kind: "qdrant", qdrant: { url: "http://q:6333", apiKey: "k", collection: "repos_v2", quantization: "int8", timeoutMs: 5000 } });
  });

  it("fail naming every bad variable", () => {
    assert.throws(
      () => storeSettingsFromEnv({ VECTOR_STORE: "qdrant", QDRANT_COLLECTION: "a b", QDRANT_QUANTIZATION: "pq", QDRANT_TIMEOUT_MS: "soon" }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.problems.length, 4);
        assert.match(err.message, /QDRANT_URL: required when VECTOR_STORE=qdrant/);
        assert.match(err.message, /QDRANT_COLLECTION/);
        assert.match(err.message, /QDRANT_QUANTIZATION: must be none or int8/);
        assert.match(err.message, /QDRANT_TIMEOUT_MS/);
        return true;
      },
    );
    assert.throws(() => storeSettingsFromEnv({ VECTOR_STORE: "pinecone" }), /VECTOR_STORE: must be one of embedded, qdrant/);
    assert.throws(() => storeSettingsFromEnv({ VECTOR_STORE: "qdrant", QDRANT_URL: "localhost:6333" }), /QDRANT_URL: must be an http\(s\) URL/);
  });
});

describe("QdrantStore options", () => {
  it("are validated up front, every problem named", () => {
    assert.throws(
      () =>
        QdrantStore.create({
          url: "ftp://x",
          collection: "bad name",
          timeoutMs: 0,
          hnsw: { m: 1, efConstruction: 100 },
          efSearch: 0,
          quantization: "pq" as "int8",
        }),
      (err: unknown) => {
        assert.ok(err instanceof ReposearchError && err.code === ErrorCode.ValidationError);
        for (const re of [
          /url must be an http\(s\) URL/,
          /collection must match/,
          /timeoutMs must be an integer/,
          /hnsw\.m must be/,
          /efSearch must be/,
          /quantization must be "none" or "int8"/,
        ])
          assert.match(err.message, re);
        return true;
      },
    );
  });

  it("openStore fails fast when Qdrant is unreachable", async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    await assert.rejects(
      openStore(loadConfig({}), { env: { VECTOR_STORE: "qdrant", QDRANT_URL: `http://127.0.0.1:${port}`, QDRANT_TIMEOUT_MS: "2000" } }),
      (err: unknown) =>
        err instanceof ReposearchError && err.code === ErrorCode.Unavailable && /cannot reach the server at http:\/\/127\.0\.0\.1/.test(err.message),
    );
  });
});
