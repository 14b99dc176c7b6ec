/** Builds hand-written records for the classifier tests: only the fields the rules read need to be given. */
import type { RepoRecord } from "../../src/dataset/record.js";

export function rec(name: string, description: string | null, extra: Partial<RepoRecord> = {}): RepoRecord {
  return {
    key: name.toLowerCase(),
    name,
    url: `https://github.com/${name}`,
    description,
    stars: null,
    forks: null,
    language: null,
    topics: [],
    pushedAt: null,
    isArchived: null,
    homepage: null,
    license: null,
    createdAt: null,
    readme: null,
    tree: null,
    llmsTxtPaths: null,
    lastSeen: null,
    aliases: [],
    ...extra,
  };
}
