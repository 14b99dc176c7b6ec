// Smoke: one VU for a minute. Is the service up, are answers right, is single-user latency in budget?
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/smoke.js
import { options as opts, preflight, search, STRICT_THRESHOLDS } from "./lib.js";

export const options = opts("smoke", { executor: "constant-vus", vus: 1, duration: __ENV.DURATION || "1m" }, STRICT_THRESHOLDS);

export function setup() {
  preflight();
}

export default function () {
  search();
}
