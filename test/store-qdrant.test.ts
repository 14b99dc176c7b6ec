/**
 * The VectorStore contract against a real Qdrant (>= 1.10). Needs a server:
 *   QDRANT_URL=http://localhost:6333 [QDRANT_API_KEY=…] npx vitest run test/store-qdrant.test.ts
 * Each test store is a fresh collection `reposearch_contract_<random>` (plus its `_meta`), dropped afterwards.
 */
import { randomBytes } from "node:crypto";
import { setLogLevel } from "../src/common/logger.js";
import { storeContract } from "./support/store-contract.js";
import { QdrantStore } from "../src/store/qdrant/store.js";

setLogLevel("warn");

const url = process.env.QDRANT_URL?.trim() ?? "";

storeContract(
  "QdrantStore → Qdrant",
  async () => {
    const store = await QdrantStore.open({
      url,
      apiKey: process.env.QDRANT_API_KEY ?? null,
      collection: `reposearch_contract_${randomBytes(4).toString("hex")}`,
      hnsw: { m: 16, efConstruction: 100 },
      efSearch: 128,
      quantization: process.env.QDRANT_QUANTIZATION === "int8" ? "int8" : "none",
    });
    return {
      store,
      async dispose() {
        await store.dropCollection();
        await store.close();
      },
    };
  },
  // Qdrant applies each write when it is acknowledged: readers see staged work before commit.
  { atomicPublish: false, skip: url === "" ? "QDRANT_URL is not set: no Qdrant server to test against (see docs/qdrant.md)" : false },
);
