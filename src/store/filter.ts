/**
 * The subset of Qdrant's filter language that reposearch uses (https://qdrant.tech/documentation/concepts/filtering/).
 * The core builds these objects; the embedded store evaluates them and QdrantStore sends them unchanged.
 *
 * Semantics follow Qdrant:
 * - `must`: every condition holds; `should`: at least one holds (when non-empty); `must_not`: none holds.
 * - A condition on an array field holds when any element satisfies it.
 * - `match`/`range`/`datetime_range` never hold on a null or missing field.
 * - `is_null` holds when the field is present and null; `is_empty` when it is missing, null or [].
 * - `has_id` holds when the point id is one of the given ids.
 */
export type MatchValue = string | number | boolean;

export interface MatchValueCondition {
  value: MatchValue;
}
export interface MatchAnyCondition {
  any: (string | number)[];
}
export interface MatchExceptCondition {
  except: (string | number)[];
}
export type Match = MatchValueCondition | MatchAnyCondition | MatchExceptCondition;

export interface Range {
  gt?: number | null;
  gte?: number | null;
  lt?: number | null;
  lte?: number | null;
}
/** RFC 3339 bounds, as Qdrant's DatetimeRange. */
export interface DatetimeRange {
  gt?: string | null;
  gte?: string | null;
  lt?: string | null;
  lte?: string | null;
}

export interface FieldCondition {
  key: string;
  match?: Match;
  range?: Range;
  datetime_range?: DatetimeRange;
}
export interface IsNullCondition {
  is_null: { key: string };
}
export interface IsEmptyCondition {
  is_empty: { key: string };
}
export interface HasIdCondition {
  has_id: (string | number)[];
}

export type Condition = FieldCondition | IsNullCondition | IsEmptyCondition | HasIdCondition | Filter;

export interface Filter {
  must?: Condition | Condition[] | null;
  should?: Condition | Condition[] | null;
  must_not?: Condition | Condition[] | null;
}

/** Qdrant accepts point ids as UUIDs in any of their spellings; compare them in one canonical form. */
export function normalizePointId(id: string): string {
  // Ids the indexer writes are canonical already, and an index load normalises every one of them.
  if (isCanonicalUuid(id)) return id;
  const hex = id.replace(/^urn:uuid:/i, "").replace(/^\{(.*)\}$/, "$1");
  const m = /^([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})$/i.exec(hex);
  return m === null ? id : `${m[1]}-${m[2]}-${m[3]}-${m[4]}-${m[5]}`.toLowerCase();
}

/** Lowercase hex in 8-4-4-4-12 groups: the form normalizePointId returns for a UUID. */
function isCanonicalUuid(id: string): boolean {
  if (id.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = id.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false; // "-"
    } else if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false; // 0-9, a-f
  }
  return true;
}

/** How a payload field is indexed for filtering (Qdrant's payload index types that reposearch uses). */
export type FieldIndexType = "keyword" | "integer" | "datetime" | "bool";

/** The payload fields reposearch filters on, with their index type: both stores index exactly these. */
export const INDEXED_FIELDS: Readonly<Record<string, FieldIndexType>> = {
  key: "keyword",
  aliasKeys: "keyword",
  languageLc: "keyword",
  topics: "keyword",
  category: "keyword",
  stars: "integer",
  forks: "integer",
  pushedAt: "datetime",
  isArchived: "bool",
};
