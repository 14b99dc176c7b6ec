/**
 * The one collection store serve serves: what its create request asked for (kept in
 * `<dataDir>/store-serve.json` so it survives restarts), or, without one, what a non-empty published index
 * implies; and the collection info Qdrant reports for it and for its meta collection.
 */
import { rm } from "node:fs/promises";
import { readFileIfExists, writeFileAtomic } from "../fsutil.js";
import type { EmbeddedStore } from "../store.js";
import type { Logger } from "../../../common/logger.js";
import { DENSE_VECTOR, LEXICAL_VECTOR } from "../../qdrant/store.js";
import { badRequest, HttpError, isRecord } from "./http.js";

/** What a create request asked for, kept in `<dataDir>/store-serve.json` so the collection survives restarts. */
export interface CollectionState {
  readonly collection: string;
  readonly vectorName: string;
  readonly dims: number;
  readonly sparseName: string | null;
  /** Recorded and reported; the embedded store builds its graph with its own configuration. */
  readonly hnswConfig: Record<string, unknown> | null;
  readonly quantizationConfig: Record<string, unknown> | null;
  readonly payloadIndexes: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
}

/** What the collection functions share with the server. */
export interface CollectionContext {
  readonly store: EmbeddedStore;
  /** The served collection's name. */
  readonly collection: string;
  /** Where the created collection's state is kept. */
  readonly stateFile: string;
  readonly log: Logger;
  /** The created collection (null: none was created, or it was deleted). */
  state: CollectionState | null;
}

/** The state file's collection, if it is this collection's. */
export async function loadState(ctx: CollectionContext): Promise<CollectionState | null> {
  const buf = await readFileIfExists(ctx.stateFile);
  if (buf === null) return null;
  const s: unknown = JSON.parse(buf.toString("utf8"));
  if (!isRecord(s) || s.collection !== ctx.collection || typeof s.vectorName !== "string" || typeof s.dims !== "number") return null;
  return s as unknown as CollectionState;
}

async function saveState(ctx: CollectionContext, state: CollectionState): Promise<void> {
  await writeFileAtomic(ctx.stateFile, JSON.stringify(state, null, 2) + "\n");
  ctx.state = state;
}

/** Forgets the created collection (its state file too). */
export async function forgetState(ctx: CollectionContext): Promise<void> {
  ctx.state = null;
  await rm(ctx.stateFile, { force: true });
}

/**
 * The collection exists once created, or when the data dir already holds a non-empty published index
 * (built by `reposearch index` on the embedded store): it is then served with reposearch's vector names.
 */
export async function currentState(ctx: CollectionContext): Promise<CollectionState | null> {
  if (ctx.state) return ctx.state;
  const info = await ctx.store.info();
  if (info.version === null || info.count === 0) return null;
  return {
    collection: ctx.collection,
    vectorName: DENSE_VECTOR,
    dims: info.dims,
    sparseName: LEXICAL_VECTOR,
    hnswConfig: null,
    quantizationConfig: null,
    payloadIndexes: {},
    createdAt: info.publishedAt ?? new Date().toISOString(),
  };
}

/** PUT /collections/{collection}: exactly one named Cosine dense vector, at most one sparse vector with the idf modifier. */
export async function createCollection(ctx: CollectionContext, body: Record<string, unknown>): Promise<boolean> {
  if (await currentState(ctx)) throw new HttpError(409, `Wrong input: Collection \`${ctx.collection}\` already exists!`);
  const vectors = body.vectors;
  const named = isRecord(vectors) && !("size" in vectors) ? Object.entries(vectors) : [];
  const [vectorName, params] = named.length === 1 ? named[0]! : [null, null];
  if (vectorName === null || !isRecord(params))
    throw badRequest('store serve needs exactly one named dense vector, e.g. {"vectors": {"dense": {"size": 256, "distance": "Cosine"}}}');
  if (!Number.isInteger(params.size) || (params.size as number) < 1 || (params.size as number) > 65_536)
    throw badRequest(`vector size must be a positive integer (got ${JSON.stringify(params.size)})`);
  if (params.distance !== "Cosine") throw badRequest(`store serve supports distance Cosine only (got ${JSON.stringify(params.distance)})`);
  const sparse = isRecord(body.sparse_vectors) ? Object.entries(body.sparse_vectors) : [];
  if (sparse.length > 1) throw badRequest("store serve supports at most one sparse vector");
  const sparseEntry = sparse[0];
  if (sparseEntry && (!isRecord(sparseEntry[1]) || sparseEntry[1].modifier !== "idf"))
    throw badRequest(`sparse vector \`${sparseEntry[0]}\` must use {"modifier": "idf"}`);
  const dims = params.size as number;
  const published = await ctx.store.info();
  if (published.version !== null && published.count > 0 && published.dims !== dims) {
    throw badRequest(`the data dir's index holds ${published.dims}-dimensional vectors, not ${dims}`);
  }
  const state: CollectionState = {
    collection: ctx.collection,
    vectorName,
    dims,
    sparseName: sparseEntry ? sparseEntry[0] : null,
    hnswConfig: isRecord(body.hnsw_config) ? body.hnsw_config : null,
    quantizationConfig: isRecord(body.quantization_config) ? body.quantization_config : null,
    payloadIndexes: {},
    createdAt: new Date().toISOString(),
  };
  await saveState(ctx, state);
  ctx.log.info("collection created", { vectorName, dims, sparse: state.sparseName });
  return true;
}

/** PUT /collections/{collection}/index: acknowledged and recorded only (the embedded store indexes every filterable field and scans the rest). */
export async function createPayloadIndex(ctx: CollectionContext, state: CollectionState, body: Record<string, unknown>): Promise<void> {
  if (typeof body.field_name !== "string" || body.field_name === "") throw badRequest("field_name must be a non-empty string");
  if (state === ctx.state) await saveState(ctx, { ...state, payloadIndexes: { ...state.payloadIndexes, [body.field_name]: body.field_schema ?? null } });
}

/** GET /collections/{collection}: Qdrant's collection info, from the state and the published version. */
export async function collectionInfo(ctx: CollectionContext, state: CollectionState): Promise<unknown> {
  const info = await ctx.store.info();
  const seg = ctx.store.currentSegment();
  const hnsw = seg?.hnswParams;
  const schema: Record<string, unknown> = {};
  for (const [field, type] of Object.entries(state.payloadIndexes)) schema[field] = { data_type: isRecord(type) ? type.type : type, points: info.count };
  return {
    status: "green",
    optimizer_status: "ok",
    points_count: info.count,
    indexed_vectors_count: info.count,
    segments_count: 1,
    config: {
      params: {
        vectors: { [state.vectorName]: { size: state.dims, distance: "Cosine" } },
        ...(state.sparseName ? { sparse_vectors: { [state.sparseName]: { modifier: "idf" } } } : {}),
        shard_number: 1,
        replication_factor: 1,
        write_consistency_factor: 1,
        on_disk_payload: false,
      },
      hnsw_config: { ...(state.hnswConfig ?? {}), ...(hnsw ? { m: hnsw.m, ef_construct: hnsw.efConstruction } : {}) },
      optimizer_config: {},
      wal_config: {},
      quantization_config: state.quantizationConfig,
    },
    payload_schema: schema,
  };
}

/** GET /collections/{meta}: the meta collection holds the meta point while a version is published. */
export function metaCollectionInfo(hasMetaPoint: boolean): unknown {
  return {
    status: "green",
    optimizer_status: "ok",
    points_count: hasMetaPoint ? 1 : 0,
    indexed_vectors_count: 0,
    segments_count: 1,
    config: { params: { vectors: {} } },
    payload_schema: {},
  };
}
