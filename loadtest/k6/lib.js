// Shared by the k6 scenarios: target, key, the request mix and one search iteration.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e API_KEY=rsk_... loadtest/k6/load.js
//
// __ENV: BASE_URL (default http://127.0.0.1:8080), API_KEY (required), QUERIES (dev.jsonl; default
// ../../../shared/eval/dev.jsonl), MIX (default ./query-mix.json), SLEEP (think time in seconds
// between a VU's requests, default 0), TIMEOUT (per request, default 10s). Relative paths resolve
// against this directory (k6 open()); absolute paths are safest. The mix is the same file the Node
// runner (loadtest/runner.ts) uses: each iteration takes a random dev.jsonl query and a mix entry
// picked by weight, with "$language" / "$category" filled from the query's guesses.
//
// The server must run with the rate limits raised (RATE_LIMIT_IP_PER_MINUTE and
// RATE_LIMIT_ACCOUNT_PER_MINUTE, e.g. 1000000000) or the defaults (30 and 60 a minute) turn almost
// every request into a 429; for uncached figures also set QUERY_CACHE_TTL_MS=0.
import http from "k6/http";
import { check, sleep } from "k6";
import { SharedArray } from "k6/data";

export const BASE_URL = (__ENV.BASE_URL || "http://127.0.0.1:8080").replace(/\/+$/, "");
export const API_KEY = __ENV.API_KEY || "";
const QUERIES = __ENV.QUERIES || "../../../shared/eval/dev.jsonl";
const MIX = __ENV.MIX || "./query-mix.json";
const THINK_S = Number(__ENV.SLEEP || 0);
const TIMEOUT = __ENV.TIMEOUT || "10s";
const SEARCH_URL = BASE_URL + "/v1/codehost/search";

if (!API_KEY) throw new Error("set the API key: k6 run -e API_KEY=rsk_... (and -e BASE_URL=...)");

const queries = new SharedArray("dev queries", function () {
  return open(QUERIES)
    .split("\n")
    .filter(function (l) {
      return l.trim() !== "";
    })
    .map(function (l) {
      const q = JSON.parse(l);
      return { query: q.query, language: q.language || null, category: q.category_guess || null };
    });
});

const mix = JSON.parse(open(MIX));
const entries = mix.entries;
const totalWeight = entries.reduce(function (s, e) {
  return s + e.weight;
}, 0);

function pickEntry() {
  let x = Math.random() * totalWeight;
  for (let i = 0; i < entries.length; i++) {
    x -= entries[i].weight;
    if (x < 0) return entries[i];
  }
  return entries[entries.length - 1];
}

function fill(v, q) {
  if (v === "$language") return q.language || mix.fallbackLanguage;
  if (v === "$category") return q.category || mix.fallbackCategory;
  if (Array.isArray(v)) {
    const out = [];
    for (let i = 0; i < v.length; i++) {
      const x = fill(v[i], q);
      if (out.indexOf(x) < 0) out.push(x);
    }
    return out;
  }
  if (v !== null && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v)) o[k] = fill(v[k], q);
    return o;
  }
  return v;
}

/** One request of the mix: { mix: entry name, body: JSON text }. */
export function nextRequest() {
  const q = queries[Math.floor(Math.random() * queries.length)];
  const entry = pickEntry();
  const body = Object.assign({ query: q.query }, fill(entry.body, q));
  return { mix: entry.name, body: JSON.stringify(body) };
}

const params = function (mixName) {
  return {
    headers: { "Content-Type": "application/json", "X-API-Key": API_KEY },
    // k6 adds the `scenario` tag itself; `name` groups the URL, `mix` the filter combination.
    tags: { name: "POST /v1/codehost/search", mix: mixName },
    timeout: TIMEOUT,
  };
};

/** setup(): one search first, so a bad key or rate limits still in place fail the run at once. */
export function preflight() {
  const r = nextRequest();
  const res = http.post(SEARCH_URL, r.body, params(r.mix));
  if (res.status !== 200) {
    const hint =
      res.status === 429 ? " (raise RATE_LIMIT_IP_PER_MINUTE / RATE_LIMIT_ACCOUNT_PER_MINUTE on the server)" : res.status === 401 ? " (check API_KEY)" : "";
    throw new Error("pre-flight search to " + SEARCH_URL + " got " + res.status + hint + ": " + String(res.body).slice(0, 300));
  }
}

/** One VU iteration: a search from the mix, checked. */
export function search() {
  const r = nextRequest();
  const res = http.post(SEARCH_URL, r.body, params(r.mix));
  check(res, {
    "status is 200": function (x) {
      return x.status === 200;
    },
    "body has results": function (x) {
      try {
        return Array.isArray(x.json("results"));
      } catch (e) {
        return false;
      }
    },
  });
  if (THINK_S > 0) sleep(THINK_S);
}

/**
 * Options for one named scenario: its thresholds apply to that scenario's requests only (the
 * `scenario` tag k6 puts on every metric), so setup()'s pre-flight request does not count.
 */
export function options(name, scenario, thresholds) {
  const scoped = {};
  for (const k of Object.keys(thresholds)) scoped[k + "{scenario:" + name + "}"] = thresholds[k];
  const scenarios = {};
  scenarios[name] = Object.assign({ exec: "default", tags: { test_type: name } }, scenario);
  return {
    scenarios: scenarios,
    thresholds: scoped,
    summaryTrendStats: ["avg", "min", "med", "p(90)", "p(95)", "p(99)", "max"],
    discardResponseBodies: false,
  };
}

/** The service objectives (zero errors, p95 < 60 ms, p99 < 100 ms), for smoke, load and soak. */
export const STRICT_THRESHOLDS = {
  http_req_failed: ["rate<0.001"],
  http_req_duration: ["p(95)<60", "p(99)<100"],
  checks: ["rate>0.999"],
};

/** Past the design load: errors under 1%, latency bounded but well above the objectives. */
export const LOOSE_THRESHOLDS = {
  http_req_failed: ["rate<0.01"],
  http_req_duration: ["p(95)<500", "p(99)<1000"],
  checks: ["rate>0.99"],
};
