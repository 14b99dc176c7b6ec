/**
 * `npm run eval:dedup`: how precise the index-time merge of renamed, moved and mirrored repositories is
 * (src/corpus/dedup.ts), on the pairs labelled by hand in bench/dedup-labels.jsonl (method and labels:
 * bench/dedup-labels.md). Re-runs the merge on the dataset, so a pair the current rule no longer makes is
 * reported apart instead of counted. Writes results/dedup.json.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { dedupeProjects, descriptionWords, repoPart } from "../src/corpus/dedup.js";
import { readUniqueRecords } from "../src/dataset/reader.js";

interface Label {
  /** Which sample: "tier1" (equal descriptions; the default), "tier2" (reworded descriptions), "tier3" (incubator graduations), "tier4" (twin counts), "tier5" (same creation time), "tier6" (moved to the project's own organisation), "tier7" (a stale name's one successor), "tier8" (the owner renamed) or "tier9" (renamed within its owner); tiers 3 to 9 label every pair. "tier1-rare-word" labels every tier-1 merge that a rare word took out of the generic rule; it is not a random sample and is not counted in tier 1's precision. */
  readonly sample?: string;
  readonly alias: string;
  readonly canonical: string;
  readonly label: "same" | "different" | "unsure";
  readonly note: string;
}

const { values } = parseArgs({ options: { labels: { type: "string" } } });
const config = loadConfig(process.env);
const labelsFile = values.labels ?? path.join(projectRoot, "bench", "dedup-labels.jsonl");

async function main(): Promise<void> {
  if (!config.dataset) throw new Error("no dataset: set DATASET or provide ../shared/data/repos.jsonl.gz");
  const labels = (await readFile(labelsFile, "utf8"))
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Label);
  const { records } = await readUniqueRecords(config.dataset);
  const d = dedupeProjects(records);
  const firstThree = dedupeProjects(records, { tiers: 3 }).aliasOf;
  // The aliases of the first k tiers, for k = 4 to 8: a pair those keep apart is tier k + 1's merge.
  const firstTiers = ([4, 5, 6, 7, 8] as const).map((k) => ({ next: `tier${k + 1}`, aliasOf: dedupeProjects(records, { tiers: k }).aliasOf }));
  // A pair is still merged when both names land in one project, whichever of them is canonical now.
  const project = (name: string) => d.aliasOf.get(name.toLowerCase()) ?? name.toLowerCase();
  const words = (s: string | null) => descriptionWords(s ?? "").join(" ");
  const byKey = new Map(records.map((r) => [r.key, r]));
  // Each tier's share of the merges: tier k ≥ 5 is an alias the first k − 1 tiers keep apart from its
  // canonical (the last such tier wins), tier 4 one only the fourth tier makes, tier 3 one whose
  // repository part differs from its canonical's, tier 2 one whose description differs.
  const tierOf = (alias: string, canonical: string): string => {
    const before = (m: ReadonlyMap<string, string>, key: string) => m.get(key) ?? key;
    const later = firstTiers.findLast(({ aliasOf }) => before(aliasOf, alias) !== before(aliasOf, canonical));
    if (later) return later.next;
    if (!firstThree.has(alias)) return "tier4";
    if (repoPart(alias) !== repoPart(canonical)) return "tier3";
    return words(byKey.get(alias)?.description ?? null) === words(byKey.get(canonical)?.description ?? null) ? "tier1" : "tier2";
  };
  const sizes: Record<string, number> = { tier1: 0, tier2: 0, tier3: 0, tier4: 0, tier5: 0, tier6: 0, tier7: 0, tier8: 0, tier9: 0 };
  for (const [a, c] of d.aliasOf) sizes[tierOf(a, c)]!++;
  const samples: Record<
    string,
    { same: number; different: number; unsure: number; noLongerMerged: number; precision: number; pessimisticPrecision: number; merges: number }
  > = {};
  for (const name of ["tier1", "tier2", "tier3", "tier4", "tier5", "tier6", "tier7", "tier8", "tier9"]) {
    const counts = { same: 0, different: 0, unsure: 0 };
    let stale = 0;
    const mine = labels.filter((l) => (l.sample ?? "tier1") === name);
    for (const l of mine) {
      if (l.alias.toLowerCase() === l.canonical.toLowerCase() || project(l.alias) !== project(l.canonical)) stale++;
      else counts[l.label]++;
    }
    const judged = counts.same + counts.different;
    samples[name] = {
      ...counts,
      noLongerMerged: stale,
      precision: judged ? counts.same / judged : 0,
      pessimisticPrecision: judged + counts.unsure ? counts.same / (judged + counts.unsure) : 0,
      merges: sizes[name]!,
    };
  }
  // Overall: each tier's precision weighted by its share of the merges (the samples are not pooled).
  const tiers = Object.keys(sizes);
  const total = tiers.reduce((a, t) => a + sizes[t]!, 0);
  const precision = total ? tiers.reduce((a, t) => a + samples[t]!.precision * sizes[t]!, 0) / total : 0;
  console.log(
    `merges on ${records.length.toLocaleString("en-US")} records: ${d.merged} aliases in ${d.groups} groups (${d.skippedGeneric} generic groups left alone)`,
  );
  for (const [name, s] of Object.entries(samples)) {
    console.log(
      `${name}: ${s.merges} merges; labelled ${s.same + s.different + s.unsure + s.noLongerMerged} pairs: ${s.same} same, ${s.different} different, ${s.unsure} unsure, ${s.noLongerMerged} no longer merged; precision ${s.precision.toFixed(3)} (unsure counted as false: ${s.pessimisticPrecision.toFixed(3)})`,
    );
  }
  console.log(`precision of all merges (tiers weighted by their merges): ${precision.toFixed(3)}`);
  for (const l of labels)
    if (l.label === "different" && project(l.alias) === project(l.canonical)) console.log(`  false merge: ${l.alias} → ${l.canonical}: ${l.note}`);
  await mkdir(path.join(projectRoot, "results"), { recursive: true });
  await writeFile(
    path.join(projectRoot, "results", "dedup.json"),
    JSON.stringify(
      {
        benchmark: "dedup",
        date: new Date().toISOString(),
        records: records.length,
        groups: d.groups,
        aliases: d.merged,
        skippedGeneric: d.skippedGeneric,
        samples,
        precision,
      },
      null,
      2,
    ) + "\n",
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
