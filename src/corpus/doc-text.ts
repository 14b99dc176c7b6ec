/**
 * The text a repository is embedded from. Names are split into words ("build-your-own-x" →
 * "build your own x") because agents describe what they need in words, not identifiers.
 */
import type { RepoRecord } from "../dataset/record.js";
import { stripMarkup } from "../text/analyzer.js";

/** Bumped whenever the text recipe changes, so content hashes change and points are re-embedded. */
export const DOC_TEXT_VERSION = 1;

const README_CHARS = 600;

export function embeddingText(r: RepoRecord, opts: { readmeChars?: number } = {}): string {
  const repo = r.name.slice(r.name.indexOf("/") + 1);
  const words = repo.replace(/[-_.]+/g, " ");
  const parts = [words === repo ? repo : `${repo} (${words})`];
  if (r.description) parts.push(r.description);
  if (r.topics.length) parts.push(r.topics.join(", "));
  const readmeChars = opts.readmeChars ?? README_CHARS;
  if (r.readme && readmeChars > 0) {
    const plain = stripMarkup(r.readme);
    if (plain) parts.push(plain.slice(0, readmeChars));
  }
  return parts.join(". ");
}
