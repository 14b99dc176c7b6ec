/**
 * `reposearch start`, the main job, on a fresh data dir: it serves a lexical-only bootstrap index at once,
 * builds the full index beside it in the same process (training the embedding on a worker thread), keeps
 * answering while the build trains, and switches to lexical + dense when the build publishes.
 */
import { onTestFinished, test } from "vitest";
import { skipTest } from "./support/skip.js";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { datasetLines, logLines, startCli, tempDir, testEnv, writeJsonl } from "./helpers.js";

async function waitFor<T>(what: string, fn: () => T | undefined, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** The first test's data dir and environment once it has built an index (the second reuses it). */
let built: { dir: string; env: NodeJS.ProcessEnv } | null = null;

test("start: bootstrap answers at once, searches are answered while the build trains, then dense search takes over", async () => {
  const dir = await tempDir("start");
  const ds = await writeJsonl(path.join(dir, "ds.jsonl"), await datasetLines(1000));
  // Many epochs over a small dataset: training lasts long enough to search in the middle of it.
  const env = testEnv({
    PORT: "0",
    GRPC_PORT: "0",
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    STATIC_TRAIN_EPOCHS: "30",
    QUERY_CACHE_TTL_MS: "0",
    RATE_LIMIT_IP_PER_MINUTE: "1000000",
    RATE_LIMIT_ACCOUNT_PER_MINUTE: "1000000",
  });
  const run = startCli(["start", "--dataset", ds, "--data-dir", dir], env);
  let stdout = "";
  let stderr = "";
  run.child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  run.child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  try {
    const url = await waitFor("serving at", () => /serving at (\S+)/.exec(stdout)?.[1], 60_000);
    const key = await waitFor("the development key", () => /development API key[^:]*: (\S+)/.exec(stdout)?.[1], 10_000);
    const search = async (query: string) => {
      const res = await fetch(`${url}/v1/codehost/search`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ query, limit: 5 }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()) as { results: unknown[]; meta: { methods: Record<string, unknown> } };
    };
    const logged = (msg: string) => logLines(stderr).some((l) => l.msg === msg);

    const first = await search("web framework");
    assert.deepEqual(Object.keys(first.meta.methods), ["lexical"], "the bootstrap index is lexical-only");

    // While the build trains the embedding, the same process keeps answering. Were training on the main
    // thread, the searches sent meanwhile would all be answered after it, and at most one or two of them
    // before its "trained" log line.
    await waitFor("training to start", () => (logged("training the static model on weak pairs") ? true : undefined), 120_000);
    let answeredDuringTraining = 0;
    while (!logged("static model trained")) {
      await search("command line tool");
      if (!logged("static model trained")) answeredDuringTraining++;
    }
    assert.ok(answeredDuringTraining >= 20, `searches answered while training: ${answeredDuringTraining}`);

    await waitFor("the full index", () => (logged("the full index is published; serving it (lexical and dense)") ? true : undefined), 120_000);
    let methods: string[] = [];
    for (let i = 0; i < 50 && !methods.includes("dense"); i++) {
      methods = Object.keys((await search("command line tool")).meta.methods);
      if (!methods.includes("dense")) await sleep(100);
    }
    assert.deepEqual(methods.sort(), ["dense", "lexical"]);
    built = { dir, env };
  } finally {
    run.child.kill("SIGTERM");
    await run.done;
    if (!built) await rm(dir, { recursive: true, force: true });
  }
});

test("start again on the built index: serves from SERVE_PROCESSES workers with a new development key", async (t) => {
  if (!built) return skipTest(t, "the first start did not build an index");
  const { dir, env } = built;
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const run = startCli(["start", "--data-dir", dir], { ...env, SERVE_PROCESSES: "2" });
  let stdout = "";
  run.child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  try {
    const banner = await waitFor("serving at", () => /serving at (\S+) .*; 2 processes\)/.exec(stdout) ?? undefined, 60_000);
    const url = banner[1]!;
    const key = await waitFor("the development key", () => /development API key[^:]*: (\S+)/.exec(stdout)?.[1], 10_000);
    // Fresh connections (the primary hands them to the workers in turn): every worker answers with both methods.
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${url}/v1/codehost/search`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key, connection: "close" },
        body: JSON.stringify({ query: "command line tool", limit: 5 }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { meta: { methods: Record<string, unknown> } };
      assert.deepEqual(Object.keys(body.meta.methods).sort(), ["dense", "lexical"]);
    }
    assert.doesNotMatch(stdout, /first run/);
  } finally {
    run.child.kill("SIGTERM");
  }
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr.slice(-2000));
});
