// Spike: a steady 10 VUs, a sudden jump to 100 (in 5 s), a minute at the peak, a sudden drop back and a
// minute of recovery at 10. Looser thresholds over the whole run; compare the recovery minute's latency
// with the baseline's in the output (k6 --out json/csv, or the Node runner's per-phase rows).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/spike.js
// __ENV: BASE_VUS (10), PEAK_VUS (100), HOLD (1m).
import { options as opts, preflight, search, LOOSE_THRESHOLDS } from "./lib.js";

const BASE = Number(__ENV.BASE_VUS || 10);
const PEAK = Number(__ENV.PEAK_VUS || 100);
const HOLD = __ENV.HOLD || "1m";

export const options = opts(
  "spike",
  {
    executor: "ramping-vus",
    startVUs: BASE,
    stages: [
      { duration: HOLD, target: BASE },
      { duration: "5s", target: PEAK },
      { duration: HOLD, target: PEAK },
      { duration: "5s", target: BASE },
      { duration: HOLD, target: BASE },
      { duration: "5s", target: 0 },
    ],
    gracefulRampDown: "10s",
  },
  LOOSE_THRESHOLDS,
);

export function setup() {
  preflight();
}

export default function () {
  search();
}
