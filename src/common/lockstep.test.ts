import { test } from "vitest";
import assert from "node:assert/strict";
import { compiledModuleUrl } from "./compiled-url.js";
import { LOCKSTEP_SLOTS, LockstepPool } from "./lockstep.js";

/** A helper written inline: each phase adds its index to slot LOCKSTEP_SLOTS + index, and throws on phase `failAt`. */
function helperUrl(failAt: number): URL {
  const lockstep = compiledModuleUrl("./lockstep.js", import.meta.url).href;
  const src = `
    import { workerData } from "node:worker_threads";
    import { serveLockstep, LOCKSTEP_SLOTS } from ${JSON.stringify(lockstep)};
    const { ctrl, index } = workerData;
    let phase = 0;
    serveLockstep(ctrl, () => () => {
      if (++phase === ${failAt}) throw new Error("boom");
      Atomics.add(ctrl, LOCKSTEP_SLOTS + index, index);
    });`;
  return new URL(`data:text/javascript,${encodeURIComponent(src)}`);
}

const OPTS = { name: "test", startTimeoutMs: 10_000, phaseTimeoutMs: 10_000 };

function started(url: URL, threads: number): LockstepPool {
  const pool = LockstepPool.start(url, threads, 3, (ctrl, index) => ({ ctrl, index }), OPTS);
  assert.ok(pool, "the helpers started");
  return pool;
}

test("phases run on every helper and the coordinator, in lockstep", () => {
  const pool = started(helperUrl(0), 3);
  try {
    let mine = 0;
    for (let p = 1; p <= 3; p++) {
      pool.phase(() => {
        mine++;
      });
      // After each phase every helper has done its part: no phase ends early.
      assert.deepEqual(
        [1, 2].map((i) => Atomics.load(pool.ctrl, LOCKSTEP_SLOTS + i)),
        [p, 2 * p],
      );
    }
    assert.equal(mine, 3);
  } finally {
    pool.close();
  }
});

test("a helper serves each generation once, however often it is woken", () => {
  const pool = started(helperUrl(0), 2);
  try {
    pool.phase(() => {});
    // The coordinator notifies after it bumps the generation (slot 0), so a helper that already served
    // that generation can be woken by its notify. Wake the waiting helper again and again, no new phase.
    let woken = 0;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let i = 0; i < 100 && woken < 5; i++) {
      woken += Atomics.notify(pool.ctrl, 0);
      Atomics.wait(pause, 0, 0, 5);
    }
    assert.ok(woken >= 5, `the helper was waiting to be woken (${woken})`);
    Atomics.wait(pause, 0, 0, 100);
    assert.equal(Atomics.load(pool.ctrl, LOCKSTEP_SLOTS + 1), 1, "one phase, one step");
    pool.phase(() => {});
    assert.equal(Atomics.load(pool.ctrl, LOCKSTEP_SLOTS + 1), 2);
  } finally {
    pool.close();
  }
});

test("a helper that throws makes the coordinator's phase throw, not hang", () => {
  const pool = started(helperUrl(2), 2);
  try {
    pool.phase(() => {});
    assert.throws(() => pool.phase(() => {}), /test worker failed/);
  } finally {
    pool.close();
  }
});

test("helpers that never start: start gives up after startTimeoutMs and returns null", () => {
  const t0 = Date.now();
  const pool = LockstepPool.start(new URL("./no-such-helper.js", import.meta.url), 2, 0, () => ({}), { ...OPTS, startTimeoutMs: 300 });
  assert.equal(pool, null);
  assert.ok(Date.now() - t0 >= 250);
});
