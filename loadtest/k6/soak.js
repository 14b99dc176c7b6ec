// Soak: a moderate, steady load (25 VUs) for an hour, to surface leaks, slow drift and anything that
// accumulates (ledger growth, memory, file handles). The objectives apply for the whole hour.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/soak.js
// __ENV: VUS (25), DURATION (1h). An hour at full speed can be ~1M searches: give the key enough credits.
import { options as opts, preflight, search, STRICT_THRESHOLDS } from "./lib.js";

export const options = opts("soak", { executor: "constant-vus", vus: Number(__ENV.VUS || 25), duration: __ENV.DURATION || "1h" }, STRICT_THRESHOLDS);

export function setup() {
  preflight();
}

export default function () {
  search();
}
