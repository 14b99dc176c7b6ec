/**
 * Per-row evaluation of compiled conditions over a payload object, with Qdrant's value semantics.
 * The payload index uses it for keys (or condition kinds) it has no index for, so evaluation is
 * complete for the filter subset; indexed answers must agree with it row for row.
 */
import { inRange, type CField, type CMatch, type CNode } from "./filter-compile.js";
import { parseDatetimeMs } from "./filter-datetime.js";

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * The values a payload key resolves to (Qdrant's get_value): `a.b` walks nested objects, `a[].b`
 * walks every object in the array `a`. A missing key resolves to no values; an explicit null is a value.
 */
export function valuesAt(payload: unknown, key: string): unknown[] {
  if (key.indexOf(".") < 0 && key.indexOf("[") < 0) {
    if (typeof payload !== "object" || payload === null || !hasOwn.call(payload, key)) return [];
    const v = (payload as Record<string, unknown>)[key];
    return v === undefined ? [] : [v];
  }
  let cur: unknown[] = [payload];
  for (const raw of key.split(".")) {
    const flatten = raw.endsWith("[]");
    const name = flatten ? raw.slice(0, -2) : raw;
    const next: unknown[] = [];
    for (const obj of cur) {
      if (typeof obj !== "object" || obj === null || Array.isArray(obj) || !hasOwn.call(obj, name)) continue;
      const v = (obj as Record<string, unknown>)[name];
      if (v === undefined) continue;
      if (flatten) {
        if (Array.isArray(v)) for (const x of v) next.push(x);
      } else next.push(v);
    }
    cur = next;
  }
  return cur;
}

/** is_null: some value is null, or an array holding a null (one level deep, as Qdrant). */
export function isNullValues(values: readonly unknown[]): boolean {
  for (const v of values) {
    if (v === null) return true;
    if (Array.isArray(v) && v.some((x) => x === null)) return true;
  }
  return false;
}

/** is_empty: the key is missing, or every value is null or []. */
export function isEmptyValues(values: readonly unknown[]): boolean {
  for (const v of values) {
    if (v === null) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    return false;
  }
  return true;
}

/** A field condition holds when any (array-flattened) value satisfies match, range or datetime_range. */
export function fieldMatches(values: readonly unknown[], c: CField): boolean {
  for (const v of values) {
    if (Array.isArray(v)) {
      for (const x of v) if (elementMatches(x, c)) return true;
    } else if (elementMatches(v, c)) return true;
  }
  return false;
}

function elementMatches(v: unknown, c: CField): boolean {
  if (c.match !== undefined && matchElement(c.match, v)) return true;
  if (c.range !== undefined && typeof v === "number" && inRange(c.range, v)) return true;
  if (c.datetimeRange !== undefined && typeof v === "string") {
    const ms = parseDatetimeMs(v);
    if (ms !== null && inRange(c.datetimeRange, ms)) return true;
  }
  return false;
}

function matchElement(m: CMatch, v: unknown): boolean {
  switch (m.kind) {
    case "value":
      // Qdrant keeps keyword, integer and bool distinct: 1 never equals true or "1".
      if (typeof m.value === "number") return typeof v === "number" && v === m.value;
      return v === m.value;
    case "any":
      if (typeof v === "string") return m.list.type === "strings" && m.list.strings.includes(v);
      if (typeof v === "number") return m.list.type === "integers" && m.list.integers.includes(v);
      return false;
    case "except":
      // A null is absence, not a value different from the list; any other type differs from it.
      if (v === null) return false;
      if (typeof v === "string" && m.list.type === "strings") return !m.list.strings.includes(v);
      if (typeof v === "number" && m.list.type === "integers") return !m.list.integers.includes(v);
      return true;
  }
}

/** Whole-row evaluation of a compiled node (the reference semantics, and handy for single points). */
export function rowMatches(node: CNode, payload: unknown, normalizedId: string): boolean {
  switch (node.kind) {
    case "field":
      return fieldMatches(valuesAt(payload, node.key), node);
    case "isNull":
      return isNullValues(valuesAt(payload, node.key));
    case "isEmpty":
      return isEmptyValues(valuesAt(payload, node.key));
    case "hasId":
      return node.ids.includes(normalizedId);
    case "filter":
      return (
        node.must.every((c) => rowMatches(c, payload, normalizedId)) &&
        (node.should.length === 0 || node.should.some((c) => rowMatches(c, payload, normalizedId))) &&
        !node.mustNot.some((c) => rowMatches(c, payload, normalizedId))
      );
  }
}
