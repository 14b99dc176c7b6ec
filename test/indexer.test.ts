/**
 * The indexer end to end, through the real CLI in real processes: full build, no-change re-run,
 * incremental changes, bad lines, URL datasets, progress logs, shards, and kills at any moment.
 */
import { beforeAll, test } from "vitest";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { loadConfig } from "../src/config/config.js";
import { embeddedStoreFromConfig } from "../src/store/embedded/store.js";
import { datasetLines, lastReport, logLines, oneRecordPerName, runCli, shareModel, startCli, tempDir, testEnv, writeJsonl } from "./helpers.js";

let rows: Record<string, unknown>[];
let modelDir: string; // a data dir whose distilled model other tests reuse

async function openStore(dataDir: string) {
  return embeddedStoreFromConfig(loadConfig({ ...testEnv(), DATA_DIR: dataDir }));
}

async function freshDataDir(prefix: string): Promise<string> {
  const dir = await tempDir(prefix);
  await shareModel(modelDir, dir);
  return dir;
}

beforeAll(async () => {
  // One record per name: every row is a project of its own, so counts of points are counts of rows.
  rows = oneRecordPerName(await datasetLines(3000)).slice(0, 2600);
  assert.equal(rows.length, 2600);
  modelDir = await tempDir("model");
  const ds = await writeJsonl(path.join(modelDir, "ds.jsonl"), rows.slice(0, 2000));
  const r = await runCli(["index", "--dataset", ds, "--data-dir", modelDir], testEnv());
  assert.equal(r.code, 0, r.stderr.slice(-2000));
});

test("a full build publishes every valid record; a re-run on the same data embeds nothing", async () => {
  const dir = await freshDataDir("full");
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), rows.slice(0, 2000));
  const first = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv());
  assert.equal(first.code, 0, first.stderr.slice(-2000));
  const rep = lastReport(first.stderr);
  assert.equal(rep.embedded, 2000);
  assert.equal(rep.published, true);
  assert.match(first.stdout, /2000 valid, 0 rejected/);

  const store = await openStore(dir);
  const info = await store.info();
  assert.equal(info.count, 2000);
  assert.match(String(info.embedderId), /^static:/);
  await store.close();

  const again = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv());
  assert.equal(again.code, 0, again.stderr.slice(-2000));
  const rep2 = lastReport(again.stderr);
  assert.equal(rep2.embedded, 0);
  assert.equal(rep2.unchanged, 2000);
  assert.equal(rep2.deleted, 0);
  assert.equal(rep2.published, false);
  assert.equal(rep2.version, info.version, "no new version for an unchanged dataset");
});

/** The active static model of a data dir and the model it was trained from (null: distilled). */
function activeModel(dataDir: string): { id: string; trainedFrom: string | null } {
  const root = path.join(dataDir, "models", "static");
  const id = (JSON.parse(readFileSync(path.join(root, "ACTIVE"), "utf8")) as { modelId: string }).modelId;
  const meta = JSON.parse(readFileSync(path.join(root, id, "model.json"), "utf8")) as { trainedFrom?: string };
  return { id, trainedFrom: meta.trainedFrom ?? null };
}

test("the default build fine-tunes the distilled model and embeds with it; STATIC_TRAIN_EPOCHS=0 keeps the distilled one", async () => {
  // The shared model of beforeAll(): distilled, then trained, and the trained one is active and indexed.
  const built = activeModel(modelDir);
  assert.notEqual(built.trainedFrom, null, "the default build trains");
  assert.ok(existsSync(path.join(modelDir, "models", "static", built.trainedFrom!, "model.json")), "the distilled init is kept beside it");
  const s0 = await openStore(modelDir);
  assert.equal((await s0.info()).embedderId, `static:${built.id}`);
  await s0.close();

  // Training off: the index is embedded with the distilled model.
  const dir = await tempDir("train");
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), rows.slice(0, 600));
  const off = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv({ STATIC_TRAIN_EPOCHS: "0" }));
  assert.equal(off.code, 0, off.stderr.slice(-2000));
  const distilled = activeModel(dir);
  assert.equal(distilled.trainedFrom, null);
  assert.ok(!logLines(off.stderr).some((l) => l.msg === "training the static model on weak pairs"));
  let store = await openStore(dir);
  assert.equal((await store.info()).embedderId, `static:${distilled.id}`);
  await store.close();

  // Training on (the default) over that data dir: the active distilled model is trained and every repository re-embedded.
  const on = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv());
  assert.equal(on.code, 0, on.stderr.slice(-2000));
  const trained = activeModel(dir);
  assert.equal(trained.trainedFrom, distilled.id);
  assert.equal(logLines(on.stderr).filter((l) => l.msg === "epoch").length, 8);
  assert.equal(lastReport(on.stderr).embedded, 600);
  store = await openStore(dir);
  assert.equal((await store.info()).embedderId, `static:${trained.id}`);
  await store.close();

  // A re-run neither trains nor embeds.
  const again = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv());
  assert.equal(again.code, 0, again.stderr.slice(-2000));
  assert.ok(!logLines(again.stderr).some((l) => l.msg === "training the static model on weak pairs"));
  assert.equal(lastReport(again.stderr).embedded, 0);
  assert.equal(activeModel(dir).id, trained.id);
});

test("reposearch train: trains the active distilled model, reuses an existing model of the same id, and --activate points ACTIVE at it", async () => {
  const dir = await tempDir("train-cli");
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), rows.slice(0, 500));
  const env = testEnv({ STATIC_TRAIN_EPOCHS: "0" });
  assert.equal((await runCli(["index", "--dataset", ds, "--data-dir", dir], env)).code, 0);
  const distilled = activeModel(dir).id;

  const first = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--epochs", "2"], env);
  assert.equal(first.code, 0, first.stderr.slice(-2000));
  const id = /model\s+static:([0-9a-f]{16})/.exec(first.stdout)?.[1];
  assert.ok(id, first.stdout);
  assert.match(first.stdout, new RegExp(`init\\s+static:${distilled}`));
  assert.match(first.stdout, /active\s+no/);
  assert.equal(logLines(first.stderr).filter((l) => l.msg === "epoch").length, 2);
  assert.equal(activeModel(dir).id, distilled, "not activated without --activate");

  const again = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--epochs", "2", "--activate"], env);
  assert.equal(again.code, 0, again.stderr.slice(-2000));
  assert.match(again.stdout, /already trained with this configuration and data/);
  assert.equal(logLines(again.stderr).filter((l) => l.msg === "epoch").length, 0);
  assert.deepEqual(activeModel(dir), { id, trainedFrom: distilled });

  const bad = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--epochs", "0"], env);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /--epochs: invalid value/);
  const badGain = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--min-improvement", "1"], env);
  assert.notEqual(badGain.code, 0);
  assert.match(badGain.stderr, /--min-improvement: invalid value "1"/);

  // Topic-aware batches train a model of their own, which records the setting.
  const topical = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--epochs", "2", "--batch-clusters", "8"], env);
  assert.equal(topical.code, 0, topical.stderr.slice(-2000));
  const topicalId = /model\s+static:([0-9a-f]{16})/.exec(topical.stdout)?.[1];
  assert.ok(topicalId && topicalId !== id, topical.stdout);
  const meta = JSON.parse(readFileSync(path.join(dir, "models", "static", topicalId, "model.json"), "utf8")) as {
    training: { config: { batchClusters: number } };
  };
  assert.equal(meta.training.config.batchClusters, 8);
  const badClusters = await runCli(["train", "--dataset", ds, "--data-dir", dir, "--batch-clusters", "2.5"], env);
  assert.notEqual(badClusters.code, 0);
  assert.match(badClusters.stderr, /--batch-clusters: invalid value "2.5"/);
});

test("a changed dataset embeds only new and changed repositories and deletes removed ones", async () => {
  const dir = await freshDataDir("incr");
  const base = rows.slice(0, 1000);
  const ds = await writeJsonl(path.join(dir, "v1.jsonl"), base);
  assert.equal((await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv())).code, 0);

  const changed = base.map((r, i) => (i % 100 === 0 ? { ...r, description: `${String(r.description)} (changed)` } : r)); // 10 changed
  const next = [...changed.slice(0, 995), ...rows.slice(2000, 2007)]; // 5 removed, 7 added
  const ds2 = await writeJsonl(path.join(dir, "v2.jsonl"), next);
  const r = await runCli(["index", "--dataset", ds2, "--data-dir", dir], testEnv());
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const rep = lastReport(r.stderr);
  // 10 changed and 7 added, plus the projects whose anchor text or mention count (what other
  // repositories say of them, src/corpus/anchors.ts) moved with those descriptions; nothing else.
  const embedded = Number(rep.embedded);
  assert.ok(embedded >= 17 && embedded <= 60, `embedded ${embedded}`);
  assert.equal(rep.deleted, 5);
  assert.equal(Number(rep.unchanged) + embedded, 1002);

  const store = await openStore(dir);
  assert.equal((await store.info()).count, 1002);
  const hits = await store.lexicalSearch({ text: "changed", limit: 50 });
  assert.ok(hits.some((h) => String(h.payload.description).endsWith("(changed)")));
  await store.close();
});

test("bad lines are counted and reported with line numbers; good lines are indexed", async () => {
  const dir = await freshDataDir("bad");
  const mixed: (Record<string, unknown> | string)[] = [rows[0]!, "{oops", rows[1]!, { name: "not a repo name" }, { ...rows[2]!, stars: "lots" }, rows[3]!];
  const ds = await writeJsonl(path.join(dir, "mixed.jsonl"), mixed);
  const r = await runCli(["index", "--dataset", ds, "--data-dir", dir], testEnv());
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const rep = lastReport(r.stderr);
  assert.equal(rep.valid, 3);
  assert.equal(rep.rejected, 3);
  assert.match(r.stdout, /line 2: invalid JSON/);
  assert.match(r.stdout, /line 4: name: not an owner\/repo name/);
  assert.match(r.stdout, /line 5: stars: expected a number/);
  const file = JSON.parse(readFileSync(String(rep.reportFile), "utf8")) as { rejects: { line: number }[] };
  assert.deepEqual(
    file.rejects.map((x) => x.line),
    [2, 4, 5],
  );
});

test("streams a gzipped dataset from an http URL; --limit takes the first N; progress is logged off a terminal", async () => {
  const dir = await freshDataDir("url");
  const gz = gzipSync(
    rows
      .slice(0, 300)
      .map((r) => JSON.stringify(r))
      .join("\n"),
  );
  const server = createServer((_req, res) => res.end(gz));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/repos.jsonl.gz`;
    const r = await runCli(["index", "--dataset", url, "--data-dir", dir, "--limit", "120"], testEnv());
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    assert.equal(lastReport(r.stderr).embedded, 120);
    const stages = logLines(r.stderr)
      .filter((l) => l.msg === "stage done")
      .map((l) => l.stage);
    assert.ok(stages.includes("read") && stages.includes("embed"), `stages: ${stages.join(",")}`);
  } finally {
    server.close();
  }
});

test("two shards build one index together, each embedding only its slice", async () => {
  const dir = await freshDataDir("shards");
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), rows.slice(0, 1500));
  const [a, b] = await Promise.all([
    runCli(["index", "--dataset", ds, "--data-dir", dir, "--shard", "0/2"], testEnv({ EMBED_WORKERS: "1" })),
    runCli(["index", "--dataset", ds, "--data-dir", dir, "--shard", "1/2"], testEnv({ EMBED_WORKERS: "1" })),
  ]);
  assert.equal(a.code, 0, a.stderr.slice(-2000));
  assert.equal(b.code, 0, b.stderr.slice(-2000));
  const ea = Number(lastReport(a.stderr).embedded);
  const eb = Number(lastReport(b.stderr).embedded);
  assert.equal(ea + eb, 1500);
  assert.ok(ea > 500 && eb > 500, `slices ${ea}/${eb}`);
  const store = await openStore(dir);
  assert.equal((await store.info()).count, 1500);
  await store.close();
  // A shard re-run sees its slice unchanged and leaves the other shard's points alone.
  const again = await runCli(["index", "--dataset", ds, "--data-dir", dir, "--shard", "0/2"], testEnv());
  const rep = lastReport(again.stderr);
  assert.equal(rep.embedded, 0);
  assert.equal(rep.deleted, 0);
});

test("a build killed mid-embedding resumes from its checkpoints", async () => {
  const dir = await tempDir("kill-embed");
  const total = 200;
  const per = 20;
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), rows.slice(0, total));
  // The teacher itself (slow) as embedder makes the embedding stage long enough to kill inside it.
  const env = testEnv({ EMBEDDER: "use-lite", INDEX_CHECKPOINT_EVERY: String(per), EMBED_WORKERS: "1", EMBED_BATCH_SIZE: "10" });
  const { child, done } = startCli(["index", "--dataset", ds, "--data-dir", dir], env);
  const staging = path.join(dir, "index", "staging", "main");
  const chunks = () => (existsSync(staging) ? readdirSync(staging).filter((f) => /^\d+\.chunk$/.test(f)).length : 0);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && chunks() < 2) await new Promise((r) => setTimeout(r, 20));
  child.kill("SIGKILL");
  const killed = await done;
  assert.equal(killed.signal, "SIGKILL");
  const staged = chunks() * per;
  assert.ok(staged >= 2 * per && staged < total, `chunks staged before the kill: ${staged / per}`);
  assert.equal(existsSync(path.join(dir, "index", "CURRENT")), false, "nothing published by the killed run");

  const resumed = await runCli(["index", "--dataset", ds, "--data-dir", dir], env);
  assert.equal(resumed.code, 0, resumed.stderr.slice(-2000));
  const rep = lastReport(resumed.stderr);
  // Exactly the repositories without a checkpoint are embedded again.
  assert.equal(rep.embedded, total - staged);
  assert.equal(rep.unchanged, staged);
  const store = await openStore(dir);
  assert.equal((await store.info()).count, total);
  await store.close();
});

test("killed at random moments, readers only ever see complete versions, and a final run converges", async () => {
  const dir = await freshDataDir("kill-any");
  const v1 = await writeJsonl(path.join(dir, "v1.jsonl"), rows.slice(0, 800));
  assert.equal((await runCli(["index", "--dataset", v1, "--data-dir", dir], testEnv())).code, 0);
  const v2 = await writeJsonl(path.join(dir, "v2.jsonl"), [...rows.slice(100, 800), ...rows.slice(2000, 2300)]);
  const delays = [150, 400, 700, 1000, 1300, 1700];
  for (const ms of delays) {
    const { child, done } = startCli(["index", "--dataset", v2, "--data-dir", dir], testEnv({ INDEX_CHECKPOINT_EVERY: "50" }));
    await new Promise((r) => setTimeout(r, ms));
    child.kill("SIGKILL");
    await done;
    // Whatever the moment, the published index is a complete version: v1 (800) or v2 (1000).
    const store = await openStore(dir);
    const count = (await store.info()).count;
    assert.ok(count === 800 || count === 1000, `published count ${count} after a kill at ${ms} ms`);
    await store.close();
  }
  const final = await runCli(["index", "--dataset", v2, "--data-dir", dir], testEnv());
  assert.equal(final.code, 0, final.stderr.slice(-2000));
  const store = await openStore(dir);
  const info = await store.info();
  assert.equal(info.count, 1000);
  await store.close();
});
