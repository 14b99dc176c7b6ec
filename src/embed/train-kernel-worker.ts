/** Helper-thread entry of BatchKernel (./train-kernel.ts): computes its share of each batch until told to exit. */
import { workerData } from "node:worker_threads";
import { serveKernel, type KernelWorkerData } from "./train-kernel.js";

serveKernel(workerData as KernelWorkerData);
