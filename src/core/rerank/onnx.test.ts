/**
 * OnnxCrossEncoder against real onnxruntime with a tiny cross-encoder hand-encoded here (protobuf wire
 * format): `logit = ReduceSum(Gather(W, input_ids) · attention_mask [· token_type_ids])`, where W is 1 for
 * the favoured tokens "rust" and "compiler", 100 for [PAD] (so a missing mask shows) and 0 elsewhere.
 * Every expected score is therefore a count of favoured tokens. The real MiniLM tokenizer files are
 * copied into each temp model directory, as the embedder's test does.
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, test } from "vitest";
import { ConfigError, ReposearchError } from "../../common/errors.js";
import {
  attrInt,
  bytes,
  modelProto,
  msg,
  node,
  referenceTokenizer,
  TempModelDirs,
  tensor,
  TYPE_FLOAT,
  TYPE_INT64,
  valueInfo,
  VOCAB,
} from "../../../test/support/onnx-testkit.js";
import { createReranker } from "./factory.js";
import { OnnxCrossEncoder } from "./onnx.js";
import { runRerankStage, type RerankCandidate } from "./types.js";

const CLS = 101;
const SEP = 102;
const RUST = 18399;
const COMPILER = 21624;

const W = (() => {
  const w = new Float32Array(VOCAB);
  w[0] = 100;
  w[RUST] = 1;
  w[COMPILER] = 1;
  return w;
})();

interface ModelOptions {
  /** Declare token_type_ids and count only segment-B (passage) tokens. */
  types?: boolean;
  /** Width of the logits output: 1 (raw logit), 2 ([−x, x]) or 3 (unsupported). */
  labels?: 1 | 2 | 3;
  /** Name of the (single) output. */
  output?: string;
  /** Also expose the unreduced token weights as a second output. */
  extraOutput?: boolean;
  /** Extra int64 [batch, seq] inputs declared (and ignored) by the graph. */
  extraInputs?: string[];
}

function encodeModel(opts: ModelOptions = {}): Uint8Array {
  const labels = opts.labels ?? 1;
  const output = opts.output ?? "logits";
  const inputs = ["input_ids", "attention_mask", ...(opts.types ? ["token_type_ids"] : []), ...(opts.extraInputs ?? [])];
  const nodes = [
    node("Gather", ["W", "input_ids"], ["g"], [attrInt("axis", 0)]),
    node("Cast", ["attention_mask"], ["mask"], [attrInt("to", TYPE_FLOAT)]),
    node("Mul", ["g", "mask"], ["gm"]),
    ...(opts.types
      ? [node("Cast", ["token_type_ids"], ["seg"], [attrInt("to", TYPE_FLOAT)]), node("Mul", ["gm", "seg"], ["x"])]
      : [node("Identity", ["gm"], ["x"])]),
    // ReduceSum takes its axes as an input from opset 13.
    node("ReduceSum", ["x", "axes"], ["pos"], [attrInt("keepdims", 1)]),
    node("Neg", ["pos"], ["neg"]),
    labels === 1 ? node("Identity", ["pos"], [output]) : node("Concat", labels === 2 ? ["neg", "pos"] : ["neg", "pos", "pos"], [output], [attrInt("axis", 1)]),
  ];
  const graph = msg(
    ...nodes.map((n) => bytes(1, n)),
    bytes(2, "tiny-cross-encoder"),
    bytes(5, tensor("W", TYPE_FLOAT, [VOCAB], W)),
    bytes(5, tensor("axes", TYPE_INT64, [1], BigInt64Array.of(1n))),
    ...inputs.map((i) => bytes(11, valueInfo(i, TYPE_INT64, ["batch", "seq"]))),
    bytes(12, valueInfo(output, TYPE_FLOAT, ["batch", labels])),
    ...(opts.extraOutput ? [bytes(12, valueInfo("x", TYPE_FLOAT, ["batch", "seq"]))] : []),
  );
  return modelProto(graph);
}

const dirs = new TempModelDirs("reposearch-rerank-onnx-");
afterAll(() => dirs.remove());

/** Writes a model directory: the model and the real tokenizer files. */
function modelDir(opts: ModelOptions & { name?: string; config?: Record<string, unknown> } = {}): string {
  const dir = dirs.create(encodeModel(opts), opts);
  if (opts.config) writeFileSync(path.join(dir, "config.json"), JSON.stringify(opts.config));
  return dir;
}

/** The same tokenizer, used independently of the code under test to compute expectations. */
const reference = referenceTokenizer();
const bare = (text: string): number[] => reference.encode(text, { add_special_tokens: false }).ids;

const QUERY = "rust compiler";
const CANDIDATES: RerankCandidate[] = [
  { id: "py", text: "a web framework for python" },
  { id: "rustc", text: "an incremental Rust compiler with a parser and a type checker" },
  { id: "bindings", text: "rust bindings" },
  { id: "empty", text: "" },
  { id: "go", text: "a compiler for go, written in go, with generics and a new register allocator" },
];
const PASSAGE_COUNTS = [0, 2, 1, 0, 1];
const signal = () => new AbortController().signal;

describe("OnnxCrossEncoder", () => {
  const typedDir = modelDir({ name: "tiny-cross-encoder", types: true });
  const plainDir = modelDir({ name: "tiny-plain" });

  test("builds pairs exactly as the tokenizer's pair encoding does", async () => {
    const r = await OnnxCrossEncoder.load({ modelDir: typedDir });
    try {
      assert.equal(r.id, "onnx:tiny-cross-encoder");
      assert.equal(r.maxTokens, 512); // the default, which is also MiniLM's model_max_length
      for (const [q, p] of [
        [QUERY, "a parser in rust"],
        ["How do I parse TOML?", "toml-rs: a TOML parser & serializer"],
      ] as const) {
        assert.deepEqual(r.tokenizePair(q, p), reference.encode(q, { text_pair: p }).ids);
      }
      assert.deepEqual(r.tokenizePair(QUERY, ""), [CLS, RUST, COMPILER, SEP, SEP]);
    } finally {
      await r.close();
    }
  });

  test("one score per candidate; token_type_ids are fed, so only passage tokens count", async () => {
    const r = await OnnxCrossEncoder.load({ modelDir: typedDir });
    try {
      assert.equal(r.logitMode, "logit");
      const scores = await r.score(QUERY, CANDIDATES, { signal: signal() });
      assert.deepEqual(scores, PASSAGE_COUNTS);
      assert.deepEqual(await r.score(QUERY, [], { signal: signal() }), []);
      const stage = await runRerankStage(r, QUERY, CANDIDATES, { timeoutMs: 5_000 });
      assert.deepEqual(stage.order, [1, 2, 4, 0, 3]); // ties keep the first-stage order
      assert.equal(CANDIDATES[stage.order![0]!]!.id, "rustc");
    } finally {
      await r.close();
    }
  });

  test("without token_type_ids the whole pair counts; [batch, 2] logits score as the logit difference", async () => {
    const plain = await OnnxCrossEncoder.load({ modelDir: plainDir });
    const binary = await OnnxCrossEncoder.load({ modelDir: modelDir({ types: true, labels: 2 }) });
    try {
      assert.deepEqual(
        await plain.score(QUERY, CANDIDATES, { signal: signal() }),
        PASSAGE_COUNTS.map((c) => c + 2),
      );
      assert.equal(binary.logitMode, "logit-difference");
      assert.deepEqual(
        await binary.score(QUERY, CANDIDATES, { signal: signal() }),
        PASSAGE_COUNTS.map((c) => 2 * c),
      );
    } finally {
      await Promise.all([plain.close(), binary.close()]);
    }
  });

  test("padding is masked: scores do not depend on batch size or batch-mates", async () => {
    const r1 = await OnnxCrossEncoder.load({ modelDir: typedDir, batchSize: 1 });
    const r2 = await OnnxCrossEncoder.load({ modelDir: typedDir, batchSize: 2 });
    try {
      const many = [...CANDIDATES, ...CANDIDATES.map((c) => ({ ...c, text: `${c.text} ${"and more words ".repeat(20)}` }))];
      const [a, b] = await Promise.all([r1.score(QUERY, many, { signal: signal() }), r2.score(QUERY, many, { signal: signal() })]);
      assert.deepEqual(a, [...PASSAGE_COUNTS, ...PASSAGE_COUNTS]);
      assert.deepEqual(b, a);
    } finally {
      await Promise.all([r1.close(), r2.close()]);
    }
  });

  test("truncates the passage side of a very long pair to maxTokens, keeping the special tokens", async () => {
    const r = await OnnxCrossEncoder.load({ modelDir: typedDir, maxTokens: 32 });
    try {
      const long = `rust ${"filler words about nothing in particular ".repeat(2_000)}compiler compiler compiler`;
      const ids = r.tokenizePair(QUERY, long);
      const q = bare(QUERY);
      const budget = 32 - 3 - q.length;
      // Equal to truncating the full tokenisation (the code tokenises only a prefix of a long passage).
      assert.deepEqual(ids, [CLS, ...q, SEP, ...bare(long).slice(0, budget), SEP]);
      assert.equal(ids.length, 32);
      // The favoured tokens at the far end were cut: only the leading "rust" counts.
      assert.deepEqual(
        await r.score(
          QUERY,
          [
            { id: "long", text: long },
            { id: "short", text: "rust compiler" },
          ],
          { signal: signal() },
        ),
        [1, 2],
      );
      // A very long query is cut too, but never below half of the room: the passage keeps its share.
      const longQuery = "rust ".repeat(100);
      const pair = r.tokenizePair(longQuery, "compiler ".repeat(100));
      assert.equal(pair.length, 32);
      const half = Math.floor((32 - 3) / 2);
      assert.deepEqual(pair, [CLS, ...new Array<number>(32 - 3 - half).fill(RUST), SEP, ...new Array<number>(half).fill(COMPILER), SEP]);
      // Short passages leave their unused room to the query.
      assert.deepEqual(r.tokenizePair(longQuery, "compiler"), [CLS, ...new Array<number>(32 - 4).fill(RUST), SEP, COMPILER, SEP]);
    } finally {
      await r.close();
    }
  });

  test("maxTokens is capped by tokenizer_config.json and config.json", async () => {
    const r = await OnnxCrossEncoder.load({ modelDir: typedDir, maxTokens: 4096 });
    const capped = await OnnxCrossEncoder.load({ modelDir: modelDir({ types: true, config: { model_type: "xlm-roberta", max_position_embeddings: 130 } }) });
    try {
      assert.equal(r.maxTokens, 512);
      assert.equal(capped.maxTokens, 128);
    } finally {
      await Promise.all([r.close(), capped.close()]);
    }
  });

  test("honours the abort signal: before starting and between batches", async () => {
    const r = await OnnxCrossEncoder.load({ modelDir: typedDir, batchSize: 1 });
    try {
      const pre = new AbortController();
      pre.abort(new Error("client went away"));
      await assert.rejects(r.score(QUERY, CANDIDATES, { signal: pre.signal }), /client went away/);
      const mid = new AbortController();
      const pending = r.score(QUERY, CANDIDATES, { signal: mid.signal }); // the first batch is now in flight
      mid.abort(new Error("deadline"));
      await assert.rejects(pending, /deadline/);
    } finally {
      await r.close();
    }
  });

  test("clear errors for missing files, unusable graphs and impossible limits", async () => {
    const rejects = (opts: Parameters<typeof OnnxCrossEncoder.load>[0], pattern: RegExp) =>
      assert.rejects(OnnxCrossEncoder.load(opts), (err: unknown) => err instanceof ReposearchError && pattern.test(err.message));

    await rejects({ modelDir: path.join(dirs.root, "nope") }, /onnx reranker .*nope: directory does not exist/);
    const noModel = modelDir();
    rmSync(path.join(noModel, "model.onnx"));
    await rejects({ modelDir: noModel }, /missing model\.onnx/);
    const noTokenizer = modelDir();
    rmSync(path.join(noTokenizer, "tokenizer.json"));
    await rejects({ modelDir: noTokenizer }, /missing tokenizer\.json/);
    const badTokenizer = modelDir();
    writeFileSync(path.join(badTokenizer, "tokenizer.json"), "{");
    await rejects({ modelDir: badTokenizer }, /cannot read tokenizer\.json/);
    const garbage = modelDir();
    writeFileSync(path.join(garbage, "model.onnx"), "not a model");
    await rejects({ modelDir: garbage }, /onnxruntime cannot load model\.onnx/);
    await rejects({ modelDir: modelDir({ extraInputs: ["pixel_values"] }) }, /model input "pixel_values" cannot be fed/);
    await rejects({ modelDir: modelDir({ output: "scores", extraOutput: true }) }, /no logits output \(outputs: scores, x\)/);
    await rejects({ modelDir: modelDir({ labels: 3 }) }, /output logits has shape \[1, 3\]; expected \[1, 1\] or \[1, 2\]/);
    await rejects({ modelDir: typedDir, maxTokens: 4 }, /maxTokens 4 leaves no room/);
    await assert.rejects(OnnxCrossEncoder.load({ modelDir: typedDir, batchSize: 0 }), RangeError);
    // A single output with another name is unambiguous and accepted.
    const renamed = await OnnxCrossEncoder.load({ modelDir: modelDir({ types: true, output: "scores" }) });
    assert.deepEqual(await renamed.score(QUERY, CANDIDATES.slice(0, 2), { signal: signal() }), [0, 2]);
    await renamed.close();
  });

  test("the factory builds it for RERANKER=onnx and needs a directory", async () => {
    const r = await createReranker({ rerank: { kind: "onnx", modelDir: typedDir, httpUrl: null, timeoutMs: 200 } });
    try {
      assert.ok(r instanceof OnnxCrossEncoder);
      assert.equal(r.id, "onnx:tiny-cross-encoder");
    } finally {
      await r?.close();
    }
    await assert.rejects(createReranker({ rerank: { kind: "onnx", modelDir: null, httpUrl: null, timeoutMs: 200 } }), ConfigError);
  });
});
