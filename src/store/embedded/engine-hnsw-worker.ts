/** Worker-thread entry: plans its share of each batch of HNSW inserts (see engine-hnsw-pool.ts). */
import { workerData } from "node:worker_threads";
import { serveLockstep } from "../../common/lockstep.js";
import { InsertPlanner } from "./engine-hnsw-build.js";
import { CTL, type WorkerInit } from "./engine-hnsw-pool.js";

const { state, ctrl, index, threads } = workerData as WorkerInit;
serveLockstep(ctrl, () => {
  const planner = new InsertPlanner(state);
  return () => {
    const start = Atomics.load(ctrl, CTL.START);
    const end = Atomics.load(ctrl, CTL.END);
    const entry = Atomics.load(ctrl, CTL.ENTRY);
    const maxLevel = Atomics.load(ctrl, CTL.MAX_LEVEL);
    for (let q = start + index; q < end; q += threads) planner.plan(q, q - start, entry, maxLevel);
  };
});
