import assert from "node:assert/strict";
import { test } from "vitest";
import { setImmediate as nextTurn } from "node:timers/promises";
import { TurnBatch } from "./turn-batch.js";

test("TurnBatch hands over each turn's items together, in order, and take() empties it", async () => {
  const runs: number[][] = [];
  const batch = new TurnBatch<number>((items) => runs.push(items));
  batch.push(1);
  batch.push(2);
  queueMicrotask(() => batch.push(3)); // same turn
  await nextTurn();
  assert.deepEqual(runs, [[1, 2, 3]]);
  batch.push(4);
  await nextTurn();
  assert.deepEqual(runs, [[1, 2, 3], [4]]);
  batch.push(5);
  assert.deepEqual(batch.take(), [5]);
  await nextTurn();
  assert.deepEqual(runs, [[1, 2, 3], [4]], "nothing left to run after take()");
});

test("with queueMicrotask as the schedule, TurnBatch hands over one microtask run's items before any macrotask", async () => {
  const runs: number[][] = [];
  const batch = new TurnBatch<number>((items) => runs.push(items), queueMicrotask);
  // Armed before the pushes: it sees what was handed over by the time the microtask queue drained.
  const seenNextTurn = new Promise<number[][]>((resolve) => setImmediate(() => resolve(runs.map((r) => [...r]))));
  queueMicrotask(() => batch.push(1));
  queueMicrotask(() => batch.push(2)); // queued before the hand-over: the same batch
  assert.deepEqual(await seenNextTurn, [[1, 2]]);
  batch.push(3);
  await nextTurn();
  assert.deepEqual(runs, [[1, 2], [3]]);
});
