/**
 * `npm run docs:benchmarks`: writes docs/benchmarks.md from the latest runs recorded in results/*.json,
 * so the page carries the current figures only, each with the command that reproduces it.
 * `--check` writes nothing and exits 1 when docs/benchmarks.md differs from what the results give
 * (test/docs-generated.test.ts checks the same).
 *
 * The renderer reads each file defensively: a missing file, an unreadable one or a missing field
 * becomes "–" or a note, never an exception, because the benchmarks rewrite their files independently.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { projectRoot } from "../src/config/config.js";

export const BENCHMARKS_DOC = path.join("docs", "benchmarks.md");

// ---- reading JSON of unknown shape ----------------------------------------------------------------

type Json = Readonly<Record<string, unknown>>;

function obj(v: unknown): Json | null {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : null;
}
function arr(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}
function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
function str(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
}
/** The value at a path of keys, or undefined. */
function at(v: unknown, ...keys: readonly string[]): unknown {
  let cur: unknown = v;
  for (const k of keys) {
    const o = obj(cur);
    if (!o) return undefined;
    cur = o[k];
  }
  return cur;
}

interface ResultFile {
  readonly name: string;
  /** The parsed JSON, or null when the file is absent or unreadable. */
  readonly json: Json | null;
  /** Why json is null. */
  readonly problem: string | null;
}

function readResult(root: string, name: string): ResultFile {
  const file = path.join(root, "results", name);
  if (!existsSync(file)) return { name, json: null, problem: `no run recorded: \`results/${name}\` does not exist` };
  try {
    const json = obj(JSON.parse(readFileSync(file, "utf8")));
    return json ? { name, json, problem: null } : { name, json: null, problem: `\`results/${name}\` does not hold a JSON object` };
  } catch (err) {
    return { name, json: null, problem: `\`results/${name}\` is not valid JSON (${(err as Error).message.split("\n")[0]})` };
  }
}

// ---- formatting ------------------------------------------------------------------------------------

const DASH = "–";

/** Quality metrics: three decimals. */
function q3(v: unknown): string {
  const x = num(v);
  return x === null ? DASH : x.toFixed(3);
}
/** Milliseconds: two decimals below 10, one below 100, none above. */
function ms(v: unknown): string {
  const x = num(v);
  if (x === null) return DASH;
  return x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0);
}
/** Seconds: one decimal below 100, none above. */
function secs(v: unknown): string {
  const x = num(v);
  return x === null ? DASH : x < 100 ? `${x.toFixed(1)} s` : `${x.toFixed(0)} s`;
}
/** A count with thousands separators. */
function int(v: unknown): string {
  const x = num(v);
  return x === null ? DASH : Math.round(x).toLocaleString("en-US");
}
/** A rate or other figure with a given number of decimals and thousands separators. */
function fixed(v: unknown, digits: number): string {
  const x = num(v);
  return x === null ? DASH : x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
function percent(v: unknown, digits = 0): string {
  const x = num(v);
  return x === null ? DASH : `${x.toFixed(digits)}%`;
}
/** The UTC date of an ISO timestamp. */
function day(v: unknown): string | null {
  const s = str(v);
  if (!s) return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? s : d.toISOString().slice(0, 10);
}
function runDate(json: Json): string {
  const d = day(json.date);
  return d ? `run on ${d}` : "the file records no run date";
}
function cell(v: unknown): string {
  const s = v === null || v === undefined ? DASH : String(v);
  return s.replace(/\|/g, "\\|").replace(/\n/g, " ");
}
function table(header: readonly string[], align: readonly ("l" | "r")[], rows: readonly (readonly unknown[])[]): string[] {
  return [
    `| ${header.map(cell).join(" | ")} |`,
    `|${align.map((a) => (a === "r" ? "---:" : "---")).join("|")}|`,
    ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
  ];
}
function met(ok: boolean | null): string {
  return ok === null ? DASH : ok ? "met" : "**not met**";
}
/**
 * A file path from a result, without the machine's part: from its `bench/` folder on when it has one (the
 * project's own files), else its base name. The page must not depend on where the checkout lives.
 */
function shownPath(v: unknown): string | null {
  const s = str(v);
  if (!s) return null;
  const parts = s.split(/[\\/]/);
  const i = parts.lastIndexOf("bench");
  return i >= 0 && i < parts.length - 1 ? parts.slice(i).join("/") : parts[parts.length - 1]!;
}
/** A ratio: two decimals, or two significant digits below 0.1. */
function ratio(v: unknown): string {
  const x = num(v);
  return x === null ? DASH : x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
}
/** Requests or queries per second: whole numbers from 100 up, one decimal below. */
function perSecond(v: unknown): string {
  const x = num(v);
  return x === null ? DASH : fixed(x, x >= 100 ? 0 : 1);
}
function indexLine(index: unknown): string | null {
  const i = obj(index);
  if (!i) return null;
  const parts = [
    str(i.version),
    num(i.count) !== null ? `${int(i.count)} repositories` : null,
    num(i.dims) !== null ? `${i.dims} dims` : null,
    str(i.embedderId),
  ].filter(Boolean);
  return parts.length ? `index ${parts.join(", ")}` : null;
}

// ---- sections --------------------------------------------------------------------------------------

interface Section {
  readonly title: string;
  readonly lines: readonly string[];
}

interface Glance {
  readonly measure: string;
  readonly value: string;
  readonly command: string;
}

function missing(file: ResultFile, command: string): string[] {
  const problem = file.problem ?? "no run recorded";
  return [`_${problem[0]!.toUpperCase()}${problem.slice(1)}._ Run \`${command}\` to record one.`];
}

/** "batch 1 0.866, batch 2 0.722" from a per-batch record (`hit3` picks each batch's figure); null with fewer than two batches. */
function byBatch(v: unknown, hit3: (batch: unknown) => unknown): string | null {
  const m = obj(v);
  if (!m || Object.keys(m).length < 2) return null;
  return Object.entries(m)
    .map(([b, x]) => `batch ${b} ${q3(hit3(x))}`)
    .join(", ");
}

/** eval.json's `headBands` as one line ("batch 1: top 3 372, 4-5 10, …; batch 2: …"), or null; eval prints the same. */
export function headBandsText(headBands: unknown): string | null {
  const bands = obj(headBands);
  if (!bands) return null;
  return Object.entries(bands)
    .map(([batch, b]) => {
      const counts = obj(b);
      return `batch ${batch}: ${
        counts
          ? Object.entries(counts)
              .map(([band, n]) => `${band} ${int(n)}`)
              .join(", ")
          : "–"
      }`;
    })
    .join("; ");
}

/** eval.json's `headFramings` as one line ("as written 0.859; “best …” 0.859; …"), or null; eval prints the same. */
export function headFramingsText(headFramings: unknown): string | null {
  const framings = obj(headFramings);
  if (!framings) return null;
  return Object.entries(framings)
    .map(([framing, hit3]) => `${framing === "{q}" ? "as written" : `“${framing.replace("{q}", "…")}”`} ${q3(hit3)}`)
    .join("; ");
}

/** eval.json's `headPlural` as one clause ("653 queries: 0.856 as written, 0.816 with the head noun in the plural"), or null; eval prints the same. */
export function headPluralText(headPlural: unknown): string | null {
  const p = obj(headPlural);
  if (!p) return null;
  return `${int(p.queries)} queries: ${q3(p.asWritten)} as written, ${q3(p.plural)} with the head noun in the plural`;
}

function evalSection(root: string, glance: Glance[]): Section {
  const title = "Search quality: `npm run eval`";
  const f = readResult(root, "eval.json");
  if (!f.json) return { title, lines: missing(f, "npm run eval") };
  const j = f.json;
  const lines: string[] = [];
  const about = [runDate(j), indexLine(j.index)].filter(Boolean).join("; ");
  lines.push(
    `\`results/eval.json\`, ${about}. Queries: the curated-list sections of \`${shownPath(j.devFile) ?? "dev.jsonl"}\` ` +
      `(searched with every category and archived repositories included) and the head set \`${shownPath(j.headFile) ?? "bench/head-queries.jsonl"}\` ` +
      "(searched with the default filters; hit@k = share of queries with a named answer in the top k). Reproduce with `npm run eval` on the index `npm start` builds.",
    "",
  );
  const runs = arr(j.runs)
    .map(obj)
    .filter((r): r is Json => r !== null);
  if (runs.length) {
    lines.push(
      ...table(
        ["method", "dev nDCG@10", "dev Recall@10", "dev Recall@50", "dev MRR", "head hit@1", "head hit@3", "head hit@10", "head MRR", "p50 ms", "p99 ms"],
        ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
        runs.map((r) => [
          str(r.method),
          q3(at(r, "dev", "ndcg10")),
          q3(at(r, "dev", "recall10")),
          q3(at(r, "dev", "recall50")),
          q3(at(r, "dev", "mrr")),
          q3(at(r, "head", "hit1")),
          q3(at(r, "head", "hit3")),
          q3(at(r, "head", "hit10")),
          q3(at(r, "head", "mrr")),
          ms(r.p50Ms),
          ms(r.p99Ms),
        ]),
      ),
      "",
      "Latency is per query through the whole search path, in process (rows without it re-rank the same candidate pools).",
      "",
    );
    const main = runs.find((r) => /default/i.test(str(r.method) ?? "")) ?? runs[0]!;
    const batches = byBatch(main.headByBatch, (m) => at(m, "hit3"));
    if (batches)
      lines.push(`Head hit@3 by batch of the head set through the full path: ${batches} (in sample: the shipped ranker was trained on every batch).`, "");
    glance.push(
      {
        measure: "search quality in sample, dev nDCG@10 / MRR",
        value: `${q3(at(main, "dev", "ndcg10"))} / ${q3(at(main, "dev", "mrr"))}`,
        command: "npm run eval",
      },
      {
        measure: "search quality in sample, head hit@3 / MRR",
        value: `${q3(at(main, "head", "hit3"))} / ${q3(at(main, "head", "mrr"))}`,
        command: "npm run eval",
      },
    );
  } else lines.push("_The file records no runs._", "");

  const pool = obj(j.poolRecall);
  if (pool) {
    lines.push(
      `Candidate pools (what any ranking of them could reach): mean size ${fixed(pool.meanPoolSize, 0)}; dev Recall of the pool ${q3(pool.devRecall)}; ` +
        `head queries with a named answer in the pool ${q3(pool.headAnswerInPool)}.`,
    );
  }
  const bands = headBandsText(j.headBands);
  if (bands) lines.push(`Where each head query's first named answer stands through the full path: ${bands}.`);
  const framings = headFramingsText(j.headFramings);
  if (framings) lines.push(`Head hit@3 with each query framed as agents write a request (the ranked text drops the framing): ${framings}.`);
  const plural = headPluralText(j.headPlural);
  if (plural) lines.push(`Head hit@3 of the head queries that ask for one thing, as written and asking for many ("password managers"): ${plural}.`);
  const dup = obj(j.duplicates);
  if (dup) {
    const apart = obj(dup.leftApart);
    const why = apart ? Object.entries(apart).map(([reason, n]) => `${reason}: ${int(n)}`) : [];
    lines.push(
      `Duplicate projects in result lists (top 50): ${int(dup.pairs)} look-alike pairs (same repository name and description) in ` +
        `${int(dup.listsWithDuplicates)} of ${int(dup.listsChecked)} lists` +
        (dup.wouldMerge !== undefined ? `; ${int(dup.wouldMerge)} the merge rule would join` : "") +
        (why.length ? `, the rest kept apart as different projects (${why.join("; ")})` : "") +
        "." +
        (dup.twinPairs !== undefined
          ? ` Transfers listed twice (the test of the merge's fourth to ninth tier: on one repository name, stars and forks within 2 %, created at the same second, a stale name of the project's own organisation, a stale name's one successor, or the owner renamed; under one owner, a repository renamed): ${int(dup.twinPairs)} pairs in ${int(dup.listsWithTwins)} lists.`
          : ""),
    );
    const same = obj(dup.sameName);
    if (same) {
      const top = Array.isArray(same.mostListed) ? (same.mostListed as { pair: string; lists: number }[]).slice(0, 12) : [];
      lines.push(
        "",
        `Other pairs of one repository name, both with ≥ ${int(same.minStars)} stars, that no merge test decides (unjudged: one project under two names that no tier joins, or two projects of one name): ` +
          `${int(same.pairs)} pairs, ${int(same.distinct)} distinct, in ${int(same.lists)} lists. Most listed: ${top.map((t) => `${t.pair} (${t.lists})`).join("; ")}.`,
      );
    }
  }
  if (pool || dup) lines.push("");

  const training = obj(j.ranker);
  const cv = obj(training?.crossValidation);
  if (training) {
    const on = obj(training.trainedOn);
    const sets = on ? [str(on.dev), str(on.head)].filter(Boolean).join("; ") : null;
    lines.push(
      `**The shipped ranker** was trained on ${sets ?? "(not recorded)"}${on && str(on.index) ? ` over index ${str(on.index)}` : ""}` +
        `${on && str(on.sets) ? ` (${str(on.sets)})` : ""}. Reproduce with \`${str(training.reproduce) ?? "npm run eval -- --tune"}\`.`,
    );
    if (cv) {
      const ctx = obj(cv.context);
      const first = obj(cv.firstStage);
      const stages = ctx ? `${int(cv.trees)} trees, then a second stage of ${int(ctx.trees)} trees over the top ${int(ctx.k)}` : `${int(cv.trees)} trees`;
      lines.push(
        `Cross-validated (${str(cv.method) ?? "method not recorded"}; ${stages}): dev nDCG@10 ${q3(cv.devNdcg10)}, dev MRR ${q3(cv.devMrr)}, ` +
          `head hit@3 ${q3(cv.headHit3)}, head MRR ${q3(cv.headMrr)}: the figures to expect on queries the ranker never saw.` +
          (ctx && first
            ? ` The first stage alone: dev nDCG@10 ${q3(first.devNdcg10)}, dev MRR ${q3(first.devMrr)}, head hit@3 ${q3(first.headHit3)}, head MRR ${q3(first.headMrr)}.`
            : ""),
      );
      const plural = obj(cv.headPlural);
      if (plural)
        lines.push(
          `Held out, the ${int(plural.queries)} head queries that ask for one thing: hit@3 ${q3(plural.asWritten)} as written, ${q3(plural.plural)} with the head noun in the plural ` +
            `(${Number(plural.weight) > 0 ? `the ranker trained on those variants at ${fixed(plural.weight, 1)}× a head query's weight` : "the ranker not trained on those variants"}; [ranking.md](ranking.md#4-the-learned-ranker)).`,
        );
      const batches = byBatch(cv.headHit3ByBatch, (v) => v);
      glance.push({
        measure: "search quality held out, dev nDCG@10 / head hit@3",
        value: `${q3(cv.devNdcg10)} / ${q3(cv.headHit3)}${batches ? ` (${batches})` : ""}`,
        command: "npm run eval -- --tune",
      });
      if (batches)
        lines.push(
          "",
          `Head hit@3 by batch of the head set, cross-validated: ${batches}. Batch 1's misses were read to design the features; batch 3 was written by someone who had ` +
            "never seen the ranker or its output, so its figure is the one closest to what unseen everyday queries get ([head-queries.md](../bench/head-queries.md)).",
        );
    }
    lines.push("");
  }

  // Per-list nDCG@10: one column per run that reports lists, plus the cross-validated figure.
  const listRuns = runs.filter((r) => obj(r.perList));
  const cvLists = obj(cv?.perList);
  const lists = [...new Set([...listRuns.flatMap((r) => Object.keys(obj(r.perList)!)), ...Object.keys(cvLists ?? {})])];
  if (lists.length) {
    lines.push("Per curated list, dev nDCG@10:", "");
    const header = ["list", ...listRuns.map((r) => str(r.method) ?? "run"), ...(cvLists ? ["ranker, cross-validated"] : [])];
    lines.push(
      ...table(
        header,
        header.map((_, i) => (i === 0 ? "l" : "r")),
        lists.map((l) => [l, ...listRuns.map((r) => q3(obj(r.perList)![l])), ...(cvLists ? [q3(cvLists[l])] : [])]),
      ),
      "",
    );
  }

  const tuning = obj(j.tuning);
  if (tuning) {
    const curve = arr(tuning.curve)
      .map(obj)
      .filter((c): c is Json => c !== null);
    lines.push("The `--tune` run's cross-validated curve (0 trees = the linear part alone):", "");
    lines.push(
      ...table(
        ["trees", "dev nDCG@10", "dev MRR", "head hit@3", "head MRR"],
        ["r", "r", "r", "r", "r"],
        curve.map((c) => [int(c.trees), q3(at(c, "dev", "ndcg10")), q3(at(c, "dev", "mrr")), q3(at(c, "head", "hit3")), q3(at(c, "head", "mrr"))]),
      ),
      "",
    );
    const importance = Object.entries(obj(tuning.importance) ?? {})
      .filter((e): e is [string, number] => num(e[1]) !== null)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10);
    lines.push(
      `Chosen: ${int(tuning.chosen)} trees.${importance.length ? ` Most important features: ${importance.map(([k, v]) => `${k} ${(v * 100).toFixed(1)}%`).join(", ")}.` : ""}`,
      "",
    );
  }

  const slice = obj(j.teacherSlice);
  if (slice) {
    const rows = arr(slice.rows)
      .map(obj)
      .filter((r): r is Json => r !== null);
    lines.push(
      `Dense retrieval alone on a ${int(slice.size)}-repository slice, the index's model against its teacher (\`npm run eval -- --teacher-slice ${num(slice.size) ?? "N"}\`):`,
      "",
    );
    lines.push(
      ...table(
        ["model", "nDCG@10", "Recall@10", "Recall@50", "MRR"],
        ["l", "r", "r", "r", "r"],
        rows.map((r) => [
          str(r.method),
          q3(at(r, "metrics", "ndcg10")),
          q3(at(r, "metrics", "recall10")),
          q3(at(r, "metrics", "recall50")),
          q3(at(r, "metrics", "mrr")),
        ]),
      ),
      "",
    );
  }
  return { title, lines };
}

function indexSection(root: string, glance: Glance[]): Section {
  const title = "Index build: `npm run bench:index`";
  const f = readResult(root, "bench-index.json");
  if (!f.json) return { title, lines: missing(f, "npm run bench:index") };
  const j = f.json;
  const m = obj(j.machine);
  const machine = m
    ? [
        str(m.cpuModel),
        num(m.cpus) !== null ? `${m.cpus} cores` : null,
        num(m.memGiB) !== null ? `${m.memGiB} GiB` : null,
        str(m.node) ? `Node ${m.node}` : null,
      ]
        .filter(Boolean)
        .join(", ")
    : null;
  const t = obj(j.targets);
  const le = (value: number | null, target: number | null) => (value === null || target === null ? null : value <= target);
  const full = num(at(j, "fullBuild", "seconds"));
  const lines = [
    `\`results/bench-index.json\`, ${runDate(j)}${machine ? ` (${machine})` : ""}: a fresh build of the whole dataset into an empty data dir with the \`${str(j.embedder) ?? "default"}\` embedder, ` +
      "distilling and training its model included, then a re-run on unchanged data and a cold load of the published index.",
    "",
    ...table(
      ["measure", "value", "target", "status"],
      ["l", "r", "r", "l"],
      [
        ["repositories indexed", int(j.count), DASH, ""],
        ["full build", secs(full), num(t?.fullBuildSeconds) !== null ? `≤ ${int(t!.fullBuildSeconds)} s` : DASH, met(le(full, num(t?.fullBuildSeconds)))],
        [
          "peak RSS of the build (incl. worker threads)",
          num(at(j, "fullBuild", "peakRssMiB")) !== null ? `${int(at(j, "fullBuild", "peakRssMiB"))} MiB` : DASH,
          num(t?.peakRssMiB) !== null ? `≤ ${int(t!.peakRssMiB)} MiB` : DASH,
          met(le(num(at(j, "fullBuild", "peakRssMiB")), num(t?.peakRssMiB))),
        ],
        [
          "no-change re-run",
          secs(at(j, "noChangeRerun", "seconds")),
          num(t?.noChangeRerunSeconds) !== null ? `≤ ${int(t!.noChangeRerunSeconds)} s` : DASH,
          met(le(num(at(j, "noChangeRerun", "seconds")), num(t?.noChangeRerunSeconds))),
        ],
        [
          "index load",
          num(at(j, "load", "seconds")) !== null ? `${fixed(at(j, "load", "seconds"), 2)} s` : DASH,
          num(t?.loadSeconds) !== null ? `≤ ${int(t!.loadSeconds)} s` : DASH,
          met(le(num(at(j, "load", "seconds")), num(t?.loadSeconds))),
        ],
      ],
    ),
    "",
  ];
  const stages = Object.entries(obj(at(j, "fullBuild", "stages")) ?? {}).filter(([k, v]) => k !== "total" && num(v) !== null);
  if (stages.length) lines.push(`Stages of the full build: ${stages.map(([k, v]) => `${k} ${secs(v)}`).join(", ")}.`, "");
  if (full !== null) glance.push({ measure: "full index build (fresh data dir)", value: secs(full), command: "npm run bench:index" });
  return { title, lines };
}

const STORE_P99_TARGET_MS = 5;
const STORE_RECALL_TARGET = 0.99;

function storeSection(root: string, glance: Glance[]): Section {
  const title = "Embedded store: `npm run bench:store`";
  const f = readResult(root, "bench-store.json");
  if (!f.json) return { title, lines: missing(f, "npm run bench:store") };
  const j = f.json;
  const s = obj(j.settings);
  const machine = [str(j.cpu), num(j.cores) !== null ? `${j.cores} cores` : null, str(j.node) ? `Node ${j.node}` : null].filter(Boolean).join(", ");
  const lines = [
    `\`results/bench-store.json\`, ${runDate(j)}${machine ? ` (${machine})` : ""}; ${indexLine(j.index) ?? "index not recorded"}` +
      `${s ? `; HNSW M ${s.m ?? DASH}, efConstruction ${s.efConstruction ?? DASH}, efSearch ${s.efSearch ?? DASH}, full-scan threshold ${int(s.fullScanThreshold)}` : ""}.` +
      `${j.synthetic ? " **A synthetic index**, not the dataset." : ""}`,
    `${str(j.queryVectors) ?? "dev.jsonl queries"}, \`limit\` ${j.limit ?? DASH}, one filter type at a time; recall@10 against an exact scan under the same filter ` +
      `(a hit scoring as high as the exact 10th counts). Load ${num(j.loadMs) !== null ? `${fixed(num(j.loadMs)! / 1000, 1)} s` : DASH}, RSS after load ${int(j.rssAfterLoadMiB)} MiB.`,
    "",
  ];
  const dense = arr(j.dense)
    .map(obj)
    .filter((d): d is Json => d !== null);
  const lexical = obj(j.lexical);
  const rows: unknown[][] = dense.map((d) => [str(d.filter), int(d.matchingAvg), ms(d.p50Ms), ms(d.p95Ms), ms(d.p99Ms), fixed(d.recallAt10, 3)]);
  if (lexical) rows.push(["lexical BM25F (unfiltered)", DASH, ms(lexical.p50Ms), ms(lexical.p95Ms), ms(lexical.p99Ms), DASH]);
  lines.push(...table(["filter", "rows passing (avg)", "p50 ms", "p95 ms", "p99 ms", "recall@10"], ["l", "r", "r", "r", "r", "r"], rows), "");
  if (dense.length) {
    const slow = dense.filter((d) => (num(d.p99Ms) ?? Infinity) > STORE_P99_TARGET_MS).map((d) => str(d.filter));
    const low = dense.filter((d) => (num(d.recallAt10) ?? 0) < STORE_RECALL_TARGET).map((d) => str(d.filter));
    const ok = slow.length === 0 && low.length === 0;
    lines.push(
      `Targets: p99 ≤ ${STORE_P99_TARGET_MS} ms and recall@10 ≥ ${STORE_RECALL_TARGET} for every filter type, unfiltered included: ${met(ok)}` +
        `${slow.length ? `; p99 above target: ${slow.join(", ")}` : ""}${low.length ? `; recall below target: ${low.join(", ")}` : ""}.`,
      "",
    );
    const worst = Math.max(...dense.map((d) => num(d.p99Ms) ?? 0));
    const minRecall = Math.min(...dense.map((d) => num(d.recallAt10) ?? 0));
    glance.push({
      measure: "store, worst p99 over filter types / lowest recall@10",
      value: `${ms(worst)} ms / ${fixed(minRecall, 3)}`,
      command: "npm run bench:store",
    });
  }
  return { title, lines };
}

/** bench:search targets by result key (issue #3's latency targets and the gateway's overhead budget). */
const SEARCH_TARGETS: Readonly<Record<string, { readonly p50?: number; readonly p99?: number }>> = {
  "grpc core, rerank off": { p50: 10, p99: 30 },
  "grpc core, rerank local": { p99: 250 },
};
const GATEWAY_OVERHEAD_TARGET_MS = 3;

function searchSection(root: string, glance: Glance[]): Section {
  const title = "Search latency: `npm run bench:search`";
  const f = readResult(root, "bench-search.json");
  if (!f.json) return { title, lines: missing(f, "npm run bench:search") };
  const j = f.json;
  const machine = [str(j.cpu), num(j.cores) !== null ? `${j.cores} cores` : null, str(j.node) ? `Node ${j.node}` : null].filter(Boolean).join(", ");
  const lines = [
    `\`results/bench-search.json\`, ${runDate(j)}${machine ? ` (${machine})` : ""}: ${int(j.queries)} dev.jsonl queries with a mix of filter combinations, \`limit\` 10, concurrency 1, ` +
      "query cache off, through a real gRPC client and real HTTP on loopback, after the core's start-up warm-up (`WARMUP_QUERIES`; " +
      "`WARMUP_QUERIES=0 npm run bench:search` measures a cold process). The gRPC rows are unary `Search` calls." +
      (Object.keys(obj(j.results) ?? {}).some((k) => k.includes("version swap"))
        ? " The rows around version swaps serve a copy of the index that is published again under the next label several times, first " +
          "with every payload unchanged, then in turn with and without one star more for every repository with ≥ 100 (as a daily update " +
          "moves them), and run the same queries right before and right after each swap."
        : ""),
    "",
  ];
  const results = obj(j.results) ?? {};
  const rows: unknown[][] = [];
  const scalars: string[] = [];
  const startUp: string[] = [];
  for (const [key, v] of Object.entries(results)) {
    const r = obj(v);
    if (key === "core start-up" && r) {
      startUp.push(`Core start-up ${num(r.seconds) ?? DASH} s, of which the warm-up ${int(r.warmupSearches)} searches in ${num(r.warmupSeconds) ?? DASH} s.`);
    } else if (r) {
      const t = SEARCH_TARGETS[key];
      const target = t ? [t.p50 !== undefined ? `p50 ≤ ${t.p50}` : null, t.p99 !== undefined ? `p99 ≤ ${t.p99}` : null].filter(Boolean).join(", ") : DASH;
      const ok = t ? (t.p50 === undefined || (num(r.p50) ?? Infinity) <= t.p50) && (t.p99 === undefined || (num(r.p99) ?? Infinity) <= t.p99) : null;
      rows.push([key, ms(r.p50), ms(r.p95), ms(r.p99), ms(r.mean), target, t ? met(ok) : ""]);
    } else if (Array.isArray(v)) {
      scalars.push(`${key}: ${v.map((x) => num(x) ?? DASH).join(", ")}.`);
    } else if (num(v) !== null) {
      const overhead = /overhead/i.test(key);
      scalars.push(`${key}: ${ms(v)} ms${overhead ? ` (target ≤ ${GATEWAY_OVERHEAD_TARGET_MS} ms: ${met(num(v)! <= GATEWAY_OVERHEAD_TARGET_MS)})` : ""}.`);
    }
  }
  lines.push(...table(["path", "p50 ms", "p95 ms", "p99 ms", "mean ms", "target", "status"], ["l", "r", "r", "r", "r", "l", "l"], rows), "");
  if (scalars.length || startUp.length) lines.push([...scalars, ...startUp].join(" "), "");
  const core = obj(results["grpc core, rerank off"]);
  if (core) glance.push({ measure: "search through the gRPC core, p50 / p99", value: `${ms(core.p50)} / ${ms(core.p99)} ms`, command: "npm run bench:search" });
  return { title, lines };
}

function loadtestSection(root: string, glance: Glance[]): Section {
  const title = "Load tests: `npm run loadtest`";
  const dir = path.join(root, "results");
  const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^loadtest.*\.json$/.test(n)) : [];
  names.sort((a, b) => (a === "loadtest.json" ? -1 : b === "loadtest.json" ? 1 : a.localeCompare(b)));
  if (!names.length) return { title, lines: missing(readResult(root, "loadtest.json"), "npm run loadtest") };
  const lines: string[] = [
    "`npm run loadtest` starts `reposearch serve` on the index in `DATA_DIR` (or `--data-dir`) with a throw-away ledger, the rate limits raised and " +
      "the query cache off, drives it with closed-loop keep-alive connections sending dev.jsonl queries crossed with `loadtest/k6/query-mix.json`, " +
      "and measures two ceilings with the server stopped: the transport ceiling (a `node:http` server answering a fixed response) and the " +
      "embedding-only ceiling (the index's query embedder alone, one thread per serving process). Details: [loadtest/README.md](../loadtest/README.md).",
    "",
  ];
  for (const name of names) {
    const f = readResult(root, name);
    lines.push(`### \`results/${name}\``, "");
    if (!f.json) {
      lines.push(`_${f.problem}._`, "");
      continue;
    }
    const j = f.json;
    const host = obj(j.host);
    const machine = host
      ? [str(host.cpu), num(host.cores) !== null ? `${host.cores} cores` : null, str(host.node) ? `Node ${host.node}` : null].filter(Boolean).join(", ")
      : "";
    const command = name === "loadtest.json" ? "npm run loadtest" : `npm run loadtest -- --data-dir DIR --out results/${name}`;
    lines.push(
      `${runDate(j)[0]!.toUpperCase()}${runDate(j).slice(1)}${str(j.commit) ? ` at ${j.commit}` : ""}${machine ? ` (${machine})` : ""}; ${indexLine(j.index) ?? "index not recorded"}; ` +
        `${int(j.serverProcesses)} serving processes${str(j.serverBalancing) ? ` (${j.serverBalancing})` : ""}. Reproduce with \`${command}\`` +
        `${
          name === "loadtest.json"
            ? ""
            : ` on an index built with the embedder above (e.g. \`EMBEDDER=${
                String(at(j, "index", "embedderId") ?? "")
                  .split("@")[0]
                  ?.split(":")[0] || "…"
              }\`)`
        }.`,
      "",
    );
    const scenarios = arr(j.scenarios)
      .map(obj)
      .filter((s): s is Json => s !== null);
    lines.push(
      ...table(
        [
          "scenario",
          "connections",
          "duration",
          "requests",
          "RPS",
          "p50 ms",
          "p95 ms",
          "p99 ms",
          "max ms",
          "errors",
          "server CPU",
          "server CPU ms/request",
          "GC pause",
          "full GCs",
          "steal",
        ],
        ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"],
        scenarios.map((s) => {
          const t = obj(s.total) ?? {};
          return [
            str(s.scenario) ?? str(t.label),
            int(t.connections),
            num(t.seconds) !== null ? `${Math.round(num(t.seconds)!)} s` : DASH,
            int(t.requests),
            int(t.rps),
            ms(at(t, "latencyMs", "p50")),
            ms(at(t, "latencyMs", "p95")),
            ms(at(t, "latencyMs", "p99")),
            ms(at(t, "latencyMs", "max")),
            int(t.errors),
            percent(t.serverCpuPct),
            fixed(t.serverCpuMsPerRequest, 2),
            percent(at(t, "gc", "pauseSharePct"), 1),
            int(at(t, "gc", "fullCount")),
            percent(t.stealPct, 1),
          ];
        }),
      ),
      "",
    );
    const c = obj(j.ceiling);
    const tc = obj(j.transportCeiling);
    const ceil: string[] = [];
    if (c) {
      const one = obj(c.singleThread);
      const two = obj(c.twoThreads);
      const batch = num(one?.batch) ?? num(two?.batch);
      ceil.push(
        `embedding-only ${perSecond(one?.perSecond)} queries/s on one thread, ${perSecond(two?.perSecond)} on two${batch !== null ? ` (${batch === 1 ? "one query per call" : `batches of ${batch}`})` : ""}`,
      );
    }
    if (tc) ceil.push(`transport ${perSecond(tc.perSecond)} RPS`);
    if (ceil.length) lines.push(`Ceilings: ${ceil.join("; ")}.`);
    const targets = obj(j.targets);
    if (targets) {
      const p99 = obj(targets.p99);
      const errors = obj(targets.errors);
      const rps = obj(targets.rps);
      const parts: string[] = [];
      if (p99) parts.push(`p99 ≤ ${int(p99.targetMs)} ms: ${ms(p99.actualMs)} ms, ${met(typeof p99.pass === "boolean" ? p99.pass : null)}`);
      if (errors) parts.push(`zero errors: ${int(errors.actual)}, ${met(typeof errors.pass === "boolean" ? errors.pass : null)}`);
      if (rps) {
        parts.push(
          `RPS ${str(rps.target) ?? "target"}: ${perSecond(rps.actualRps)} RPS = ${ratio(rps.ratio)} × the ceiling (${perSecond(rps.targetRps)} RPS needed), ${met(typeof rps.pass === "boolean" ? rps.pass : null)}`,
        );
      }
      if (parts.length) lines.push(`Targets, on the ${str(targets.scenario) ?? "load"} scenario: ${parts.join("; ")}.`);
    }
    lines.push("");
    if (name === "loadtest.json") {
      const load = scenarios.find((s) => str(s.scenario) === "load");
      const t = obj(load?.total);
      if (t)
        glance.push({
          measure: "load test, 50 connections: RPS / p99 / errors",
          value: `${int(t.rps)} / ${ms(at(t, "latencyMs", "p99"))} ms / ${int(t.errors)}`,
          command: "npm run loadtest",
        });
    }
  }
  return { title, lines };
}

function classifierSection(root: string, glance: Glance[]): Section {
  const title = "Category classifier: `npm run eval:classifier`";
  const f = readResult(root, "classifier.json");
  if (!f.json) return { title, lines: missing(f, "npm run eval:classifier") };
  const runs = Object.entries(obj(f.json.runs) ?? {}).map(([mode, v]) => [mode, obj(v) ?? {}] as const);
  const lines = [
    `\`results/classifier.json\` (${runDate(f.json)}): the rules against \`bench/classifier-sample.jsonl\`, repositories labelled by hand ` +
      "(method: [classifier.md](classifier.md)). Rules only: `npm run eval:classifier`; with the embedding vote: `npm run eval:classifier -- --embedder use-lite`. " +
      "Accuracy counts an abstention on an unlabelled row as correct; coverage is the share not abstained; hidden = curated-list and educational together.",
    "",
  ];
  const partRows: unknown[][] = [];
  for (const [mode, run] of runs) {
    for (const [part, pv] of Object.entries(obj(run.parts) ?? {})) {
      const p = obj(pv) ?? {};
      partRows.push([
        part,
        mode,
        int(p.n),
        q3(p.accuracy),
        q3(p.coverage),
        q3(p.precisionWhenDecided),
        `${q3(at(p, "hidden", "precision"))} / ${q3(at(p, "hidden", "recall"))}`,
      ]);
    }
  }
  if (partRows.length)
    lines.push(
      ...table(["part", "mode", "n", "accuracy", "coverage", "precision when decided", "hidden P / R"], ["l", "l", "r", "r", "r", "r", "r"], partRows),
      "",
    );
  for (const [mode, run] of runs) {
    const all = obj(at(run, "parts", "all", "perCategory"));
    const random = obj(at(run, "parts", "random", "perCategory"));
    if (!all) continue;
    lines.push(`Per category, \`${mode}\`${str(run.classifierId) ? ` (${run.classifierId})` : ""}:`, "");
    lines.push(
      ...table(
        ["category", "support (all)", "precision", "recall", "support (random)", "precision", "recall"],
        ["l", "r", "r", "r", "r", "r", "r"],
        Object.entries(all).map(([cat, v]) => {
          const r = obj(random?.[cat]);
          return [
            cat,
            int(at(v, "support")),
            q3(at(v, "precision")),
            q3(at(v, "recall")),
            r ? int(r.support) : DASH,
            r ? q3(r.precision) : DASH,
            r ? q3(r.recall) : DASH,
          ];
        }),
      ),
      "",
    );
  }
  const rules = runs.find(([mode]) => mode === "rules-only")?.[1];
  const allPart = obj(at(rules, "parts", "all"));
  if (allPart)
    glance.push({
      measure: `classifier (rules), accuracy / precision when decided, ${int(allPart.n)} labelled`,
      value: `${q3(allPart.accuracy)} / ${q3(allPart.precisionWhenDecided)}`,
      command: "npm run eval:classifier",
    });
  return { title, lines };
}

function embeddersSection(root: string): Section {
  const title = "Static embedding models: `node dist/bench/eval-embedders.js`";
  const f = readResult(root, "eval-embedders.json");
  if (!f.json) return { title, lines: missing(f, "npm run build && node dist/bench/eval-embedders.js") };
  const j = f.json;
  const models = arr(j.models)
    .map((m) => str(m))
    .filter((m): m is string => m !== null)
    .map((m) => path.basename(m));
  const slice = obj(j.slice);
  const command = `npm run build && node dist/bench/eval-embedders.js${models.length ? ` --embedders ${models.join(",")}` : ""}${slice && num(slice.size) !== null ? ` --teacher-slice ${slice.size}` : ""}`;
  const lines = [
    `\`results/eval-embedders.json\`, ${runDate(j)}: dense retrieval alone on \`${shownPath(j.queriesFile) ?? "dev.jsonl"}\`, every repository embedded with each model ` +
      "and ranked brute force, without building an index (cosine: the pure dense ranking; +priors: with the engine's priors). " +
      `Reproduce with \`${command}\` (models are looked up under \`DATA_DIR/models/static\`). Method and variants: [embeddings.md](embeddings.md).`,
    "",
  ];
  const row = (r: Json) => [
    str(r.model),
    str(r.ranking),
    int(r.corpus),
    q3(at(r, "metrics", "ndcg10")),
    q3(at(r, "metrics", "recall10")),
    q3(at(r, "metrics", "recall50")),
    q3(at(r, "metrics", "mrr")),
  ];
  const header = ["model", "ranking", "repositories", "nDCG@10", "Recall@10", "Recall@50", "MRR"];
  const align = ["l", "l", "r", "r", "r", "r", "r"] as const;
  const full = arr(j.full)
    .map(obj)
    .filter((r): r is Json => r !== null);
  if (full.length) lines.push("The whole dataset:", "", ...table(header, align, full.map(row)), "");
  const rows = arr(slice?.rows)
    .map(obj)
    .filter((r): r is Json => r !== null);
  if (rows.length)
    lines.push(
      `A ${int(slice!.size)}-repository slice (every judged repository plus a seeded random fill), with the teacher:`,
      "",
      ...table(header, align, rows.map(row)),
      "",
    );
  return { title, lines };
}

function dedupSection(root: string): Section {
  const title = "Project merging: `npm run eval:dedup`";
  const f = readResult(root, "dedup.json");
  if (!f.json) return { title, lines: missing(f, "npm run eval:dedup") };
  const j = f.json;
  return {
    title,
    lines: [
      `\`results/dedup.json\`, ${runDate(j)}: how precise the index-time merge of renamed, moved and mirrored repositories is (\`src/corpus/dedup.ts\`), ` +
        "on pairs labelled by hand (`bench/dedup-labels.jsonl`, method in `bench/dedup-labels.md`).",
      "",
      ...table(
        ["measure", "value"],
        ["l", "r"],
        [
          ["dataset records", int(j.records)],
          ["projects with merged names (groups)", int(j.groups)],
          ["names merged as aliases", int(j.aliases)],
          ["generic groups left alone", int(j.skippedGeneric)],
          ["precision of all merges (each tier's, weighted by its merges)", q3(j.precision)],
        ],
      ),
      "",
      ...dedupTiers(obj(j.samples)),
    ],
  };
}

/** One row per merge tier: its merges, its labelled pairs and their precision. */
function dedupTiers(samples: Record<string, unknown> | null): string[] {
  if (!samples) return [];
  const rows = Object.entries(samples).map(([tier, v]) => {
    const t = obj(v);
    return [
      tier,
      int(t?.merges),
      `${int(t?.same)} / ${int(t?.different)} / ${int(t?.unsure)}`,
      int(t?.noLongerMerged),
      q3(t?.precision),
      q3(t?.pessimisticPrecision),
    ];
  });
  return [
    ...table(
      ["tier", "merges", "labelled: same / different / unsure", "no longer merged", "precision", "unsure as false"],
      ["l", "r", "r", "r", "r", "r"],
      rows,
    ),
    "",
  ];
}

// ---- the page --------------------------------------------------------------------------------------

/** docs/benchmarks.md as the results under `root` give it. Never throws on missing or partial results. */
export function renderBenchmarksDoc(root: string = projectRoot): string {
  const glance: Glance[] = [];
  const sections = [
    evalSection(root, glance),
    indexSection(root, glance),
    storeSection(root, glance),
    searchSection(root, glance),
    loadtestSection(root, glance),
    classifierSection(root, glance),
    embeddersSection(root),
    dedupSection(root),
  ];
  const out = [
    "# Benchmarks",
    "",
    "<!-- Generated by `npm run docs:benchmarks` (bench/benchmarks-doc.ts) from results/*.json. Do not edit by hand:",
    "     test/docs-generated.test.ts fails when this page and the results differ. -->",
    "",
    "The current figures: the latest run of each benchmark recorded in `results/`, each with the command that",
    "reproduces it. The benchmarks read the index in `--data-dir`, else `DATA_DIR`, else `./data` (the one",
    "`npm start` builds). This project's machines differ in speed from one to the next and within minutes, so",
    "compare latencies only between runs taken side by side. Earlier figures, what changed them and every lever",
    "tried: [performance.md](performance.md). How the ranking works: [ranking.md](ranking.md).",
    "",
  ];
  if (glance.length) {
    out.push(
      "## At a glance",
      "",
      ...table(
        ["measure", "value", "command"],
        ["l", "r", "l"],
        glance.map((g) => [g.measure, g.value, `\`${g.command}\``]),
      ),
      "",
    );
  }
  for (const s of sections) out.push(`## ${s.title}`, "", ...s.lines);
  while (out[out.length - 1] === "") out.pop();
  return out.join("\n") + "\n";
}

/** Writes the page, or with `check` only compares it; returns whether the file on disk was current. */
export function writeBenchmarksDoc(root: string = projectRoot, check = false): boolean {
  const file = path.join(root, BENCHMARKS_DOC);
  const want = renderBenchmarksDoc(root);
  const current = existsSync(file) && readFileSync(file, "utf8") === want;
  if (!check && !current) writeFileSync(file, want);
  return current;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const check = process.argv.includes("--check");
  const current = writeBenchmarksDoc(projectRoot, check);
  if (check && !current) {
    console.error(`${BENCHMARKS_DOC} is stale: run \`npm run docs:benchmarks\``);
    process.exitCode = 1;
  } else console.log(current ? `${BENCHMARKS_DOC} is up to date` : `wrote ${BENCHMARKS_DOC}`);
}
