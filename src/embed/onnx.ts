/**
 * A sentence-transformers model exported to ONNX, run on CPU with onnxruntime-node and tokenised with
 * @huggingface/tokenizers. Entirely offline: everything is read from the operator's model directory.
 *
 * Directory layout (what `optimum` / sentence-transformers exports produce):
 *   model.onnx | onnx/model.onnx       the transformer (outputs token states, or an already-pooled vector)
 *   tokenizer.json [+ tokenizer_config.json]
 *   modules.json, 1_Pooling/config.json, 2_Normalize/   (optional; default: mean pooling)
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync } from "node:fs";
import path from "node:path";
import type { Tokenizer } from "@huggingface/tokenizers";
import type * as ort from "onnxruntime-node";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import {
  batchFeeds,
  intraOpThreadsOf,
  modelTokenLimit,
  onnxLoadError,
  OnnxModelDir,
  padIdOf,
  readModelJson,
  runFloatOutput,
  type Encoded,
  type ModelInput,
} from "../common/onnx-model.js";
import type { Embedder } from "./types.js";
import { l2normalize } from "./types.js";

export const POOLING_MODES = ["mean", "cls", "max", "lasttoken"] as const;
export type PoolingMode = (typeof POOLING_MODES)[number];

export interface OnnxEmbedderOptions {
  /** Tokens per text, special tokens included; longer texts are truncated. */
  readonly maxTokens: number;
  /** onnxruntime intra-op threads; 0 lets onnxruntime pick (one per core). */
  readonly intraOpThreads?: number;
  /** Texts per onnxruntime run; bounds the padded [batch, seq, dim] tensor. */
  readonly runBatchSize?: number;
}

/** The pooling the model's sentence-transformers config asks for. */
export interface PoolingConfig {
  readonly mode: PoolingMode;
  /** Whether the model ships a Normalize module (output is L2-normalised regardless; see `embed`). */
  readonly normalize: boolean;
}

/** Output names in order of preference: an already-pooled vector first, then per-token states. */
const POOLED_OUTPUT = "sentence_embedding";
const TOKEN_OUTPUTS = ["last_hidden_state", "token_embeddings"] as const;

const LABEL = "onnx model";
const loadError = (modelDir: string, message: string, cause?: unknown) => onnxLoadError(LABEL, modelDir, message, cause);
const readJson = (modelDir: string, file: string) => readModelJson(LABEL, modelDir, file);

async function sha256File(file: string): Promise<string> {
  // Streamed: real models are hundreds of MB.
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/**
 * Reads modules.json / 1_Pooling/config.json / 2_Normalize. Without modules.json the sentence-transformers
 * default applies: mean pooling, normalised.
 */
export async function readPoolingConfig(modelDir: string): Promise<PoolingConfig> {
  const modulesFile = path.join(modelDir, "modules.json");
  let poolingDir = "1_Pooling";
  let normalize = true;
  if (existsSync(modulesFile)) {
    const modules = (await readJson(modelDir, modulesFile)) as { type?: string; path?: string }[];
    if (!Array.isArray(modules)) throw loadError(modelDir, "modules.json is not an array");
    const pooling = modules.find((m) => typeof m.type === "string" && m.type.endsWith(".Pooling"));
    if (pooling?.path) poolingDir = pooling.path;
    normalize = modules.some((m) => typeof m.type === "string" && m.type.endsWith(".Normalize"));
  }
  const poolingFile = path.join(modelDir, poolingDir, "config.json");
  if (!existsSync(poolingFile)) return { mode: "mean", normalize };
  const cfg = (await readJson(modelDir, poolingFile)) as Record<string, unknown>;
  // Newer exports may carry a single `pooling_mode` string; older ones one boolean per mode.
  const flags: Record<string, PoolingMode> = {
    pooling_mode_mean_tokens: "mean",
    pooling_mode_cls_token: "cls",
    pooling_mode_max_tokens: "max",
    pooling_mode_lasttoken: "lasttoken",
  };
  const unsupported = ["pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"].filter((k) => cfg[k] === true);
  const modes = Object.entries(flags)
    .filter(([k]) => cfg[k] === true)
    .map(([, m]) => m);
  if (typeof cfg.pooling_mode === "string") modes.push(cfg.pooling_mode as PoolingMode);
  if (unsupported.length > 0 || modes.length > 1 || (modes.length === 1 && !POOLING_MODES.includes(modes[0]!))) {
    throw loadError(
      modelDir,
      `unsupported pooling in ${poolingDir}/config.json (${[...unsupported, ...modes].join(" + ")}); supported: exactly one of ${POOLING_MODES.join(", ")}`,
    );
  }
  return { mode: modes[0] ?? "mean", normalize };
}

export class OnnxEmbedder implements Embedder {
  readonly id: string;
  readonly pooling: PoolingConfig;
  /** Effective token limit: `maxTokens`, capped by the tokenizer's `model_max_length`. */
  readonly maxTokens: number;
  /** Set once by the probe run in `load`. */
  private outputDims = 0;

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly tokenizer: Tokenizer,
    private readonly template: { readonly prefix: number; readonly suffix: number },
    private readonly padId: number,
    private readonly inputs: readonly ModelInput[],
    private readonly output: string,
    private readonly runBatchSize: number,
    init: { id: string; pooling: PoolingConfig; maxTokens: number },
  ) {
    this.id = init.id;
    this.pooling = init.pooling;
    this.maxTokens = init.maxTokens;
  }

  get dims(): number {
    return this.outputDims;
  }

  static async load(modelDir: string, opts: OnnxEmbedderOptions): Promise<OnnxEmbedder> {
    if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 3) throw new RangeError(`maxTokens must be an integer >= 3, got ${opts.maxTokens}`);
    const runBatchSize = opts.runBatchSize ?? 32;
    if (!Number.isInteger(runBatchSize) || runBatchSize < 1) throw new RangeError(`runBatchSize must be a positive integer, got ${runBatchSize}`);
    const intraOpThreads = intraOpThreadsOf(opts.intraOpThreads);

    const model = OnnxModelDir.locate(LABEL, modelDir);
    const dir = model.dir;
    const tokenizer = await model.loadTokenizer();
    const pooling = await readPoolingConfig(dir);

    const session = await model.openSession(intraOpThreads);
    try {
      const inputs = model.feedableInputs(session, "embedder");
      const output = [POOLED_OUTPUT, ...TOKEN_OUTPUTS].find((n) => session.outputNames.includes(n));
      if (!output) {
        throw model.error(`model has none of the outputs ${[POOLED_OUTPUT, ...TOKEN_OUTPUTS].join(", ")} (outputs: ${session.outputNames.join(", ")})`);
      }

      const maxTokens = Math.min(opts.maxTokens, modelTokenLimit(tokenizer.config));
      const template = OnnxEmbedder.specialTemplate(tokenizer.tokenizer);
      if (maxTokens <= template.prefix + template.suffix) {
        throw model.error(`maxTokens ${maxTokens} leaves no room for text besides the ${template.prefix + template.suffix} special tokens`);
      }
      const id = `onnx:${path.basename(dir)}:${(await sha256File(model.modelFile)).slice(0, 12)}`;

      const embedder = new OnnxEmbedder(session, tokenizer.tokenizer, template, padIdOf(tokenizer), inputs, output, runBatchSize, { id, pooling, maxTokens });
      // A probe run learns the output width and proves the graph runs with what we feed it.
      const [probe] = await embedder.run([embedder.encode("dimension probe")]);
      if (!probe || probe.length === 0) throw model.error(`output ${output} is empty`);
      embedder.outputDims = probe.length;
      return embedder;
    } catch (err) {
      await session.release().catch(() => {});
      if (err instanceof ReposearchError) throw err;
      throw model.error(`probe inference failed: ${(err as Error).message}`, err);
    }
  }

  /** How many special tokens the post-processor puts before and after the text (e.g. [CLS] … [SEP]). */
  private static specialTemplate(tokenizer: Tokenizer): { prefix: number; suffix: number } {
    const probe = "hello world";
    const bare: number[] = tokenizer.encode(probe, { add_special_tokens: false }).ids;
    const full: number[] = tokenizer.encode(probe).ids;
    for (let start = 0; start + bare.length <= full.length; start++) {
      if (bare.every((id, i) => full[start + i] === id)) return { prefix: start, suffix: full.length - start - bare.length };
    }
    return { prefix: 0, suffix: 0 };
  }

  /** Token ids of one text as the model sees it: special tokens added, truncated to `maxTokens`. */
  tokenize(text: string): number[] {
    return this.encode(text).ids;
  }

  private encode(text: string): Encoded {
    const enc = this.tokenizer.encode(text, { return_token_type_ids: true });
    let ids = enc.ids;
    let typeIds = enc.token_type_ids ?? new Array<number>(ids.length).fill(0);
    if (ids.length > this.maxTokens) {
      // Truncate the text, keeping the closing special tokens the model was trained to see.
      const keep = (a: number[]) => [...a.slice(0, this.maxTokens - this.template.suffix), ...a.slice(a.length - this.template.suffix)];
      ids = keep(ids);
      typeIds = keep(typeIds);
    }
    return { ids, typeIds };
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const encoded = texts.map((t) => this.encode(t));
    // Batch texts of similar length together so little compute goes to padding; order is restored below.
    const order = encoded.map((_, i) => i).sort((a, b) => encoded[a]!.ids.length - encoded[b]!.ids.length);
    const out = new Array<Float32Array>(texts.length);
    for (let start = 0; start < order.length; start += this.runBatchSize) {
      const idx = order.slice(start, start + this.runBatchSize);
      const vectors = await this.run(idx.map((i) => encoded[i]!));
      idx.forEach((i, k) => (out[i] = vectors[k]!));
    }
    return out;
  }

  private async run(batch: readonly Encoded[]): Promise<Float32Array[]> {
    const b = batch.length;
    const { feeds, seq } = batchFeeds(batch, this.inputs, this.padId);
    return runFloatOutput(this.session, feeds, this.output, "onnx", (data, dims) => {
      if (this.output === POOLED_OUTPUT) {
        if (dims.length !== 2 || dims[0] !== b)
          throw new ReposearchError(ErrorCode.Internal, `onnx output ${this.output} has shape [${dims.join(", ")}]; expected [${b}, dims]`);
        const d = dims[1]!;
        return batch.map((_, r) => l2normalize(data.slice(r * d, (r + 1) * d)));
      }
      if (dims.length !== 3 || dims[0] !== b || dims[1] !== seq) {
        throw new ReposearchError(ErrorCode.Internal, `onnx output ${this.output} has shape [${dims.join(", ")}]; expected [${b}, ${seq}, dims]`);
      }
      return batch.map((e, r) => l2normalize(pool(this.pooling.mode, data, r, seq, dims[2]!, e.ids.length)));
    });
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/**
 * Pools row `r` of a [batch, seq, dim] tensor over its first `len` (unpadded) positions. The result is
 * always L2-normalised by the caller: the Embedder contract is cosine == dot product, whether or not the
 * model ships a Normalize module (for models that do, normalising twice changes nothing).
 */
function pool(mode: PoolingMode, data: Float32Array, r: number, seq: number, dim: number, len: number): Float32Array {
  const base = r * seq * dim;
  switch (mode) {
    case "cls":
      return data.slice(base, base + dim);
    case "lasttoken":
      return data.slice(base + (len - 1) * dim, base + len * dim);
    case "max": {
      const out = data.slice(base, base + dim);
      for (let t = 1; t < len; t++) {
        const o = base + t * dim;
        for (let j = 0; j < dim; j++) if (data[o + j]! > out[j]!) out[j] = data[o + j]!;
      }
      return out;
    }
    case "mean": {
      const out = new Float32Array(dim);
      for (let t = 0; t < len; t++) {
        const o = base + t * dim;
        for (let j = 0; j < dim; j++) out[j]! += data[o + j]!;
      }
      for (let j = 0; j < dim; j++) out[j]! /= len;
      return out;
    }
  }
}
