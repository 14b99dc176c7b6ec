// Stress: past the design load in steps (50 → 100 → 150 → 200 VUs) to find where latency and errors
// give way. Looser thresholds: the run should degrade (queue, slow down), not fail.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/stress.js
// __ENV: MAX_VUS (200), STEP (2m hold per step).
import { options as opts, preflight, search, LOOSE_THRESHOLDS } from "./lib.js";

const MAX = Number(__ENV.MAX_VUS || 200);
const STEP = __ENV.STEP || "2m";
const steps = [0.25, 0.5, 0.75, 1].map(function (f) {
  return Math.max(1, Math.round(MAX * f));
});

export const options = opts(
  "stress",
  {
    executor: "ramping-vus",
    startVUs: 0,
    stages: [
      { duration: "30s", target: steps[0] },
      { duration: STEP, target: steps[0] },
      { duration: "30s", target: steps[1] },
      { duration: STEP, target: steps[1] },
      { duration: "30s", target: steps[2] },
      { duration: STEP, target: steps[2] },
      { duration: "30s", target: steps[3] },
      { duration: STEP, target: steps[3] },
      { duration: "30s", target: 0 },
    ],
    gracefulRampDown: "30s",
  },
  LOOSE_THRESHOLDS,
);

export function setup() {
  preflight();
}

export default function () {
  search();
}
