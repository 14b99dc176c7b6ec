/**
 * Chooses the vector store: the embedded store (default) or QdrantStore (a real Qdrant, or another
 * machine's `reposearch store serve`). The store settings are read from the environment here until they
 * move into the typed configuration (src/config/config.ts); the variables are listed in docs/qdrant.md.
 */
import { ConfigError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { embeddedStoreFromConfig } from "./embedded/store.js";
import { DEFAULT_COLLECTION, QdrantStore, qdrantStoreOptionsFromConfig, type QdrantQuantization } from "./qdrant/store.js";
import type { VectorStore } from "./types.js";

export const VECTOR_STORE_KINDS = ["embedded", "qdrant"] as const;
export type VectorStoreKind = (typeof VECTOR_STORE_KINDS)[number];

export interface QdrantSettings {
  readonly url: string;
  readonly apiKey: string | null;
  readonly collection: string;
  readonly quantization: QdrantQuantization;
  readonly timeoutMs: number;
}

export interface StoreSettings {
  readonly kind: VectorStoreKind;
  /** Set when kind is "qdrant". */
  readonly qdrant: QdrantSettings | null;
}

const DEFAULT_QDRANT_TIMEOUT_MS = 30_000;

/**
 * VECTOR_STORE (embedded|qdrant, default embedded), QDRANT_URL (required for qdrant), QDRANT_API_KEY,
 * QDRANT_COLLECTION (default repos), QDRANT_QUANTIZATION (none|int8, default none), QDRANT_TIMEOUT_MS
 * (default 30000). Fails with every problem named, like loadConfig.
 */
export function storeSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreSettings {
  const get = (k: string): string | null => {
    const v = env[k]?.trim();
    return v === undefined || v === "" ? null : v;
  };
  const problems: string[] = [];
  const kind = get("VECTOR_STORE") ?? "embedded";
  if (!(VECTOR_STORE_KINDS as readonly string[]).includes(kind)) problems.push(`VECTOR_STORE: must be one of ${VECTOR_STORE_KINDS.join(", ")} (got ${JSON.stringify(kind)})`);
  const url = get("QDRANT_URL");
  if (url !== null && !/^https?:\/\/[^/\s]+/.test(url)) problems.push(`QDRANT_URL: must be an http(s) URL (got ${JSON.stringify(url)})`);
  if (kind === "qdrant" && url === null) problems.push("QDRANT_URL: required when VECTOR_STORE=qdrant");
  const collection = get("QDRANT_COLLECTION") ?? DEFAULT_COLLECTION;
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(collection)) problems.push(`QDRANT_COLLECTION: letters, digits, _ and - only (got ${JSON.stringify(collection)})`);
  const quantization = get("QDRANT_QUANTIZATION") ?? "none";
  if (quantization !== "none" && quantization !== "int8") problems.push(`QDRANT_QUANTIZATION: must be none or int8 (got ${JSON.stringify(quantization)})`);
  const timeoutText = get("QDRANT_TIMEOUT_MS");
  const timeoutMs = timeoutText === null ? DEFAULT_QDRANT_TIMEOUT_MS : Number(timeoutText);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000) problems.push(`QDRANT_TIMEOUT_MS: must be an integer in [1, 3600000] (got ${JSON.stringify(timeoutText)})`);
  if (problems.length) throw new ConfigError(problems);
  return {
    kind: kind as VectorStoreKind,
    qdrant: kind === "qdrant" ? { url: url!, apiKey: get("QDRANT_API_KEY"), collection, quantization: quantization as QdrantQuantization, timeoutMs } : null,
  };
}

/** Opens the configured store. A Qdrant store is checked to be reachable before this resolves. */
export async function openStore(config: Config, opts: { logger?: Logger; env?: NodeJS.ProcessEnv } = {}): Promise<VectorStore> {
  const settings = storeSettingsFromEnv(opts.env ?? process.env);
  if (settings.qdrant === null) return embeddedStoreFromConfig(config, opts.logger);
  return QdrantStore.open(qdrantStoreOptionsFromConfig(config, settings.qdrant, opts.logger));
}
