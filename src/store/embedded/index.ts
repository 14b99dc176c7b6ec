/**
 * The embedded store's public face: what the rest of the service may use. Everything else under
 * src/store/embedded/ is internal (test/layers.test.ts enforces it).
 */
import { IndexDir } from "./writer.js";

export { embeddedStoreFromConfig } from "./store.js";
export { BootstrapStore, FallbackStore } from "./bootstrap.js";
export { DEFAULT_STORE_SERVE_PORT, StoreServer } from "./serve/server.js";

/** Whether DATA_DIR holds a published index version. */
export async function hasPublishedIndex(dataDir: string): Promise<boolean> {
  return (await new IndexDir(dataDir).readCurrent()) !== null;
}
