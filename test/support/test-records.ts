/** Builds hand-written records and payloads for unit tests: only the fields a test reads need to be given. */
import type { RepoPayload, RepoRecord } from "../../src/dataset/record.js";

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

/** A stored payload around rec(): no category, corpus evidence or language index unless `extra` sets them. */
export function payload(name: string, description: string | null, extra: Partial<RepoPayload> = {}): RepoPayload {
  const r = rec(name, description, extra);
  return { ...r, languageLc: null, category: null, hash: "h", aliasKeys: r.aliases.map((a) => a.toLowerCase()), anchor: null, mentions: 0, ...extra };
}
