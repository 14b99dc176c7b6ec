/**
 * Builds a static embedding model from a corpus and a teacher embedder (Model2Vec-style):
 *   1. vocabulary: the corpus words with document frequency ≥ minDf, most frequent first;
 *   2. the teacher embeds every word on its own;
 *   3. PCA to `dims` (centres the space and drops the teacher's common direction, which otherwise makes
 *      every averaged text look alike);
 *   4. each row is scaled by its word's SIF weight a / (a + df/N), so frequent words count less.
 */
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { sha256Hex } from "../common/hash.js";
import { fitPca, pcaProject } from "./linalg.js";
import { STATIC_FORMAT, STATIC_FORMAT_VERSION, type StaticModelMeta } from "./static.js";
import { staticTokens } from "./static-tokenizer.js";
import type { Embedder } from "./types.js";

export interface DistillOptions {
  readonly vocabSize: number;
  readonly dims: number;
  readonly minDf?: number;
  /** SIF smoothing constant; smaller values down-weight frequent words harder. */
  readonly sifA?: number;
  readonly batchSize?: number;
  readonly onProgress?: (stage: string, done: number, total: number) => void;
}

export interface StaticModel {
  readonly meta: StaticModelMeta;
  readonly vocab: string[];
  readonly vectors: Float32Array;
}

export interface Vocabulary {
  readonly words: string[];
  /** Document frequency of each word, aligned with `words`. */
  readonly df: Uint32Array;
  readonly docCount: number;
}

export function buildVocabulary(docs: Iterable<string>, vocabSize: number, minDf = 2): Vocabulary {
  const df = new Map<string, number>();
  let docCount = 0;
  const seen = new Set<string>();
  for (const doc of docs) {
    docCount++;
    seen.clear();
    for (const t of staticTokens(doc)) {
      if (seen.has(t)) continue;
      seen.add(t);
      df.set(t, (df.get(t) ?? 0) + 1);
    }
  }
  // Ties broken alphabetically so the vocabulary (and the model id) is deterministic.
  const words = [...df.entries()]
    .filter(([, n]) => n >= minDf)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, vocabSize);
  return { words: words.map((w) => w[0]), df: Uint32Array.from(words.map((w) => w[1])), docCount };
}

/** Teacher vectors for every word (count × teacher.dims). */
export async function teacherVectors(
  words: readonly string[],
  teacher: Embedder,
  batchSize: number,
  onProgress?: (done: number, total: number) => void,
): Promise<Float32Array> {
  const out = new Float32Array(words.length * teacher.dims);
  const pending: Promise<void>[] = [];
  let done = 0;
  for (let i = 0; i < words.length; i += batchSize) {
    const start = i;
    const batch = words.slice(i, i + batchSize);
    // The teacher may be a worker pool: keep a few batches in flight so every worker stays busy.
    pending.push(
      teacher.embed(batch).then((vecs) => {
        vecs.forEach((v, k) => out.set(v, (start + k) * teacher.dims));
        done += batch.length;
        onProgress?.(done, words.length);
      }),
    );
    if (pending.length >= 8) await pending.shift();
  }
  await Promise.all(pending);
  return out;
}

/** PCA + SIF weighting of raw teacher vectors into the final model rows. */
export function finishStaticModel(vocab: Vocabulary, raw: Float32Array, inDims: number, teacherId: string, opts: { dims: number; sifA?: number }): StaticModel {
  const n = vocab.words.length;
  const dims = Math.min(opts.dims, inDims);
  const pca = fitPca(raw, n, inDims, dims);
  const vectors = new Float32Array(n * dims);
  const a = opts.sifA ?? 1e-3;
  for (let i = 0; i < n; i++) {
    pcaProject(pca, raw, i * inDims, vectors, i * dims);
    // Normalise before weighting so the weight alone decides a word's share of the mean.
    let s = 0;
    for (let j = 0; j < dims; j++) s += vectors[i * dims + j]! ** 2;
    const p = vocab.df[i]! / Math.max(1, vocab.docCount);
    const w = a / (a + p) / Math.sqrt(s || 1);
    for (let j = 0; j < dims; j++) vectors[i * dims + j]! *= w;
  }
  const digest = sha256Hex(Buffer.concat([Buffer.from(vocab.words.join("\n")), Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength)]));
  const meta: StaticModelMeta = {
    format: STATIC_FORMAT,
    formatVersion: STATIC_FORMAT_VERSION,
    modelId: digest.slice(0, 16),
    teacher: teacherId,
    dims,
    vocabSize: n,
    createdAt: new Date().toISOString(),
    weighting: `pca${dims}+sif(a=${a})`,
  };
  return { meta, vocab: vocab.words, vectors };
}

export async function distillStaticModel(docs: readonly string[], teacher: Embedder, opts: DistillOptions): Promise<StaticModel> {
  opts.onProgress?.("vocabulary", 0, docs.length);
  const vocab = buildVocabulary(docs, opts.vocabSize, opts.minDf ?? 2);
  opts.onProgress?.("vocabulary", docs.length, docs.length);
  const raw = await teacherVectors(vocab.words, teacher, opts.batchSize ?? 256, (d, t) => opts.onProgress?.("teacher", d, t));
  opts.onProgress?.("pca", 0, 1);
  const model = finishStaticModel(vocab, raw, teacher.dims, teacher.id, opts);
  opts.onProgress?.("pca", 1, 1);
  return model;
}

/** Writes the model to `<root>/<modelId>/` atomically (temp dir + rename); returns that directory. */
export async function writeStaticModel(root: string, model: StaticModel): Promise<string> {
  const dir = path.join(root, model.meta.modelId);
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await writeFile(path.join(tmp, "vocab.json"), JSON.stringify(model.vocab));
  await writeFile(path.join(tmp, "vectors.f32"), Buffer.from(model.vectors.buffer, model.vectors.byteOffset, model.vectors.byteLength));
  await writeFile(path.join(tmp, "model.json"), JSON.stringify(model.meta, null, 2));
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  return dir;
}
