import { test } from "vitest";
import assert from "node:assert/strict";
import { seededRandom } from "../common/random.js";
import type { RepoRecord } from "../dataset/record.js";
import type { StaticModel } from "./distill.js";
import { STATIC_FORMAT, STATIC_FORMAT_VERSION, StaticEmbedder } from "./static.js";
import {
  batchLoss,
  buildPairSet,
  DEFAULT_TRAIN_CONFIG,
  embedTokenized,
  meanLoss,
  pairTexts,
  paramsFromModel,
  SparseGrad,
  sphericalKMeans,
  splitPairs,
  tokenizeTexts,
  trainedModelId,
  trainStaticModel,
  trainStaticModelInWorker,
  vocabIndex,
  type TrainConfig,
} from "./train.js";
import { rec } from "../../test/support/test-records.js";

/** Test records (the classifier tests' builder; only the fields training reads matter). */
const record = (name: string, description: string | null, extra: Partial<RepoRecord> = {}): RepoRecord => rec(name, description, { url: null, ...extra });

/** Six themes; each repository's name and description share its theme's words, so pairs are learnable. */
const THEMES = [
  ["web", "http", "server", "router", "framework"],
  ["database", "sql", "query", "orm", "postgres"],
  ["image", "pixel", "resize", "photo", "filter"],
  ["cli", "terminal", "command", "shell", "prompt"],
  ["neural", "tensor", "model", "training", "gpu"],
  ["game", "engine", "sprite", "physics", "render"],
];

function corpus(): RepoRecord[] {
  const rnd = seededRandom(7);
  const pick = (xs: readonly string[], n: number) => [...xs].sort(() => rnd() - 0.5).slice(0, n);
  const out: RepoRecord[] = [];
  for (let i = 0; i < 48; i++) {
    const theme = THEMES[i % THEMES.length]!;
    out.push(
      record(`owner${i}/${pick(theme, 2).join("-")}-${i}`, `A ${pick(theme, 3).join(" ")} library`, {
        topics: pick(theme, 1),
        readme: i % 3 === 0 ? `# Title\n\nThis ${pick(theme, 3).join(" ")} project.` : null,
      }),
    );
  }
  out.push(record("someone/nodesc", null));
  out.push(record("copy/fork", "A web http server library")); // may duplicate another description
  return out;
}

/** A random (seeded) "distilled" model over the corpus words: unit rows times a SIF-like weight. */
function tinyModel(records: readonly RepoRecord[], dims = 8): StaticModel {
  const words = new Set<string>(["a", "library", "this", "project", "title"]);
  for (const t of THEMES) for (const w of t) words.add(w);
  for (let i = 0; i < records.length; i++) words.add(String(i));
  const vocab = [...words].sort();
  const rnd = seededRandom(11);
  const vectors = new Float32Array(vocab.length * dims);
  vocab.forEach((w, t) => {
    let s = 0;
    for (let j = 0; j < dims; j++) s += (vectors[t * dims + j] = rnd() - 0.5) ** 2;
    const weight = ["a", "library", "this", "project"].includes(w) ? 0.1 : 0.5 + 0.5 * rnd();
    for (let j = 0; j < dims; j++) vectors[t * dims + j]! *= weight / Math.sqrt(s);
  });
  const meta = {
    format: STATIC_FORMAT,
    formatVersion: STATIC_FORMAT_VERSION,
    modelId: "tinyinit00000000",
    teacher: "test",
    dims,
    vocabSize: vocab.length,
    createdAt: "2026-01-01T00:00:00.000Z",
    weighting: "test",
  } as const;
  return { meta, vocab, vectors };
}

const CFG: TrainConfig = { ...DEFAULT_TRAIN_CONFIG, pairs: ["name", "readme"], epochs: 15, batchSize: 12, temperature: 0.2, lr: 0.02, heldOut: 0 };

test("pairs: one per kind and repository with a description; repeated texts are dropped", () => {
  // b: same name text as a; c: same description as a; d: no description.
  const recs = [
    record("a/web-server", "A web server"),
    record("b/web-server", "Another web server"),
    record("c/x", "A web server"),
    record("d/none", null),
    record("e/y2", "Something else"),
  ];
  const p = pairTexts(recs, ["name"], 300);
  assert.deepEqual(p.a, ["web-server (web server)", "y2"]);
  assert.deepEqual(p.b, ["A web server", "Something else"]);
  assert.deepEqual(p.group, [0, 4]);
  const withReadme = pairTexts([record("e/y", "Desc", { readme: "## Usage\n\n`code` text", topics: ["t1", "t2"] })], ["name", "readme", "doc"], 300);
  assert.deepEqual(withReadme.kind, ["name", "readme", "doc"]);
  assert.equal(withReadme.a[0], "y. t1, t2");
  assert.ok(!withReadme.a[1]!.includes("##"));
});

test("embedTokenized matches StaticEmbedder.embedOne exactly", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const embedder = new StaticEmbedder(model.meta, model.vocab, model.vectors);
  const texts = ["A web http server", "database orm for postgres and sql", "nothing known here", "game-engine physics 12"];
  const got = embedTokenized(model.vectors, model.meta.dims, tokenizeTexts(texts, vocabIndex(model.vocab)));
  texts.forEach((t, i) => assert.deepEqual(Array.from(got.subarray(i * 8, (i + 1) * 8)), Array.from(embedder.embedOne(t))));
});

test("the gradient matches finite differences, with a masked same-repository pair in the batch", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, ["name", "readme"], 300), vocabIndex(model.vocab));
  const p = paramsFromModel(model);
  // The first readme pair shares its repository (group) with name pair 0.
  const readmeOf0 = Array.from(pairs.group).findIndex((g, i) => i > 0 && g === pairs.group[0]);
  assert.ok(readmeOf0 > 0);
  const batch = [0, 1, 2, 3, 4, 5, readmeOf0];
  const T = 0.3;
  const grad = new SparseGrad(model.vocab.length, p.dims);
  batchLoss(p, pairs, batch, T, grad);
  assert.ok(grad.touched.length > 5);
  const h = 1e-3;
  for (const [row, j] of [
    [grad.touched[0]!, 0],
    [grad.touched[3]!, 5],
    [grad.touched[grad.touched.length - 1]!, 7],
  ] as const) {
    const k = row * p.dims + j;
    const orig = p.u[k]!;
    p.u[k] = orig + h;
    const up = batchLoss(p, pairs, batch, T);
    p.u[k] = orig - h;
    const down = batchLoss(p, pairs, batch, T);
    p.u[k] = orig;
    const fd = (up - down) / (2 * h);
    assert.ok(Math.abs(fd - grad.g[k]!) < 1e-5 + 1e-3 * Math.abs(fd), `row ${row} dim ${j}: analytic ${grad.g[k]} vs finite difference ${fd}`);
  }
});

test("training lowers the contrastive loss", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  const all = Int32Array.from({ length: pairs.count }, (_, i) => i);
  const before = meanLoss(paramsFromModel(model), pairs, all, CFG.batchSize, CFG.temperature);
  const res = trainStaticModel(model, pairs, CFG);
  const after = meanLoss(paramsFromModel(res.model), pairs, all, CFG.batchSize, CFG.temperature);
  assert.ok(after < before * 0.8, `loss ${before} → ${after}`);
  assert.ok(res.history[res.history.length - 1]!.loss < res.history[0]!.loss);
  assert.equal(res.model.meta.trainedFrom, model.meta.modelId);
  assert.equal(res.model.vocab, model.vocab);
  assert.equal(res.model.vectors.length, model.vectors.length);
  // Rows of words no pair contains are untouched.
  const unused = model.vocab.indexOf("title");
  const readmeTitle = pairs.a.ids.includes(unused) || pairs.b.ids.includes(unused);
  if (!readmeTitle) assert.deepEqual(res.model.vectors.subarray(unused * 8, unused * 8 + 8), model.vectors.subarray(unused * 8, unused * 8 + 8));
});

test("training is deterministic: same seed → same model id and vectors; another seed → another id", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  const cfg = { ...CFG, epochs: 3, heldOut: 0.2, tokenDropout: 0.1 };
  const a = trainStaticModel(model, pairs, cfg);
  const b = trainStaticModel(model, pairs, cfg);
  assert.equal(a.model.meta.modelId, b.model.meta.modelId);
  assert.deepEqual(a.model.vectors, b.model.vectors);
  assert.deepEqual(
    a.history.map((h) => h.loss),
    b.history.map((h) => h.loss),
  );
  const c = trainStaticModel(model, pairs, { ...cfg, seed: 2 });
  assert.notEqual(c.model.meta.modelId, a.model.meta.modelId);
  assert.notDeepEqual(c.model.vectors, a.model.vectors);
});

test("spherical k-means puts rows of one direction together and is deterministic", () => {
  // Three directions, four noisy rows each, interleaved.
  const rnd = seededRandom(3);
  const dirs = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ];
  const x = new Float32Array(12 * 3);
  for (let i = 0; i < 12; i++) {
    const d = dirs[i % 3]!;
    let s = 0;
    for (let j = 0; j < 3; j++) s += (x[i * 3 + j] = d[j]! + 0.2 * (rnd() - 0.5)) ** 2;
    for (let j = 0; j < 3; j++) x[i * 3 + j]! /= Math.sqrt(s);
  }
  const a = sphericalKMeans(x, 3, 3, 5, 1);
  for (let i = 3; i < 12; i++) assert.equal(a[i], a[i % 3], `row ${i} joins the rows of its direction`);
  assert.equal(new Set(a).size, 3);
  assert.deepEqual(sphericalKMeans(x, 3, 3, 5, 1), a);
  assert.deepEqual(Array.from(sphericalKMeans(x, 3, 1, 5, 1)), new Array(12).fill(0));
});

test("topic-aware batches: deterministic, a model of its own, and ids of uniform batches unchanged", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  const cfg = { ...CFG, epochs: 3, heldOut: 0.2 };
  const uniform = trainStaticModel(model, pairs, cfg);
  const a = trainStaticModel(model, pairs, { ...cfg, batchClusters: 6 });
  const b = trainStaticModel(model, pairs, { ...cfg, batchClusters: 6 });
  assert.deepEqual(a.model.vectors, b.model.vectors);
  assert.equal(a.model.meta.modelId, b.model.meta.modelId);
  assert.notEqual(a.model.meta.modelId, uniform.model.meta.modelId);
  assert.notDeepEqual(a.model.vectors, uniform.model.vectors);
  // A model trained before the setting existed keeps its id: the neutral value is not hashed.
  const { batchClusters: _, ...before } = cfg;
  assert.equal(trainedModelId("init", cfg, "data"), trainedModelId("init", before as TrainConfig, "data"));
});

test("early stopping keeps the best epoch; a gain below minImprovement still becomes the best but counts toward patience", () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  const cfg = { ...CFG, epochs: 12, heldOut: 0.3, patience: 1, minImprovement: 0 };
  const full = trainStaticModel(model, pairs, { ...cfg, patience: 0 });
  const losses = full.history.map((h) => h.heldOutLoss!);
  // The same seed trains the same epochs, so the full run's held-out losses say where each rule stops.
  const stopAt = (minImprovement: number): { stop: number; kept: number } => {
    let best = Infinity;
    let kept = 0;
    let lastGain = 0;
    for (let e = 1; e <= losses.length; e++) {
      const l = losses[e - 1]!;
      if (l < best * (1 - minImprovement)) lastGain = e;
      if (l < best) [best, kept] = [l, e];
      if (e - lastGain >= 1) return { stop: e, kept };
    }
    return { stop: losses.length, kept };
  };
  // Pick a threshold between the smallest and the largest epoch-to-epoch gain, so the two rules differ.
  const gains = losses
    .slice(1)
    .map((l, i) => (losses[i]! - l) / losses[i]!)
    .filter((g) => g > 0);
  assert.ok(gains.length >= 2, `held-out losses ${losses.join(", ")}`);
  const threshold = (Math.min(...gains) + Math.max(...gains)) / 2;
  const strict = stopAt(0);
  const loose = stopAt(threshold);
  assert.ok(loose.stop < strict.stop, `stops at ${loose.stop} with ${threshold}, ${strict.stop} without`);
  assert.equal(loose.kept, loose.stop, "the last epoch gained too little to go on, but is the best and is kept");
  for (const [mi, want] of [
    [0, strict],
    [threshold, loose],
  ] as const) {
    const r = trainStaticModel(model, pairs, { ...cfg, minImprovement: mi });
    assert.equal(r.history.length, want.stop);
    assert.equal(r.keptEpoch, want.kept);
    assert.deepEqual(
      r.history.map((h) => h.heldOutLoss),
      losses.slice(0, want.stop),
    );
  }
});

test("training with helper threads gives the same model bit for bit, in process and on a worker thread", async () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  // Batches of 7 over 3 threads: shares of 3, 2 and 2 rows, and a shorter last batch.
  const cfg = { ...CFG, epochs: 3, heldOut: 0.2, batchSize: 7 };
  const one = trainStaticModel(model, pairs, cfg);
  const three = trainStaticModel(model, pairs, cfg, {}, { threads: 3 });
  const inWorker = await trainStaticModelInWorker(model, pairs, cfg, {}, { threads: 2 });
  for (const r of [three, inWorker]) {
    assert.equal(r.model.meta.modelId, one.model.meta.modelId);
    assert.deepEqual(r.model.vectors, one.model.vectors);
    assert.deepEqual(
      r.history.map((h) => [h.loss, h.heldOutLoss]),
      one.history.map((h) => [h.loss, h.heldOutLoss]),
    );
  }
});

test("training on a worker thread gives the same model bit for bit, keeps the event loop free, and reports steps and epochs", async () => {
  const recs = corpus();
  const model = tinyModel(recs);
  const pairs = buildPairSet(pairTexts(recs, CFG.pairs, CFG.readmeChars), vocabIndex(model.vocab));
  const cfg = { ...CFG, epochs: 4, heldOut: 0.2 };
  const here = trainStaticModel(model, pairs, cfg);
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const steps: number[] = [];
  const epochs: number[] = [];
  const there = await trainStaticModelInWorker(model, pairs, cfg, { onStep: (e, s) => steps.push(e * 1000 + s), onEpoch: (st) => epochs.push(st.epoch) });
  clearInterval(timer);
  assert.equal(there.model.meta.modelId, here.model.meta.modelId);
  assert.deepEqual(there.model.vectors, here.model.vectors);
  assert.deepEqual(
    there.history.map((h) => h.loss),
    here.history.map((h) => h.loss),
  );
  assert.deepEqual(epochs, [1, 2, 3, 4]);
  assert.equal(steps.length, 4 * Math.ceil(splitPairs(pairs.count, cfg.heldOut, cfg.seed).train.length / cfg.batchSize));
  assert.ok(ticks > 0, "the event loop ran timers while the worker trained");
});
