/**
 * The corpus stage of a build: the whole dataset's unique records → one record per project
 * (./dedup.ts) → what the corpus says about each project (./anchors.ts). Both need every record, so
 * every shard of a sharded build computes the same result from the whole dataset.
 */
import type { Category, RepoPayload, RepoRecord } from "../dataset/record.js";
import { ANCHORS_VERSION, projectEvidence, type AnchorStats, type ProjectEvidence } from "./anchors.js";
import { DEDUP_VERSION, dedupeProjects } from "./dedup.js";

/** Identifies the recipe; part of every point's content hash, so a new recipe re-indexes. */
export const CORPUS_RECIPE = `dedup${DEDUP_VERSION}+anchors${ANCHORS_VERSION}`;

export interface PreparedCorpus {
  /** One record per project, canonical records carrying their aliases; dataset order. */
  readonly records: readonly RepoRecord[];
  /** Corpus evidence by canonical key (projects nobody mentions have none). */
  readonly evidence: ReadonlyMap<string, ProjectEvidence>;
  readonly stats: { readonly groups: number; readonly merged: number; readonly skippedGeneric: number } & AnchorStats;
}

const NO_EVIDENCE: ProjectEvidence = Object.freeze({ anchor: null, mentions: 0 });

export function prepareCorpus(unique: readonly RepoRecord[]): PreparedCorpus {
  const d = dedupeProjects(unique);
  const { evidence, stats } = projectEvidence(d.records);
  return { records: d.records, evidence, stats: { groups: d.groups, merged: d.merged, skippedGeneric: d.skippedGeneric, ...stats } };
}

export function evidenceOf(corpus: Pick<PreparedCorpus, "evidence">, key: string): ProjectEvidence {
  return corpus.evidence.get(key) ?? NO_EVIDENCE;
}

/** The stored payload of a record: the record, its corpus evidence, category and content hash. */
export function toPayload(r: RepoRecord, evidence: ProjectEvidence, category: Category | null, hash: string): RepoPayload {
  return {
    ...r,
    languageLc: r.language?.toLowerCase() ?? null,
    category,
    hash,
    aliasKeys: r.aliases.map((a) => a.toLowerCase()),
    anchor: evidence.anchor,
    mentions: evidence.mentions,
  };
}
