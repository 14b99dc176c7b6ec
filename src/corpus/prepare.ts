/**
 * The corpus stage of a build: the whole dataset's unique records → one record per project
 * (./dedup.ts) → what the corpus says about each project (./anchors.ts) and what Debian's package
 * descriptions say about it (./packages.ts). All need every record, so every shard of a sharded build
 * computes the same result from the whole dataset.
 */
import type { Category, RepoPayload, RepoRecord } from "../dataset/record.js";
import { ANCHORS_VERSION, projectEvidence, type AnchorStats, type ProjectEvidence } from "./anchors.js";
import { DEDUP_VERSION, dedupeProjects } from "./dedup.js";
import { joinPackages, PACKAGES_VERSION, shippedPackages, type PackageEntry } from "./packages.js";

/** Identifies the recipe; part of every point's content hash, so a new recipe re-indexes. */
export const CORPUS_RECIPE = `dedup${DEDUP_VERSION}+anchors${ANCHORS_VERSION}+packages${PACKAGES_VERSION}`;

/** A project's evidence: the corpus's anchor text and mentions, and a distribution's description. */
export interface CorpusEvidence extends ProjectEvidence {
  /** What Debian's package description says the project is (./packages.ts); null when no package joins it. */
  readonly packaged: string | null;
}

export interface PreparedCorpus {
  /** One record per project, canonical records carrying their aliases; dataset order. */
  readonly records: readonly RepoRecord[];
  /** Corpus evidence by canonical key (projects nobody mentions have none). */
  readonly evidence: ReadonlyMap<string, CorpusEvidence>;
  readonly stats: { readonly groups: number; readonly merged: number; readonly skippedGeneric: number; readonly packaged: number } & AnchorStats;
}

const NO_EVIDENCE: CorpusEvidence = Object.freeze({ anchor: null, mentions: 0, packaged: null });

/** `packages`: the package descriptions to join (the shipped ones unless a test gives its own). */
export function prepareCorpus(unique: readonly RepoRecord[], packages: readonly PackageEntry[] = shippedPackages()): PreparedCorpus {
  const d = dedupeProjects(unique);
  const { evidence: anchors, stats } = projectEvidence(d.records);
  const packaged = joinPackages(d.records, packages);
  const evidence = new Map<string, CorpusEvidence>();
  for (const [key, e] of anchors) evidence.set(key, { ...e, packaged: packaged.get(key) ?? null });
  for (const [key, text] of packaged) if (!evidence.has(key)) evidence.set(key, { ...NO_EVIDENCE, packaged: text });
  return {
    records: d.records,
    evidence,
    stats: { groups: d.groups, merged: d.merged, skippedGeneric: d.skippedGeneric, packaged: packaged.size, ...stats },
  };
}

export function evidenceOf(corpus: Pick<PreparedCorpus, "evidence">, key: string): CorpusEvidence {
  return corpus.evidence.get(key) ?? NO_EVIDENCE;
}

/** The stored payload of a record: the record, its corpus evidence, category and content hash. */
export function toPayload(r: RepoRecord, evidence: CorpusEvidence, category: Category | null, hash: string): RepoPayload {
  return {
    ...r,
    languageLc: r.language?.toLowerCase() ?? null,
    category,
    hash,
    aliasKeys: r.aliases.map((a) => a.toLowerCase()),
    anchor: evidence.anchor,
    mentions: evidence.mentions,
    packaged: evidence.packaged,
  };
}
