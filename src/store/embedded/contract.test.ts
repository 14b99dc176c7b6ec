/** The VectorStore contract (test/support/store-contract.ts) against the embedded store, in process. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setLogLevel } from "../../common/logger.js";
import { storeContract } from "../../../test/support/store-contract.js";
import { EmbeddedStore } from "./store.js";

setLogLevel("warn");

storeContract(
  "embedded",
  async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "rs-contract-"));
    // fullScanThreshold below the fixture's size, so unfiltered searches walk the HNSW graph.
    const store = await EmbeddedStore.open({
      dataDir,
      hnsw: { m: 8, efConstruction: 32 },
      efSearch: 32,
      fullScanThreshold: 20,
      keepVersions: 2,
      lockPollIntervalMs: 5,
    });
    return {
      store,
      async dispose() {
        await store.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  { atomicPublish: true },
);
