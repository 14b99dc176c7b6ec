/**
 * One project, one record: renamed, moved and mirrored repositories are merged at index time.
 *
 * The dataset keeps every name a project was ever listed under (`facebook/react` and `react/react`,
 * `stedolan/jq` and `jqlang/jq`): each is a record of its own, the older one with stale stars and an old
 * `pushedAt`. Two records are one project when their repository part (after the owner) and their
 * description are the same, compared case-insensitively over word characters only. The group keeps one
 * canonical record, the newest (latest `lastSeen`, then `pushedAt`, then stars) among those with at least
 * a fifth of the group's most stars, filled in with what only its aliases knew; the other names become
 * its `aliases`. The star bound keeps a personal fork seen in a later crawl (derekparker/delve, 661 stars)
 * from standing for the project it copied (go-delve/delve, 24,793).
 *
 * A second tier catches renames whose description was edited on the way: same repository part, the
 * older description's words all in the newer one's, and the older name no longer seen for months
 * (mergeReworded). A third joins an incubating name to the graduated one of the same owner
 * (`apache/incubator-superset` → `apache/superset`: mergeGraduated). A fourth joins a transfer the crawl
 * saw under both names, by its counts: same repository part, stars and forks within 2 % (mergeTwins). A
 * fifth joins one by its creation time, which a rename or transfer keeps and a fork or copy does not:
 * same repository part and the same `createdAt` to the second (mergeSameBirth). A sixth joins a name
 * gone stale for a year to the organisation named after the project that took it over (`creationix/nvm`
 * → `nvm-sh/nvm`, `jakubroztocil/httpie` → `httpie/httpie`: mergeMovedHome). A seventh joins a name that
 * stopped being seen while it was still being pushed to, to its one successor with a near-identical
 * description and grown counts (`getinsomnia/insomnia` → `kong/insomnia`: mergeSucceeded). An eighth
 * joins a name gone stale to the same repository under its owner's new name (`mui-org/material-ui` →
 * `mui/material-ui`, `radare/radare2` → `radareorg/radare2`: mergeOwnerRenamed). A ninth joins a stale
 * name to its one successor under the same owner when the two describe themselves in nearly the same
 * words (`vuejs/vue-next` → `vuejs/core`, `jdx/rtx` → `jdx/mise`: mergeRenamedInPlace).
 *
 * Same name and description is weak evidence when both are generic: 119 repositories named `ama` say
 * "Ask me anything!", and "My dotfiles" is everyone's. A group is left alone when it is large, when its
 * description is personal ("my …"), or when a short description (≤ 3 words) sits on a common repository
 * name (held by ≥ 10 records) or on repositories nobody stars (< 100). A short description with a word
 * few descriptions use is not generic on a common name: "Solana Sealevel Framework" ("sealevel": 4
 * descriptions) on `anchor` is one project, "Leetcode solutions" on `leetcode` is everyone's. Precision
 * of the merges, on a hand-labelled sample: docs/ranking.md.
 *
 * Deterministic: the result depends only on the set of records, never on their order.
 */
import { groupBy } from "../common/group-by.js";
import type { RepoRecord } from "../dataset/record.js";

/** Bumped whenever the grouping rule changes: it is part of every point's content hash. */
export const DEDUP_VERSION = 11;

/** Groups larger than this are many people's same-named repositories, not one project. */
export const MAX_GROUP = 8;
/** A canonical record has at least this share of its group's most stars (see the module comment). */
const CANONICAL_MIN_STAR_SHARE = 0.2;
/** A description of at most this many words is generic on a common name or an unstarred group. */
const SHORT_DESCRIPTION_WORDS = 3;
/** A repository name held by at least this many records is common ("dotfiles", "docs", "cli"). */
const COMMON_NAME_RECORDS = 10;
/** A word held by at most this many descriptions of the dataset is rare: a short description that holds one names something. */
const RARE_WORD_RECORDS = 20;
/** Below this many stars, no record of a short-description group is known enough to be one project. */
const MIN_STARS_SHORT = 100;
/** Tier 2: the shorter description has at least this many words (and the longer at most this many more, or as many again). */
const REWORDED_MIN_WORDS = 4;
/** Tier 2: the older name was last seen at least this long before the newer one. */
const STALE_DAYS = 90;

export interface DedupResult {
  /** One record per project: canonical records carry their aliases' names; order as in the input. */
  readonly records: RepoRecord[];
  /** Alias key (lowercase) → canonical key. */
  readonly aliasOf: ReadonlyMap<string, string>;
  readonly groups: number;
  /** Records merged into another (the aliases). */
  readonly merged: number;
  /** Candidate groups left alone as generic. */
  readonly skippedGeneric: number;
}

/** The words of a description, lowercased, for comparing two descriptions. */
export function descriptionWords(description: string): string[] {
  return description.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
}

/** The repository part of an `owner/repo` key: what the merge rule compares across owners. */
export function repoPart(key: string): string {
  return key.slice(key.indexOf("/") + 1);
}

/** The owner part of an `owner/repo` key. */
function ownerPart(key: string): string {
  return key.slice(0, key.indexOf("/"));
}

/** A description that speaks for one person ("my dotfiles", "our notes") names nobody's project in particular. */
function personal(words: readonly string[]): boolean {
  return words[0] === "my" || words[0] === "our";
}

/** Newest first: lastSeen, then pushedAt, then stars, then key (so ties break the same way everywhere). */
export function compareNewest(a: RepoRecord, b: RepoRecord): number {
  return (
    cmpDesc(a.lastSeen, b.lastSeen) || cmpDesc(a.pushedAt, b.pushedAt) || (b.stars ?? -1) - (a.stars ?? -1) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
}

function cmpDesc(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? 1 : -1;
}

/** Why records sharing a repository part and description are not one project (see the module comment). */
export type GenericReason = "large group" | "personal description" | "short description on a common name" | "short description on little-starred records";

/**
 * Why the group is left alone as generic, or null when it is one project. `words`: its description's
 * words; `nameRecords`: how many records hold its repository part; `wordRecords`: how many descriptions
 * of the dataset hold a word. The eval uses it to say why two look-alike results are two projects.
 */
export function genericReason(
  group: readonly { readonly stars: number | null }[],
  words: readonly string[],
  nameRecords: number,
  wordRecords: (word: string) => number,
): GenericReason | null {
  if (group.length > MAX_GROUP) return "large group";
  if (personal(words)) return "personal description";
  if (words.length <= SHORT_DESCRIPTION_WORDS) {
    if (nameRecords >= COMMON_NAME_RECORDS && !words.some((w) => wordRecords(w) <= RARE_WORD_RECORDS)) return "short description on a common name";
    if (Math.max(...group.map((r) => r.stars ?? 0)) < MIN_STARS_SHORT) return "short description on little-starred records";
  }
  return null;
}

/** The group ordered canonical first, then the aliases newest first. */
function canonicalFirst(group: readonly RepoRecord[]): RepoRecord[] {
  const sorted = [...group].sort(compareNewest);
  const most = Math.max(...group.map((r) => r.stars ?? 0));
  const head = sorted.find((r) => (r.stars ?? 0) >= CANONICAL_MIN_STAR_SHARE * most)!;
  return [head, ...sorted.filter((r) => r !== head)];
}

/** The canonical record of a group (canonical first), with what only its aliases knew filled in. */
function mergeGroup(sorted: readonly RepoRecord[]): RepoRecord {
  const [head, ...rest] = sorted as [RepoRecord, ...RepoRecord[]];
  const first = <T>(pick: (r: RepoRecord) => T | null): T | null => {
    for (const r of sorted) {
      const v = pick(r);
      if (v !== null) return v;
    }
    return null;
  };
  const pushedAt = sorted.reduce<string | null>((m, r) => (r.pushedAt !== null && (m === null || r.pushedAt > m) ? r.pushedAt : m), null);
  return {
    ...head,
    stars: first((r) => r.stars),
    forks: first((r) => r.forks),
    language: first((r) => r.language),
    topics: head.topics.length ? head.topics : (rest.find((r) => r.topics.length)?.topics ?? head.topics),
    pushedAt,
    homepage: first((r) => r.homepage),
    license: first((r) => r.license),
    createdAt: first((r) => r.createdAt),
    readme: first((r) => r.readme),
    tree: first((r) => r.tree),
    llmsTxtPaths: first((r) => r.llmsTxtPaths),
    aliases: [...head.aliases, ...rest.flatMap((r) => [r.name, ...r.aliases])],
  };
}

/** A unit of tier 2: a tier-1 cluster or a lone record, with its newest record and its description words. */
interface Unit {
  readonly records: RepoRecord[];
  readonly newest: RepoRecord;
  readonly words: readonly string[];
}

/**
 * Tier 2: on a repository part held by at most MAX_GROUP records, a unit whose description's words are
 * all in a newer unit's description (at least REWORDED_MIN_WORDS words, at most as many added), and whose
 * newest record was last seen at least STALE_DAYS before that unit's, joins it: the project was renamed or
 * moved and its description edited since ("An extremely fast Python linter, written in Rust." of
 * charliermarsh/ruff, last seen 2023, and "…linter and code formatter…" of astral-sh/ruff). Two units
 * seen in the same crawl are two living repositories (a fork with its own life), never merged here, nor
 * is a newer unit with under a fifth of the older one's stars (pkg/errors, 8,106 stars, is not a fork's
 * alias) or a description that only spells the repository's name. Precision of this tier on its own
 * hand-labelled sample: bench/dedup-labels.md.
 */
function mergeReworded(
  records: readonly RepoRecord[],
  clusters: RepoRecord[][],
  inCluster: ReadonlySet<string>,
  nameRecords: ReadonlyMap<string, number>,
): void {
  const byName = new Map<string, Unit[]>();
  const add = (rs: RepoRecord[]) => {
    const newest = [...rs].sort(compareNewest)[0]!;
    if (!newest.description || newest.lastSeen === null) return;
    const words = descriptionWords(newest.description);
    const name = repoPart(newest.key);
    if ((nameRecords.get(name) ?? 0) > MAX_GROUP || words.length === 0) return;
    byName.set(name, [...(byName.get(name) ?? []), { records: rs, newest, words }]);
  };
  for (const c of clusters) add(c);
  for (const r of records) if (!inCluster.has(r.key)) add([r]);
  const joined = new Set<Unit>();
  const listed = new Set(clusters);
  for (const units of byName.values()) {
    if (units.length < 2) continue;
    units.sort((a, b) => compareNewest(a.newest, b.newest));
    // Oldest first, each joins the newest unit that rewords it (itself not joined elsewhere).
    for (let i = units.length - 1; i > 0; i--) {
      const old = units[i]!;
      const target = units.slice(0, i).find((u) => !joined.has(u) && rewords(old, u));
      if (!target) continue;
      target.records.push(...old.records);
      joined.add(old);
    }
    for (const u of units) {
      if (joined.has(u) || u.records.length < 2) continue;
      // A lone record that gathered others becomes a cluster; a tier-1 cluster is already listed.
      if (!listed.has(u.records)) {
        listed.add(u.records);
        clusters.push(u.records);
      }
    }
  }
  // Drop tier-1 clusters that joined a newer unit (their records now sit in that unit's cluster).
  const gone = new Set([...joined].map((u) => u.records));
  const kept = clusters.filter((c) => !gone.has(c));
  clusters.splice(0, clusters.length, ...kept);
}

/** Days from one `lastSeen` to a later one (negative when `newer` is the earlier). */
function daysBetween(older: string, newer: string): number {
  return (Date.parse(newer) - Date.parse(older)) / 86_400_000;
}

function rewords(old: Unit, newer: Unit): boolean {
  if (!(daysBetween(old.newest.lastSeen!, newer.newest.lastSeen!) >= STALE_DAYS)) return false;
  // A new name is as known as the old one (within CANONICAL_MIN_STAR_SHARE): a little-starred newer
  // repository that extends an older description is a fork with a purpose of its own.
  const stars = (u: Unit) => Math.max(...u.records.map((r) => r.stars ?? 0));
  if (stars(newer) < CANONICAL_MIN_STAR_SHARE * stars(old)) return false;
  const [short, long] = old.words.length <= newer.words.length ? [old.words, newer.words] : [newer.words, old.words];
  if (short.length < REWORDED_MIN_WORDS || long.length - short.length > Math.max(REWORDED_MIN_WORDS, short.length)) return false;
  if (personal(short)) return false;
  // A description that only spells the repository's name says nothing ("Data-Structures-and-Algorithms").
  if (short.join(" ") === descriptionWords(repoPart(old.newest.key).replace(/[-_.]+/g, " ")).join(" ")) return false;
  const have = new Set(long);
  return short.every((w) => have.has(w));
}

/** Tier 3: the prefix an incubating project's repository carries until it graduates. */
export const INCUBATOR_PREFIX = "incubator-";

/**
 * Tier 3: `owner/incubator-x` and `owner/x` are one project, renamed when it left the incubator. The
 * dataset holds 32 such pairs, all under `apache` (superset, echarts, airflow, dubbo, druid …), each
 * the same project on inspection, though descriptions were often rewritten on graduation ("Apache Doris
 * (Incubating)" → "Apache Doris is a real-time analytics …"), so the tiers above miss them. Joins the
 * two records' clusters (or the records themselves), in key order so the result is order-independent.
 */
function mergeGraduated(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const byKey = new Map(records.map((r) => [r.key, r]));
  const join = clusterJoiner(clusters);
  const incubating = records.filter((r) => repoPart(r.key).startsWith(INCUBATOR_PREFIX)).sort((a, b) => (a.key < b.key ? -1 : 1));
  for (const r of incubating) {
    const graduated = byKey.get(`${ownerPart(r.key)}/${repoPart(r.key).slice(INCUBATOR_PREFIX.length)}`);
    if (graduated) join(graduated, r);
  }
}

/**
 * Joins of tiers 3 and 4: `join(to, from)` moves the cluster of `from` (or `from` alone) into the
 * cluster of `to`, which becomes one when `to` was a lone record; `clusters` is updated in place.
 */
function clusterJoiner(clusters: RepoRecord[][]): (to: RepoRecord, from: RepoRecord) => void {
  const clusterOf = new Map<string, RepoRecord[]>();
  for (const c of clusters) for (const r of c) clusterOf.set(r.key, c);
  return (toRecord, fromRecord) => {
    const from = clusterOf.get(fromRecord.key) ?? [fromRecord];
    let to = clusterOf.get(toRecord.key);
    if (from === to) return;
    if (!to) {
      to = [toRecord];
      clusters.push(to);
      clusterOf.set(toRecord.key, to);
    }
    to.push(...from);
    for (const x of from) clusterOf.set(x.key, to);
    const i = clusters.indexOf(from);
    if (i >= 0) clusters.splice(i, 1);
  };
}

/** Tier 4: both records have at least this many stars (below it, equal counts are common). */
const TWIN_MIN_STARS = 500;
/** Tier 4: stars and forks differ by at most this share of the larger count. */
const TWIN_COUNT_TOLERANCE = 0.02;
/** Tier 4: the shorter description shares at least this share of its words with the other. */
const TWIN_MIN_SHARED_WORDS = 0.5;

/**
 * Tier 4: two records of one repository part whose stars and forks agree within TWIN_COUNT_TOLERANCE
 * (≥ TWIN_MIN_STARS stars, forks known on both) are one repository seen under two names: a transfer
 * keeps its stars and forks, while a fork starts from none and an unrelated namesake matches both
 * counts only by chance. square/okhttp (46,998 stars, 9,277 forks, "Square's meticulous HTTP client …")
 * and lysine-dev/okhttp (47,048 and 9,295, "A meticulous HTTP client …") are one; the tiers above miss
 * them because the description was edited and both names were seen within weeks of each other. The
 * descriptions must still agree on half the shorter one's words, or one must be empty: two blender-mcp
 * repositories of 26k stars and different descriptions are not taken on their counts alone. Every merge
 * it makes is labelled by hand in bench/dedup-labels.md.
 */
export function twins(a: Pick<RepoRecord, "key" | "stars" | "forks" | "description">, b: Pick<RepoRecord, "key" | "stars" | "forks" | "description">): boolean {
  if (repoPart(a.key).toLowerCase() !== repoPart(b.key).toLowerCase()) return false;
  const close = (x: number | null, y: number | null) => x !== null && y !== null && Math.abs(x - y) <= TWIN_COUNT_TOLERANCE * Math.max(x, y);
  if ((a.stars ?? 0) < TWIN_MIN_STARS || (b.stars ?? 0) < TWIN_MIN_STARS) return false;
  if (!close(a.stars, b.stars) || !close(a.forks, b.forks)) return false;
  const wa = new Set(descriptionWords(a.description ?? ""));
  const wb = new Set(descriptionWords(b.description ?? ""));
  if (wa.size === 0 || wb.size === 0) return true;
  return sharedShare(wa, wb) >= TWIN_MIN_SHARED_WORDS;
}

/** The share of the smaller word set that the other holds (both non-empty). */
function sharedShare(wa: ReadonlySet<string>, wb: ReadonlySet<string>): number {
  return sharedCount(wa, wb) / Math.min(wa.size, wb.size);
}

/** The share of all the words of two sets that both hold (Jaccard; both non-empty). */
function jaccard(wa: ReadonlySet<string>, wb: ReadonlySet<string>): number {
  const shared = sharedCount(wa, wb);
  return shared / (wa.size + wb.size - shared);
}

function sharedCount(wa: ReadonlySet<string>, wb: ReadonlySet<string>): number {
  let shared = 0;
  for (const w of wa) if (wb.has(w)) shared++;
  return shared;
}

/** Tier 4 (see twins): joins the clusters (or lone records) of twin records, in key order so the result is order-independent. */
function mergeTwins(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const join = clusterJoiner(clusters);
  for (const rs of groupsInKeyOrder(records, (r) => ((r.stars ?? 0) < TWIN_MIN_STARS ? null : repoPart(r.key).toLowerCase())))
    for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) if (twins(rs[i]!, rs[j]!)) join(rs[i]!, rs[j]!);
}

/**
 * Tiers 4 to 6: the records grouped by `groupOf` (null leaves a record out), groups in the order of their
 * id and records in key order within each, so that the joins made over them do not depend on the input's order.
 */
function groupsInKeyOrder(records: readonly RepoRecord[], groupOf: (r: RepoRecord) => string | null): RepoRecord[][] {
  const groups = groupBy(records, groupOf);
  return [...groups.keys()].sort().map((id) => groups.get(id)!.sort((x, y) => (x.key < y.key ? -1 : 1)));
}

/** A `createdAt` with a time of day: date-only sources write midnight, which many repositories share. */
const TIMED_CREATED_AT = /T(?!00:00:00)\d\d:\d\d:\d\d/;

/**
 * Tier 5: two records of one repository part created at the same second are one repository: GitHub keeps
 * `createdAt` through a rename or transfer, and a fork, template copy or mirror gets its own. Catches
 * transfers of fast-growing repositories whose counts moved between the two sightings and whose
 * description was edited (milla-jovovich/mempalace, 40k stars in April, is MemPalace/mempalace, 58k in
 * August). Only times of day count (a date-only value is midnight for every repository of that day), and
 * `createdAt` is known for about one record in eight, so the tier is small and, on inspection of every
 * merge it makes, exact (bench/dedup-labels.md).
 */
export function sameBirth(a: Pick<RepoRecord, "key" | "createdAt">, b: Pick<RepoRecord, "key" | "createdAt">): boolean {
  const birth = birthOf(a);
  return birth !== null && birth === birthOf(b);
}

/** Tier 5's identity: the repository part and a timed `createdAt`, or null when the creation time is unknown or date-only. */
function birthOf(r: Pick<RepoRecord, "key" | "createdAt">): string | null {
  return r.createdAt === null || !TIMED_CREATED_AT.test(r.createdAt) ? null : `${repoPart(r.key).toLowerCase()}\n${r.createdAt}`;
}

/** Tier 5 (see sameBirth): joins the clusters (or lone records) of records born together, in key order. */
function mergeSameBirth(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const join = clusterJoiner(clusters);
  for (const rs of groupsInKeyOrder(records, birthOf)) {
    if (rs.length < 2 || rs.length > MAX_GROUP) continue;
    for (let i = 1; i < rs.length; i++) join(rs[0]!, rs[i]!);
  }
}

/** Tiers 6 to 8: the older name was last seen at least this long before the newer one. */
const MOVED_STALE_DAYS = 365;

/** Tiers 6 to 8: both were seen, the older at least MOVED_STALE_DAYS before the newer. */
function staleAYear(older: Pick<RepoRecord, "lastSeen">, newer: Pick<RepoRecord, "lastSeen">): boolean {
  return older.lastSeen !== null && newer.lastSeen !== null && daysBetween(older.lastSeen, newer.lastSeen) >= MOVED_STALE_DAYS;
}
/** Tier 6: the newer record has at least this share of the older one's forks (a transfer keeps them; a fork starts from none). */
const MOVED_MIN_FORK_SHARE = 0.9;
/** Tier 6: the descriptions share at least this share of the shorter one's content words. */
const MOVED_MIN_SHARED_WORDS = 0.25;
/** Words too common to say two descriptions are about one thing. */
const FUNCTION_WORDS = new Set("a an the and or of for to in on with by is it its that this your you from as at be are".split(" "));

/** A project rewritten in TypeScript keeps its identity (umami, mermaid, puppeteer moved and migrated). */
function languageFamily(language: string): string {
  return language === "TypeScript" ? "JavaScript" : language;
}

/** Lowercase letters and digits only: "nvm-sh" → "nvmsh", "ZLMediaKit" → "zlmediakit". */
function squash(s: string): string {
  return s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}

/**
 * Tier 6: `older` is an earlier name of `newer` when a project moved to an organisation of its own name
 * and the old name stopped being listed. Same repository part (held by fewer than COMMON_NAME_RECORDS
 * records); the newer owner's name holds the repository's (`nvm-sh` holds `nvm`, `go-gorm` holds `gorm`);
 * the older name last seen at least a year before the newer; both with ≥ TWIN_MIN_STARS stars; the newer
 * with at least 90 % of the older one's forks; the same language where both are known (JavaScript and
 * TypeScript count as one); and descriptions sharing a quarter of the shorter one's content words, lightly
 * stemmed (see stem). The organisation's name is what tells a move from a fork: a continuation fork or a
 * translation lives under its maintainer's name (getify's You-Dont-Know-JS against a translator's copy),
 * and the stale bound keeps two living projects apart.
 * Precision, labelled by hand on every merge: bench/dedup-labels.md.
 */
export function movedHome(
  older: Pick<RepoRecord, "key" | "stars" | "forks" | "language" | "description" | "lastSeen">,
  newer: Pick<RepoRecord, "key" | "stars" | "forks" | "language" | "description" | "lastSeen">,
): boolean {
  const repo = squash(repoPart(newer.key));
  if (repo.length < 3 || repo !== squash(repoPart(older.key)) || !squash(ownerPart(newer.key)).includes(repo)) return false;
  if ((older.stars ?? 0) < TWIN_MIN_STARS || (newer.stars ?? 0) < TWIN_MIN_STARS) return false;
  if (older.forks === null || newer.forks === null || newer.forks < MOVED_MIN_FORK_SHARE * older.forks) return false;
  if (older.language !== null && newer.language !== null && languageFamily(older.language) !== languageFamily(newer.language)) return false;
  if (!staleAYear(older, newer)) return false;
  const wa = contentWords(older.description);
  const wb = contentWords(newer.description);
  return wa.size > 0 && wb.size > 0 && sharedShare(wa, wb) >= MOVED_MIN_SHARED_WORDS;
}

/** A description's content words, lightly stemmed, for the word share of tiers 6 to 8. */
function contentWords(description: string | null): Set<string> {
  return new Set(
    descriptionWords(description ?? "")
      .filter((w) => !FUNCTION_WORDS.has(w))
      .map(stem),
  );
}

/**
 * A light stem for the word share of tiers 6 to 8, so a rewritten description's "testing UI components" meets the old
 * "component dev & test" (storybooks/storybook → storybookjs/storybook): a plural "s" and an "-ing" off.
 */
function stem(w: string): string {
  if (w.length > 5 && w.endsWith("ing")) return w.slice(0, -3);
  if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss")) return w.slice(0, -1);
  return w;
}

/**
 * Tiers 6 to 8 compare records of one repository part with ≥ TWIN_MIN_STARS stars, in key order; on a
 * name held by fewer than COMMON_NAME_RECORDS records unless `commonNames`. `staleBefore`: the older
 * name's whole cluster so far was last seen a year before the newer name (staleClusters, with `traceBelowStars`).
 */
function sameNameGroups(
  records: readonly RepoRecord[],
  clusters: readonly RepoRecord[][],
  { commonNames = false, traceBelowStars = 0 }: { commonNames?: boolean; traceBelowStars?: number } = {},
) {
  const holders = new Map<string, number>();
  for (const r of records) {
    const name = repoPart(r.key).toLowerCase();
    holders.set(name, (holders.get(name) ?? 0) + 1);
  }
  const groups = groupsInKeyOrder(records, (r) => {
    const name = repoPart(r.key).toLowerCase();
    return (r.stars ?? 0) < TWIN_MIN_STARS || (!commonNames && holders.get(name)! >= COMMON_NAME_RECORDS) ? null : name;
  });
  return { groups, ...staleClusters(clusters, traceBelowStars) };
}

/**
 * Tiers 6 to 9: each record's cluster, and `staleBefore(older, newer)`: the older name's whole cluster was
 * last seen a year before the newer name. The whole cluster must have gone stale: marcelscruz/public-apis,
 * still listed, shares its description with public-apis-dev/public-apis, which alone would pass for
 * public-apis/public-apis. A member other than the older name with fewer than `traceBelowStars` stars is
 * a trace of the project, not a living repository, and does not count (tier 8 alone sets it).
 */
function staleClusters(clusters: readonly RepoRecord[][], traceBelowStars = 0) {
  const clusterOf = new Map<string, readonly RepoRecord[]>();
  for (const c of clusters) for (const r of c) clusterOf.set(r.key, c);
  const staleBefore = (older: RepoRecord, newer: RepoRecord) =>
    (clusterOf.get(older.key) ?? [older]).every((r) => (r !== older && (r.stars ?? 0) < traceBelowStars) || staleAYear(r, newer));
  return { clusterOf, staleBefore };
}

/**
 * Tiers 7 and 9: joins each record of each group to its one successor (`isSuccessor(older, newer)`), in
 * key order. Two records of one project (a cluster) count as one successor; with two or more, the older
 * name is nobody's in particular and stays apart.
 */
function joinOneSuccessor(
  groups: readonly RepoRecord[][],
  clusters: RepoRecord[][],
  clusterOf: ReadonlyMap<string, readonly RepoRecord[]>,
  isSuccessor: (older: RepoRecord, newer: RepoRecord) => boolean,
): void {
  const join = clusterJoiner(clusters);
  for (const rs of groups) {
    if (rs.length < 2) continue;
    for (const older of rs) {
      const next = rs.filter((newer) => newer !== older && isSuccessor(older, newer));
      if (new Set(next.map((r) => clusterOf.get(r.key) ?? r)).size === 1) join(next[0]!, older);
    }
  }
}

/** Tier 6 (see movedHome): joins each stale name to the newer name it moved to, in key order. */
function mergeMovedHome(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const { groups, clusterOf, staleBefore } = sameNameGroups(records, clusters);
  // The newer side as its project is known: a record the tiers above joined may lack forks or a
  // language that another name of it has (youki-dev/youki, no forks, is containers/youki, 104).
  const filled = (r: RepoRecord): RepoRecord => {
    const cluster = clusterOf.get(r.key);
    if (!cluster || (r.forks !== null && r.language !== null)) return r;
    // Whatever the order the cluster was built in: the most forks, the language of the most starred.
    const forks = Math.max(-1, ...cluster.map((x) => x.forks ?? -1));
    const speaker = [...cluster].filter((x) => x.language !== null).sort((x, y) => (y.stars ?? 0) - (x.stars ?? 0) || (x.key < y.key ? -1 : 1))[0];
    return { ...r, forks: r.forks ?? (forks >= 0 ? forks : null), language: r.language ?? speaker?.language ?? null };
  };
  const join = clusterJoiner(clusters);
  for (const rs of groups) {
    if (rs.length < 2) continue;
    for (const newer of rs) {
      const known = filled(newer);
      for (const older of rs) if (older !== newer && movedHome(older, known) && staleBefore(older, newer)) join(newer, older);
    }
  }
}

/** Tier 7: the descriptions share at least this share of the shorter one's content words. */
const SUCCEEDED_MIN_SHARED_WORDS = 0.8;
/** Tier 7: each description has at least this many content words (three are enough to name a thing). */
const SUCCEEDED_MIN_WORDS = 3;
/** Tier 7: the older name was pushed to at most this long before it was last seen. */
const SUCCEEDED_ACTIVE_DAYS = 180;

/**
 * Tier 7: `newer` took over from `older`, whoever owns it now (`getinsomnia/insomnia` → `kong/insomnia`,
 * `bjorn/tiled` → `mapeditor/tiled`, `i0natan/nodebestpractices` → `goldbergyoni/nodebestpractices`).
 * Tier 6 needs the new owner to be named after the project; a user rename or a company's takeover is
 * not. What tells a move from a namesake or a copy here:
 *   - the older name stopped being seen while its repository was active: pushed to at most 180 days
 *     before its last sighting (or when that is unknown), and never after. A copy or a translation goes
 *     quiet and is still listed (a copy of reactjs-interview-questions: last push 631 days before its
 *     last sighting); a moved repository's old name vanishes mid-work (most within a week);
 *   - its whole cluster was last seen at least a year before the newer name (as tier 6);
 *   - the newer record has at least its stars and its forks (both known: a transfer keeps them and grows);
 *   - the descriptions share 80 % of the shorter one's content words (lightly stemmed), each with at
 *     least three, and the older one is not personal ("my …");
 *   - the name is held by fewer than COMMON_NAME_RECORDS records, and the older name has exactly one
 *     such successor (five `leetcode` collections would each pass for another's successor).
 * Precision, labelled by hand on every merge: bench/dedup-labels.md.
 */
export function succeeded(
  older: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen" | "pushedAt">,
  newer: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen">,
): boolean {
  if (repoPart(older.key).toLowerCase() !== repoPart(newer.key).toLowerCase()) return false;
  if ((older.stars ?? 0) < TWIN_MIN_STARS || (newer.stars ?? 0) < (older.stars ?? 0)) return false;
  if (older.forks === null || newer.forks === null || newer.forks < older.forks) return false;
  if (!staleAYear(older, newer)) return false;
  if (older.pushedAt !== null) {
    // staleAYear above: lastSeen is known.
    const quiet = daysBetween(older.pushedAt, older.lastSeen!);
    if (quiet < 0 || quiet > SUCCEEDED_ACTIVE_DAYS) return false;
  }
  if (personal(descriptionWords(older.description ?? ""))) return false;
  const wa = contentWords(older.description);
  const wb = contentWords(newer.description);
  return wa.size >= SUCCEEDED_MIN_WORDS && wb.size >= SUCCEEDED_MIN_WORDS && sharedShare(wa, wb) >= SUCCEEDED_MIN_SHARED_WORDS;
}

/** Tier 7 (see succeeded): joins each stale name to its one successor, in key order. */
function mergeSucceeded(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const { groups, clusterOf, staleBefore } = sameNameGroups(records, clusters);
  joinOneSuccessor(groups, clusters, clusterOf, (older, newer) => succeeded(older, newer) && staleBefore(older, newer));
}

/** Tier 8: the descriptions share at least this share of the shorter one's content words. */
const RENAMED_MIN_SHARED_WORDS = 0.3;
/** Tier 8: the shorter owner name has at least this many letters and digits. */
const RENAMED_MIN_OWNER_CHARS = 3;

/**
 * Tier 8: `newer` is the same repository after its owner renamed itself: one owner's name, letters and
 * digits only, begins with the other's (`mui` → `mui-org`, `radare` → `radareorg`, `sw-yx` → `swyxio`,
 * `mermaidjs` → `mermaid-js`). Same repository part, however many records hold it (tier 6's bound is
 * for an owner that holds a generic repository name; here the repository's name plays no part); both
 * with ≥ TWIN_MIN_STARS stars; the older name last seen at least a year before the newer (its whole
 * cluster, as tier 6); the newer with at least the older one's stars, and its forks where both are known;
 * descriptions sharing at least 30 % of the shorter one's content words. The owner's own name is the
 * evidence the descriptions need not give: angulardart/angular (25 % of its words shared with
 * angular/angular) and micro/micro beside micro-editor/micro (none) stay apart.
 * Precision, labelled by hand on every merge: bench/dedup-labels.md.
 */
export function ownerRenamed(
  older: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen">,
  newer: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen">,
): boolean {
  if (repoPart(older.key).toLowerCase() !== repoPart(newer.key).toLowerCase()) return false;
  const a = squash(ownerPart(older.key));
  const b = squash(ownerPart(newer.key));
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  if (short.length < RENAMED_MIN_OWNER_CHARS || !long.startsWith(short)) return false;
  if ((older.stars ?? 0) < TWIN_MIN_STARS || (newer.stars ?? 0) < (older.stars ?? 0)) return false;
  if (older.forks !== null && newer.forks !== null && newer.forks < older.forks) return false;
  if (!staleAYear(older, newer)) return false;
  const wa = contentWords(older.description);
  const wb = contentWords(newer.description);
  return wa.size > 0 && wb.size > 0 && sharedShare(wa, wb) >= RENAMED_MIN_SHARED_WORDS;
}

/** Tier 8 (see ownerRenamed): joins each stale name to the same repository under its owner's new name, in key order. */
function mergeOwnerRenamed(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  // A common name is no obstacle here: the owners' names, not the repository's, say who moved
  // (shadcn/ui → shadcn-ui/ui, on a name 17 records hold).
  // The old name's cluster must have gone stale, except for records too little starred to be more than a
  // trace of it: muellerberndt/mythril (53 stars, still listed) is the first name of Consensys/mythril,
  // and it kept that name apart from ConsenSysDiligence/mythril. Only here: the owners' names are the
  // evidence, where tier 7's word share alone would join simonw/til through a listed twin.
  const { groups, staleBefore } = sameNameGroups(records, clusters, { commonNames: true, traceBelowStars: TWIN_MIN_STARS });
  const join = clusterJoiner(clusters);
  for (const rs of groups) {
    if (rs.length < 2) continue;
    for (const newer of rs) for (const older of rs) if (older !== newer && ownerRenamed(older, newer) && staleBefore(older, newer)) join(newer, older);
  }
}

/** Tier 9: the descriptions' content words agree this much (shared over all, not over the shorter one's). */
const IN_PLACE_MIN_JACCARD = 0.9;

/**
 * Tier 9: `newer` is `older` renamed within its owner (`vuejs/vue-next` → `vuejs/core`,
 * `home-assistant/home-assistant` → `home-assistant/core`, `vercel/turbo` → `vercel/turborepo`,
 * `jdx/rtx` → `jdx/mise`). Every tier above compares records of one repository part, so a rename of the
 * repository itself stayed two results. The repository's name says nothing here, so the description
 * must: the two share at least 90 % of all their content words (lightly stemmed; Jaccard, so a
 * description that adds a word of its own, "OpenMMLab Rotated Object Detection Toolbox" beside
 * "OpenMMLab Detection Toolbox", or a platform, "…location APIs…" beside "…camera APIs…", falls short),
 * each with at least three, the older one not personal. Besides: same owner, the older with
 * ≥ TWIN_MIN_STARS stars and its whole cluster last seen a year before the newer name, the newer with at
 * least its stars and its forks (where both are known), the same creation date where both are known (a day apart
 * at most: date-only sources write midnight), and exactly one such successor among the owner's
 * repositories (the Polymer tools that each say "Moved to Polymer/tools monorepo" have several).
 * Precision, labelled by hand on every merge: bench/dedup-labels.md.
 */
export function renamedInPlace(
  older: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen" | "createdAt">,
  newer: Pick<RepoRecord, "key" | "stars" | "forks" | "description" | "lastSeen" | "createdAt">,
): boolean {
  if (ownerPart(older.key).toLowerCase() !== ownerPart(newer.key).toLowerCase()) return false;
  if (repoPart(older.key).toLowerCase() === repoPart(newer.key).toLowerCase()) return false;
  if ((older.stars ?? 0) < TWIN_MIN_STARS || (newer.stars ?? 0) < (older.stars ?? 0)) return false;
  if (older.forks !== null && newer.forks !== null && newer.forks < older.forks) return false;
  if (!staleAYear(older, newer)) return false;
  // A rename keeps the creation date; a sibling repository has its own (monero-gui, 2015, beside monero, 2014).
  if (older.createdAt !== null && newer.createdAt !== null && Math.abs(daysBetween(older.createdAt, newer.createdAt)) > 1) return false;
  if (personal(descriptionWords(older.description ?? ""))) return false;
  const wa = contentWords(older.description);
  const wb = contentWords(newer.description);
  return wa.size >= SUCCEEDED_MIN_WORDS && wb.size >= SUCCEEDED_MIN_WORDS && jaccard(wa, wb) >= IN_PLACE_MIN_JACCARD;
}

/** Tier 9 (see renamedInPlace): joins each stale name to its one successor under the same owner, in key order. */
function mergeRenamedInPlace(records: readonly RepoRecord[], clusters: RepoRecord[][]): void {
  const { clusterOf, staleBefore } = staleClusters(clusters);
  const groups = groupsInKeyOrder(records, (r) => ((r.stars ?? 0) < TWIN_MIN_STARS ? null : ownerPart(r.key).toLowerCase()));
  // A record of the older name's own cluster is no successor of it.
  const ownCluster = (older: RepoRecord, newer: RepoRecord) => clusterOf.get(older.key)?.includes(newer) ?? false;
  joinOneSuccessor(groups, clusters, clusterOf, (older, newer) => !ownCluster(older, newer) && renamedInPlace(older, newer) && staleBefore(older, newer));
}

export interface DedupOptions {
  /** The last tier to run (1–9, default 9): `npm run eval:dedup` tells each tier's merges apart with it. */
  readonly tiers?: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;
}

/** Merges duplicate projects (see the module comment). `records` must have unique keys. */
export function dedupeProjects(records: readonly RepoRecord[], options: DedupOptions = {}): DedupResult {
  const tiers = options.tiers ?? 9;
  const nameRecords = new Map<string, number>();
  for (const r of records) {
    const repo = repoPart(r.key);
    nameRecords.set(repo, (nameRecords.get(repo) ?? 0) + 1);
  }
  const groups = new Map<string, RepoRecord[]>();
  const wordsOf = new Map<string, string[]>();
  const wordRecords = new Map<string, number>();
  for (const r of records) {
    if (!r.description) continue;
    const words = descriptionWords(r.description);
    if (words.length === 0) continue;
    for (const w of new Set(words)) wordRecords.set(w, (wordRecords.get(w) ?? 0) + 1);
    const id = `${repoPart(r.key)}\n${words.join(" ")}`;
    const g = groups.get(id);
    if (g) g.push(r);
    else {
      groups.set(id, [r]);
      wordsOf.set(id, words);
    }
  }
  // Tier 1: equal descriptions.
  const clusters: RepoRecord[][] = [];
  const inCluster = new Set<string>();
  let skippedGeneric = 0;
  for (const [id, g] of groups) {
    if (g.length < 2) continue;
    if (genericReason(g, wordsOf.get(id)!, nameRecords.get(repoPart(g[0]!.key))!, (w) => wordRecords.get(w) ?? 0) !== null) {
      skippedGeneric++;
      continue;
    }
    clusters.push([...g]);
    for (const r of g) inCluster.add(r.key);
  }
  // Tier 2: a description reworded around the same words, on a name gone stale (see the module comment).
  if (tiers >= 2) mergeReworded(records, clusters, inCluster, nameRecords);
  // Tier 3: an incubating name joins the graduated one.
  if (tiers >= 3) mergeGraduated(records, clusters);
  // Tier 4: a transfer seen under both names, by its stars and forks.
  if (tiers >= 4) mergeTwins(records, clusters);
  // Tier 5: a transfer or rename by its creation time.
  if (tiers >= 5) mergeSameBirth(records, clusters);
  // Tier 6: a stale name joins the organisation named after the project.
  if (tiers >= 6) mergeMovedHome(records, clusters);
  // Tier 7: a name that vanished mid-work joins its one successor.
  if (tiers >= 7) mergeSucceeded(records, clusters);
  // Tier 8: a stale name joins the same repository under its owner's new name.
  if (tiers >= 8) mergeOwnerRenamed(records, clusters);
  // Tier 9: a stale name joins its one successor under the same owner, by the description alone.
  if (tiers >= 9) mergeRenamedInPlace(records, clusters);
  const canonical = new Map<string, RepoRecord>();
  const aliasOf = new Map<string, string>();
  for (const c of clusters) {
    const sorted = canonicalFirst(c);
    const merged = mergeGroup(sorted);
    canonical.set(merged.key, merged);
    for (const r of sorted.slice(1)) aliasOf.set(r.key, merged.key);
  }
  const groupCount = clusters.length;
  const out: RepoRecord[] = [];
  for (const r of records) {
    if (aliasOf.has(r.key)) continue;
    out.push(canonical.get(r.key) ?? r);
  }
  return { records: out, aliasOf, groups: groupCount, merged: aliasOf.size, skippedGeneric };
}
