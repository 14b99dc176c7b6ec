/** The normalised repository record: what the indexer validates, classifies, embeds and stores. */
export interface RepoRecord {
  /** Lowercase `owner/repo`: the identity of a repository everywhere in the service. */
  readonly key: string;
  /** `owner/repo` with the dataset's casing. */
  readonly name: string;
  readonly url: string | null;
  readonly description: string | null;
  readonly stars: number | null;
  readonly forks: number | null;
  readonly language: string | null;
  /** Lowercased, deduplicated; [] when unknown or none. */
  readonly topics: readonly string[];
  /** ISO 8601 UTC (`YYYY-MM-DDTHH:mm:ss.sssZ`) or null. */
  readonly pushedAt: string | null;
  readonly isArchived: boolean | null;
  readonly homepage: string | null;
  readonly license: string | null;
  readonly createdAt: string | null;
  /** First ≤1500 characters of the README, raw and untrusted. */
  readonly readme: string | null;
  /** Top two levels of the file tree (folders end in `/`), or null when unknown. */
  readonly tree: readonly string[] | null;
  /** Paths of llms.txt / llms-full.txt files; [] when known to have none; null when unknown. */
  readonly llmsTxtPaths: readonly string[] | null;
  /** Newest snapshot date of any source (ISO date); decides which duplicate wins. */
  readonly lastSeen: string | null;
  /**
   * Other names of the same project (renamed, moved, mirrored), as `owner/repo`; [] for none. The
   * dataset gives every record []; the indexer merges duplicate projects into one (src/corpus/dedup.ts).
   */
  readonly aliases: readonly string[];
}

export const CATEGORIES = [
  "library",
  "framework",
  "tool",
  "application",
  "infrastructure",
  "ai-ml",
  "agent",
  "frontend",
  "data",
  "starter",
  "curated-list",
  "educational",
  "plugin",
] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * What the store keeps per point. Filterable fields (indexed by both stores):
 *   key (keyword), aliasKeys (keyword[]), languageLc (keyword), topics (keyword[]), category (keyword or null),
 *   stars, forks (integer or null), pushedAt (datetime or null), isArchived (bool or null).
 */
export interface RepoPayload extends RepoRecord {
  /** Lowercased primary language, for case-insensitive exact match. */
  readonly languageLc: string | null;
  /** Classified category; null means uncategorized (the classifier abstained). */
  readonly category: Category | null;
  /** Content hash of everything that determines this point (record + classifier + embedder). */
  readonly hash: string;
  /** `aliases` lowercased: the keys an `excludeRepos` entry or an old name can name the project by. */
  readonly aliasKeys: readonly string[];
  /** What the corpus says the project is: words around other repositories' mentions of it (src/corpus/anchors.ts). */
  readonly anchor: string | null;
  /** How many repositories mention the project. */
  readonly mentions: number;
  /**
   * What Debian's package description says the project is (src/corpus/packages.ts); null when no
   * package joins it, absent from payloads written before the join existed.
   */
  readonly packaged?: string | null;
}
