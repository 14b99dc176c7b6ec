/** Worker-thread entry: plans its share of each batch of HNSW inserts (see engine-hnsw-pool.ts). */
import { workerData } from "node:worker_threads";
import { InsertPlanner } from "./engine-hnsw-build.js";
import { CTL, type WorkerInit } from "./engine-hnsw-pool.js";

const { state, ctrl, index, threads } = workerData as WorkerInit;
try {
  const planner = new InsertPlanner(state);
  Atomics.add(ctrl, CTL.READY, 1);
  Atomics.notify(ctrl, CTL.READY);
  let gen = 0;
  for (;;) {
    Atomics.wait(ctrl, CTL.GEN, gen);
    gen = Atomics.load(ctrl, CTL.GEN);
    const start = Atomics.load(ctrl, CTL.START);
    if (start < 0) break;
    const end = Atomics.load(ctrl, CTL.END);
    const entry = Atomics.load(ctrl, CTL.ENTRY);
    const maxLevel = Atomics.load(ctrl, CTL.MAX_LEVEL);
    for (let q = start + index; q < end; q += threads) planner.plan(q, q - start, entry, maxLevel);
    Atomics.add(ctrl, CTL.DONE, 1);
    Atomics.notify(ctrl, CTL.DONE);
  }
} catch (err) {
  Atomics.store(ctrl, CTL.FAILED, 1);
  Atomics.notify(ctrl, CTL.DONE);
  Atomics.notify(ctrl, CTL.READY);
  throw err;
}
