/**
 * Request parts as store serve reads them: point ids (UUIDs only), dense vectors (normalised as Cosine
 * stores them), upserted points and their lexical vectors, filters, and Qdrant's with_payload /
 * with_vector selections. Each failure is a 400 that names the offending part.
 */
import type { RepoPayload } from "../../../dataset/record.js";
import type { Filter } from "../../filter.js";
import { lexicalDocVector, sparseVectorProblem, type SparseVector } from "../../qdrant/sparse.js";
import type { Point, PointId } from "../../types.js";
import { normalizePointId } from "../filter-compile.js";
import { lexicalDocOf } from "../lexical.js";
import type { CollectionState } from "./collection.js";
import { badRequest, isRecord } from "./http.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function pointId(x: unknown, where: string): PointId {
  const id = typeof x === "string" ? normalizePointId(x) : null;
  if (id === null || !UUID_RE.test(id)) throw badRequest(`${where}: store serve supports UUID point ids only (got ${JSON.stringify(x)})`);
  return id;
}

/** A dense vector as Cosine stores it: validated and L2-normalised (the embedded store scores by dot product). */
export function denseVector(x: unknown, dims: number, where: string): Float32Array {
  if (!Array.isArray(x)) throw badRequest(`${where} must be an array of ${dims} numbers`);
  if (x.length !== dims) throw badRequest(`Vector dimension error: expected dim: ${dims}, got ${x.length} (${where})`);
  const v = new Float32Array(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const n = x[i];
    if (typeof n !== "number" || !Number.isFinite(n)) throw badRequest(`${where}[${i}] is not a finite number`);
    v[i] = n;
    norm += n * n;
  }
  // A zero vector stays zero, as in Qdrant: it scores 0 against everything (a static embedder makes
  // one for a text with no known tokens).
  if (norm === 0) return v;
  const inv = 1 / Math.sqrt(norm);
  for (let i = 0; i < dims; i++) v[i]! *= inv;
  return v;
}

/** `points[i]` of an upsert: a UUID id, the named dense vector (and optionally the sparse one), a reposearch payload. */
export function parsePoint(state: CollectionState, raw: unknown, i: number): Point {
  if (!isRecord(raw)) throw badRequest(`points[${i}] must be an object`);
  const id = pointId(raw.id, `points[${i}].id`);
  const v = raw.vector;
  if (!isRecord(v)) throw badRequest(`points[${i}].vector must name its vectors ({"${state.vectorName}": [...]})`);
  for (const name of Object.keys(v)) {
    if (name !== state.vectorName && name !== state.sparseName) throw badRequest(`points[${i}]: Not existing vector name error: ${name}`);
  }
  const vector = denseVector(v[state.vectorName], state.dims, `points[${i}].vector.${state.vectorName}`);
  const payload = raw.payload;
  if (!isRecord(payload) || typeof payload.key !== "string" || typeof payload.hash !== "string") {
    throw badRequest(`points[${i}].payload must be a reposearch payload (an object with string key and hash)`);
  }
  const repo = payload as unknown as RepoPayload;
  if (state.sparseName !== null && v[state.sparseName] !== undefined) {
    // Lexical vectors are derived from the payload (so they need not be stored); one that differs would be
    // silently ignored, so it is refused instead.
    const given = v[state.sparseName];
    const problem = sparseVectorProblem(given) ?? sparseMismatch(given as SparseVector, lexicalDocVector(lexicalDocOf(repo)));
    if (problem) throw badRequest(`points[${i}].vector.${state.sparseName}: ${problem}`);
  }
  return { id, vector, payload: repo };
}

function sparseMismatch(given: SparseVector, derived: SparseVector): string | null {
  const order = given.indices.map((_, i) => i).sort((a, b) => given.indices[a]! - given.indices[b]!);
  const same =
    order.length === derived.indices.length &&
    order.every(
      (j, i) => given.indices[j] === derived.indices[i] && Math.abs(given.values[j]! - derived.values[i]!) <= 1e-6 * Math.max(1, Math.abs(derived.values[i]!)),
    );
  return same ? null : "differs from the lexical vector of the payload (store serve derives it with src/store/qdrant/sparse.ts; send that one or none)";
}

export function optionalFilter(f: unknown): Filter | undefined {
  if (f === undefined || f === null) return undefined;
  if (!isRecord(f)) throw badRequest("filter must be an object");
  return f as Filter;
}

/** Qdrant's with_payload: true, false, a list of keys to include, or {include} / {exclude}. */
export function project(payload: RepoPayload, sel: unknown): Record<string, unknown> | null {
  const p = payload as unknown as Record<string, unknown>;
  if (sel === true) return p;
  if (sel === false || sel === null || sel === undefined) return null;
  const keys = Array.isArray(sel) ? sel : isRecord(sel) && Array.isArray(sel.include) ? sel.include : null;
  if (keys) return Object.fromEntries(keys.filter((k): k is string => typeof k === "string" && k in p).map((k) => [k, p[k]]));
  if (isRecord(sel) && Array.isArray(sel.exclude)) {
    const drop = new Set(sel.exclude);
    return Object.fromEntries(Object.entries(p).filter(([k]) => !drop.has(k)));
  }
  throw badRequest("with_payload must be a boolean, a list of keys, or {include} / {exclude}");
}

/** Qdrant's with_vector: true (all), a list of names, or anything else for none. */
export function vectorNames(sel: unknown, state: CollectionState): string[] {
  const all = [state.vectorName, ...(state.sparseName ? [state.sparseName] : [])];
  if (sel === true) return all;
  if (Array.isArray(sel)) return all.filter((n) => sel.includes(n));
  return [];
}
