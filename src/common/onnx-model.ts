/**
 * What every ONNX text model here (the embedder, the cross-encoder reranker) does the same way: find
 * model.onnx and tokenizer.json in the operator's model directory, build the @huggingface/tokenizers
 * Tokenizer, open an onnxruntime CPU session, check the graph's inputs are ones we can feed, and feed
 * a batch of token sequences as padded [batch, seq] integer tensors. Offline: everything is read from
 * the directory.
 */
import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import * as ort from "onnxruntime-node";
import { ErrorCode, ReposearchError } from "./errors.js";

/** Inputs the models know how to feed; anything else in the graph is an error at load time. */
export const FEEDABLE_INPUTS = ["input_ids", "attention_mask", "token_type_ids", "position_ids"] as const;
export type FeedableInput = (typeof FEEDABLE_INPUTS)[number];

/** A graph input and the integer type it takes. */
export interface ModelInput {
  readonly name: FeedableInput;
  readonly type: "int64" | "int32";
}

/** One token sequence, special tokens included, with its segment ids. */
export interface Encoded {
  readonly ids: number[];
  readonly typeIds: number[];
}

/** A load failure; `label` names the kind of model ("onnx model", "onnx reranker"). */
export function onnxLoadError(label: string, modelDir: string, message: string, cause?: unknown): ReposearchError {
  return new ReposearchError(ErrorCode.Internal, `${label} ${modelDir}: ${message}`, { cause });
}

/** Parses a JSON file of the model directory; errors name it relative to the directory. */
export async function readModelJson(label: string, modelDir: string, file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as unknown;
  } catch (err) {
    throw onnxLoadError(label, modelDir, `cannot read ${path.relative(modelDir, file)}: ${(err as Error).message}`, err);
  }
}

/** onnxruntime intra-op threads; 0 (the default) lets onnxruntime pick. */
export function intraOpThreadsOf(value: number | undefined): number {
  const n = value ?? 0;
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`intraOpThreads must be an integer >= 0, got ${n}`);
  return n;
}

/** The tokenizer as read from tokenizer.json and the optional tokenizer_config.json. */
export interface LoadedTokenizer {
  readonly tokenizer: Tokenizer;
  readonly json: Record<string, unknown>;
  readonly config: Record<string, unknown>;
}

/** A model directory with model.onnx (or onnx/model.onnx) and tokenizer.json in it. */
export class OnnxModelDir {
  private constructor(
    /** Starts every error message, followed by the directory. */
    readonly label: string,
    /** Absolute. */
    readonly dir: string,
    readonly modelFile: string,
  ) {}

  static locate(label: string, modelDir: string): OnnxModelDir {
    const dir = path.resolve(modelDir);
    const fail = (message: string) => onnxLoadError(label, dir, message);
    if (!existsSync(dir)) throw fail("directory does not exist");
    if (!statSync(dir).isDirectory()) throw fail("is not a directory");
    const modelFile = ["model.onnx", path.join("onnx", "model.onnx")].map((p) => path.join(dir, p)).find((p) => existsSync(p));
    if (!modelFile) throw fail("missing model.onnx (looked for model.onnx and onnx/model.onnx)");
    if (!existsSync(path.join(dir, "tokenizer.json"))) throw fail("missing tokenizer.json");
    return new OnnxModelDir(label, dir, modelFile);
  }

  error(message: string, cause?: unknown): ReposearchError {
    return onnxLoadError(this.label, this.dir, message, cause);
  }

  /** A JSON object file of the directory; `{}` when an optional one is absent. */
  async readJsonObject(name: string, opts: { optional?: boolean } = {}): Promise<Record<string, unknown>> {
    const file = path.join(this.dir, name);
    if (opts.optional && !existsSync(file)) return {};
    const parsed = await readModelJson(this.label, this.dir, file);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw this.error(`${name} is not a JSON object`);
    return parsed as Record<string, unknown>;
  }

  async loadTokenizer(): Promise<LoadedTokenizer> {
    const config = await this.readJsonObject("tokenizer_config.json", { optional: true });
    const json = await this.readJsonObject("tokenizer.json");
    try {
      return { tokenizer: new Tokenizer(json, config), json, config };
    } catch (err) {
      throw this.error(`cannot build the tokenizer: ${(err as Error).message}`, err);
    }
  }

  async openSession(intraOpThreads: number): Promise<ort.InferenceSession> {
    try {
      return await ort.InferenceSession.create(this.modelFile, {
        executionProviders: ["cpu"],
        graphOptimizationLevel: "all",
        intraOpNumThreads: intraOpThreads,
        logSeverityLevel: 3,
      });
    } catch (err) {
      throw this.error(`onnxruntime cannot load ${path.relative(this.dir, this.modelFile)}: ${(err as Error).message}`, err);
    }
  }

  /** The graph's inputs, each one we can feed with an integer type; input_ids among them. `feeder` names the caller in errors. */
  feedableInputs(session: ort.InferenceSession, feeder: string): ModelInput[] {
    const inputs = session.inputMetadata.map((m) => {
      if (!(FEEDABLE_INPUTS as readonly string[]).includes(m.name)) {
        throw this.error(`model input "${m.name}" cannot be fed (this ${feeder} feeds ${FEEDABLE_INPUTS.join(", ")})`);
      }
      const type = m.isTensor ? m.type : "non-tensor";
      if (type !== "int64" && type !== "int32") throw this.error(`model input "${m.name}" has type ${type}; expected int64 or int32`);
      return { name: m.name as FeedableInput, type: type as "int64" | "int32" };
    });
    if (!inputs.some((i) => i.name === "input_ids")) throw this.error(`model declares no input_ids input (inputs: ${session.inputNames.join(", ")})`);
    return inputs;
  }
}

/** The longest input the model accepts, from whichever of its configs say so (tokenizer_config.json, config.json). */
export function modelTokenLimit(tokenizerConfig: Record<string, unknown>, modelConfig: Record<string, unknown> = {}): number {
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

export function padIdOf({ tokenizer, json, config }: LoadedTokenizer): number {
  const padding = json.padding as { pad_id?: unknown } | null | undefined;
  if (typeof padding?.pad_id === "number") return padding.pad_id;
  const padToken = typeof config.pad_token === "string" ? config.pad_token : null;
  // Padded positions are masked out, so any id works when the tokenizer names no pad token.
  return (padToken !== null ? tokenizer.token_to_id(padToken) : undefined) ?? 0;
}

/** A batch as one [batch, seq] tensor per input; positions past a sequence's length are padding. */
export function batchFeeds(batch: readonly Encoded[], inputs: readonly ModelInput[], padId: number): { feeds: Record<string, ort.Tensor>; seq: number } {
  const b = batch.length;
  const seq = Math.max(...batch.map((e) => e.ids.length));
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
  for (const input of inputs) {
    switch (input.name) {
      case "input_ids":
        feeds[input.name] = fill((e, t) => e.ids[t]!, padId, input.type);
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
  return { feeds, seq };
}

/**
 * Runs the session for one float32 output and hands its data and shape to `read`; the output tensor is
 * disposed afterwards. `label` starts the error for another element type ("onnx output …").
 */
export async function runFloatOutput<T>(
  session: ort.InferenceSession,
  feeds: Record<string, ort.Tensor>,
  output: string,
  label: string,
  read: (data: Float32Array, dims: readonly number[]) => T,
): Promise<T> {
  const result = await session.run(feeds, [output]);
  const tensor = result[output]!;
  try {
    if (tensor.type !== "float32") throw new ReposearchError(ErrorCode.Internal, `${label} output ${output} is ${tensor.type}; expected float32`);
    return read(tensor.data as Float32Array, tensor.dims);
  } finally {
    tensor.dispose();
  }
}
