/**
 * A cross-encoder (sentence-transformers `CrossEncoder` / HF `...ForSequenceClassification`) exported to
 * ONNX, run on CPU with onnxruntime-node and tokenised with @huggingface/tokenizers. Offline: everything
 * is read from the operator's model directory.
 *
 * Directory layout (what `optimum-cli export onnx --task text-classification` produces):
 *   model.onnx | onnx/model.onnx     inputs input_ids, attention_mask[, token_type_ids]; output `logits`
 *   tokenizer.json [+ tokenizer_config.json]
 *   config.json                      optional; max_position_embeddings caps the token limit
 *
 * Scores: a [batch, 1] output (the usual MS MARCO-style reranker) gives the raw logit; a [batch, 2]
 * output (binary classifier, label 1 = relevant) gives logit[1] − logit[0], the log-odds of softmax[1].
 * Both order candidates exactly as sigmoid / softmax would, without the saturation that makes clearly
 * relevant candidates tie at 1.0.
 */
import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import * as ort from "onnxruntime-node";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { RerankCandidate, Reranker } from "./types.js";

export interface OnnxCrossEncoderOptions {
  readonly modelDir: string;
  /** Tokens per (query, passage) pair, special tokens included; default 512, capped by what the model supports. */
  readonly maxTokens?: number;
  /** Pairs per onnxruntime run; bounds the padded tensors and is the granularity at which aborts take effect. */
  readonly batchSize?: number;
  /** onnxruntime intra-op threads; 0 lets onnxruntime pick (one per core). */
  readonly intraOpThreads?: number;
}

/** How a row of the logits output becomes a score (see the module comment). */
export type LogitMode = "logit" | "logit-difference";

const DEFAULT_MAX_TOKENS = 512;
const DEFAULT_BATCH_SIZE = 16;
const FEEDABLE_INPUTS = ["input_ids", "attention_mask", "token_type_ids", "position_ids"] as const;
type FeedableInput = (typeof FEEDABLE_INPUTS)[number];
const LOGITS_OUTPUT = "logits";
/**
 * Passages are cut to this many characters per token of budget before tokenising (at a whitespace), so a
 * huge README costs no more than the prefix the model can see. Tokens average 3–5 characters; when the
 * cut text still yields too few tokens the whole text is tokenised instead.
 */
const CHARS_PER_TOKEN_CUT = 12;

/** Special tokens and segment ids around the two sequences, as the tokenizer's pair template lays them out. */
interface PairTemplate {
  readonly prefix: readonly number[];
  readonly prefixTypes: readonly number[];
  readonly middle: readonly number[];
  readonly middleTypes: readonly number[];
  readonly suffix: readonly number[];
  readonly suffixTypes: readonly number[];
  readonly queryType: number;
  readonly passageType: number;
}

interface Encoded {
  readonly ids: number[];
  readonly typeIds: number[];
}

function loadError(modelDir: string, message: string, cause?: unknown): ReposearchError {
  return new ReposearchError(ErrorCode.Internal, `onnx reranker ${modelDir}: ${message}`, { cause });
}

async function readJson(modelDir: string, file: string): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8")) as unknown;
  } catch (err) {
    throw loadError(modelDir, `cannot read ${path.relative(modelDir, file)}: ${(err as Error).message}`, err);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw loadError(modelDir, `${path.relative(modelDir, file)} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

function positiveInt(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  return value;
}

export class OnnxCrossEncoder implements Reranker {
  readonly id: string;
  /** Effective token limit per pair: `maxTokens`, capped by the tokenizer's and the model's limits. */
  readonly maxTokens: number;
  readonly batchSize: number;
  /** Learned from the probe run at load. */
  private mode: LogitMode = "logit";

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly tokenizer: Tokenizer,
    private readonly template: PairTemplate,
    private readonly padId: number,
    private readonly inputs: readonly { readonly name: FeedableInput; readonly type: "int64" | "int32" }[],
    private readonly output: string,
    init: { id: string; maxTokens: number; batchSize: number },
  ) {
    this.id = init.id;
    this.maxTokens = init.maxTokens;
    this.batchSize = init.batchSize;
  }

  get logitMode(): LogitMode {
    return this.mode;
  }

  /** Validates the directory and the graph, then scores one probe pair, so a bad model fails at start-up rather than on the first query. */
  static async load(opts: OnnxCrossEncoderOptions): Promise<OnnxCrossEncoder> {
    const requestedMax = positiveInt("maxTokens", opts.maxTokens ?? DEFAULT_MAX_TOKENS, 4);
    const batchSize = positiveInt("batchSize", opts.batchSize ?? DEFAULT_BATCH_SIZE, 1);
    const intraOpThreads = opts.intraOpThreads ?? 0;
    if (!Number.isInteger(intraOpThreads) || intraOpThreads < 0) throw new RangeError(`intraOpThreads must be an integer >= 0, got ${intraOpThreads}`);

    const dir = path.resolve(opts.modelDir);
    if (!existsSync(dir)) throw loadError(dir, "directory does not exist");
    if (!statSync(dir).isDirectory()) throw loadError(dir, "is not a directory");
    const modelFile = ["model.onnx", path.join("onnx", "model.onnx")].map((p) => path.join(dir, p)).find((p) => existsSync(p));
    if (!modelFile) throw loadError(dir, "missing model.onnx (looked for model.onnx and onnx/model.onnx)");
    const tokenizerFile = path.join(dir, "tokenizer.json");
    if (!existsSync(tokenizerFile)) throw loadError(dir, "missing tokenizer.json");
    const optionalJson = async (name: string) => (existsSync(path.join(dir, name)) ? readJson(dir, path.join(dir, name)) : {});
    const tokenizerConfig = await optionalJson("tokenizer_config.json");
    const modelConfig = await optionalJson("config.json");
    const tokenizerJson = await readJson(dir, tokenizerFile);

    let tokenizer: Tokenizer;
    let template: PairTemplate;
    try {
      tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
      template = pairTemplate(tokenizer);
    } catch (err) {
      throw loadError(dir, `cannot build the tokenizer: ${(err as Error).message}`, err);
    }
    const specials = template.prefix.length + template.middle.length + template.suffix.length;
    const maxTokens = Math.min(requestedMax, modelTokenLimit(tokenizerConfig, modelConfig));
    if (maxTokens < specials + 2) throw loadError(dir, `maxTokens ${maxTokens} leaves no room for text besides the ${specials} special tokens of a pair`);

    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(modelFile, {
        executionProviders: ["cpu"],
        graphOptimizationLevel: "all",
        intraOpNumThreads: intraOpThreads,
        logSeverityLevel: 3,
      });
    } catch (err) {
      throw loadError(dir, `onnxruntime cannot load ${path.relative(dir, modelFile)}: ${(err as Error).message}`, err);
    }
    try {
      const inputs = session.inputMetadata.map((m) => {
        if (!(FEEDABLE_INPUTS as readonly string[]).includes(m.name)) {
          throw loadError(dir, `model input "${m.name}" cannot be fed (this reranker feeds ${FEEDABLE_INPUTS.join(", ")})`);
        }
        const type = m.isTensor ? m.type : "non-tensor";
        if (type !== "int64" && type !== "int32") throw loadError(dir, `model input "${m.name}" has type ${type}; expected int64 or int32`);
        return { name: m.name as FeedableInput, type: type as "int64" | "int32" };
      });
      if (!inputs.some((i) => i.name === "input_ids")) throw loadError(dir, `model declares no input_ids input (inputs: ${session.inputNames.join(", ")})`);
      // Exports name it `logits`; a graph with a single, differently named output is unambiguous too.
      const output = session.outputNames.includes(LOGITS_OUTPUT) ? LOGITS_OUTPUT : session.outputNames.length === 1 ? session.outputNames[0]! : null;
      if (output === null) throw loadError(dir, `model has no ${LOGITS_OUTPUT} output (outputs: ${session.outputNames.join(", ")})`);

      const padId = padIdOf(tokenizer, tokenizerJson, tokenizerConfig);
      const reranker = new OnnxCrossEncoder(session, tokenizer, template, padId, inputs, output, { id: `onnx:${path.basename(dir)}`, maxTokens, batchSize });
      let logits: Float32Array;
      try {
        [logits] = (await reranker.run([reranker.encodePair(reranker.tokenizeQuery("probe query"), "probe passage")])) as [Float32Array];
      } catch (err) {
        throw loadError(dir, `probe inference failed: ${(err as Error).message}`, err);
      }
      if (logits.length === 2) reranker.mode = "logit-difference";
      return reranker;
    } catch (err) {
      await session.release().catch(() => {});
      throw err;
    }
  }

  /** Token ids of a (query, passage) pair as the model sees it: truncated to `maxTokens`, special tokens added. */
  tokenizePair(query: string, passage: string): number[] {
    return this.encodePair(this.tokenizeQuery(query), passage).ids;
  }

  async score(query: string, candidates: readonly RerankCandidate[], opts: { readonly signal: AbortSignal }): Promise<number[]> {
    opts.signal.throwIfAborted();
    if (candidates.length === 0) return [];
    const q = this.tokenizeQuery(query);
    const encoded = candidates.map((c) => this.encodePair(q, c.text));
    // Similar lengths share a batch so little compute goes to padding; the order is restored below.
    const order = encoded.map((_, i) => i).sort((a, b) => encoded[a]!.ids.length - encoded[b]!.ids.length);
    const out = new Array<number>(candidates.length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      // A run in flight cannot be interrupted; the abort takes effect at the next batch.
      opts.signal.throwIfAborted();
      const idx = order.slice(start, start + this.batchSize);
      const rows = await this.run(idx.map((i) => encoded[i]!));
      idx.forEach((i, k) => (out[i] = this.toScore(rows[k]!)));
    }
    opts.signal.throwIfAborted();
    return out;
  }

  async close(): Promise<void> {
    await this.session.release();
  }

  private toScore(logits: Float32Array): number {
    if (this.mode === "logit-difference") return logits[1]! - logits[0]!;
    return logits[0]!;
  }

  private tokenizeQuery(query: string): number[] {
    return this.tokenizer.encode(query, { add_special_tokens: false }).ids;
  }

  /**
   * Builds the pair from separately tokenised sides, which is what the tokenizer's pair encoding does
   * before its post-processor, so truncation can happen in between. The passage is cut first; the query
   * is cut only where it would leave the passage less than half of the room.
   */
  private encodePair(q: readonly number[], passage: string): Encoded {
    const t = this.template;
    const budget = this.maxTokens - t.prefix.length - t.middle.length - t.suffix.length;
    const p = this.tokenizePassage(passage, budget);
    const passageFloor = Math.min(p.length, Math.floor(budget / 2));
    const qKeep = Math.min(q.length, budget - passageFloor);
    const pKeep = Math.min(p.length, budget - qKeep);
    const ids = [...t.prefix, ...q.slice(0, qKeep), ...t.middle, ...p.slice(0, pKeep), ...t.suffix];
    const typeIds = [
      ...t.prefixTypes,
      ...new Array<number>(qKeep).fill(t.queryType),
      ...t.middleTypes,
      ...new Array<number>(pKeep).fill(t.passageType),
      ...t.suffixTypes,
    ];
    return { ids, typeIds };
  }

  /** The passage's tokens, at least the first `need` of them exactly (see CHARS_PER_TOKEN_CUT). */
  private tokenizePassage(passage: string, need: number): number[] {
    const limit = need * CHARS_PER_TOKEN_CUT;
    if (passage.length > limit) {
      const cut = passage.slice(0, limit);
      // Cutting at whitespace keeps every word whole, so the prefix tokenises as it does inside the full text.
      const ws = cut.search(/\s\S*$/);
      if (ws > 0) {
        const ids = this.tokenizer.encode(cut.slice(0, ws), { add_special_tokens: false }).ids;
        if (ids.length >= need) return ids;
      }
    }
    return this.tokenizer.encode(passage, { add_special_tokens: false }).ids;
  }

  /** One onnxruntime run over a batch; returns each row's logits. */
  private async run(batch: readonly Encoded[]): Promise<Float32Array[]> {
    const b = batch.length;
    const seq = Math.max(...batch.map((e) => e.ids.length));
    // One [batch, seq] integer tensor; positions past a pair's length get `pad`.
    const fill = (value: (e: Encoded, t: number) => number, pad: number, type: "int64" | "int32") => {
      const data = type === "int64" ? new BigInt64Array(b * seq) : new Int32Array(b * seq);
      for (let r = 0; r < b; r++) {
        const e = batch[r]!;
        for (let t = 0; t < seq; t++) {
          const v = t < e.ids.length ? value(e, t) : pad;
          if (type === "int64") (data as BigInt64Array)[r * seq + t] = BigInt(v);
          else (data as Int32Array)[r * seq + t] = v;
        }
      }
      return new ort.Tensor(type, data, [b, seq]);
    };
    const feeds: Record<string, ort.Tensor> = {};
    for (const input of this.inputs) {
      switch (input.name) {
        case "input_ids":
          feeds[input.name] = fill((e, t) => e.ids[t]!, this.padId, input.type);
          break;
        case "attention_mask":
          feeds[input.name] = fill(() => 1, 0, input.type);
          break;
        case "token_type_ids":
          feeds[input.name] = fill((e, t) => e.typeIds[t]!, 0, input.type);
          break;
        case "position_ids":
          feeds[input.name] = fill((_e, t) => t, 0, input.type);
          break;
      }
    }
    const result = await this.session.run(feeds, [this.output]);
    const tensor = result[this.output]!;
    try {
      if (tensor.type !== "float32") throw new ReposearchError(ErrorCode.Internal, `onnx reranker output ${this.output} is ${tensor.type}; expected float32`);
      const data = tensor.data as Float32Array;
      const dims = tensor.dims;
      // [batch] is a [batch, 1] whose last axis was squeezed by the export.
      const labels = dims.length === 1 ? 1 : dims.length === 2 ? dims[1]! : -1;
      if (dims[0] !== b || (labels !== 1 && labels !== 2)) {
        throw new ReposearchError(ErrorCode.Internal, `onnx reranker output ${this.output} has shape [${dims.join(", ")}]; expected [${b}, 1] or [${b}, 2]`);
      }
      return batch.map((_, r) => data.slice(r * labels, (r + 1) * labels));
    } finally {
      tensor.dispose();
    }
  }
}

/**
 * Finds where the tokenizer's pair template puts special tokens and which segment id each part gets,
 * by encoding a probe pair and locating the two bare sequences in it.
 */
function pairTemplate(tokenizer: Tokenizer): PairTemplate {
  const [a, b] = ["hello", "world"];
  const bareA: number[] = tokenizer.encode(a, { add_special_tokens: false }).ids;
  const bareB: number[] = tokenizer.encode(b, { add_special_tokens: false }).ids;
  const full = tokenizer.encode(a, { text_pair: b, return_token_type_ids: true });
  const ids: number[] = full.ids;
  const types: number[] = full.token_type_ids ?? new Array<number>(ids.length).fill(0);
  const find = (needle: number[], from: number) => {
    for (let s = from; s + needle.length <= ids.length; s++) if (needle.every((id, i) => ids[s + i] === id)) return s;
    return -1;
  };
  const at = find(bareA, 0);
  const bt = at < 0 ? -1 : find(bareB, at + bareA.length);
  if (at < 0 || bt < 0 || bareA.length === 0 || bareB.length === 0) throw new Error("cannot locate the two sequences in an encoded pair (unsupported pair template)");
  const aEnd = at + bareA.length;
  const bEnd = bt + bareB.length;
  return {
    prefix: ids.slice(0, at),
    prefixTypes: types.slice(0, at),
    middle: ids.slice(aEnd, bt),
    middleTypes: types.slice(aEnd, bt),
    suffix: ids.slice(bEnd),
    suffixTypes: types.slice(bEnd),
    queryType: types[at]!,
    passageType: types[bt]!,
  };
}

/** The longest input the model accepts, from whichever of its configs say so. */
function modelTokenLimit(tokenizerConfig: Record<string, unknown>, modelConfig: Record<string, unknown>): number {
  let limit = Infinity;
  if (typeof tokenizerConfig.model_max_length === "number" && tokenizerConfig.model_max_length > 0) limit = tokenizerConfig.model_max_length;
  const positions = modelConfig.max_position_embeddings;
  if (typeof positions === "number" && positions > 0) {
    // RoBERTa-family models number positions from padding_idx + 1, so two of their slots are unusable.
    const offset = typeof modelConfig.model_type === "string" && /roberta|camembert/.test(modelConfig.model_type) ? 2 : 0;
    limit = Math.min(limit, positions - offset);
  }
  return limit;
}

function padIdOf(tokenizer: Tokenizer, json: Record<string, unknown>, config: Record<string, unknown>): number {
  const padding = json.padding as { pad_id?: unknown } | null | undefined;
  if (typeof padding?.pad_id === "number") return padding.pad_id;
  const padToken = typeof config.pad_token === "string" ? config.pad_token : null;
  // Padded positions are masked out, so any id works when the tokenizer names no pad token.
  return (padToken !== null ? tokenizer.token_to_id(padToken) : undefined) ?? 0;
}
