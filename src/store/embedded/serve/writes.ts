/**
 * store serve's writes. Every upsert/delete request is a durable checkpoint staged for its writer (header
 * `x-reposearch-writer`; one embedded writer, with its own staging directory, per writer id). A writer's
 * work is published atomically when it commits, which QdrantStore does by upserting the meta point of
 * `<collection>_meta`: here that request is the commit. Each writer slot mirrors its staged payloads (the
 * overlay), so a scroll with the writer header can show that writer's staged work, which is what lets a
 * killed indexer resume.
 */
import { readdir, readFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import type { Logger } from "../../../common/logger.js";
import type { RepoPayload } from "../../../dataset/record.js";
import { EMBEDDER_HEADER, WRITER_HEADER } from "../../qdrant/store.js";
import type { PointId, StoreWriter } from "../../types.js";
import type { EmbeddedStore } from "../store.js";
import { decodeChunk } from "../writer.js";
import { type CollectionContext, type CollectionState, currentState, forgetState } from "./collection.js";
import { badRequest, headerValue } from "./http.js";
import { parsePoint, pointId } from "./parse.js";

/** Writer id of requests that carry no writer header (plain Qdrant clients). */
export const DEFAULT_WRITER_ID = "store-serve";

const CHUNK_RE = /^(\d{6,})\.chunk$/;

export interface WriterSlot {
  readonly id: string;
  readonly dims: number;
  readonly embedderId: string;
  readonly writer: StoreWriter;
  /** Payloads of this writer's staged operations (null for a delete), mirroring its checkpoints. */
  readonly overlay: Map<PointId, RepoPayload | null>;
  /** Serialises this writer's requests, so the overlay follows the checkpoint order. */
  tail: Promise<unknown>;
  /** Bumped on every staged change; invalidates `view`. */
  ops: number;
  view: { readonly ops: number; readonly base: string | null; readonly ids: string[]; readonly hashes: Map<PointId, string> } | null;
}

/** What the write functions share with the server. */
export interface WriteContext {
  readonly store: EmbeddedStore;
  readonly log: Logger;
  /** The open writers by writer id (a promise while one opens). */
  readonly slots: Map<string, Promise<WriterSlot>>;
}

/** PUT /collections/{collection}/points: stages the points for the request's writer. */
export async function upsert(ctx: WriteContext, state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<void> {
  if (!Array.isArray(body.points)) throw badRequest('store serve accepts upserts in the `points` form ({"points": [{id, vector, payload}]})');
  const raw: unknown[] = body.points;
  const points = raw.map((p, i) => parsePoint(state, p, i));
  const slot = await writerFor(ctx, state, req);
  await exclusive(slot, async () => {
    await slot.writer.upsert(points);
    for (const p of points) slot.overlay.set(p.id, p.payload);
    slot.ops++;
  });
}

/** POST /collections/{collection}/points/delete: stages the deletion of the ids for the request's writer. */
export async function deletePoints(ctx: WriteContext, state: CollectionState, body: Record<string, unknown>, req: IncomingMessage): Promise<void> {
  if (!Array.isArray(body.points)) throw badRequest('store serve deletes by ids only ({"points": [ids]})');
  const raw: unknown[] = body.points;
  const ids = raw.map((x, i) => pointId(x, `points[${i}]`));
  const slot = await writerFor(ctx, state, req);
  await exclusive(slot, async () => {
    await slot.writer.delete(ids);
    for (const id of ids) slot.overlay.set(id, null);
    slot.ops++;
  });
}

/** PUT /collections/{meta}/points: publishes the request's writer's staged work. */
export async function commit(ctx: WriteContext, state: CollectionState, req: IncomingMessage): Promise<void> {
  const slot = await writerFor(ctx, state, req);
  const result = await exclusive(slot, async () => {
    const r = await slot.writer.commit();
    slot.overlay.clear();
    slot.ops++;
    return r;
  });
  ctx.log.info(result.published ? "published" : "nothing to publish", { writerId: slot.id, ...result });
}

/** DELETE /collections/{collection}: drops staged work and publishes an empty version (readers following CURRENT see the drop too). */
export async function deleteCollection(ctx: WriteContext & CollectionContext): Promise<boolean> {
  const state = await currentState(ctx);
  if (state === null) return false;
  for (const [id, slot] of [...ctx.slots]) {
    ctx.slots.delete(id);
    await (await slot.catch(() => null))?.writer.abort();
  }
  const info = await ctx.store.info();
  const seg = ctx.store.currentSegment();
  if (seg && info.count > 0 && info.embedderId) {
    const w = await ctx.store.openWriter({ writerId: `${DEFAULT_WRITER_ID}-drop`, dims: info.dims, embedderId: info.embedderId });
    await w.delete(seg.ids);
    await w.commit();
  }
  await forgetState(ctx);
  ctx.log.info("collection deleted", { points: info.count });
  return true;
}

/** The writer of a request: one embedded writer (own staging directory) per `x-reposearch-writer`. */
export async function writerFor(ctx: WriteContext, state: CollectionState, req: IncomingMessage): Promise<WriterSlot> {
  const id = headerValue(req, WRITER_HEADER) ?? DEFAULT_WRITER_ID;
  const embedderHeader = headerValue(req, EMBEDDER_HEADER);
  let embedderId: string;
  try {
    embedderId = embedderHeader !== null ? decodeURIComponent(embedderHeader) : ((await ctx.store.info()).embedderId ?? DEFAULT_WRITER_ID);
  } catch {
    throw badRequest(`${EMBEDDER_HEADER} must be URI-encoded`);
  }
  const existing = ctx.slots.get(id);
  if (existing) {
    const slot = await existing.catch(() => null);
    if (slot && slot.dims === state.dims && slot.embedderId === embedderId) return slot;
    if (ctx.slots.get(id) === existing) ctx.slots.delete(id);
    else return writerFor(ctx, state, req); // another request replaced it meanwhile
  }
  const opening = openSlot(ctx, id, state.dims, embedderId);
  ctx.slots.set(id, opening);
  opening.catch(() => {
    if (ctx.slots.get(id) === opening) ctx.slots.delete(id);
  });
  return opening;
}

async function openSlot(ctx: WriteContext, id: string, dims: number, embedderId: string): Promise<WriterSlot> {
  // Opening recovers the writer's checkpoints (dropping damaged ones, or all of them for another embedder).
  const writer = await ctx.store.openWriter({ writerId: id, dims, embedderId });
  const overlay = new Map<PointId, RepoPayload | null>();
  // Rebuild the staged payloads from the same checkpoints, so a restarted server still serves them to scroll.
  const dir = ctx.store.dir.writerDir(id);
  const chunks = (await readdir(dir).catch(() => [] as string[])).filter((n) => CHUNK_RE.test(n)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  for (const name of chunks) {
    const op = decodeChunk(await readFile(path.join(dir, name)));
    if (typeof op === "string") break;
    op.ids.forEach((pid, i) => overlay.set(pid, op.kind === "upsert" ? op.payloads[i]! : null));
  }
  if (overlay.size) ctx.log.info("writer resumed from checkpoints", { writerId: id, staged: overlay.size });
  return { id, dims, embedderId, writer, overlay, tail: Promise.resolve(), ops: 0, view: null };
}

/** Runs fn after the slot's earlier requests (whether they failed or not). */
export function exclusive<T>(slot: WriterSlot, fn: () => Promise<T>): Promise<T> {
  const next = slot.tail.then(fn, fn);
  slot.tail = next.catch(() => undefined);
  return next;
}
