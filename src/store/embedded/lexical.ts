/**
 * The lexical index: BM25F over a repository's name (owner and repo part, its aliases' too), description,
 * topics, README excerpt and anchor text (what other repositories say about it, src/corpus/anchors.ts).
 *
 * Scoring (Robertson & Zaragoza's simple BM25F): per field f, with weight w_f and length
 * normalisation b_f against the field's average length over documents where it is non-empty,
 *   tf~(t,d)   = Σ_f w_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d) / avg_f)
 *   score(q,d) = Σ_{t ∈ q} qtf(t) · idf(t) · tf~ · (k1 + 1) / (k1 + tf~)
 *   idf(t)     = ln(1 + (N − df + 0.5) / (df + 0.5))          (df over all fields)
 *   qtf(t)     = the term's query weight: each word written between spaces weighs 1, shared by its
 *                terms ("self-hosted" → self, host, selfhost: ⅓ each; ../bm25f.ts queryTermWeights)
 * The average is taken over non-empty fields because topics and READMEs exist for only 5–7% of
 * repositories: averaging over all documents would make every README look enormous.
 *
 * Storage is a sorted term dictionary (UTF-8 bytes + offsets) and postings in typed arrays, so the
 * binary form loads as views without parsing. Postings keep raw per-field tf (Uint8, saturated at
 * 255, which BM25 saturation makes harmless), so weights, b and k1 are load-time parameters. Since
 * tf~ does not depend on the query, loading turns each posting into one Float32 impact
 * tf~·(k1+1)/(k1+tf~): a search then costs one multiply-add per posting.
 */
import type { Bitset } from "./bitset.js";
import { MinHeap } from "./engine-heap.js";
import type { Hit } from "./types.js";
import {
  bm25Idf,
  DEFAULT_LEXICAL_PARAMS,
  fieldTermScore,
  fieldTokens,
  LEXICAL_FIELDS,
  LEXICAL_FORMAT_VERSION,
  lexicalDocOf,
  queryTermWeights,
  type FieldParams,
  type LexicalDoc,
  type LexicalField,
  type LexicalParams,
} from "../bm25f.js";

// Re-exported for the embedded store's own modules and tests.
export {
  DEFAULT_LEXICAL_PARAMS,
  fieldTermScore,
  fieldTokens,
  LEXICAL_FIELDS,
  LEXICAL_FORMAT_VERSION,
  lexicalDocOf,
  type LexicalDoc,
  type LexicalField,
  type LexicalParams,
};

const F = LEXICAL_FIELDS.length;

/** LexicalIndex.explain's answer. */
export interface LexicalExplanation {
  /** rows × LEXICAL_FIELDS, row-major: each field's own BM25 score of the query. */
  readonly fields: Float32Array;
  /** Per row: the idf-weighted share of the query's terms found in any field, in [0, 1]. */
  readonly coverage: Float32Array;
  /** The query's distinct analysed terms with their idf (terms absent from the index included). */
  readonly terms: readonly { readonly term: string; readonly idf: number }[];
  /** rows × terms, row-major: 1 where the term occurs in any field of the row. */
  readonly found: Uint8Array;
  readonly docCount: number;
}

const MAGIC = [0x52, 0x53, 0x4c, 0x58]; // "RSLX"
const HEADER_BYTES = 256;
// The header holds counts (32 bytes), k1 and a weight and b per field (8 bytes each).
if (32 + 8 + 16 * LEXICAL_FIELDS.length > HEADER_BYTES) throw new Error("lexical index: the header cannot hold every field's parameters");
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

interface Parts {
  readonly docCount: number;
  readonly termOffsets: Uint32Array; // termCount + 1, into termBytes
  readonly termBytes: Uint8Array;
  readonly postingStarts: Uint32Array; // termCount + 1, into docs
  readonly docs: Uint32Array; // ascending within each term
  readonly tfs: Uint8Array; // postingCount × F
  readonly lens: Uint16Array; // docCount × F, tokens per field (saturated at 65535)
}

const decoder = new TextDecoder();

export class LexicalIndex {
  readonly docCount: number;
  readonly termCount: number;
  readonly postingCount: number;
  readonly params: LexicalParams;

  private readonly p: Parts;
  /** Per posting: tf~·(k1+1)/(k1+tf~), parallel to the postings' doc ids. */
  private readonly impacts: Float32Array;
  /** Average tokens per non-empty field (the length norms' reference). */
  private readonly avgLength: Float64Array;
  // Reused across searches (search is synchronous, so never shared by two calls at once).
  private readonly acc: Float32Array;
  private readonly touched: Uint32Array;

  private constructor(parts: Parts, params: LexicalParams) {
    validateParams(params);
    this.p = parts;
    this.params = params;
    this.docCount = parts.docCount;
    this.termCount = parts.termOffsets.length - 1;
    this.postingCount = parts.docs.length;
    this.avgLength = fieldAverages(parts);
    this.impacts = postingImpacts(parts, params, this.avgLength);
    this.acc = new Float32Array(parts.docCount);
    this.touched = new Uint32Array(parts.docCount);
  }

  /** Rows are the positions in `docs`. `params` can be changed later by deserialize(bytes, params). */
  static build(docs: readonly LexicalDoc[], params: LexicalParams = DEFAULT_LEXICAL_PARAMS): LexicalIndex {
    validateParams(params);
    return new LexicalIndex(buildParts(docs), params);
  }

  /** Top-k rows by BM25F score (> 0) among rows allowed by `allow` (null = all), best first. */
  search(text: string, k: number, allow: Bitset | null): Hit[] {
    return this.searchWithAlso(text, k, allow, null, 0).hits;
  }

  /**
   * search() plus, from the same pass over the postings, the top `alsoK` rows among those `also`
   * admits (e.g. popular repositories): a second list best first, which may overlap the first.
   */
  searchWithAlso(text: string, k: number, allow: Bitset | null, also: Bitset | null, alsoK: number): { hits: Hit[]; also: Hit[] } {
    if (!Number.isInteger(k) || k < 0) throw new RangeError(`lexical search: k must be a non-negative integer, got ${k}`);
    if (allow !== null && allow.size !== this.docCount) {
      throw new RangeError(`lexical search: filter bitset has size ${allow.size}, index has ${this.docCount} rows`);
    }
    if (!Number.isInteger(alsoK) || alsoK < 0) throw new RangeError(`lexical search: alsoK must be a non-negative integer, got ${alsoK}`);
    if (also !== null && also.size !== this.docCount)
      throw new RangeError(`lexical search: second bitset has size ${also.size}, index has ${this.docCount} rows`);
    const none = { hits: [], also: [] };
    if ((k === 0 && alsoK === 0) || this.docCount === 0) return none;
    const qtf = queryTermWeights(text);
    if (qtf.size === 0) return none;

    const { postingStarts, docs } = this.p;
    const { acc, touched, impacts, docCount: n } = this;
    // Bitset contract: bit i is bit (i & 31) of words[i >>> 5]; read directly in the hot loop.
    const words = allow === null ? null : allow.words;
    let nt = 0;
    for (const [term, count] of qtf) {
      const t = this.lookup(term);
      if (t < 0) continue;
      const start = postingStarts[t]!;
      const end = postingStarts[t + 1]!;
      const df = end - start;
      const w = count * bm25Idf(n, df);
      for (let q = start; q < end; q++) {
        const d = docs[q]!;
        if (words !== null && ((words[d >>> 5]! >>> (d & 31)) & 1) === 0) continue;
        const x = impacts[q]!;
        if (x === 0) continue; // only fields weighted 0
        if (acc[d] === 0) touched[nt++] = d;
        acc[d]! += w * x;
      }
    }
    return this.topK(k, nt, also, alsoK);
  }

  /**
   * How `text` matches each of `rows`, field by field, for ranking features. Each field is scored as
   * BM25 on its own (weight 1, the field's b and average length, the index's k1), so a ranker can
   * learn what a match in the name, the description or the anchor text is worth; `coverage` is the
   * idf-weighted share of the query's terms found in any field. A row's postings are found by binary
   * search in each query term's list (ascending row ids): ~250 candidates cost a few thousand probes.
   */
  explain(text: string, rows: ArrayLike<number>): LexicalExplanation {
    const n = rows.length;
    const fields = new Float32Array(n * F);
    const coverage = new Float32Array(n);
    const terms: { readonly term: string; readonly idf: number }[] = [];
    const qtf = queryTermWeights(text);
    const found = new Uint8Array(n * qtf.size);
    let idfSum = 0;
    const { postingStarts, docs, tfs, lens } = this.p;
    const { k1, fields: fp } = this.params;
    const b = LEXICAL_FIELDS.map((f) => fp[f].b);
    for (const [term, count] of qtf) {
      const t = this.lookup(term);
      const df = t < 0 ? 0 : postingStarts[t + 1]! - postingStarts[t]!;
      const idf = bm25Idf(this.docCount, df);
      const ti = terms.length;
      terms.push({ term, idf });
      idfSum += idf;
      if (t < 0) continue;
      const start = postingStarts[t]!;
      const end = postingStarts[t + 1]!;
      for (let i = 0; i < n; i++) {
        const d = rows[i]!;
        let lo = start;
        let hi = end - 1;
        while (lo <= hi) {
          const mid = (lo + hi) >>> 1;
          const v = docs[mid]!;
          if (v < d) lo = mid + 1;
          else if (v > d) hi = mid - 1;
          else {
            lo = mid;
            break;
          }
        }
        if (lo >= end || docs[lo] !== d) continue;
        coverage[i]! += idf;
        found[i * qtf.size + ti] = 1;
        for (let f = 0; f < F; f++) {
          const tf = tfs[lo * F + f]!;
          if (tf > 0) fields[i * F + f]! += fieldTermScore(idf, count, tf, lens[d * F + f]!, this.avgLength[f]!, b[f]!, k1);
        }
      }
    }
    if (idfSum > 0) for (let i = 0; i < n; i++) coverage[i]! /= idfSum;
    return { fields, coverage, terms, found, docCount: this.docCount };
  }

  /** Collects the best k touched rows (and the best alsoK of those `also` admits) with bounded min-heaps, and clears the accumulator. */
  private topK(k: number, nt: number, also: Bitset | null, alsoK: number): { hits: Hit[]; also: Hit[] } {
    const { acc, touched } = this;
    // The root is the worst kept (lowest score; on ties the highest row, so results are stable).
    const heap = new MinHeap(Math.min(k, nt));
    const alsoWords = also === null || alsoK === 0 ? null : also.words;
    const alsoHeap = alsoWords === null ? null : new MinHeap(Math.min(alsoK, nt));
    for (let i = 0; i < nt; i++) {
      const d = touched[i]!;
      const s = acc[d]!;
      acc[d] = 0;
      if (k > 0) heap.offer(d, s, k);
      if (alsoWords !== null && ((alsoWords[d >>> 5]! >>> (d & 31)) & 1) !== 0) alsoHeap!.offer(d, s, alsoK);
    }
    return { hits: heap.drainHits(), also: alsoHeap?.drainHits() ?? [] };
  }

  /** Binary search in the sorted dictionary (sorted by JS string order, so probes are decoded). */
  private lookup(term: string): number {
    const { termOffsets, termBytes } = this.p;
    let lo = 0;
    let hi = this.termCount - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const probe = decoder.decode(termBytes.subarray(termOffsets[mid]!, termOffsets[mid + 1]!));
      if (probe < term) lo = mid + 1;
      else if (probe > term) hi = mid - 1;
      else return mid;
    }
    return -1;
  }

  /** Document frequency of an analysed term (0 when absent); for diagnostics and tests. */
  docFreq(term: string): number {
    const t = this.lookup(term);
    return t < 0 ? 0 : this.p.postingStarts[t + 1]! - this.p.postingStarts[t]!;
  }

  /** Binary form: magic "RSLX", format version, counts, params, then 8-aligned little-endian arrays. */
  serialize(): Uint8Array {
    assertLittleEndian();
    const { docCount, termOffsets, termBytes, postingStarts, docs, tfs, lens } = this.p;
    const L = layout(docCount, this.termCount, this.postingCount, termBytes.length);
    const out = new Uint8Array(L.total);
    const dv = new DataView(out.buffer);
    out.set(MAGIC, 0);
    dv.setUint32(4, LEXICAL_FORMAT_VERSION, true);
    dv.setUint32(8, F, true);
    dv.setUint32(12, docCount, true);
    dv.setUint32(16, this.termCount, true);
    dv.setUint32(20, this.postingCount, true);
    dv.setUint32(24, termBytes.length, true);
    let o = 32;
    dv.setFloat64(o, this.params.k1, true);
    for (const name of LEXICAL_FIELDS) {
      dv.setFloat64((o += 8), this.params.fields[name].weight, true);
      dv.setFloat64((o += 8), this.params.fields[name].b, true);
    }
    out.set(asBytes(termOffsets), L.termOffsets);
    out.set(asBytes(postingStarts), L.postingStarts);
    out.set(asBytes(docs), L.docs);
    out.set(asBytes(lens), L.lens);
    out.set(tfs, L.tfs);
    out.set(termBytes, L.termBytes);
    return out;
  }

  /**
   * Loads a serialized index as views over `bytes` (copied once only when misaligned), so the
   * caller must not modify `bytes` afterwards. `params` overrides the stored parameters.
   */
  static deserialize(bytes: Uint8Array, params?: LexicalParams): LexicalIndex {
    assertLittleEndian();
    const fail = (why: string): never => {
      throw new Error(`lexical index: cannot load (${why})`);
    };
    if (!(bytes instanceof Uint8Array) || bytes.length < HEADER_BYTES) fail("too short to hold a header");
    for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) fail("bad magic: not a lexical index");
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const version = dv.getUint32(4, true);
    if (version !== LEXICAL_FORMAT_VERSION) fail(`format version ${version}, expected ${LEXICAL_FORMAT_VERSION}; rebuild the index`);
    if (dv.getUint32(8, true) !== F) fail(`field count ${dv.getUint32(8, true)}, expected ${F}`);
    const docCount = dv.getUint32(12, true);
    const termCount = dv.getUint32(16, true);
    const postingCount = dv.getUint32(20, true);
    const termByteCount = dv.getUint32(24, true);
    const L = layout(docCount, termCount, postingCount, termByteCount);
    if (L.total !== bytes.length) fail(`length ${bytes.length}, header implies ${L.total}`);
    let o = 32;
    const k1 = dv.getFloat64(o, true);
    const fields = {} as Record<LexicalField, FieldParams>;
    for (const name of LEXICAL_FIELDS) fields[name] = { weight: dv.getFloat64((o += 8), true), b: dv.getFloat64((o += 8), true) };

    const buf = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
    const u32 = (off: number, len: number) => new Uint32Array(buf.buffer, buf.byteOffset + off, len);
    const parts: Parts = {
      docCount,
      termOffsets: u32(L.termOffsets, termCount + 1),
      postingStarts: u32(L.postingStarts, termCount + 1),
      docs: u32(L.docs, postingCount),
      lens: new Uint16Array(buf.buffer, buf.byteOffset + L.lens, docCount * F),
      tfs: buf.subarray(L.tfs, L.tfs + postingCount * F),
      termBytes: buf.subarray(L.termBytes, L.termBytes + termByteCount),
    };
    const problem = checkParts(parts);
    if (problem !== null) fail(problem);
    return new LexicalIndex(parts, params ?? { k1, fields });
  }
}

function validateParams(params: LexicalParams): void {
  const problems: string[] = [];
  if (!params || typeof params !== "object") throw new TypeError("lexical params: expected an object");
  if (!Number.isFinite(params.k1) || params.k1 < 0) problems.push(`k1 must be a finite number ≥ 0 (got ${params.k1})`);
  let anyWeight = false;
  for (const name of LEXICAL_FIELDS) {
    const fp = params.fields?.[name];
    if (!fp) {
      problems.push(`fields.${name} is missing`);
      continue;
    }
    if (!Number.isFinite(fp.weight) || fp.weight < 0) problems.push(`fields.${name}.weight must be finite and ≥ 0 (got ${fp.weight})`);
    if (!(fp.b >= 0 && fp.b <= 1)) problems.push(`fields.${name}.b must be in [0, 1] (got ${fp.b})`);
    if (fp.weight > 0) anyWeight = true;
  }
  if (!anyWeight && problems.length === 0) problems.push("at least one field weight must be > 0");
  if (problems.length > 0) throw new RangeError(`invalid lexical params: ${problems.join("; ")}`);
}

/** Average length of each field over the documents where it is non-empty (1 for a field never filled). */
function fieldAverages(p: Parts): Float64Array {
  const { lens, docCount: n } = p;
  const sum = new Float64Array(F);
  const nonEmpty = new Float64Array(F);
  for (let d = 0; d < n; d++) {
    for (let f = 0; f < F; f++) {
      const len = lens[d * F + f]!;
      if (len > 0) {
        sum[f]! += len;
        nonEmpty[f]!++;
      }
    }
  }
  return Float64Array.from(sum, (s, f) => (nonEmpty[f]! > 0 ? s / nonEmpty[f]! : 1));
}

function postingImpacts(p: Parts, params: LexicalParams, avg: Float64Array): Float32Array {
  const { lens, docCount: n, postingStarts, docs, tfs } = p;
  const w = LEXICAL_FIELDS.map((name) => params.fields[name].weight);
  const b = LEXICAL_FIELDS.map((name) => params.fields[name].b);
  // scale[d·F + f] = w_f / (1 − b_f + b_f · len / avg_f); an empty field has no postings.
  const scale = new Float32Array(n * F);
  for (let d = 0; d < n; d++) {
    for (let f = 0; f < F; f++) {
      const len = lens[d * F + f]!;
      scale[d * F + f] = len === 0 ? 0 : w[f]! / (1 - b[f]! + (b[f]! * len) / avg[f]!);
    }
  }
  const k1 = params.k1;
  const total = postingStarts[postingStarts.length - 1]!;
  const impacts = new Float32Array(total);
  for (let q = 0; q < total; q++) {
    const pb = q * F;
    const sb = docs[q]! * F;
    let tf = 0;
    for (let f = 0; f < F; f++) tf += tfs[pb + f]! * scale[sb + f]!;
    impacts[q] = tf > 0 ? (tf * (k1 + 1)) / (k1 + tf) : 0;
  }
  return impacts;
}

function buildParts(docs: readonly LexicalDoc[]): Parts {
  const n = docs.length;
  if (n >= 0xffffffff) throw new RangeError(`lexical index: too many documents (${n})`);
  const dict = new Map<string, number>();
  const terms: string[] = [];
  const lens = new Uint16Array(n * F);
  // Postings in document order: (term, doc, tf × F); regrouped by term at the end.
  let cap = 1 << 16;
  let pTerm = new Uint32Array(cap);
  let pDoc = new Uint32Array(cap);
  let pTf = new Uint8Array(cap * F);
  let count = 0;
  // Per-document scratch: term id → slot, and each slot's term and per-field tf.
  let slotOf = new Int32Array(1 << 16).fill(-1);
  let slotTerm = new Uint32Array(256);
  let slotTf = new Uint8Array(256 * F);

  for (let d = 0; d < n; d++) {
    const doc = docs[d]!;
    let slots = 0;
    for (let f = 0; f < F; f++) {
      const tokens = fieldTokens(doc, f);
      lens[d * F + f] = Math.min(tokens.length, 0xffff);
      for (const tok of tokens) {
        let t = dict.get(tok);
        if (t === undefined) {
          t = terms.length;
          dict.set(tok, t);
          terms.push(tok);
          if (t >= slotOf.length) {
            const grown = new Int32Array(slotOf.length * 2).fill(-1);
            grown.set(slotOf);
            slotOf = grown;
          }
        }
        let s = slotOf[t]!;
        if (s < 0) {
          s = slots++;
          if (s >= slotTerm.length) {
            slotTerm = growU32(slotTerm, slotTerm.length * 2);
            slotTf = growU8(slotTf, slotTerm.length * F);
          }
          slotOf[t] = s;
          slotTerm[s] = t;
          slotTf.fill(0, s * F, s * F + F);
        }
        const i = s * F + f;
        if (slotTf[i]! < 255) slotTf[i]!++;
      }
    }
    if (count + slots > cap) {
      while (count + slots > cap) cap *= 2;
      pTerm = growU32(pTerm, cap);
      pDoc = growU32(pDoc, cap);
      pTf = growU8(pTf, cap * F);
    }
    for (let s = 0; s < slots; s++) {
      const t = slotTerm[s]!;
      pTerm[count] = t;
      pDoc[count] = d;
      for (let f = 0; f < F; f++) pTf[count * F + f] = slotTf[s * F + f]!;
      slotOf[t] = -1;
      count++;
    }
  }

  // Sorted dictionary: rank[termId] = position in sorted order.
  const T = terms.length;
  const sorted = terms.slice().sort();
  const rank = new Uint32Array(T);
  for (let i = 0; i < T; i++) rank[dict.get(sorted[i]!)!] = i;
  const { termOffsets, termBytes } = encodeTerms(sorted);

  // Counting sort of postings by term rank; document order within a term is kept (ascending).
  const postingStarts = new Uint32Array(T + 1);
  for (let q = 0; q < count; q++) postingStarts[rank[pTerm[q]!]! + 1]!++;
  for (let t = 0; t < T; t++) postingStarts[t + 1]! += postingStarts[t]!;
  const fill = postingStarts.slice(0, T);
  const outDocs = new Uint32Array(count);
  const outTfs = new Uint8Array(count * F);
  for (let q = 0; q < count; q++) {
    const dst = fill[rank[pTerm[q]!]!]!++;
    outDocs[dst] = pDoc[q]!;
    for (let f = 0; f < F; f++) outTfs[dst * F + f] = pTf[q * F + f]!;
  }
  return { docCount: n, termOffsets, termBytes, postingStarts, docs: outDocs, tfs: outTfs, lens };
}

/** UTF-8 bytes of the sorted terms, back to back, with T + 1 offsets. Terms never contain "\n". */
function encodeTerms(sorted: readonly string[]): { termOffsets: Uint32Array; termBytes: Uint8Array } {
  const joined = new TextEncoder().encode(sorted.join("\n"));
  const termOffsets = new Uint32Array(sorted.length + 1);
  const termBytes = new Uint8Array(Math.max(0, joined.length - Math.max(0, sorted.length - 1)));
  let w = 0;
  let t = 0;
  for (let i = 0; i < joined.length; i++) {
    const c = joined[i]!;
    if (c === 10) termOffsets[++t] = w;
    else termBytes[w++] = c;
  }
  if (sorted.length > 0) termOffsets[sorted.length] = w;
  return { termOffsets, termBytes };
}

function checkParts(p: Parts): string | null {
  const T = p.termOffsets.length - 1;
  if (p.termOffsets[0] !== 0 || p.termOffsets[T] !== p.termBytes.length) return "term offsets do not span the dictionary";
  if (p.postingStarts[0] !== 0 || p.postingStarts[T] !== p.docs.length) return "posting starts do not span the postings";
  for (let t = 0; t < T; t++) {
    if (p.termOffsets[t + 1]! <= p.termOffsets[t]!) return `term ${t} is empty or out of order`;
    const start = p.postingStarts[t]!;
    const end = p.postingStarts[t + 1]!;
    if (end <= start) return `term ${t} has no postings`;
    let prev = -1;
    for (let q = start; q < end; q++) {
      const d = p.docs[q]!;
      if (d <= prev || d >= p.docCount) return `postings of term ${t} are not ascending row ids below ${p.docCount}`;
      prev = d;
    }
  }
  return null;
}

function layout(n: number, terms: number, postings: number, termBytes: number) {
  const align8 = (x: number) => Math.ceil(x / 8) * 8;
  let o = HEADER_BYTES;
  const termOffsets = o;
  o = align8(o + 4 * (terms + 1));
  const postingStarts = o;
  o = align8(o + 4 * (terms + 1));
  const docs = o;
  o = align8(o + 4 * postings);
  const lens = o;
  o = align8(o + 2 * n * F);
  const tfs = o;
  o = align8(o + postings * F);
  const termBytesAt = o;
  o = align8(o + termBytes);
  return { termOffsets, postingStarts, docs, lens, tfs, termBytes: termBytesAt, total: o };
}

function asBytes(a: Uint32Array | Uint16Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function growU32(a: Uint32Array, size: number): Uint32Array<ArrayBuffer> {
  const b = new Uint32Array(size);
  b.set(a);
  return b;
}

function growU8(a: Uint8Array, size: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(size);
  b.set(a);
  return b;
}

function assertLittleEndian(): void {
  // The binary form is little-endian and loaded as native typed-array views.
  if (!LITTLE_ENDIAN) throw new Error("lexical index: big-endian platforms are not supported");
}

/**
 * The format version in a serialised index's header, or null when the bytes are not a lexical index.
 * A segment whose index is of an older version (another analyzer) re-analyses its payloads instead of
 * refusing to load (segment.ts).
 */
export function lexicalFormatOf(bytes: Uint8Array): number | null {
  if (!(bytes instanceof Uint8Array) || bytes.length < HEADER_BYTES) return null;
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) return null;
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4, true);
}
