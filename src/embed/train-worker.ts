/**
 * Worker-thread entry for trainStaticModel. Training is minutes of synchronous arithmetic; `npm start`
 * builds its first index beside a serving gateway in the same process, so the event loop must stay free.
 */
import { parentPort, workerData } from "node:worker_threads";
import { trainStaticModel, type PairSet, type TrainConfig, type TrainOptions, type TrainWorkerMessage } from "./train.js";
import type { StaticModel } from "./distill.js";

export interface TrainWorkerInit {
  readonly init: StaticModel;
  readonly pairs: PairSet;
  readonly config: TrainConfig;
  readonly options: TrainOptions;
}

export type { TrainWorkerMessage };

const { init, pairs, config, options } = workerData as TrainWorkerInit;
const port = parentPort!;
const result = trainStaticModel(
  init,
  pairs,
  config,
  {
    onStep: (epoch, step, steps, loss) => port.postMessage({ kind: "step", epoch, step, steps, loss } satisfies TrainWorkerMessage),
    onEpoch: (stats) => port.postMessage({ kind: "epoch", stats } satisfies TrainWorkerMessage),
  },
  options,
);
const v = result.model.vectors;
port.postMessage({ kind: "done", result } satisfies TrainWorkerMessage, [v.buffer as ArrayBuffer]);
