// Load: ramp to the design concurrency (50 VUs = 50 agents searching back to back), hold, ramp down.
// The objectives apply: zero errors, p95 < 60 ms, p99 < 100 ms.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/load.js
// __ENV: VUS (50), RAMP (30s), HOLD (5m).
import { options as opts, preflight, search, STRICT_THRESHOLDS } from "./lib.js";

const VUS = Number(__ENV.VUS || 50);
const RAMP = __ENV.RAMP || "30s";

export const options = opts(
  "load",
  {
    executor: "ramping-vus",
    startVUs: 0,
    stages: [
      { duration: RAMP, target: VUS },
      { duration: __ENV.HOLD || "5m", target: VUS },
      { duration: "10s", target: 0 },
    ],
    gracefulRampDown: "10s",
  },
  STRICT_THRESHOLDS,
);

export function setup() {
  preflight();
}

export default function () {
  search();
}
