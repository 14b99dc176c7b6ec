import assert from "node:assert/strict";
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, test } from "vitest";
import { compiledModuleUrl } from "../common/compiled-url.js";
import { answerLimitRequest, memoryCounters, LIMIT_REPLY, LIMIT_REQUEST, type LimitRequest } from "./cluster-limiter.js";

/** The child (plain JavaScript) loads the compiled cluster-limiter module, dist/ being built by `npm test`. */
const CHILD = fileURLToPath(new URL("../../test/support/cluster-limiter-child.mjs", import.meta.url));
const MODULE = compiledModuleUrl("./cluster-limiter.js", import.meta.url).href;
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill()));

/** A worker in a child process; this process plays the primary unless `answer` is false. */
async function worker(opts: { ipPoints: number; accountPoints: number; answer: boolean; timeoutMs?: number }) {
  const child = fork(CHILD, [], {
    env: { ...process.env, CLUSTER_LIMITER_MODULE: MODULE, LIMIT_TIMEOUT_MS: String(opts.timeoutMs ?? 2_000) },
    stdio: "inherit",
  });
  children.push(child);
  const limiters = memoryCounters({ ip: { points: opts.ipPoints, durationSeconds: 60 }, account: { points: opts.accountPoints, durationSeconds: 60 } }, "test");
  const requests: LimitRequest[] = [];
  const results: unknown[][] = [];
  child.on("message", (msg: { results?: unknown[] }) => {
    if (msg.results) results.push(msg.results);
    if ((msg as LimitRequest).type !== LIMIT_REQUEST) return;
    requests.push(msg as LimitRequest);
    if (opts.answer) void answerLimitRequest(limiters, msg).then((reply) => child.send(reply!));
  });
  await once(child, "message");
  const run = async (consume: [string, string][]): Promise<unknown[]> => {
    const before = results.length;
    child.send({ consume });
    while (results.length === before) await once(child, "message");
    return results[before]!;
  };
  return { run, requests };
}

test("consumes of one turn travel as one message, in order, and count once in the primary", async () => {
  const w = await worker({ ipPoints: 3, accountPoints: 10, answer: true });
  const out = (await w.run([
    ["ip", "1.2.3.4"],
    ["ip", "1.2.3.4"],
    ["account", "acct_a"],
    ["ip", "1.2.3.4"],
    ["ip", "1.2.3.4"],
    ["ip", "5.6.7.8"],
  ])) as {
    allowed: boolean;
    remaining: number;
  }[];
  assert.equal(w.requests.length, 1, "one IPC message for the turn");
  assert.deepEqual(w.requests[0]!.items, [
    ["ip", "1.2.3.4"],
    ["ip", "1.2.3.4"],
    ["account", "acct_a"],
    ["ip", "1.2.3.4"],
    ["ip", "1.2.3.4"],
    ["ip", "5.6.7.8"],
  ]);
  assert.deepEqual(
    out.map((o) => o.allowed),
    [true, true, true, true, false, true],
  );
  assert.deepEqual(
    out.map((o) => o.remaining),
    [2, 1, 9, 0, 0, 2],
  );
  // The window carries over to the next message.
  const next = (await w.run([
    ["ip", "1.2.3.4"],
    ["account", "acct_a"],
  ])) as { allowed: boolean; remaining: number; msBeforeNext: number }[];
  assert.equal(w.requests.length, 2);
  assert.deepEqual(
    next.map((o) => [o.allowed, o.remaining]),
    [
      [false, 0],
      [true, 8],
    ],
  );
  assert.ok(next[0]!.msBeforeNext > 0 && next[0]!.msBeforeNext <= 60_000);
});

test("a primary that does not answer fails the whole batch after the timeout", async () => {
  const w = await worker({ ipPoints: 3, accountPoints: 3, answer: false, timeoutMs: 150 });
  const t0 = performance.now();
  const out = (await w.run([
    ["ip", "a"],
    ["account", "b"],
  ])) as { error?: string }[];
  assert.ok(performance.now() - t0 >= 140);
  assert.equal(w.requests.length, 1);
  assert.deepEqual(
    out.map((o) => o.error),
    ["no answer from the cluster primary within 150 ms", "no answer from the cluster primary within 150 ms"],
  );
});

test("the primary answers malformed items with null and ignores other messages", async () => {
  const limiters = memoryCounters({ ip: { points: 1, durationSeconds: 60 }, account: { points: 1, durationSeconds: 60 } }, "test2");
  assert.equal(await answerLimitRequest(limiters, { type: "something-else" }), null);
  assert.equal(await answerLimitRequest(limiters, null), null);
  const reply = await answerLimitRequest(limiters, { type: LIMIT_REQUEST, batch: 7, items: [["ip", "k"], ["nope", "k"], ["account", 5], "junk", ["ip", "k"]] });
  assert.equal(reply!.type, LIMIT_REPLY);
  assert.equal(reply!.batch, 7);
  assert.deepEqual(
    reply!.outcomes.map((o) => (o === null ? null : [o[0], o[1]])),
    [[1, 0], null, null, null, [0, 0]],
  );
});
