/**
 * `npm run generate:packages`: writes src/corpus/debian-packages.json, the package descriptions the
 * index joins to projects (src/corpus/packages.ts), from Debian's plain-text indexes:
 *
 *   D=http://deb.debian.org/debian/dists
 *   curl -s $D/trixie/main/binary-amd64/Packages.xz | xz -dc > /tmp/trixie-Packages
 *   curl -s $D/trixie/main/i18n/Translation-en.xz | xz -dc > /tmp/trixie-Translation-en
 *   curl -s $D/bookworm/main/binary-amd64/Packages.xz | xz -dc > /tmp/bookworm-Packages
 *   curl -s $D/bookworm/main/i18n/Translation-en.xz | xz -dc > /tmp/bookworm-Translation-en
 *   npm run generate:packages -- \
 *     --packages /tmp/trixie-Packages --translations /tmp/trixie-Translation-en \
 *     --packages /tmp/bookworm-Packages --translations /tmp/bookworm-Translation-en
 *
 * Releases are given newest first: a source package takes the newest release's description, and one
 * the newer release dropped keeps the older one's (packages.ts, newestFirst). Debian ships about 37,000
 * source packages; the file keeps those the join rules attach to a project of the dataset (DATASET), so
 * the repository carries a few thousand descriptions, not the archive. The descriptions are Debian's;
 * nothing of the dataset is written.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { dedupeProjects } from "../src/corpus/dedup.js";
import { newestFirst, packageTargets, parseDebianIndexes, type PackageEntry, type PackagesFile } from "../src/corpus/packages.js";
import { readUniqueRecords } from "../src/dataset/reader.js";

const { values } = parseArgs({
  options: {
    packages: { type: "string", multiple: true },
    translations: { type: "string", multiple: true },
    release: { type: "string", default: "Debian 13 (trixie) main, amd64, and Debian 12 (bookworm) main for the packages 13 dropped" },
    out: { type: "string" },
  },
});
const config = loadConfig(process.env);
const out = values.out ?? path.join(projectRoot, "src", "corpus", "debian-packages.json");

async function main(): Promise<void> {
  const packages = values.packages ?? [];
  const translations = values.translations ?? [];
  if (!packages.length) throw new Error("--packages FILE (Debian's Packages index, uncompressed) is required");
  if (translations.length && translations.length !== packages.length)
    throw new Error("give one --translations FILE per --packages FILE, in the same order (newest release first)");
  if (!config.dataset) throw new Error("no dataset: set DATASET or provide ../shared/data/repos.jsonl.gz");
  const releases: PackageEntry[][] = [];
  for (const [i, file] of packages.entries())
    releases.push(parseDebianIndexes(await readFile(file, "utf8"), translations[i] ? await readFile(translations[i], "utf8") : null));
  const entries = newestFirst(releases);
  const { records } = await readUniqueRecords(config.dataset);
  const projects = dedupeProjects(records).records;
  // Each entry joins on its own, so the join of the kept entries is the join of all of them.
  const joined = packageTargets(projects, entries);
  const kept = entries.filter((e) => joined.has(e.source));
  const file: PackagesFile = { release: values.release!, packages: kept.map((e) => [e.source, e.homepage, e.text] as const) };
  await writeFile(out, JSON.stringify(file, null, 0).replace(/\],\[/g, "],\n[") + "\n");
  // joinPackages gives every joined project a text, so the projects are the targets' distinct keys.
  const projectsJoined = new Set([...joined.values()].map((t) => t.key)).size;
  const byRule = [1, 2, 3, 4, 5].map((rule) => [...joined.values()].filter((t) => t.rule === rule).length);
  console.log(
    `${entries.length.toLocaleString("en-US")} source packages, ${kept.length.toLocaleString("en-US")} joined to ${projectsJoined.toLocaleString("en-US")} projects → ${out}`,
  );
  console.log(`packages joined by rule 1–5 (packages.ts): ${byRule.map((n) => n.toLocaleString("en-US")).join(" / ")}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
