/**
 * OnnxEmbedder against real onnxruntime with a tiny model hand-encoded here (protobuf wire format):
 * `last_hidden_state = Gather(table, input_ids)`, so every expected vector can be computed from `table`.
 * The real MiniLM tokenizer files are copied into each temp model directory at test time.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, test } from "vitest";
import { ReposearchError } from "../common/errors.js";
import {
  attrInt,
  attrInts,
  bytes,
  modelProto,
  msg,
  node,
  TempModelDirs,
  tensor,
  TYPE_FLOAT,
  TYPE_INT64,
  valueInfo,
  VOCAB,
} from "../../test/support/onnx-testkit.js";
import { loadConfig } from "../config/config.js";
import { createEmbedder, loadQueryEmbedder } from "./factory.js";
import { OnnxEmbedder, readPoolingConfig } from "./onnx.js";
import { EmbedPool } from "./pool.js";

const DIM = 8;

/** The embedding table of the test model: a deterministic, non-trivial value per (token, dim). */
function tableValue(token: number, j: number): number {
  return Math.fround(Math.sin(token * 0.7331 + j * 1.618) + 0.1 * j);
}
const TABLE = (() => {
  const t = new Float32Array(VOCAB * DIM);
  for (let i = 0; i < VOCAB; i++) for (let j = 0; j < DIM; j++) t[i * DIM + j] = tableValue(i, j);
  return t;
})();

interface ModelOptions {
  /** Extra int64 [batch, seq] inputs declared (and ignored) by the graph. */
  extraInputs?: string[];
  /** Name of the token-states output, or "sentence_embedding" for a graph that mean-pools itself. */
  output?: string;
  /** Declare the attention_mask input (default true). */
  attentionMask?: boolean;
}

function encodeModel(opts: ModelOptions = {}): Uint8Array {
  const output = opts.output ?? "last_hidden_state";
  const inputs = ["input_ids", ...(opts.attentionMask === false ? [] : ["attention_mask"]), ...(opts.extraInputs ?? [])];
  const nodes =
    output === "sentence_embedding"
      ? [
          node("Gather", ["table", "input_ids"], ["tokens"], [attrInt("axis", 0)]),
          node("ReduceMean", ["tokens"], [output], [attrInts("axes", [1]), attrInt("keepdims", 0)]),
        ]
      : [node("Gather", ["table", "input_ids"], [output], [attrInt("axis", 0)])];
  const graph = msg(
    ...nodes.map((n) => bytes(1, n)),
    bytes(2, "tiny"),
    bytes(5, tensor("table", TYPE_FLOAT, [VOCAB, DIM], TABLE)),
    ...inputs.map((i) => bytes(11, valueInfo(i, TYPE_INT64, ["batch", "seq"]))),
    bytes(12, valueInfo(output, TYPE_FLOAT, output === "sentence_embedding" ? ["batch", DIM] : ["batch", "seq", DIM])),
  );
  return modelProto(graph);
}

const dirs = new TempModelDirs("reposearch-onnx-");
const root = dirs.root;
afterAll(() => dirs.remove());

/** Writes a model directory: the model, the real tokenizer files, and optional sentence-transformers config. */
function modelDir(opts: ModelOptions & { pooling?: Record<string, boolean>; normalize?: boolean; nested?: boolean; name?: string } = {}): string {
  const dir = dirs.create(encodeModel(opts), opts);
  if (opts.pooling) {
    const modules = [
      { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
      { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
      ...(opts.normalize ? [{ idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" }] : []),
    ];
    writeFileSync(path.join(dir, "modules.json"), JSON.stringify(modules));
    mkdirSync(path.join(dir, "1_Pooling"));
    writeFileSync(path.join(dir, "1_Pooling", "config.json"), JSON.stringify({ word_embedding_dimension: DIM, ...opts.pooling }));
    if (opts.normalize) mkdirSync(path.join(dir, "2_Normalize"));
  }
  return dir;
}

const row = (token: number) => TABLE.slice(token * DIM, (token + 1) * DIM);
function normalized(v: number[] | Float32Array): number[] {
  const n = Math.hypot(...v);
  return Array.from(v, (x) => x / n);
}
function assertClose(actual: Float32Array, expected: number[], tol = 1e-5): void {
  assert.equal(actual.length, expected.length);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`);
}
function meanOf(tokens: number[]): number[] {
  const out = new Array<number>(DIM).fill(0);
  for (const t of tokens) for (let j = 0; j < DIM; j++) out[j]! += tableValue(t, j) / tokens.length;
  return out;
}

const HELLO = [101, 7592, 2088, 102];
const LONG = "a considerably longer text about parsing abstract syntax trees in a compiler written in rust";

describe("OnnxEmbedder", () => {
  const defaultDir = modelDir({ name: "tiny-minilm" });

  test("tokenises with the real MiniLM tokenizer and truncates to maxTokens, keeping [SEP]", async () => {
    const e = await OnnxEmbedder.load(defaultDir, { maxTokens: 256 });
    try {
      assert.deepEqual(e.tokenize("hello world"), HELLO);
      assert.deepEqual(e.tokenize(""), [101, 102]);
      const short = await OnnxEmbedder.load(defaultDir, { maxTokens: 4 });
      try {
        assert.deepEqual(short.tokenize("hello world and more words"), HELLO);
        // Truncation changes the vector: it is the mean over the kept tokens only.
        assertClose((await short.embed(["hello world and more words"]))[0]!, normalized(meanOf(HELLO)));
      } finally {
        await short.close();
      }
    } finally {
      await e.close();
    }
  });

  test("id names the directory and the model's sha256; dims come from the output", async () => {
    const e = await OnnxEmbedder.load(defaultDir, { maxTokens: 128 });
    try {
      const sha = createHash("sha256")
        .update(readFileSync(path.join(defaultDir, "model.onnx")))
        .digest("hex");
      assert.equal(e.id, `onnx:tiny-minilm:${sha.slice(0, 12)}`);
      assert.equal(e.dims, DIM);
      assert.deepEqual(e.pooling, { mode: "mean", normalize: true });
    } finally {
      await e.close();
    }
  });

  test("default pooling is the masked mean, L2-normalised, and independent of padding and batch order", async () => {
    const e = await OnnxEmbedder.load(defaultDir, { maxTokens: 128, runBatchSize: 2 });
    try {
      const [alone] = await e.embed(["hello world"]);
      assertClose(alone!, normalized(meanOf(HELLO)));
      assert.ok(Math.abs(Math.hypot(...alone!) - 1) < 1e-6);
      // In a batch with longer texts "hello world" is padded with [PAD]=0; the mask must keep it out.
      const batch = await e.embed([LONG, "hello world", `${LONG} ${LONG}`, "x"]);
      assert.equal(batch.length, 4);
      assertClose(batch[1]!, Array.from(alone!), 1e-6);
      assertClose(batch[0]!, normalized(meanOf(e.tokenize(LONG))));
      assertClose(batch[3]!, normalized(meanOf(e.tokenize("x"))));
      assert.deepEqual(await e.embed([]), []);
    } finally {
      await e.close();
    }
  });

  test("cls, max and lasttoken pooling follow 1_Pooling/config.json", async () => {
    const cls = await OnnxEmbedder.load(modelDir({ pooling: { pooling_mode_cls_token: true }, normalize: true }), { maxTokens: 64 });
    const max = await OnnxEmbedder.load(modelDir({ pooling: { pooling_mode_max_tokens: true } }), { maxTokens: 64 });
    const last = await OnnxEmbedder.load(modelDir({ pooling: { pooling_mode_lasttoken: true } }), { maxTokens: 64 });
    try {
      assert.deepEqual(cls.pooling, { mode: "cls", normalize: true });
      assert.deepEqual(max.pooling, { mode: "max", normalize: false });
      const [c] = await cls.embed(["hello world", LONG]);
      assertClose(c!, normalized(row(101)));
      const [m] = await max.embed(["hello world", LONG]);
      const expectedMax = Array.from({ length: DIM }, (_, j) => Math.max(...HELLO.map((t) => tableValue(t, j))));
      assertClose(m!, normalized(expectedMax));
      // The last real token is [SEP], not the padding after it.
      const [l] = await last.embed(["hello world", LONG]);
      assertClose(l!, normalized(row(102)));
    } finally {
      await Promise.all([cls.close(), max.close(), last.close()]);
    }
  });

  test("feeds token_type_ids and position_ids, and finds onnx/model.onnx", async () => {
    const e = await OnnxEmbedder.load(modelDir({ nested: true, extraInputs: ["token_type_ids", "position_ids"] }), { maxTokens: 64 });
    try {
      assertClose((await e.embed(["hello world"]))[0]!, normalized(meanOf(HELLO)));
    } finally {
      await e.close();
    }
  });

  test("uses an already-pooled sentence_embedding output as is", async () => {
    const e = await OnnxEmbedder.load(modelDir({ output: "sentence_embedding", attentionMask: false }), { maxTokens: 64 });
    try {
      assert.equal(e.dims, DIM);
      assertClose((await e.embed(["hello world"]))[0]!, normalized(meanOf(HELLO)));
    } finally {
      await e.close();
    }
  });

  test("clear errors for missing files, unfeedable inputs, unknown outputs and unsupported pooling", async () => {
    const rejects = (dir: string, pattern: RegExp) =>
      assert.rejects(OnnxEmbedder.load(dir, { maxTokens: 64 }), (err: unknown) => err instanceof ReposearchError && pattern.test(err.message));

    await rejects(path.join(root, "nope"), /does not exist/);
    const noModel = modelDir();
    rmSync(path.join(noModel, "model.onnx"));
    await rejects(noModel, /missing model\.onnx/);
    const noTokenizer = modelDir();
    rmSync(path.join(noTokenizer, "tokenizer.json"));
    await rejects(noTokenizer, /missing tokenizer\.json/);
    await rejects(modelDir({ extraInputs: ["pixel_values"] }), /model input "pixel_values" cannot be fed/);
    await rejects(modelDir({ output: "logits" }), /none of the outputs .*\(outputs: logits\)/);
    await rejects(modelDir({ pooling: { pooling_mode_mean_tokens: true, pooling_mode_max_tokens: true } }), /unsupported pooling.*mean \+ max/);
    const badJson = modelDir({ pooling: { pooling_mode_cls_token: true } });
    writeFileSync(path.join(badJson, "modules.json"), "[{");
    await rejects(badJson, /cannot read modules\.json/);
    const garbage = modelDir();
    writeFileSync(path.join(garbage, "model.onnx"), "not a model");
    await rejects(garbage, /onnxruntime cannot load model\.onnx/);
    await assert.rejects(OnnxEmbedder.load(defaultDir, { maxTokens: 2 }), RangeError);
  });

  test("readPoolingConfig defaults to mean + normalise without sentence-transformers config", async () => {
    assert.deepEqual(await readPoolingConfig(defaultDir), { mode: "mean", normalize: true });
  });

  test("the factory builds it from a spec and loadQueryEmbedder checks the index's embedder id", async () => {
    const e = await createEmbedder({ kind: "onnx", modelDir: defaultDir, maxTokens: 32 });
    const config = loadConfig({ EMBEDDER: "onnx", ONNX_MODEL_DIR: defaultDir, DATA_DIR: root });
    try {
      assert.ok(e instanceof OnnxEmbedder);
      const q = await loadQueryEmbedder(config, e.id);
      assert.equal(q.id, e.id);
      assert.deepEqual(await q.embed(["hello world"]), await e.embed(["hello world"]));
      await q.close();
    } finally {
      await e.close();
    }
    await assert.rejects(loadQueryEmbedder(config, "onnx:other-model:0123456789ab"), /onnx:other-model:0123456789ab.*onnx:tiny-minilm:/s);
  });

  test("runs in EmbedPool worker threads (the native addon loads once per thread) with the same results", async () => {
    const spec = { kind: "onnx" as const, modelDir: defaultDir, maxTokens: 64 };
    const [pool, local] = await Promise.all([EmbedPool.create(spec, { workers: 2, batchSize: 2 }), OnnxEmbedder.load(defaultDir, { maxTokens: 64 })]);
    try {
      assert.equal(pool.id, local.id);
      assert.equal(pool.dims, DIM);
      const texts = ["hello world", LONG, "x", "rust compiler", "", "vector search engine"];
      const [viaPool, inProcess] = await Promise.all([pool.embed(texts), local.embed(texts)]);
      viaPool.forEach((v, i) => assertClose(v, Array.from(inProcess[i]!), 1e-6));
    } finally {
      await Promise.all([pool.close(), local.close()]);
    }
  }, 20_000);
});
