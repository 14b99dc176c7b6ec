/**
 * The text a repository is embedded from. Names are split into words ("build-your-own-x" →
 * "build your own x") because agents describe what they need in words, not identifiers.
 */
import type { RepoRecord } from "../dataset/record.js";
import { stripMarkup } from "../text/analyzer.js";

/** Bumped whenever the text recipe changes, so content hashes change and points are re-embedded. */
export const DOC_TEXT_VERSION = 3;

const README_CHARS = 600;

/** A description that says the repository is a copy of code kept elsewhere. */
const MIRROR_NOTICE = /\bmirror(?:ed)?\b|\bread-only\b|\bpublish-only\b/i;

/**
 * Whether a project's package description (src/corpus/packages.ts) speaks for it in its own text: it has
 * no description, or a mirror notice ("Official Git mirror of the SQLite source tree", "Read-only mirror
 * of https://gitlab.gnome.org/GNOME/gimp"), which says where the code lives, not what the project is.
 * Such projects are developed elsewhere and are often the best known of their kind (postgres, ffmpeg,
 * blender, wireshark). BM25F's description field (src/store/bm25f.ts) and the embedded text then hold
 * the package description as well.
 */
export function packageSpeaksFor(description: string | null, packaged: string | null | undefined): packaged is string {
  return !!packaged && (!description || MIRROR_NOTICE.test(description));
}

/** `packaged`: the project's package description, embedded where it speaks for the project (packageSpeaksFor). */
export function embeddingText(r: RepoRecord, opts: { readmeChars?: number; packaged?: string | null } = {}): string {
  const repo = r.name.slice(r.name.indexOf("/") + 1);
  const words = repo.replace(/[-_.]+/g, " ");
  const parts = [words === repo ? repo : `${repo} (${words})`];
  if (r.description) parts.push(r.description);
  if (r.topics.length) parts.push(r.topics.join(", "));
  if (packageSpeaksFor(r.description, opts.packaged)) parts.push(opts.packaged);
  const readmeChars = opts.readmeChars ?? README_CHARS;
  if (r.readme && readmeChars > 0) {
    const plain = stripMarkup(r.readme);
    if (plain) parts.push(plain.slice(0, readmeChars));
  }
  return parts.join(". ");
}
