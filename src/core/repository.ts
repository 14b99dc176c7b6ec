/**
 * The repository card (GET /v1/codehost/repos/{owner}/{repo}, the GetRepository RPC): everything the
 * index stores about a project that a caller can use, from its payload. Left out: the content hash,
 * the lowercased lookup keys (`languageLc`, `aliasKeys`) and the anchor text (a bag of other
 * repositories' words about it; `mentions` says how many there are). Owner-written text
 * (description, README) loses control and bidi characters, as evidence does; the README keeps its
 * Markdown and lines.
 */
import type { RepoPayload } from "../dataset/record.js";
import { compactTree, llmsUrlOf, stripUnsafe } from "./evidence.js";
import type { RepositoryCard } from "./types.js";

export function repositoryCard(p: RepoPayload): RepositoryCard {
  return {
    name: p.name,
    url: p.url,
    description: p.description === null ? null : stripUnsafe(p.description),
    language: p.language,
    stars: p.stars,
    forks: p.forks,
    topics: [...p.topics],
    pushedAt: p.pushedAt,
    createdAt: p.createdAt,
    isArchived: p.isArchived,
    category: p.category,
    license: p.license,
    homepage: p.homepage,
    llmsUrl: llmsUrlOf(p),
    tree: compactTree(p.tree),
    aliases: [...p.aliases],
    readme: p.readme === null ? null : stripUnsafe(p.readme),
    mentions: p.mentions,
    lastSeen: p.lastSeen,
  };
}
