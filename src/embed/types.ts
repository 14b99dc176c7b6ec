/**
 * The embedder interface. Every implementation returns L2-normalised Float32Array vectors, so cosine
 * similarity is a dot product everywhere downstream.
 */
export interface Embedder {
  /** Stable identity of the model and its settings; part of every point's content hash. */
  readonly id: string;
  readonly dims: number;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/** A serialisable description of an embedder, so worker threads can build the same one. */
export type EmbedderSpec =
  | { readonly kind: "use-lite" }
  | { readonly kind: "static"; readonly modelDir: string }
  | { readonly kind: "onnx"; readonly modelDir: string; readonly maxTokens: number }
  | { readonly kind: "http"; readonly url: string; readonly timeoutMs: number; readonly batchSize: number };

export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}
