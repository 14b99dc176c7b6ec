/**
 * store serve's reads: retrieve, scroll, count and query see only the published version. Scroll with a
 * writer header sees that writer's staged work too (its own view, in id order), which is what lets a killed
 * indexer resume. The meta point is derived from the published version.
 */
import type { IncomingMessage } from "node:http";
import type { Logger } from "../../../common/logger.js";
import type { RepoPayload } from "../../../dataset/record.js";
import type { Filter } from "../../filter.js";
import { lexicalDocVector, SPARSE_LEXICAL_FORMAT, sparseVectorProblem, type SparseVector } from "../../qdrant/sparse.js";
import { META_POINT_ID, WRITER_HEADER } from "../../qdrant/store.js";
import { topRowsBy, type PointId } from "../../types.js";
import { lexicalDocOf } from "../lexical.js";
import type { Segment } from "../segment.js";
import type { EmbeddedStore } from "../store.js";
import type { CollectionState } from "./collection.js";
import { badRequest, headerValue, isRecord } from "./http.js";
import { denseVector, optionalFilter, pointId, project, vectorNames } from "./parse.js";
import { SparseIndex } from "./sparse-index.js";
import { exclusive, writerFor, type WriteContext } from "./writes.js";

/** What the read functions share with the server: the store and the per-version caches. */
export interface ReadContext {
  readonly store: EmbeddedStore;
  readonly log: Logger;
  /** Rows of a version in id order, for scroll. */
  readonly sortedRows: WeakMap<Segment, Uint32Array>;
  readonly sparseIndexes: WeakMap<Segment, SparseIndex>;
}

/** POST /collections/{collection}/points: the published points of the ids, each once. */
export function retrievePoints(ctx: ReadContext, state: CollectionState, body: Record<string, unknown>): unknown[] {
  if (!Array.isArray(body.ids)) throw badRequest("ids must be an array of point ids");
  const raw: unknown[] = body.ids;
  const ids = raw.map((x, i) => pointId(x, `ids[${i}]`));
  const seg = ctx.store.currentSegment();
  const out: unknown[] = [];
  if (!seg) return out;
  for (const id of new Set(ids)) {
    const row = seg.rowOf(id);
    if (row !== undefined) out.push(record(state, seg, row, body.with_payload ?? true, body.with_vector ?? false));
  }
  return out;
}

/**
 * POST /collections/{collection}/points/scroll: points in id order (Qdrant's), from `offset` on. Published
 * points, or with a writer header, that writer's view. With `order_by` (a numeric payload key, or
 * `{key, direction}`): one page ordered by that field, points without it left out, as Qdrant does.
 */
export async function scroll(ctx: ReadContext & WriteContext, state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<unknown> {
  const limit = body.limit ?? 10;
  if (!Number.isInteger(limit) || (limit as number) < 1) throw badRequest(`limit must be a positive integer (got ${JSON.stringify(limit)})`);
  const offset = body.offset === undefined || body.offset === null ? null : pointId(body.offset, "offset");
  const withPayload = body.with_payload ?? true;
  const seg = ctx.store.currentSegment();
  if (headerValue(req, WRITER_HEADER) !== null) return scrollWriterView(ctx, state, body, req, limit as number, offset, withPayload);

  if (!seg) return { points: [], next_page_offset: null };
  const allow = seg.payloadIndex.evaluate(optionalFilter(body.filter));
  if (body.order_by !== undefined && body.order_by !== null) {
    const { key, descending } = orderByOf(body.order_by);
    const rows: number[] = [];
    if (allow) allow.forEach((row) => rows.push(row));
    else for (let row = 0; row < seg.count; row++) rows.push(row);
    const valueOf = (row: number): number | null => {
      const v = (seg.payloads[row] as unknown as Record<string, unknown>)[key];
      return typeof v === "number" ? (descending ? v : -v) : null;
    };
    const points = topRowsBy(rows, valueOf, limit as number).map((row) => record(state, seg, row, withPayload, body.with_vector ?? false));
    return { points, next_page_offset: null };
  }
  const order = sortedRowsOf(ctx, seg);
  let i = offset === null ? 0 : lowerBound(order.length, (k) => seg.ids[order[k]!]! < offset);
  const points: unknown[] = [];
  for (; i < order.length; i++) {
    const row = order[i]!;
    if (allow !== null && !allow.has(row)) continue;
    if (points.length === limit) return { points, next_page_offset: seg.ids[row] };
    points.push(record(state, seg, row, withPayload, body.with_vector ?? false));
  }
  return { points, next_page_offset: null };
}

/** Qdrant's order_by: a key, or `{key, direction}` with direction "asc" (the default) or "desc"; no start_from here. */
function orderByOf(o: unknown): { key: string; descending: boolean } {
  if (typeof o === "string" && o !== "") return { key: o, descending: false };
  if (isRecord(o) && typeof o.key === "string" && o.key !== "" && (o.direction === undefined || o.direction === "asc" || o.direction === "desc")) {
    if (o.start_from !== undefined && o.start_from !== null) throw badRequest("store serve does not support order_by.start_from");
    return { key: o.key, descending: o.direction === "desc" };
  }
  throw badRequest('order_by must be a payload key or {"key", "direction": "asc" | "desc"}');
}

/** The writer's view: the published points plus its staged work, with payloads (no vectors), unfiltered. */
async function scrollWriterView(
  ctx: ReadContext & WriteContext,
  state: CollectionState,
  body: Record<string, unknown>,
  req: IncomingMessage,
  limit: number,
  offset: string | null,
  withPayload: unknown,
): Promise<unknown> {
  if (body.filter !== undefined && body.filter !== null) throw badRequest("a scroll with a writer header (the writer's staged view) takes no filter");
  if (body.with_vector !== undefined && body.with_vector !== false)
    throw badRequest("a scroll with a writer header (the writer's staged view) returns no vectors");
  const slot = await writerFor(ctx, state, req);
  const view = await exclusive(slot, async () => {
    const base = ctx.store.currentSegment()?.version ?? null;
    if (slot.view?.ops !== slot.ops || slot.view.base !== base) {
      const hashes = await slot.writer.hashes();
      slot.view = { ops: slot.ops, base, ids: [...hashes.keys()].sort(), hashes };
    }
    return slot.view;
  });
  const seg = ctx.store.currentSegment();
  let i = offset === null ? 0 : lowerBound(view.ids.length, (k) => view.ids[k]! < offset);
  const points: unknown[] = [];
  for (; i < view.ids.length; i++) {
    const id = view.ids[i]!;
    if (points.length === limit) return { points, next_page_offset: id };
    const hash = view.hashes.get(id)!;
    const row = seg?.rowOf(id);
    const staged = slot.overlay.get(id);
    const payload =
      row !== undefined && seg!.payloads[row]!.hash === hash
        ? seg!.payloads[row]!
        : staged && staged.hash === hash
          ? staged
          : ({ hash } as unknown as RepoPayload);
    points.push({ id, payload: project(payload, withPayload) });
  }
  return { points, next_page_offset: null };
}

/** POST /collections/{collection}/points/count: the published points the filter admits. */
export async function countPoints(ctx: ReadContext, body: Record<string, unknown>): Promise<unknown> {
  return { count: await ctx.store.count(optionalFilter(body.filter)) };
}

/** POST /collections/{collection}/points/query: nearest neighbours of a dense vector or a sparse one. */
export async function query(ctx: ReadContext, state: CollectionState, body: Record<string, unknown>): Promise<unknown> {
  let q = body.query;
  if (isRecord(q) && "nearest" in q) q = q.nearest;
  const limit = body.limit ?? 10;
  const offset = body.offset ?? 0;
  if (!Number.isInteger(limit) || (limit as number) < 0) throw badRequest(`limit must be a non-negative integer (got ${JSON.stringify(limit)})`);
  if (!Number.isInteger(offset) || (offset as number) < 0) throw badRequest(`offset must be a non-negative integer (got ${JSON.stringify(offset)})`);
  if (body.prefetch !== undefined && body.prefetch !== null) throw badRequest("store serve does not support prefetch (hybrid) queries");
  const k = (limit as number) + (offset as number);
  const filter = optionalFilter(body.filter);
  const using = body.using ?? null;
  const params = isRecord(body.params) ? body.params : {};
  let hits: { id: PointId; score: number }[];
  if (Array.isArray(q)) {
    if (using !== state.vectorName) throw badRequest(`dense queries must say \`"using": "${state.vectorName}"\` (got ${JSON.stringify(using)})`);
    const vector = denseVector(q, state.dims, "query");
    const ef = params.hnsw_ef ?? undefined;
    if (ef !== undefined && (!Number.isInteger(ef) || (ef as number) < 1))
      throw badRequest(`params.hnsw_ef must be a positive integer (got ${JSON.stringify(ef)})`);
    hits = await ctx.store.denseSearch({ vector, filter, limit: k, ef: ef as number | undefined, exact: params.exact === true });
  } else if (isRecord(q) && "indices" in q) {
    if (state.sparseName === null || using !== state.sparseName)
      throw badRequest(`sparse queries must say \`"using": "${state.sparseName}"\` (got ${JSON.stringify(using)})`);
    const problem = sparseVectorProblem(q);
    if (problem) throw badRequest(`query: ${problem}`);
    hits = await sparseSearch(ctx, q as unknown as SparseVector, filter, k);
  } else {
    throw badRequest("store serve answers nearest-neighbour queries only: a dense vector or a sparse {indices, values}");
  }
  const threshold = typeof body.score_threshold === "number" ? body.score_threshold : null;
  const seg = ctx.store.currentSegment();
  const points = hits
    .slice(offset as number)
    .filter((h) => threshold === null || h.score >= threshold)
    .map((h) => {
      const row = seg?.rowOf(h.id);
      const rec = row === undefined || !seg ? { id: h.id } : record(state, seg, row, body.with_payload ?? false, body.with_vector ?? false);
      return { ...rec, version: 0, score: h.score };
    });
  return { points };
}

/** Qdrant's sparse search with the idf modifier: Σ q_i · idf_i · d_i over the published points. */
async function sparseSearch(ctx: ReadContext, q: SparseVector, filter: Filter | undefined, k: number): Promise<{ id: PointId; score: number }[]> {
  const seg = ctx.store.currentSegment();
  if (!seg) {
    await ctx.store.count(filter); // a bad filter fails the same way on an empty store
    return [];
  }
  const allow = seg.payloadIndex.evaluate(filter);
  if (k === 0) return [];
  let index = ctx.sparseIndexes.get(seg);
  if (!index) {
    const started = performance.now();
    index = SparseIndex.build(seg.payloads);
    ctx.sparseIndexes.set(seg, index);
    ctx.log.info("sparse index built", { version: seg.version, points: seg.count, ms: Math.round(performance.now() - started) });
  }
  return index.search(q, allow, k).map((h) => ({ id: seg.ids[h.row]!, score: h.score }));
}

/** The meta point QdrantStore reads, derived from the published version (null: none published). */
export async function metaPoint(store: EmbeddedStore): Promise<Record<string, unknown> | null> {
  const info = await store.info();
  if (info.version === null) return null;
  const payload = {
    version: info.version,
    embedderId: info.embedderId,
    dims: info.dims,
    publishedAt: info.publishedAt,
    count: info.count,
    lexical: SPARSE_LEXICAL_FORMAT,
  };
  return { id: META_POINT_ID, payload };
}

/** A point as Qdrant returns it: id, the selected payload and the selected vectors (the lexical one derived). */
function record(state: CollectionState, seg: Segment, row: number, withPayload: unknown, withVector: unknown): Record<string, unknown> {
  const rec: Record<string, unknown> = { id: seg.ids[row], payload: project(seg.payloads[row]!, withPayload) };
  const names = vectorNames(withVector, state);
  if (names.length) {
    const vector: Record<string, unknown> = {};
    for (const name of names) {
      if (name === state.vectorName) vector[name] = Array.from(seg.vectorOf(row));
      else if (name === state.sparseName) vector[name] = lexicalDocVector(lexicalDocOf(seg.payloads[row]!));
    }
    rec.vector = vector;
  }
  return rec;
}

function sortedRowsOf(ctx: ReadContext, seg: Segment): Uint32Array {
  let order = ctx.sortedRows.get(seg);
  if (!order) {
    // Canonical lowercase UUID strings sort like Qdrant's 128-bit ids.
    const rows = Array.from({ length: seg.count }, (_, i) => i).sort((a, b) => (seg.ids[a]! < seg.ids[b]! ? -1 : seg.ids[a]! > seg.ids[b]! ? 1 : 0));
    order = Uint32Array.from(rows);
    ctx.sortedRows.set(seg, order);
  }
  return order;
}

/** The first i in [0, n) for which before(i) is false (before is true on a prefix). */
function lowerBound(n: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
