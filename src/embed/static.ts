/**
 * A distilled static embedding (the Model2Vec recipe): the teacher (USE-lite by default) embeds every
 * vocabulary word once at build time; a text's vector is then the weighted mean of its words' vectors.
 * Embedding costs microseconds instead of the teacher's ~25 ms per repository text, which is what makes a
 * full 204k build fit in minutes. The model lives in a directory (see writeStaticModel) and its id is a
 * hash of its contents, so an index records exactly which model embedded it.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { staticTokens } from "./static-tokenizer.js";
import type { Embedder } from "./types.js";

export const STATIC_FORMAT = "reposearch-static-embedder";
export const STATIC_FORMAT_VERSION = 1;

export interface StaticModelMeta {
  readonly format: typeof STATIC_FORMAT;
  readonly formatVersion: number;
  readonly modelId: string;
  readonly teacher: string;
  readonly dims: number;
  readonly vocabSize: number;
  readonly createdAt: string;
  readonly weighting: string;
  /** Set on models fine-tuned by `reposearch train` or the index's train stage: the model trained from. */
  readonly trainedFrom?: string;
}

export class StaticEmbedder implements Embedder {
  readonly id: string;
  readonly dims: number;
  private readonly index: Map<string, number>;

  constructor(
    readonly meta: StaticModelMeta,
    vocab: readonly string[],
    /** vocabSize × dims, row-major; rows already multiplied by their token weight. */
    private readonly vectors: Float32Array,
  ) {
    if (vectors.length !== vocab.length * meta.dims) {
      throw new Error(`static model ${meta.modelId}: vectors hold ${vectors.length} floats, expected ${vocab.length}×${meta.dims}`);
    }
    this.id = `static:${meta.modelId}`;
    this.dims = meta.dims;
    this.index = new Map(vocab.map((t, i) => [t, i]));
  }

  static async load(modelDir: string): Promise<StaticEmbedder> {
    const meta = JSON.parse(await readFile(path.join(modelDir, "model.json"), "utf8")) as StaticModelMeta;
    if (meta.format !== STATIC_FORMAT || meta.formatVersion !== STATIC_FORMAT_VERSION) {
      throw new Error(`${modelDir}: not a ${STATIC_FORMAT} v${STATIC_FORMAT_VERSION} model`);
    }
    const vocab = JSON.parse(await readFile(path.join(modelDir, "vocab.json"), "utf8")) as string[];
    const buf = await readFile(path.join(modelDir, "vectors.f32"));
    const vectors = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    return new StaticEmbedder(meta, vocab, vectors);
  }

  /** Vocabulary row of a token, or -1. */
  tokenId(token: string): number {
    return this.index.get(token) ?? -1;
  }

  /** Sync embedding of one text into `out` (L2-normalised; all zeros when no word is known). */
  embedOne(text: string, out: Float32Array = new Float32Array(this.dims)): Float32Array {
    out.fill(0);
    const d = this.dims;
    const seen = new Set<number>();
    for (const tok of staticTokens(text)) {
      const id = this.index.get(tok);
      // Each word counts once per text: repetition in READMEs should not dominate the mean.
      if (id === undefined || seen.has(id)) continue;
      seen.add(id);
      const base = id * d;
      for (let j = 0; j < d; j++) out[j]! += this.vectors[base + j]!;
    }
    let s = 0;
    for (let j = 0; j < d; j++) s += out[j]! * out[j]!;
    if (s > 0) {
      const inv = 1 / Math.sqrt(s);
      for (let j = 0; j < d; j++) out[j]! *= inv;
    }
    return out;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  async close(): Promise<void> {}
}
