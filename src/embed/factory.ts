// STUB: owned by the embedders work; the lead adds loadQueryEmbedder.
import type { Config } from "../config/config.js";
import type { Embedder, EmbedderSpec } from "./types.js";

export async function createEmbedder(spec: EmbedderSpec): Promise<Embedder> {
  throw new Error(`not implemented (${spec.kind})`);
}

/** The embedder that embeds queries for an index built with `embedderId`. */
export async function loadQueryEmbedder(config: Config, embedderId: string): Promise<Embedder> {
  throw new Error(`not implemented (${config.dataDir}, ${embedderId})`);
}
