/**
 * First-run serving: a read-only, in-memory, lexical-only store built straight from the dataset in
 * seconds (read, normalise, rule-based categories, BM25F, payload index; no embedding, no graph), so
 * `npm start` answers searches while the full index is still being built. FallbackStore serves it
 * until the real store publishes a version, then switches for good.
 */
import { createClassifier } from "../../classify/classifier.js";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { pointIdFor } from "../../common/hash.js";
import type { Logger } from "../../common/logger.js";
import { readUniqueRecords } from "../../dataset/reader.js";
import type { RepoPayload } from "../../dataset/record.js";
import { evidenceOf, prepareCorpus, toPayload } from "../../corpus/prepare.js";
import { LexicalIndex, lexicalDocOf } from "./lexical.js";
import { PayloadIndex } from "./payload-index.js";
import type { Filter } from "../filter.js";
import { explainRows } from "./explain.js";
import { Bitset } from "./bitset.js";
import {
  appendPopular,
  checkPopular,
  topRowsBy,
  withCondition,
  type DenseQuery,
  type Explanation,
  type ExplainQuery,
  type LexicalQuery,
  type PointId,
  type ScoredPoint,
  type ScrollQuery,
  type StoredPoint,
  type StoreInfo,
  type StoreWriter,
  type VectorStore,
} from "../types.js";

export const BOOTSTRAP_VERSION = "bootstrap";

export class BootstrapStore implements VectorStore {
  readonly local = true;
  /** An in-memory index of one dataset: no versions to follow. */
  watch(): void {}
  private readonly rowById: Map<PointId, number>;

  private constructor(
    private readonly ids: readonly PointId[],
    private readonly payloads: readonly RepoPayload[],
    private readonly lexical: LexicalIndex | null,
    private readonly payloadIndex: PayloadIndex,
    private readonly builtAt: string,
  ) {
    this.rowById = new Map(ids.map((id, i) => [id, i]));
  }

  /** Reads the dataset (newest duplicate wins, one record per project) and builds the lexical and payload indexes. */
  static async build(dataset: string, opts: { logger?: Logger; limit?: number } = {}): Promise<BootstrapStore> {
    const t0 = performance.now();
    const { records } = await readUniqueRecords(dataset, { limit: opts.limit });
    // Rules only: the embedding-based half of the classifier needs the model the full build distils.
    const classifier = await createClassifier();
    const corpus = prepareCorpus(records);
    const ids: PointId[] = [];
    const payloads: RepoPayload[] = [];
    for (const r of corpus.records) {
      ids.push(pointIdFor(r.key));
      payloads.push(toPayload(r, evidenceOf(corpus, r.key), classifier.classify(r).category, ""));
    }
    const lexical = payloads.length ? LexicalIndex.build(payloads.map(lexicalDocOf)) : null;
    const payloadIndex = PayloadIndex.build(ids, payloads);
    opts.logger?.info("bootstrap lexical index built", { repositories: payloads.length, seconds: Math.round(performance.now() - t0) / 1000 });
    return new BootstrapStore(ids, payloads, lexical, payloadIndex, new Date().toISOString());
  }

  async info(): Promise<StoreInfo> {
    return { version: BOOTSTRAP_VERSION, count: this.ids.length, dims: 0, embedderId: null, publishedAt: this.builtAt };
  }

  async denseSearch(q: DenseQuery): Promise<ScoredPoint[]> {
    this.payloadIndex.evaluate(q.filter); // validates the filter like the real stores do
    return [];
  }

  async lexicalSearch(q: LexicalQuery): Promise<ScoredPoint[]> {
    const allow = this.payloadIndex.evaluate(q.filter);
    const popular = q.popular ? checkPopular(q.popular) : null;
    if (!this.lexical || (q.limit <= 0 && !popular) || q.text.trim() === "") return [];
    const toScored = (hits: readonly { idx: number; score: number }[]) =>
      hits.map((h) => ({ id: this.ids[h.idx]!, score: h.score, payload: this.payloads[h.idx]! }));
    if (!popular) return toScored(this.lexical.search(q.text, q.limit, allow));
    const also = this.payloadIndex.evaluate(withCondition(q.filter, { key: "stars", range: { gte: popular.minStars } })) ?? Bitset.full(this.ids.length);
    const res = this.lexical.searchWithAlso(q.text, Math.max(0, q.limit), allow, also, popular.limit);
    return appendPopular(toScored(res.hits), toScored(res.also));
  }

  async count(filter?: Filter): Promise<number> {
    const allow = this.payloadIndex.evaluate(filter);
    return allow === null ? this.ids.length : allow.count();
  }

  async retrieve(ids: readonly PointId[]): Promise<(RepoPayload | null)[]> {
    return ids.map((id) => {
      const row = this.rowById.get(id);
      return row === undefined ? null : this.payloads[row]!;
    });
  }

  async explain(q: ExplainQuery): Promise<Explanation> {
    return explainRows({ lexical: this.lexical, vectors: null, dims: 0, rowOf: (id) => this.rowById.get(id) }, q);
  }

  /** No vectors here (lexical only): `vector` is always null. */
  async scroll(q: ScrollQuery): Promise<StoredPoint[]> {
    const allow = this.payloadIndex.evaluate(q.filter);
    const rows: number[] = [];
    if (allow) allow.forEach((row) => rows.push(row));
    else for (let row = 0; row < this.ids.length; row++) rows.push(row);
    const picked = q.orderBy === "stars" ? topRowsBy(rows, (row) => this.payloads[row]!.stars, q.limit) : rows.slice(0, Math.max(0, q.limit));
    return picked.map((row) => ({ id: this.ids[row]!, payload: this.payloads[row]!, vector: null }));
  }

  async openWriter(): Promise<StoreWriter> {
    throw new ReposearchError(ErrorCode.Internal, "the bootstrap store is read-only");
  }

  async close(): Promise<void> {}
}

/** Serves `fallback` until `primary` has a published version, then `primary` only (and drops the fallback). */
export class FallbackStore implements VectorStore {
  private fallback: VectorStore | null;

  constructor(
    private readonly primary: VectorStore,
    fallback: VectorStore,
    private readonly onSwitch?: () => void,
  ) {
    this.fallback = fallback;
  }

  get local(): boolean {
    return this.primary.local;
  }

  watch(intervalMs: number): void {
    this.primary.watch(intervalMs);
  }

  private async current(): Promise<VectorStore> {
    if (this.fallback === null) return this.primary;
    if ((await this.primary.info()).version === null) return this.fallback;
    const old = this.fallback;
    this.fallback = null;
    this.onSwitch?.();
    await old.close();
    return this.primary;
  }

  async info(): Promise<StoreInfo> {
    return (await this.current()).info();
  }
  async denseSearch(q: DenseQuery): Promise<ScoredPoint[]> {
    return (await this.current()).denseSearch(q);
  }
  async lexicalSearch(q: LexicalQuery): Promise<ScoredPoint[]> {
    return (await this.current()).lexicalSearch(q);
  }
  async count(filter?: Filter): Promise<number> {
    return (await this.current()).count(filter);
  }
  async retrieve(ids: readonly PointId[]): Promise<(RepoPayload | null)[]> {
    return (await this.current()).retrieve(ids);
  }
  async explain(q: ExplainQuery): Promise<Explanation> {
    return (await this.current()).explain(q);
  }
  async scroll(q: ScrollQuery): Promise<StoredPoint[]> {
    return (await this.current()).scroll(q);
  }
  openWriter(opts: { writerId: string; dims: number; embedderId: string }): Promise<StoreWriter> {
    return this.primary.openWriter(opts);
  }
  async close(): Promise<void> {
    await this.fallback?.close();
    await this.primary.close();
  }
}
