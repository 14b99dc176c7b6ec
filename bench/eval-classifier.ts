/**
 * Evaluates the category classifier on the hand-labelled sample (bench/classifier-sample.jsonl).
 *
 *   node dist/bench/eval-classifier.js [--dataset PATH] [--embedder none|use-lite] [--sample PATH] [--out PATH]
 *
 * The sample holds only keys and labels; records are looked up in the dataset at run time. Prints
 * per-category precision / recall / support, coverage and accuracy for the random part, the enriched
 * part and both, and records them under this run's mode in results/classifier.json (the other mode's
 * figures are kept). A gold label of null ("none") is correct when the classifier abstains.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { createClassifier } from "../src/classify/classifier.js";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { openSource, readDataset } from "../src/dataset/reader.js";
import { CATEGORIES, type Category, type RepoRecord } from "../src/dataset/record.js";
import type { Embedder } from "../src/embed/types.js";
import { embeddingText } from "../src/corpus/doc-text.js";

interface SampleRow {
  readonly key: string;
  readonly part: "random" | "enriched";
  readonly label: Category | null;
}

interface Prediction {
  readonly key: string;
  readonly part: SampleRow["part"];
  readonly gold: Category | null;
  readonly pred: Category | null;
  readonly confidence: number;
  readonly reason: string;
}

interface CategoryFigures {
  readonly support: number;
  readonly predicted: number;
  readonly correct: number;
  readonly precision: number | null;
  readonly recall: number | null;
}

interface PartFigures {
  readonly n: number;
  /** Share of records that got a category (not abstained). */
  readonly coverage: number;
  /** Share of records whose prediction equals the gold label (abstaining on a null label is correct). */
  readonly accuracy: number;
  /** Accuracy among records that got a category. */
  readonly precisionWhenDecided: number | null;
  readonly perCategory: Record<string, CategoryFigures>;
  /** curated-list and educational together: what is hidden from default search. */
  readonly hidden: CategoryFigures;
  /** gold → predicted counts for the errors, most frequent first. */
  readonly confusions: readonly { gold: string; pred: string; count: number }[];
}

const ratio = (a: number, b: number): number | null => (b === 0 ? null : Math.round((a / b) * 1000) / 1000);
const label = (c: Category | null) => c ?? "none";
const HIDDEN = new Set<Category>(["curated-list", "educational"]);

function figuresFor(preds: readonly Prediction[], isGold: (p: Prediction) => boolean, isPred: (p: Prediction) => boolean): CategoryFigures {
  const support = preds.filter(isGold).length;
  const predicted = preds.filter(isPred).length;
  const correct = preds.filter((p) => isGold(p) && isPred(p)).length;
  return { support, predicted, correct, precision: ratio(correct, predicted), recall: ratio(correct, support) };
}

export function scorePart(preds: readonly Prediction[]): PartFigures {
  const perCategory: Record<string, CategoryFigures> = {};
  for (const c of [...CATEGORIES, null]) {
    perCategory[label(c)] = figuresFor(
      preds,
      (p) => p.gold === c,
      (p) => p.pred === c,
    );
  }
  const confusions = new Map<string, number>();
  for (const p of preds) {
    if (p.gold === p.pred) continue;
    const k = `${label(p.gold)}\u0000${label(p.pred)}`;
    confusions.set(k, (confusions.get(k) ?? 0) + 1);
  }
  const decided = preds.filter((p) => p.pred !== null);
  return {
    n: preds.length,
    coverage: ratio(decided.length, preds.length) ?? 0,
    accuracy: ratio(preds.filter((p) => p.gold === p.pred).length, preds.length) ?? 0,
    precisionWhenDecided: ratio(decided.filter((p) => p.gold === p.pred).length, decided.length),
    perCategory,
    hidden: figuresFor(
      preds,
      (p) => p.gold !== null && HIDDEN.has(p.gold),
      (p) => p.pred !== null && HIDDEN.has(p.pred),
    ),
    confusions: [...confusions]
      .map(([k, count]) => {
        const [gold, pred] = k.split("\u0000") as [string, string];
        return { gold, pred, count };
      })
      .sort((a, b) => b.count - a.count || a.gold.localeCompare(b.gold) || a.pred.localeCompare(b.pred)),
  };
}

const fmt = (x: number | null) => (x === null ? "   -" : x.toFixed(2).padStart(4));

function printPart(name: string, f: PartFigures): void {
  console.log(`\n== ${name}: n=${f.n}  accuracy ${fmt(f.accuracy)}  coverage ${fmt(f.coverage)}  precision when decided ${fmt(f.precisionWhenDecided)}`);
  console.log(`  ${"category".padEnd(16)} ${"prec".padStart(5)} ${"recall".padStart(6)} ${"support".padStart(7)} ${"predicted".padStart(9)}`);
  const rows: [string, CategoryFigures][] = [...Object.entries(f.perCategory), ["hidden (c-l+edu)", f.hidden]];
  for (const [c, x] of rows) {
    if (x.support === 0 && x.predicted === 0) continue;
    console.log(
      `  ${c.padEnd(16)} ${fmt(x.precision).padStart(5)} ${fmt(x.recall).padStart(6)} ${String(x.support).padStart(7)} ${String(x.predicted).padStart(9)}`,
    );
  }
  const top = f.confusions.slice(0, 8).map((c) => `${c.gold}→${c.pred} ${c.count}`);
  if (top.length) console.log(`  top confusions: ${top.join(", ")}`);
}

async function loadRecords(dataset: string, keys: ReadonlySet<string>): Promise<Map<string, RepoRecord>> {
  const found = new Map<string, RepoRecord>();
  for await (const item of readDataset(await openSource(dataset))) {
    if (item.kind === "record" && keys.has(item.record.key)) found.set(item.record.key, item.record);
  }
  return found;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dataset: { type: "string" },
      embedder: { type: "string", default: "none" },
      sample: { type: "string", default: path.join(projectRoot, "bench", "classifier-sample.jsonl") },
      out: { type: "string", default: path.join(projectRoot, "results", "classifier.json") },
    },
  });
  const dataset = values.dataset ?? loadConfig().dataset;
  if (!dataset) throw new Error("no dataset: pass --dataset or set DATASET");
  if (values.embedder !== "none" && values.embedder !== "use-lite") throw new Error(`--embedder must be none or use-lite, got ${values.embedder}`);

  const sample: SampleRow[] = (await readFile(values.sample!, "utf8"))
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as SampleRow);
  const records = await loadRecords(dataset, new Set(sample.map((s) => s.key)));
  const missing = sample.filter((s) => !records.has(s.key)).map((s) => s.key);
  if (missing.length) console.warn(`warning: ${missing.length} sample keys not in the dataset (skipped): ${missing.slice(0, 5).join(", ")}`);
  const rows = sample.filter((s) => records.has(s.key));

  let embedder: Embedder | undefined;
  let vectors: Float32Array[] | undefined;
  if (values.embedder === "use-lite") {
    const { UseLiteEmbedder } = await import("../src/embed/use-lite.js");
    embedder = await UseLiteEmbedder.load();
    // Name + description + topics, as the indexer builds its document text but without the README.
    vectors = await embedder.embed(rows.map((s) => embeddingText(records.get(s.key)!, { readmeChars: 0 })));
  }
  const classifier = await createClassifier(embedder);

  const t0 = performance.now();
  const preds: Prediction[] = rows.map((s, i) => {
    const c = classifier.classify(records.get(s.key)!, vectors?.[i]);
    return { key: s.key, part: s.part, gold: s.label, pred: c.category, confidence: c.confidence, reason: c.reason };
  });
  const msPerRecord = (performance.now() - t0) / Math.max(1, rows.length);
  await embedder?.close();

  const parts = {
    random: scorePart(preds.filter((p) => p.part === "random")),
    enriched: scorePart(preds.filter((p) => p.part === "enriched")),
    all: scorePart(preds),
  };
  console.log(`classifier ${classifier.id}  embedder ${embedder?.id ?? "none"}  dataset ${dataset}`);
  printPart("random", parts.random);
  printPart("enriched", parts.enriched);
  printPart("all", parts.all);
  console.log(`\nclassify: ${(msPerRecord * 1000).toFixed(1)} µs/record (rules${embedder ? " + embedding vote; vectors precomputed" : ""})`);

  // One entry per mode, so running with and without embeddings keeps both sets of figures.
  const outPath = values.out!;
  await mkdir(path.dirname(outPath), { recursive: true });
  const previous = existsSync(outPath) ? (JSON.parse(await readFile(outPath, "utf8")) as { runs?: Record<string, unknown> }) : {};
  const mode = embedder ? `embedder:${values.embedder}` : "rules-only";
  const runs = {
    ...(previous.runs ?? {}),
    [mode]: {
      classifierId: classifier.id,
      embedderId: embedder?.id ?? null,
      sample: path.relative(projectRoot, values.sample!),
      missing,
      parts,
      predictions: preds,
    },
  };
  await writeFile(outPath, JSON.stringify({ runs }, null, 2) + "\n");
  console.log(`wrote ${outPath} (${mode})`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
