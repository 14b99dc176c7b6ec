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
 * The descriptions (./debian-packages.json, written by bench/debian-packages.ts from the `Packages` and
 * `Translation-en` indexes of Debian 13, and of Debian 12 for the packages 13 dropped) are joined to
 * the corpus at index time:
 *
 * 1. Homepage on GitHub: the package's homepage is the repository (or a former name of it), or one of
 *    its pages (`github.com/tmux/tmux/wiki`), not a directory in it (`/tree/…`: a part).
 * 2. Homepage elsewhere: the package's homepage is a project's homepage (`postgresql.org`), the
 *    project is the most starred one with that homepage (≥ 100 stars), and the package is named after
 *    it (its source name, without a version suffix or Debian's language prefix, is the owner or the
 *    repository part, or one begins with the other: `postgresql` → postgres/postgres, not the `libpqxx`
 *    of the same site; `python-django` → django/django).
 * 3. The site's owner: the homepage's site names a GitHub owner (`gruntjs.com`, `micro-editor.github.io`,
 *    `maven.apache.org`), which has a project (≥ 100 stars) named like the package: exactly, but for a
 *    version or Debian's language prefix (`node-gulp` → gulpjs/gulp), or, for a package named like the
 *    owner, a name it begins with (`elixir-lang` → elixir-lang/elixir). A name that needs its language
 *    prefix dropped joins only a project written in that language (or of unknown language): `ruby-mongo`
 *    of mongodb.org is MongoDB's Ruby driver, not mongodb/mongo (5 of the 7 joins this took away were
 *    such bindings of a famous project: vlc, thrift, libvirt, antlr4; the others went to the binding's
 *    own repository or to none). It comes before rule 4, whose namesake can be another project of the
 *    name (Debian's `micro` is micro-editor/micro, not micro/micro).
 * 4. Named after itself: a package whose homepage is not on GitHub and whose source name is `n` joins
 *    `n/n` with ≥ 500 stars (git/git, lua/lua from `lua5.4`, wireshark/wireshark). Without the owner's
 *    namesake the rule was wrong two times in five on a read sample (Debian's `dolphin` is a file
 *    manager, `vite` a trace viewer); with it, docs/ranking.md gives the labelled precision.
 * 5. A site named after the project: the package's homepage is on a site named like its source
 *    (`gimp.org` for `gimp`), and the most starred project of that repository part (≥ 500 stars)
 *    names no homepage of its own (GNOME/gimp, Kitware/CMake, htop-dev/htop): a project that names a
 *    site of its own and is not the package's is another project of the name. Of the 125 packages it
 *    joins, 11 name another project of the name that has no homepage (schneems/Octave, microsoft/sudo).
 *
 * A project several packages join takes the text of those named like it (joinPackages): its crates'
 * and plugins' packages describe a part. The joined text is indexed with the anchor text (what others
 * say about a project, src/store/bm25f.ts) and kept on the payload for evidence. Held out over two
 * seeds of the ranker's trees, Debian 12's descriptions by rules 1, 2, 4 and 5 (3,873 projects) took
 * head hit@3 from 0.8245 to 0.838 and the curated lists a little (nDCG@10 0.254 → 0.2575, MRR 0.460 →
 * 0.463); rule 3, the language prefix and Debian 13 (4,981 projects) took head hit@3 to 0.845, the
 * curated lists staying within the seeds' spread (0.2555 / 0.4595). BM25F alone rose at each step (dev
 * nDCG@10 0.165 → 0.172 → 0.175, head hit@3 0.631 → 0.674 → 0.683): docs/ranking.md, section 2.
 *
 * Deterministic: the result depends only on the records and the packages, never on their order.
 */
import { groupBy } from "../common/group-by.js";
import type { RepoRecord } from "../dataset/record.js";
import { repoPart } from "./dedup.js";
import shippedFile from "./debian-packages.json" with { type: "json" };

/** Bumped whenever the rules or the shipped descriptions change: the text is part of every point's content hash. */
export const PACKAGES_VERSION = 4;

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

/**
 * Entries of several releases, newest first, → one per source package: the newest release's, and an
 * older release's for a package the newer ones dropped (Debian 13 no longer ships packer or youtube-dl,
 * whose descriptions still say what the projects are). Sorted by source.
 */
export function newestFirst(releases: readonly (readonly PackageEntry[])[]): PackageEntry[] {
  const bySource = new Map<string, PackageEntry>();
  for (const entries of releases) for (const e of entries) if (!bySource.has(e.source)) bySource.set(e.source, e);
  return [...bySource.values()].sort(compareSource);
}

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

/** A repository on GitHub, or one of its own pages (`github.com/tmux/tmux/wiki`); not a directory in it (`/tree/…`), which is a part. */
const GITHUB_REPO = /^github\.com\/([^/]+\/[^/]+)(?:\/(?:wiki|wikis|releases|tags|issues)(?:\/.*)?)?$/;

/**
 * Canonical key → the descriptions of the packages joined to it (rules in the header), deduplicated and
 * joined in source order.
 */
export function joinPackages(records: readonly RepoRecord[], packages: readonly PackageEntry[]): Map<string, string> {
  const target = packageTargets(records, packages);
  const joined = groupBy([...packages].sort(compareSource), (p) => target.get(p.source)?.key ?? null);
  return new Map(
    [...joined].map(([key, ps]) => {
      // A project's own package says what it is; its parts' and plugins' packages say what a part is
      // (beside `podman`, `libpod`; beside `poetry`, `poetry-plugin-export`), so they count only alone
      // (wez/wezterm has no package of its own, only crates such as `rust-wezterm-bidi`).
      const own = ps.filter((p) => namedLike(p.source, key));
      return [key, [...new Set((own.length ? own : ps).map((p) => p.text))].join(" ")];
    }),
  );
}

/** Whether a package is named like the project: its name, but for a version or language prefix, is the owner or the repository part. */
function namedLike(source: string, key: string): boolean {
  const [owner, part] = key.split("/") as [string, string];
  const base = baseName(source);
  return [base, ...unprefixed(base)].some((n) => n === owner || n === part || n === baseName(part));
}

/** Which of the header's rules joined a package: 1 GitHub homepage, 2 shared homepage, 3 the site's owner, 4 namesake, 5 named site. */
export type JoinRule = 1 | 2 | 3 | 4 | 5;

/** Source package → the canonical key of the project it joins and the rule that joined it, for the packages that join one. */
export function packageTargets(records: readonly RepoRecord[], packages: readonly PackageEntry[]): Map<string, { key: string; rule: JoinRule }> {
  const byKey = new Map<string, RepoRecord>();
  for (const r of records) byKey.set(r.key, r);
  for (const r of records) for (const a of r.aliases) if (!byKey.has(a.toLowerCase())) byKey.set(a.toLowerCase(), r);
  const byHomepage = mostStarredBy(records, (r) => (r.homepage ? normalizeHomepage(r.homepage) : null));
  const byPart = mostStarredBy(records, (r) => repoPart(r.key)); // for rule 5
  const byOwner = groupBy(records, (r) => r.key.slice(0, r.key.indexOf("/"))); // for rule 3
  const out = new Map<string, { key: string; rule: JoinRule }>();
  for (const p of packages) {
    const t = targetOf(p, byKey, byHomepage, byPart, byOwner);
    if (t) out.set(p.source, { key: t.r.key, rule: t.rule });
  }
  return out;
}

function targetOf(
  p: PackageEntry,
  byKey: ReadonlyMap<string, RepoRecord>,
  byHomepage: ReadonlyMap<string, RepoRecord>,
  byPart: ReadonlyMap<string, RepoRecord>,
  byOwner: ReadonlyMap<string, readonly RepoRecord[]>,
): { r: RepoRecord; rule: JoinRule } | null {
  const h = p.homepage;
  const onGithub = h !== null && h.startsWith("github.com/");
  if (onGithub) {
    const m = GITHUB_REPO.exec(h);
    const r = m ? byKey.get(m[1]!) : undefined;
    return r ? { r, rule: 1 } : null;
  }
  const base = baseName(p.source);
  if (!base) return null;
  const names = [base, ...unprefixed(base)];
  if (h !== null) {
    const r = byHomepage.get(h);
    if (r && starsOf(r) >= MIN_HOMEPAGE_STARS) {
      const [owner, part] = r.key.split("/") as [string, string];
      if (names.some((n) => n === owner || part.startsWith(n) || n.startsWith(part))) return { r, rule: 2 };
    }
  }
  // Rule 3: the site is the owner's (gruntjs.com → gruntjs/grunt, micro-editor.github.io → micro-editor/micro).
  // A name without its language prefix names only a project in that language: `ruby-mongo` (mongodb.org)
  // is MongoDB's Ruby driver, not mongodb/mongo.
  const owner = h === null ? null : siteOwner(h);
  if (owner !== null) {
    const owned = byOwner.get(owner) ?? [];
    const languages = prefixLanguages(base);
    // Without a prefix, names is [base]: the first lookup was the only one.
    const inLanguage = languages && owned.filter((r) => r.language === null || languages.includes(r.language.toLowerCase()));
    const r = ownersProject(owned, owner, [base]) ?? (inLanguage ? ownersProject(inLanguage, owner, names) : null);
    if (r) return { r, rule: 3 };
  }
  const self = byKey.get(`${base}/${base}`);
  if (self && starsOf(self) >= MIN_NAMESAKE_STARS) return { r: self, rule: 4 };
  // Rule 5: the site is named after the project (gimp.org → GNOME/gimp) and the project names no site of its own.
  if (h !== null && siteName(h) === base) {
    const r = byPart.get(base);
    if (r && starsOf(r) >= MIN_NAMESAKE_STARS && !r.homepage) return { r, rule: 5 };
  }
  return null;
}

/** The GitHub owner a homepage's host may name: `micro-editor.github.io` → `micro-editor`, `gruntjs.com` → `gruntjs`. */
function siteOwner(homepage: string): string | null {
  const host = homepage.split("/")[0]!;
  const pages = /^([a-z0-9-]+)\.github\.io$/.exec(host);
  return pages ? pages[1]! : siteName(homepage);
}

/** Debian's language prefixes: `node-gulp` → `gulp`, `python3-scrapy` → `scrapy`. */
function unprefixed(base: string): string[] {
  const m = LANGUAGE_PREFIX.exec(base);
  return m ? [m[2]!] : [];
}

const LANGUAGE_PREFIX = /^(node|python3?|ruby|php|golang|elpa|r-cran|lua)-(.+)$/;

/** The languages (lowercase) a package of each prefix is written in; node's include the front end's. */
const PREFIX_LANGUAGES: Readonly<Record<string, readonly string[]>> = {
  node: ["javascript", "typescript", "coffeescript", "html", "css", "scss", "less", "vue", "svelte"],
  python: ["python", "jupyter notebook"],
  python3: ["python", "jupyter notebook"],
  ruby: ["ruby"],
  php: ["php"],
  golang: ["go"],
  elpa: ["emacs lisp"],
  "r-cran": ["r"],
  lua: ["lua"],
};

/** The languages (lowercase) of a package's language prefix, null without one. */
function prefixLanguages(base: string): readonly string[] | null {
  const m = LANGUAGE_PREFIX.exec(base);
  return m ? PREFIX_LANGUAGES[m[1]!]! : null;
}

/**
 * The owner's project named like the package, most starred, >= MIN_HOMEPAGE_STARS: named exactly, else
 * but for a version (`ack` → beyondgrep/ack2), else, only for a package named like the owner, a shorter
 * name it begins with (`elixir-lang` → elixir-lang/elixir). Otherwise names that begin with one
 * another are a part or plugin and its project: a package `mopidy-alsamixer`, `ros-rosdep` or
 * `maven-war-plugin` is not what mopidy/mopidy, ros/ros or apache/maven is, and a repository
 * `pylint-django` or `gh-ost` is not what the packages `pylint` and `gh` are (of the 25 joins that a
 * longer repository name made, 11 were wrong).
 */
function ownersProject(projects: readonly RepoRecord[], owner: string, names: readonly string[]): RepoRecord | null {
  const famous = projects.filter((r) => starsOf(r) >= MIN_HOMEPAGE_STARS);
  const best = (match: (part: string, name: string) => boolean): RepoRecord | null => {
    let out: RepoRecord | null = null;
    for (const r of famous) if (names.some((n) => match(repoPart(r.key), n)) && (!out || moreStarred(r, out))) out = r;
    return out;
  };
  return best((part, n) => part === n) ?? best((part, n) => baseName(part) === n) ?? (names.includes(owner) ? best((part, n) => n.startsWith(part)) : null);
}

/** The name a homepage's host is registered under: `www.gimp.org/downloads` → `gimp`, `htop.dev` → `htop`. */
export function siteName(homepage: string): string | null {
  const labels = homepage.split("/")[0]!.split(".");
  return labels.length >= 2 ? labels[labels.length - 2]! : null;
}

function starsOf(r: RepoRecord): number {
  return r.stars ?? 0;
}

/** Whether `a` comes before `b` as the most starred: more stars, or as many and the first key in order. */
function moreStarred(a: RepoRecord, b: RepoRecord): boolean {
  return starsOf(a) > starsOf(b) || (starsOf(a) === starsOf(b) && a.key < b.key);
}

/** Per value of `keyOf` (null: none), the most starred record; on equal stars, the first key in order. */
function mostStarredBy(records: readonly RepoRecord[], keyOf: (r: RepoRecord) => string | null): Map<string, RepoRecord> {
  const out = new Map<string, RepoRecord>();
  for (const r of records) {
    const k = keyOf(r);
    if (k === null) continue;
    const held = out.get(k);
    if (!held || moreStarred(r, held)) out.set(k, r);
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
    .replace(DEBCARGO_BOILERPLATE, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** What every Rust crate's package says in place of a description; its summary line says what the crate is. */
const DEBCARGO_BOILERPLATE = /Source code for Debianized Rust crate "[^"]*"\.?/g;

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
