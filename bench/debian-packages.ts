/**
 * `npm run generate:packages`: writes src/corpus/debian-packages.json, the package descriptions the
 * index joins to projects (src/corpus/packages.ts), from Debian's plain-text indexes:
 *
 *   apt-get update -o Acquire::Languages=en -o Dir::State::Lists=/tmp/apt-lists
 *   lz4 -dc /tmp/apt-lists/*_bookworm_main_binary-amd64_Packages.lz4 > /tmp/Packages
 *   lz4 -dc /tmp/apt-lists/*_bookworm_main_i18n_Translation-en.lz4 > /tmp/Translation-en
 *   npm run generate:packages -- --packages /tmp/Packages --translations /tmp/Translation-en
 *
 * Debian ships about 34,000 source packages; the file keeps those the join rules attach to a project of
 * the dataset (DATASET), so the repository carries a few thousand descriptions, not the archive. The
 * descriptions are Debian's; nothing of the dataset is written.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { dedupeProjects } from "../src/corpus/dedup.js";
import { joinPackages, packageTargets, parseDebianIndexes, type PackagesFile } from "../src/corpus/packages.js";
import { readUniqueRecords } from "../src/dataset/reader.js";

const { values } = parseArgs({
  options: {
    packages: { type: "string" },
    translations: { type: "string" },
    release: { type: "string", default: "Debian 12 (bookworm) main, amd64" },
    out: { type: "string" },
  },
});
const config = loadConfig(process.env);
const out = values.out ?? path.join(projectRoot, "src", "corpus", "debian-packages.json");

async function main(): Promise<void> {
  if (!values.packages) throw new Error("--packages FILE (Debian's Packages index, uncompressed) is required");
  if (!config.dataset) throw new Error("no dataset: set DATASET or provide ../shared/data/repos.jsonl.gz");
  const entries = parseDebianIndexes(await readFile(values.packages, "utf8"), values.translations ? await readFile(values.translations, "utf8") : null);
  const { records } = await readUniqueRecords(config.dataset);
  const projects = dedupeProjects(records).records;
  // Each entry joins on its own, so the join of the kept entries is the join of all of them.
  const joined = packageTargets(projects, entries);
  const kept = entries.filter((e) => joined.has(e.source));
  const file: PackagesFile = { release: values.release!, packages: kept.map((e) => [e.source, e.homepage, e.text] as const) };
  await writeFile(out, JSON.stringify(file, null, 0).replace(/\],\[/g, "],\n[") + "\n");
  const projectsJoined = joinPackages(projects, kept).size;
  console.log(
    `${entries.length.toLocaleString("en-US")} source packages, ${kept.length.toLocaleString("en-US")} joined to ${projectsJoined.toLocaleString("en-US")} projects → ${out}`,
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
