// STUB: the lead is writing the distilled static embedder. Signature is the contract.
import type { Embedder } from "./types.js";

export class StaticEmbedder implements Embedder {
  readonly id: string = "static:stub";
  readonly dims: number = 0;
  static async load(modelDir: string): Promise<StaticEmbedder> {
    throw new Error(`not implemented (${modelDir})`);
  }
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    throw new Error(`not implemented (${texts.length})`);
  }
  async close(): Promise<void> {}
}
