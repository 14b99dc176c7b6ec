/**
 * Builds the configured reranker once at start-up. Construction errors propagate: a reranker the
 * operator asked for but cannot have is a configuration problem, not something to discover per query.
 */
import { ConfigError } from "../../common/errors.js";
import type { Config } from "../../config/config.js";
import { HttpReranker } from "./http.js";
import type { Reranker } from "./types.js";

export interface RerankerDeps {
  /** Builds the in-process reranker (kind "local"), which lives outside this module. */
  readonly local?: () => Promise<Reranker>;
}

/** null when the stage is disabled ("off"). */
export async function createReranker(config: Pick<Config, "rerank">, deps: RerankerDeps = {}): Promise<Reranker | null> {
  const r = config.rerank;
  switch (r.kind) {
    case "off":
      return null;
    case "local":
      if (!deps.local) throw new ConfigError(["RERANKER=local: no in-process reranker is available in this process"]);
      return deps.local();
    case "onnx": {
      if (!r.modelDir) throw new ConfigError(["RERANK_MODEL_DIR: required when RERANKER=onnx"]);
      // Imported on first use: onnxruntime's native addon is heavy and most deployments never load it.
      const { OnnxCrossEncoder } = await import("./onnx.js");
      return OnnxCrossEncoder.load({ modelDir: r.modelDir });
    }
    case "http":
      if (!r.httpUrl) throw new ConfigError(["RERANK_HTTP_URL: required when RERANKER=http"]);
      // Each attempt may use the whole stage budget; the stage's own deadline bounds retries.
      return new HttpReranker({ url: r.httpUrl, timeoutMs: r.timeoutMs });
    default:
      throw new ConfigError([`RERANKER: unknown kind ${JSON.stringify((r as { kind: unknown }).kind)}`]);
  }
}
