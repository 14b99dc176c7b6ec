/**
 * What a Linux distribution says a project is: the package descriptions Debian's maintainers write.
 *
 * The head queries the ranker missed most are knowledge gaps. A famous project developed elsewhere
 * keeps a GitHub mirror whose description is a mirror notice ("Official Git mirror of the SQLite source
 * tree", "Read-only mirror of Wireshark's Git repository"), and others name it too rarely for anchor
 * text (./anchors.ts) to say what it is. Debian describes each package it ships in a line and a
 * paragraph written for people choosing software: "network traffic analyzer. Wireshark is a network
 * sniffer - a tool that captures and analyzes packets off the wire", "SQLite is a C library that
 * implements an SQL database engine". That is what an experienced engineer knows about such a project.
 *
 * The descriptions (./debian-packages.json, written by bench/debian-packages.ts from Debian 12's
 * `Packages` and `Translation-en` indexes) are joined to the corpus at index time:
 *
 * 1. Homepage on GitHub: the package's homepage is the repository (or a former name of it).
 * 2. Homepage elsewhere: the package's homepage is a project's homepage (`postgresql.org`), the
 *    project is the most starred one with that homepage (≥ 100 stars), and the package is named after
 *    it (its source name, without a version suffix, is the owner or the repository part, or one begins
 *    with the other: `postgresql` → postgres/postgres, not the `libpqxx` of the same site).
 * 3. Named after itself: a package whose homepage is not on GitHub and whose source name is `n` joins
 *    `n/n` with ≥ 500 stars (git/git, lua/lua from `lua5.4`, wireshark/wireshark). Without the owner's
 *    namesake the rule was wrong two times in five on a read sample (Debian's `dolphin` is a file
 *    manager, `vite` a trace viewer); with it, docs/ranking.md gives the labelled precision.
 * 4. A site named after the project: the package's homepage is on a site named like its source
 *    (`gimp.org` for `gimp`), and the most starred project of that repository part (≥ 500 stars)
 *    names no homepage of its own (GNOME/gimp, Kitware/CMake, htop-dev/htop): a project that names a
 *    site of its own and is not the package's is another project of the name. Of the 125 packages it
 *    joins, 11 name another project of the name that has no homepage (schneems/Octave, microsoft/sudo).
 *
 * The joined text is indexed with the anchor text (what others say about a project, src/store/bm25f.ts)
 * and kept on the payload for evidence. Held out over two seeds of the ranker's trees, head hit@3 rose
 * 0.8245 → 0.838 and the curated lists a little (nDCG@10 0.254 → 0.2575, MRR 0.460 → 0.463); BM25F
 * alone rose on both (dev nDCG@10 0.165 → 0.172, head hit@3 0.631 → 0.674): docs/ranking.md, section 2.
 *
 * Deterministic: the result depends only on the records and the packages, never on their order.
 */
import type { RepoRecord } from "../dataset/record.js";
import { repoPart } from "./dedup.js";
import shippedFile from "./debian-packages.json" with { type: "json" };

/** Bumped whenever the rules or the shipped descriptions change: the text is part of every point's content hash. */
export const PACKAGES_VERSION = 2;

/** One source package: its name, its homepage (normalised, see normalizeHomepage) and its description. */
export interface PackageEntry {
  readonly source: string;
  readonly homepage: string | null;
  readonly text: string;
}

export interface PackagesFile {
  /** Where the descriptions come from: release, component, index date. */
  readonly release: string;
  /** [source, homepage or null, text], sorted by source. */
  readonly packages: readonly (readonly [string, string | null, string])[];
}

const MIN_HOMEPAGE_STARS = 100;
const MIN_NAMESAKE_STARS = 500;
/** Characters of description kept per package: the summary line and the long description's opening. */
export const MAX_TEXT = 400;

/** The descriptions shipped with the service. */
export function shippedPackages(): readonly PackageEntry[] {
  return entriesOf(shippedFile as unknown as PackagesFile);
}

export function entriesOf(file: PackagesFile): PackageEntry[] {
  return file.packages.map(([source, homepage, text]) => ({ source, homepage, text }));
}

/** `https://www.PostgreSQL.org/` → `postgresql.org`; `https://github.com/BurntSushi/ripgrep.git` → `github.com/burntsushi/ripgrep`. */
export function normalizeHomepage(url: string): string {
  return url
    .trim()
    .toLowerCase()
    .replace(/^[a-z]+:\/\//, "")
    .replace(/^www\./, "")
    .replace(/[?#].*$/, "")
    .replace(/\/+$/, "")
    .replace(/\.git$/, "");
}

/** A package's source name without its version suffix: `lua5.4` → `lua`, `postgresql-15` → `postgresql`. */
export function baseName(source: string): string {
  return source.toLowerCase().replace(/[\d.-]+$/, "");
}

const GITHUB_REPO = /^github\.com\/([^/]+\/[^/]+)$/;

/**
 * Canonical key → the descriptions of the packages joined to it (rules in the header), deduplicated and
 * joined in source order.
 */
export function joinPackages(records: readonly RepoRecord[], packages: readonly PackageEntry[]): Map<string, string> {
  const target = packageTargets(records, packages);
  const texts = new Map<string, Set<string>>();
  for (const p of [...packages].sort(compareSource)) {
    const key = target.get(p.source);
    if (key === undefined) continue;
    let set = texts.get(key);
    if (!set) texts.set(key, (set = new Set()));
    set.add(p.text);
  }
  return new Map([...texts].map(([k, s]) => [k, [...s].join(" ")]));
}

/** Source package → the canonical key of the project it joins, for the packages that join one. */
export function packageTargets(records: readonly RepoRecord[], packages: readonly PackageEntry[]): Map<string, string> {
  const byKey = new Map<string, RepoRecord>();
  for (const r of records) byKey.set(r.key, r);
  for (const r of records) for (const a of r.aliases) if (!byKey.has(a.toLowerCase())) byKey.set(a.toLowerCase(), r);
  const byHomepage = mostStarredBy(records, (r) => (r.homepage ? normalizeHomepage(r.homepage) : null));
  const byPart = mostStarredBy(records, (r) => repoPart(r.key)); // for rule 4
  const out = new Map<string, string>();
  for (const p of packages) {
    const r = targetOf(p, byKey, byHomepage, byPart);
    if (r) out.set(p.source, r.key);
  }
  return out;
}

function targetOf(
  p: PackageEntry,
  byKey: ReadonlyMap<string, RepoRecord>,
  byHomepage: ReadonlyMap<string, RepoRecord>,
  byPart: ReadonlyMap<string, RepoRecord>,
): RepoRecord | null {
  const h = p.homepage;
  const onGithub = h !== null && h.startsWith("github.com/");
  if (onGithub) {
    const m = GITHUB_REPO.exec(h);
    return m ? (byKey.get(m[1]!) ?? null) : null;
  }
  const base = baseName(p.source);
  if (!base) return null;
  if (h !== null) {
    const r = byHomepage.get(h);
    if (r && starsOf(r) >= MIN_HOMEPAGE_STARS) {
      const [owner, part] = r.key.split("/") as [string, string];
      if (base === owner || part.startsWith(base) || base.startsWith(part)) return r;
    }
  }
  const self = byKey.get(`${base}/${base}`);
  if (self && starsOf(self) >= MIN_NAMESAKE_STARS) return self;
  // Rule 4: the site is named after the project (gimp.org → GNOME/gimp) and the project names no site of its own.
  if (h !== null && siteName(h) === base) {
    const r = byPart.get(base);
    if (r && starsOf(r) >= MIN_NAMESAKE_STARS && !r.homepage) return r;
  }
  return null;
}

/** The name a homepage's host is registered under: `www.gimp.org/downloads` → `gimp`, `htop.dev` → `htop`. */
export function siteName(homepage: string): string | null {
  const labels = homepage.split("/")[0]!.split(".");
  return labels.length >= 2 ? labels[labels.length - 2]! : null;
}

function starsOf(r: RepoRecord): number {
  return r.stars ?? 0;
}

/** Per value of `keyOf` (null: none), the most starred record; on equal stars, the first key in order. */
function mostStarredBy(records: readonly RepoRecord[], keyOf: (r: RepoRecord) => string | null): Map<string, RepoRecord> {
  const out = new Map<string, RepoRecord>();
  for (const r of records) {
    const k = keyOf(r);
    if (k === null) continue;
    const held = out.get(k);
    if (!held || starsOf(r) > starsOf(held) || (starsOf(r) === starsOf(held) && r.key < held.key)) out.set(k, r);
  }
  return out;
}

const compareSource = (a: PackageEntry, b: PackageEntry): number => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0);

/**
 * Debian's `Packages` index (and optionally `Translation-en`, the long descriptions) → one entry per
 * source package. The entry speaks for the source's main binary package: the one named like the
 * source, else one that is not a library, development, documentation or data package, else the
 * shortest name. Its text is the summary line without Debian's qualifiers ("(metapackage)",
 * "- development files") and the long description's first paragraph, at most MAX_TEXT characters.
 */
export function parseDebianIndexes(packagesText: string, translationText: string | null): PackageEntry[] {
  const long = new Map<string, string>();
  if (translationText !== null)
    for (const s of stanzas(translationText)) {
      const name = s.fields.get("Package");
      const d = s.fields.get("Description-en");
      if (name && d !== undefined) long.set(name, firstParagraph(s.continuation.get("Description-en") ?? []));
    }
  const bySource = new Map<string, { name: string; homepage: string | null; summary: string }[]>();
  for (const s of stanzas(packagesText)) {
    const name = s.fields.get("Package");
    if (!name) continue;
    const source = (s.fields.get("Source") ?? name).split(" ")[0]!;
    const homepage = s.fields.get("Homepage");
    let list = bySource.get(source);
    if (!list) bySource.set(source, (list = []));
    if (!list.some((b) => b.name === name))
      list.push({ name, homepage: homepage ? normalizeHomepage(homepage) : null, summary: s.fields.get("Description") ?? "" });
  }
  const out: PackageEntry[] = [];
  for (const [source, bins] of bySource) {
    const main = [...bins].sort(
      (a, b) => mainRank(source, a.name) - mainRank(source, b.name) || a.name.length - b.name.length || (a.name < b.name ? -1 : 1),
    )[0]!;
    const homepage = main.homepage ?? bins.find((b) => b.homepage !== null)?.homepage ?? null;
    const summary = cleanSummary(main.summary);
    const text = clip([summary, long.get(main.name) ?? ""].filter((t) => t.length > 0).join(". "), MAX_TEXT);
    if (text) out.push({ source, homepage, text });
  }
  return out.sort(compareSource);
}

const SIDE_PACKAGE = /^lib|-(dev|doc|docs|data|common|dbg|dbgsym|examples|tests?)$/;

function mainRank(source: string, name: string): number {
  if (name === source) return 0;
  return SIDE_PACKAGE.test(name) ? 2 : 1;
}

/** "network traffic analyzer - meta-package" → "network traffic analyzer"; "(Python 3)" and "[docs]" go too. */
export function cleanSummary(s: string): string {
  return s
    .replace(/\([^)]*\)/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\s+-\s+.*$/, "")
    .replace(/\s+/g, " ")
    .replace(/^[\s,.-]+|[\s,.-]+$/g, "");
}

function firstParagraph(lines: readonly string[]): string {
  const end = lines.findIndex((l) => l.trim() === ".");
  return (end < 0 ? lines : lines.slice(0, end))
    .map((l) => l.trim())
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
}

function clip(s: string, max: number): string {
  const t = s.replace(/\s+/g, " ").trim().replace(/\.+$/, "");
  if (t.length <= max) return t;
  const cut = t.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return (space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, "");
}

interface Stanza {
  readonly fields: Map<string, string>;
  /** A field's continuation lines (those that begin with a space), for the long description. */
  readonly continuation: Map<string, string[]>;
}

/** RFC 822-style stanzas of a Debian index, separated by blank lines. */
function* stanzas(text: string): Generator<Stanza> {
  let fields = new Map<string, string>();
  let continuation = new Map<string, string[]>();
  let last: string | null = null;
  for (const line of text.split("\n")) {
    if (line.trim() === "") {
      if (fields.size) yield { fields, continuation };
      fields = new Map();
      continuation = new Map();
      last = null;
    } else if (line.startsWith(" ") || line.startsWith("\t")) {
      if (last !== null) {
        let c = continuation.get(last);
        if (!c) continuation.set(last, (c = []));
        c.push(line);
      }
    } else {
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      last = line.slice(0, colon);
      fields.set(last, line.slice(colon + 1).trim());
    }
  }
  if (fields.size) yield { fields, continuation };
}
