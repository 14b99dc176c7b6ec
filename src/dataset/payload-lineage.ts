/**
 * A payload's predecessor: the same repository's payload object in the index version that was served
 * when this one was loaded, where the content changed (its stars, say). The store records it
 * (src/store/embedded/segment.ts, sharePayloads); the ranker reads it to carry over what it computed
 * from text that did not change (src/core/rank/features.ts, src/core/query.ts), so that an update that
 * moves the stars of many repositories does not leave their text analysis to redo.
 *
 * One version deep: loading a version records its changed payloads' predecessors and forgets those of
 * the payloads it keeps (forgetPredecessor), so no payload of an older version stays reachable. Entries
 * are weak: a payload's entry goes when the payload goes.
 */
import type { RepoPayload } from "./record.js";

const predecessors = new WeakMap<object, RepoPayload>();

/** Records that `now` replaces `before` (same repository, changed content). */
export function recordPredecessor(now: RepoPayload, before: RepoPayload): void {
  predecessors.delete(before);
  predecessors.set(now, before);
}

/** Forgets what `p` replaced: `p` is kept by a newer version, whose predecessors are the served version's payloads only. */
export function forgetPredecessor(p: RepoPayload): void {
  predecessors.delete(p);
}

/** The payload `p` replaced, if it was loaded over a version that held the same repository. */
export function predecessorOf(p: object): RepoPayload | undefined {
  return predecessors.get(p);
}

/**
 * What `cache` holds for the payload `p` replaced, when `p` says the same in `fields` (what the cached
 * value was read from); undefined otherwise.
 */
export function carriedOver<T extends object, V>(cache: WeakMap<T, V>, p: T, fields: readonly (keyof T)[]): V | undefined {
  const before = predecessors.get(p) as T | undefined;
  return before && sameFields(before, p, fields) ? cache.get(before) : undefined;
}

/** Whether `a` and `b` hold the same value in each of `keys`: equal strings (or both absent), or string arrays with equal elements. */
export function sameFields<T extends object>(a: T, b: T, keys: readonly (keyof T)[]): boolean {
  for (const k of keys) {
    const x = a[k] as unknown;
    const y = b[k] as unknown;
    if (x === y || (x == null && y == null)) continue;
    if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  }
  return true;
}
