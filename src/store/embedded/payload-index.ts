/**
 * Evaluates Qdrant filters (../filter.ts) over one segment's rows as bitset algebra. The filterable
 * fields of RepoPayload get real indexes; any other key, or a condition kind an index cannot answer,
 * is evaluated row by row over the payload objects, so every filter in the subset is answered exactly.
 */
import type { RepoPayload } from "../../dataset/record.js";
import type { Filter } from "../filter.js";
import type { PointId } from "../types.js";
import { Bitset } from "./bitset.js";
import { compileFilter, isUnconstrained, normalizePointId, type CField, type CFilter, type CNode } from "./filter-compile.js";
import { fieldMatches, isEmptyValues, isNullValues, valuesAt } from "./filter-eval.js";
import { BoolIndex, DatetimeIndex, KeywordIndex, NumberIndex, type FieldIndex, type FieldIndexType } from "./filter-field-index.js";
import { INDEXED_FIELDS } from "../filter.js";

/** The indexed payload fields and their index types (mirrors the Qdrant payload schema). */
export { INDEXED_FIELDS };

const builders: Record<FieldIndexType, (payloads: readonly unknown[], key: string) => FieldIndex | null> = {
  keyword: KeywordIndex.build,
  integer: NumberIndex.build,
  datetime: DatetimeIndex.build,
  bool: BoolIndex.build,
};

/** Filter results kept per segment (LRU); a bitset is count / 8 bytes (25 KiB for 204k rows). */
export const FILTER_CACHE_ENTRIES = 128;

export class PayloadIndex {
  private readonly cache = new Map<string, { readonly rows: Bitset | null }>();

  private constructor(
    readonly count: number,
    private readonly payloads: readonly unknown[],
    private readonly idRows: Map<string, number>,
    private readonly fields: Map<string, FieldIndex>,
  ) {}

  static build(ids: readonly PointId[], payloads: readonly RepoPayload[]): PayloadIndex {
    if (ids.length !== payloads.length) throw new RangeError(`PayloadIndex.build: ${ids.length} ids but ${payloads.length} payloads`);
    const idRows = new Map<string, number>();
    ids.forEach((id, row) => {
      const norm = normalizePointId(String(id));
      if (idRows.has(norm)) throw new RangeError(`PayloadIndex.build: duplicate point id ${id} (rows ${idRows.get(norm)} and ${row})`);
      idRows.set(norm, row);
    });
    const fields = new Map<string, FieldIndex>();
    for (const [key, type] of Object.entries(INDEXED_FIELDS)) {
      // A field whose values do not fit its type stays unindexed and is scanned instead.
      const index = builders[type](payloads, key);
      if (index !== null) fields.set(key, index);
    }
    return new PayloadIndex(payloads.length, payloads, idRows, fields);
  }

  /** Keys answered from an index (the rest are scanned). */
  indexedKeys(): string[] {
    return [...this.fields.keys()];
  }

  /**
   * The rows that satisfy `filter` (Qdrant semantics, see ../filter.ts), or null when the filter is
   * absent or places no constraint (every row passes). Throws ReposearchError(VALIDATION_ERROR) on a
   * malformed filter. The bitset may be shared with other callers (see the cache): never modify it.
   */
  evaluate(filter: Filter | null | undefined): Bitset | null {
    if (filter === undefined || filter === null) return null;
    const compiled = compileFilter(filter);
    if (isUnconstrained(compiled)) return null;
    // Agents repeat a few filters (the defaults above all), and evaluating one walks postings of up to
    // every row; a segment never changes, so its results are cached (compiled form = canonical key).
    const key = JSON.stringify(compiled);
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.rows;
    }
    const rows = this.evalFilter(compiled);
    const result = rows.count() === this.count ? null : rows;
    this.cache.set(key, { rows: result });
    if (this.cache.size > FILTER_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    return result;
  }

  private evalFilter(f: CFilter): Bitset {
    let acc: Bitset | null = null;
    for (const c of f.must) {
      const b = this.evalNode(c);
      acc = acc === null ? b : acc.and(b);
      if (acc.isEmpty()) return acc;
    }
    if (f.should.length > 0) {
      const any = this.union(f.should);
      acc = acc === null ? any : acc.and(any);
    }
    if (f.mustNot.length > 0) {
      const none = this.union(f.mustNot);
      acc = (acc ?? Bitset.full(this.count)).andNot(none);
    }
    return acc ?? Bitset.full(this.count);
  }

  private union(nodes: readonly CNode[]): Bitset {
    let acc: Bitset | null = null;
    for (const c of nodes) {
      const b = this.evalNode(c);
      acc = acc === null ? b : acc.or(b);
    }
    return acc ?? new Bitset(this.count);
  }

  /** Always returns a fresh bitset: callers combine in place. */
  private evalNode(c: CNode): Bitset {
    switch (c.kind) {
      case "filter":
        return this.evalFilter(c);
      case "hasId": {
        const out = new Bitset(this.count);
        for (const id of c.ids) {
          const row = this.idRows.get(id);
          if (row !== undefined) out.set(row);
        }
        return out;
      }
      case "isNull":
        return this.fields.get(c.key)?.isNull() ?? this.scan((p) => isNullValues(valuesAt(p, c.key)));
      case "isEmpty":
        return this.fields.get(c.key)?.isEmpty() ?? this.scan((p) => isEmptyValues(valuesAt(p, c.key)));
      case "field":
        return this.fields.get(c.key)?.evalField(c) ?? this.scanField(c);
    }
  }

  private scanField(c: CField): Bitset {
    return this.scan((p) => fieldMatches(valuesAt(p, c.key), c));
  }

  private scan(pred: (payload: unknown) => boolean): Bitset {
    const out = new Bitset(this.count);
    const w = out.words;
    const payloads = this.payloads;
    for (let r = 0; r < payloads.length; r++) if (pred(payloads[r])) w[r >>> 5]! |= 1 << (r & 31);
    return out;
  }
}
