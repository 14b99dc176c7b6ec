/**
 * Per-field payload indexes. Each answers the field conditions it can as bitset algebra (postings
 * for keywords, sorted values + binary search for numbers and datetimes) and returns undefined for
 * the ones it cannot, so the caller falls back to per-row evaluation. Builders return null when a
 * field holds values of an unexpected type: then the field is simply not indexed, which keeps
 * answers correct whatever the payloads look like.
 *
 * Every bitset handed out is freshly allocated: callers combine results in place.
 */
import { Bitset } from "./bitset.js";
import { parseDatetimeMs } from "./filter-datetime.js";
import type { CField, CList, CMatch, CRange } from "./filter-compile.js";

import type { FieldIndexType } from "../filter.js";

export type { FieldIndexType };

export interface FieldIndex {
  readonly type: FieldIndexType;
  /** Rows whose value is exactly null. */
  isNull(): Bitset;
  /** Rows where the field is missing, null or []. */
  isEmpty(): Bitset;
  /** Rows satisfying the condition, or undefined when this index cannot answer it. */
  evalField(c: CField): Bitset | undefined;
}

const hasOwn = Object.prototype.hasOwnProperty;

function valueOf(payload: unknown, key: string): unknown {
  return typeof payload === "object" && payload !== null && hasOwn.call(payload, key) ? (payload as Record<string, unknown>)[key] : undefined;
}

/** Sets the rows rows[from..to) (any order) in a fresh or given bitset. */
function setRows(out: Bitset, rows: Uint32Array, from: number, to: number): Bitset {
  const w = out.words;
  for (let i = from; i < to; i++) {
    const r = rows[i]!;
    w[r >>> 5]! |= 1 << (r & 31);
  }
  return out;
}

/** Union of the parts of a field condition (Qdrant ORs match, range and datetime_range on a value). */
function unionParts(size: number, parts: (Bitset | undefined)[]): Bitset | undefined {
  let acc: Bitset | undefined;
  for (const p of parts) {
    if (p === undefined) return undefined;
    acc = acc === undefined ? p : acc.or(p);
  }
  return acc ?? new Bitset(size);
}

/** Common bookkeeping: which rows are null, which are empty, which hold at least one value. */
abstract class BaseIndex {
  constructor(
    readonly size: number,
    protected readonly nullRows: Bitset,
    protected readonly emptyRows: Bitset,
    protected readonly valueRows: Bitset,
  ) {}
  isNull(): Bitset {
    return this.nullRows.clone();
  }
  isEmpty(): Bitset {
    return this.emptyRows.clone();
  }
  evalField(c: CField): Bitset | undefined {
    const parts: (Bitset | undefined)[] = [];
    if (c.match !== undefined) parts.push(this.evalMatch(c.match));
    if (c.range !== undefined) parts.push(this.evalRange(c.range));
    if (c.datetimeRange !== undefined) parts.push(this.evalDatetimeRange(c.datetimeRange));
    return unionParts(this.size, parts);
  }
  protected abstract evalMatch(m: CMatch): Bitset | undefined;
  protected abstract evalRange(r: CRange): Bitset | undefined;
  protected abstract evalDatetimeRange(r: CRange): Bitset | undefined;
  protected none(): Bitset {
    return new Bitset(this.size);
  }
}

/** Keyword (string or string[]) field: term postings plus, for arrays, each row's terms. */
export class KeywordIndex extends BaseIndex {
  readonly type = "keyword" as const;

  private constructor(
    size: number,
    nullRows: Bitset,
    emptyRows: Bitset,
    valueRows: Bitset,
    private readonly termIds: Map<string, number>,
    /** Postings in CSR form: rows of term t are postRows[postStart[t] .. postStart[t+1]). */
    private readonly postStart: Uint32Array,
    private readonly postRows: Uint32Array,
    /** Terms of row r are rowTerms[rowStart[r] .. rowStart[r+1]); only needed when rows hold several terms. */
    private readonly rowStart: Uint32Array | null,
    private readonly rowTerms: Uint32Array | null,
  ) {
    super(size, nullRows, emptyRows, valueRows);
  }

  static build(payloads: readonly unknown[], key: string): KeywordIndex | null {
    const n = payloads.length;
    const nullRows = new Bitset(n);
    const emptyRows = new Bitset(n);
    const valueRows = new Bitset(n);
    const termIds = new Map<string, number>();
    const rowStart = new Uint32Array(n + 1);
    let rowTerms = new Uint32Array(Math.max(16, n));
    let used = 0;
    let multi = false;
    const push = (t: string): void => {
      let id = termIds.get(t);
      if (id === undefined) termIds.set(t, (id = termIds.size));
      if (used === rowTerms.length) {
        const grown = new Uint32Array(rowTerms.length * 2);
        grown.set(rowTerms);
        rowTerms = grown;
      }
      rowTerms[used++] = id;
    };
    for (let r = 0; r < n; r++) {
      rowStart[r] = used;
      const v = valueOf(payloads[r], key);
      if (typeof v === "string") push(v);
      else if (v === undefined) emptyRows.set(r);
      else if (v === null) {
        nullRows.set(r);
        emptyRows.set(r);
      } else if (Array.isArray(v)) {
        if (v.length === 0) emptyRows.set(r);
        for (let i = 0; i < v.length; i++) {
          const t = v[i];
          if (typeof t !== "string") return null;
          if (v.indexOf(t) === i) push(t); // duplicates count once
        }
        if (v.length > 1) multi = true;
      } else return null;
      if (used > rowStart[r]!) valueRows.set(r);
    }
    rowStart[n] = used;
    // Postings by counting sort over rows, so each list comes out ascending.
    const postStart = new Uint32Array(termIds.size + 1);
    for (let i = 0; i < used; i++) postStart[rowTerms[i]! + 1]!++;
    for (let t = 0; t < termIds.size; t++) postStart[t + 1]! += postStart[t]!;
    const fill = postStart.slice(0, termIds.size);
    const postRows = new Uint32Array(used);
    for (let r = 0; r < n; r++) {
      for (let i = rowStart[r]!; i < rowStart[r + 1]!; i++) postRows[fill[rowTerms[i]!]!++] = r;
    }
    return multi
      ? new KeywordIndex(n, nullRows, emptyRows, valueRows, termIds, postStart, postRows, rowStart, rowTerms.slice(0, used))
      : new KeywordIndex(n, nullRows, emptyRows, valueRows, termIds, postStart, postRows, null, null);
  }

  /** Number of distinct terms (diagnostics). */
  get termCount(): number {
    return this.termIds.size;
  }

  private postings(out: Bitset, term: string): Bitset {
    const t = this.termIds.get(term);
    return t === undefined ? out : setRows(out, this.postRows, this.postStart[t]!, this.postStart[t + 1]!);
  }

  protected evalMatch(m: CMatch): Bitset {
    if (m.kind === "value") return typeof m.value === "string" ? this.postings(this.none(), m.value) : this.none();
    if (m.kind === "any") {
      const out = this.none();
      if (m.list.type === "strings") for (const s of m.list.strings) this.postings(out, s);
      return out;
    }
    return this.except(m.list);
  }

  /** Rows with at least one term outside the list (Qdrant's except on arrays). */
  private except(list: CList): Bitset {
    const out = this.valueRows.clone();
    if (list.type !== "strings") return out; // integers never equal keywords: every value differs
    const listed = this.none();
    const excluded = new Set<number>();
    for (const s of list.strings) {
      const t = this.termIds.get(s);
      if (t === undefined) continue;
      excluded.add(t);
      setRows(listed, this.postRows, this.postStart[t]!, this.postStart[t + 1]!);
    }
    if (this.rowStart === null) return out.andNot(listed); // one term per row
    const rowStart = this.rowStart;
    const rowTerms = this.rowTerms!;
    listed.forEach((r) => {
      for (let i = rowStart[r]!; i < rowStart[r + 1]!; i++) if (!excluded.has(rowTerms[i]!)) return;
      out.clear(r);
    });
    return out;
  }

  protected evalRange(): Bitset {
    return this.none(); // keywords are never numbers
  }

  protected evalDatetimeRange(): undefined {
    return undefined; // keywords may be datetime strings: let the row evaluator parse them
  }
}

/** Values sorted ascending with their rows, for range queries by binary search. */
class SortedValues {
  constructor(
    readonly values: Float64Array,
    readonly rows: Uint32Array,
  ) {}

  static from(pairsValue: number[], pairsRow: number[]): SortedValues {
    const order = Array.from(pairsValue.keys()).sort((a, b) => pairsValue[a]! - pairsValue[b]! || pairsRow[a]! - pairsRow[b]!);
    const values = new Float64Array(order.length);
    const rows = new Uint32Array(order.length);
    order.forEach((o, i) => {
      values[i] = pairsValue[o]!;
      rows[i] = pairsRow[o]!;
    });
    return new SortedValues(values, rows);
  }

  /** First position whose value is >= v (strict: > v). */
  lowerBound(v: number, strict: boolean): number {
    const a = this.values;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (strict ? a[mid]! <= v : a[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Positions [from, to) of the values inside the range. */
  span(r: CRange): [number, number] {
    let from = 0;
    let to = this.values.length;
    if (r.gte !== undefined) from = Math.max(from, this.lowerBound(r.gte, false));
    if (r.gt !== undefined) from = Math.max(from, this.lowerBound(r.gt, true));
    if (r.lte !== undefined) to = Math.min(to, this.lowerBound(r.lte, true));
    if (r.lt !== undefined) to = Math.min(to, this.lowerBound(r.lt, false));
    return [from, Math.max(from, to)];
  }

  rangeInto(out: Bitset, r: CRange): Bitset {
    const [from, to] = this.span(r);
    return setRows(out, this.rows, from, to);
  }

  equalInto(out: Bitset, v: number): Bitset {
    return setRows(out, this.rows, this.lowerBound(v, false), this.lowerBound(v, true));
  }
}

/**
 * One pass over a scalar field: rows that are null, missing (empty), or hold a value of the field's
 * type, plus the sorted keys for range lookups. `sortKey` returns the key, null for a value of the right
 * type without one, or undefined for a value of another type — then the field is not indexable (null).
 */
function scanScalar(
  payloads: readonly unknown[],
  key: string,
  sortKey: (v: unknown) => number | null | undefined,
): { nullRows: Bitset; emptyRows: Bitset; valueRows: Bitset; sorted: SortedValues } | null {
  const n = payloads.length;
  const nullRows = new Bitset(n);
  const emptyRows = new Bitset(n);
  const valueRows = new Bitset(n);
  const vals: number[] = [];
  const rows: number[] = [];
  for (let r = 0; r < n; r++) {
    const v = valueOf(payloads[r], key);
    if (v === undefined) emptyRows.set(r);
    else if (v === null) {
      nullRows.set(r);
      emptyRows.set(r);
    } else {
      const k = sortKey(v);
      if (k === undefined) return null;
      valueRows.set(r);
      if (k !== null) {
        vals.push(k);
        rows.push(r);
      }
    }
  }
  return { nullRows, emptyRows, valueRows, sorted: SortedValues.from(vals, rows) };
}

/** Scalar numeric field (integer in RepoPayload; any finite number works). */
export class NumberIndex extends BaseIndex {
  readonly type = "integer" as const;

  private constructor(
    size: number,
    nullRows: Bitset,
    emptyRows: Bitset,
    valueRows: Bitset,
    private readonly sorted: SortedValues,
  ) {
    super(size, nullRows, emptyRows, valueRows);
  }

  static build(payloads: readonly unknown[], key: string): NumberIndex | null {
    const s = scanScalar(payloads, key, (v) => (typeof v === "number" && Number.isFinite(v) ? v : undefined));
    return s && new NumberIndex(payloads.length, s.nullRows, s.emptyRows, s.valueRows, s.sorted);
  }

  protected evalMatch(m: CMatch): Bitset {
    if (m.kind === "value") return typeof m.value === "number" ? this.sorted.equalInto(this.none(), m.value) : this.none();
    const listed = this.none();
    if (m.list.type === "integers") for (const v of m.list.integers) this.sorted.equalInto(listed, v);
    if (m.kind === "any") return listed;
    return this.valueRows.clone().andNot(listed);
  }

  protected evalRange(r: CRange): Bitset {
    return this.sorted.rangeInto(this.none(), r);
  }

  protected evalDatetimeRange(): Bitset {
    return this.none(); // numbers are not datetime strings
  }
}

/** Datetime field stored as RFC 3339 strings; ranges compare epoch milliseconds. */
export class DatetimeIndex extends BaseIndex {
  readonly type = "datetime" as const;

  private constructor(
    size: number,
    nullRows: Bitset,
    emptyRows: Bitset,
    valueRows: Bitset,
    private readonly sorted: SortedValues,
  ) {
    super(size, nullRows, emptyRows, valueRows);
  }

  static build(payloads: readonly unknown[], key: string): DatetimeIndex | null {
    // Every string is a value of the field; only parseable ones get a place in the range index.
    const s = scanScalar(payloads, key, (v) => (typeof v === "string" ? parseDatetimeMs(v) : undefined));
    return s && new DatetimeIndex(payloads.length, s.nullRows, s.emptyRows, s.valueRows, s.sorted);
  }

  protected evalMatch(): undefined {
    return undefined; // keyword matches on the raw string: rare, left to the row evaluator
  }

  protected evalRange(): Bitset {
    return this.none(); // strings are never numbers
  }

  protected evalDatetimeRange(r: CRange): Bitset {
    return this.sorted.rangeInto(this.none(), r);
  }
}

/** Boolean field (true / false / null / missing). */
export class BoolIndex extends BaseIndex {
  readonly type = "bool" as const;

  private constructor(
    size: number,
    nullRows: Bitset,
    emptyRows: Bitset,
    valueRows: Bitset,
    private readonly trueRows: Bitset,
  ) {
    super(size, nullRows, emptyRows, valueRows);
  }

  static build(payloads: readonly unknown[], key: string): BoolIndex | null {
    const n = payloads.length;
    const nullRows = new Bitset(n);
    const emptyRows = new Bitset(n);
    const valueRows = new Bitset(n);
    const trueRows = new Bitset(n);
    for (let r = 0; r < n; r++) {
      const v = valueOf(payloads[r], key);
      if (v === true) {
        trueRows.set(r);
        valueRows.set(r);
      } else if (v === false) valueRows.set(r);
      else if (v === undefined) emptyRows.set(r);
      else if (v === null) {
        nullRows.set(r);
        emptyRows.set(r);
      } else return null;
    }
    return new BoolIndex(n, nullRows, emptyRows, valueRows, trueRows);
  }

  protected evalMatch(m: CMatch): Bitset {
    if (m.kind === "value") {
      if (m.value === true) return this.trueRows.clone();
      if (m.value === false) return this.valueRows.clone().andNot(this.trueRows);
      return this.none();
    }
    // Booleans never appear in an any-list (keywords or integers) and always differ from an except-list.
    return m.kind === "any" ? this.none() : this.valueRows.clone();
  }

  protected evalRange(): Bitset {
    return this.none();
  }

  protected evalDatetimeRange(): Bitset {
    return this.none();
  }
}
