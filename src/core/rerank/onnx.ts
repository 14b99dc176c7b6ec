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
import path from "node:path";
import type { Tokenizer } from "@huggingface/tokenizers";
import type * as ort from "onnxruntime-node";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import {
  batchFeeds,
  intraOpThreadsOf,
  modelTokenLimit,
  OnnxModelDir,
  padIdOf,
  runFloatOutput,
  type Encoded,
  type ModelInput,
} from "../../common/onnx-model.js";
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
    private readonly inputs: readonly ModelInput[],
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
    const intraOpThreads = intraOpThreadsOf(opts.intraOpThreads);

    const model = OnnxModelDir.locate("onnx reranker", opts.modelDir);
    const tokenizer = await model.loadTokenizer();
    const modelConfig = await model.readJsonObject("config.json", { optional: true });
    let template: PairTemplate;
    try {
      template = pairTemplate(tokenizer.tokenizer);
    } catch (err) {
      throw model.error(`cannot build the tokenizer: ${(err as Error).message}`, err);
    }
    const specials = template.prefix.length + template.middle.length + template.suffix.length;
    const maxTokens = Math.min(requestedMax, modelTokenLimit(tokenizer.config, modelConfig));
    if (maxTokens < specials + 2) throw model.error(`maxTokens ${maxTokens} leaves no room for text besides the ${specials} special tokens of a pair`);

    const session = await model.openSession(intraOpThreads);
    try {
      const inputs = model.feedableInputs(session, "reranker");
      // Exports name it `logits`; a graph with a single, differently named output is unambiguous too.
      const output = session.outputNames.includes(LOGITS_OUTPUT) ? LOGITS_OUTPUT : session.outputNames.length === 1 ? session.outputNames[0]! : null;
      if (output === null) throw model.error(`model has no ${LOGITS_OUTPUT} output (outputs: ${session.outputNames.join(", ")})`);

      const reranker = new OnnxCrossEncoder(session, tokenizer.tokenizer, template, padIdOf(tokenizer), inputs, output, {
        id: `onnx:${path.basename(model.dir)}`,
        maxTokens,
        batchSize,
      });
      let logits: Float32Array;
      try {
        [logits] = (await reranker.run([reranker.encodePair(reranker.tokenizeQuery("probe query"), "probe passage")])) as [Float32Array];
      } catch (err) {
        throw model.error(`probe inference failed: ${(err as Error).message}`, err);
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
    const { feeds } = batchFeeds(batch, this.inputs, this.padId);
    return runFloatOutput(this.session, feeds, this.output, "onnx reranker", (data, dims) => {
      // [batch] is a [batch, 1] whose last axis was squeezed by the export.
      const labels = dims.length === 1 ? 1 : dims.length === 2 ? dims[1]! : -1;
      if (dims[0] !== b || (labels !== 1 && labels !== 2)) {
        throw new ReposearchError(ErrorCode.Internal, `onnx reranker output ${this.output} has shape [${dims.join(", ")}]; expected [${b}, 1] or [${b}, 2]`);
      }
      return batch.map((_, r) => data.slice(r * labels, (r + 1) * labels));
    });
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
  if (at < 0 || bt < 0 || bareA.length === 0 || bareB.length === 0)
    throw new Error("cannot locate the two sequences in an encoded pair (unsupported pair template)");
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
