/**
 * Chooses the vector store: the embedded store (default) or QdrantStore (a real Qdrant, or another
 * machine's `reposearch store serve`), as configured by VECTOR_STORE and QDRANT_* (src/config/config.ts).
 */
import type { Logger } from "../common/logger.js";
import { loadConfig, type Config, type QdrantSettings, type VectorStoreKind } from "../config/config.js";
import { embeddedStoreFromConfig } from "./embedded/index.js";
import { QdrantStore, qdrantStoreOptionsFromConfig } from "./qdrant/store.js";
import type { VectorStore } from "./types.js";

export interface StoreSettings {
  readonly kind: VectorStoreKind;
  /** Set when kind is "qdrant". */
  readonly qdrant: QdrantSettings | null;
}

/** The store settings of an environment (validated by the configuration module, like every setting). */
export function storeSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreSettings {
  return loadConfig(env).vectorStore;
}

/** Opens the configured store. A Qdrant store is checked to be reachable before this resolves. */
export async function openStore(config: Config, opts: { logger?: Logger; env?: NodeJS.ProcessEnv } = {}): Promise<VectorStore> {
  const settings = opts.env ? storeSettingsFromEnv(opts.env) : config.vectorStore;
  if (settings.qdrant === null) return embeddedStoreFromConfig(config, opts.logger);
  return QdrantStore.open(qdrantStoreOptionsFromConfig(config, settings.qdrant, opts.logger));
}
