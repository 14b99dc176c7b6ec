import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { setImmediate as nextTurn } from "node:timers/promises";
import { STREAM_BATCH_MAX } from "./convert.js";
import { Outbox } from "./outbox.js";

/** An Outbox whose writes complete only when the test says so. */
function harness(): { box: Outbox<number>; batches: number[][]; complete: () => void; drained: () => number } {
  const batches: number[][] = [];
  const pending: (() => void)[] = [];
  let drained = 0;
  const box = new Outbox<number>(
    (batch, written) => {
      batches.push([...batch]);
      pending.push(written);
    },
    () => drained++,
  );
  return { box, batches, complete: () => pending.shift()!(), drained: () => drained };
}

describe("Outbox", () => {
  it("sends what is pushed in one turn as one batch, and what is pushed during a write as the next", async () => {
    const { box, batches, complete, drained } = harness();
    box.push(1);
    box.push(2);
    box.push(3);
    assert.deepEqual(batches, [], "nothing is written before the turn ends");
    await nextTurn();
    assert.deepEqual(batches, [[1, 2, 3]]);
    box.push(4);
    box.push(5);
    await nextTurn();
    assert.deepEqual(batches, [[1, 2, 3]], "one write at a time");
    assert.equal(box.empty, false);
    complete();
    assert.deepEqual(
      batches,
      [
        [1, 2, 3],
        [4, 5],
      ],
      "the next batch goes out as soon as the write completes",
    );
    assert.equal(drained(), 0);
    complete();
    assert.equal(drained(), 1, "drained once nothing is left");
    assert.equal(box.empty, true);
  });

  it("caps a batch at STREAM_BATCH_MAX items", async () => {
    const { box, batches, complete } = harness();
    const n = STREAM_BATCH_MAX * 2 + 3;
    for (let i = 0; i < n; i++) box.push(i);
    await nextTurn();
    complete();
    complete();
    assert.deepEqual(
      batches.map((b) => b.length),
      [STREAM_BATCH_MAX, STREAM_BATCH_MAX, 3],
    );
    assert.deepEqual(
      batches.flat(),
      Array.from({ length: n }, (_, i) => i),
      "in order, none lost",
    );
  });

  it("removes an item that has not been sent yet", async () => {
    const { box, batches } = harness();
    box.push(1);
    box.push(2);
    assert.equal(
      box.remove((x) => x === 1),
      true,
    );
    assert.equal(
      box.remove((x) => x === 9),
      false,
    );
    await nextTurn();
    assert.deepEqual(batches, [[2]]);
    assert.equal(
      box.remove((x) => x === 2),
      false,
      "sent items are gone from the outbox",
    );
  });
});
