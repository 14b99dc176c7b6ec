/**
 * One immutable, complete index version: ids, payloads, vectors, HNSW graph and lexical index, plus
 * the payload index that is rebuilt at load time. See docs/index-format.md for the on-disk format.
 */
import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { endianness } from "node:os";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { RepoPayload } from "../../dataset/record.js";
import { forgetPredecessor, recordPredecessor } from "../../dataset/payload-lineage.js";
import type { Point, PointId } from "../types.js";
import { prepareDense, type DenseData } from "./dense.js";
import { fsyncDir, writeFileDurable, type FileData } from "./fsutil.js";
import { HnswGraph, type HnswParams } from "./hnsw.js";
import { LEXICAL_FORMAT_VERSION, LexicalIndex, lexicalDocOf, lexicalFormatOf } from "./lexical.js";
import { PayloadIndex } from "./payload-index.js";
import { PackedRankColumns } from "./rank-columns.js";
import {
  buildSubgraphs,
  DEFAULT_SUBGRAPH_OPTIONS,
  deserializeSubgraphs,
  materializeSubgraphs,
  serializeSubgraphs,
  type Subgraph,
  type SubgraphOptions,
} from "./subgraphs.js";

export const FORMAT_NAME = "reposearch-embedded-segment";
export const FORMAT_VERSION = 2;
export const MANIFEST_FILE = "manifest.json";
/** Data files of a segment, in the order they are written. The manifest is written last. */
export const SEGMENT_FILES = ["ids.json", "payloads.json", "vectors.f32", "hnsw.bin", "lexical.bin", "subgraphs.bin"] as const;
export type SegmentFile = (typeof SEGMENT_FILES)[number];
/** Version 1 (before payload subgraphs) is still read: it loads without subgraphs. */
const READABLE_VERSIONS = [1, 2];

/** The data files a manifest of this format version lists. */
export function segmentFiles(formatVersion: number): readonly SegmentFile[] {
  return formatVersion === 1 ? SEGMENT_FILES.filter((f) => f !== "subgraphs.bin") : SEGMENT_FILES;
}

/** Binary files are little-endian; refuse to misread them anywhere else. */
if (endianness() !== "LE") throw new Error("the embedded store supports little-endian hosts only");

export interface FileEntry {
  readonly bytes: number;
  /** Hex SHA-256 of the file (hardware-accelerated: ~1.3 GB/s, so cheap enough to verify at load). */
  readonly sha256: string;
}

export interface SegmentManifest {
  readonly format: typeof FORMAT_NAME;
  readonly formatVersion: number;
  /** Version label, e.g. "v000007"; equals the directory name. */
  readonly version: string;
  readonly count: number;
  readonly dims: number;
  readonly embedderId: string;
  readonly createdAt: string;
  /** Null when the segment is empty (no graph is built). */
  readonly hnsw: { readonly m: number; readonly efConstruction: number; readonly seed: number } | null;
  readonly files: Readonly<Record<SegmentFile, FileEntry>>;
}

/** A version directory that is missing, truncated, corrupted or of an unknown format. */
export class IndexFormatError extends ReposearchError {
  constructor(
    readonly dir: string,
    problem: string,
    cause?: unknown,
  ) {
    super(ErrorCode.Internal, `cannot load index version at ${dir}: ${problem}`, { cause });
  }
}

export interface SegmentBuildParams {
  readonly version: string;
  readonly dims: number;
  readonly embedderId: string;
  readonly hnsw: HnswParams;
  /** Which keyword fields get per-value graphs (default DEFAULT_SUBGRAPH_OPTIONS). */
  readonly subgraphs?: SubgraphOptions;
}

export type SegmentProgress = (stage: string, done: number, total: number) => void;

/** Reproducible graph builds unless the caller picks a seed. */
export const DEFAULT_HNSW_SEED = 0x5eed;

interface SegmentMeta {
  readonly version: string;
  readonly count: number;
  readonly dims: number;
  readonly embedderId: string;
  readonly createdAt: string;
  readonly hnsw: SegmentManifest["hnsw"];
}

export class Segment {
  readonly version: string;
  readonly count: number;
  readonly dims: number;
  readonly embedderId: string;
  /** When this version was built (ISO 8601). */
  readonly createdAt: string;
  readonly hnswParams: SegmentManifest["hnsw"];
  /** What the dense planner needs, built once. */
  readonly dense: DenseData;
  /** Stars, language and category packed per row for ranking; null when they cannot be packed exactly. */
  readonly rankColumns: PackedRankColumns | null;
  private readonly rowById: Map<PointId, number>;

  private constructor(
    meta: SegmentMeta,
    readonly ids: readonly PointId[],
    readonly payloads: readonly RepoPayload[],
    /** count × dims, row-major, L2-normalised. */
    readonly vectors: Float32Array,
    readonly graph: HnswGraph | null,
    readonly lexical: LexicalIndex | null,
    readonly payloadIndex: PayloadIndex,
    /** Per-value graphs of keyword fields (subgraphs.ts). */
    readonly subgraphs: readonly Subgraph[],
    /**
     * True when lexical.bin was written by an older analyzer and the lexical index was rebuilt from the
     * payloads at load: the segment answers as a fresh one would, and the next commit publishes even
     * when no point changed, so the rebuilt index reaches disk.
     */
    readonly lexicalReanalysed = false,
    /** Rows whose payload object is the previous version's (load()'s `previous`; sharePayloads). */
    readonly payloadsShared = 0,
  ) {
    this.version = meta.version;
    this.count = meta.count;
    this.dims = meta.dims;
    this.embedderId = meta.embedderId;
    this.createdAt = meta.createdAt;
    this.hnswParams = meta.hnsw;
    // int8 codes with error bounds let exact scans skip most float32 dot products (same results).
    // The segment's first: the subgraphs copy theirs from it.
    const own: DenseData = { vectors, dims: meta.dims, count: meta.count, graph };
    prepareDense(own);
    this.dense = { ...own, subgraphs: materializeSubgraphs(subgraphs, vectors, meta.dims, meta.count, own) };
    this.rankColumns = PackedRankColumns.build(payloads);
    // Built eagerly (~30 ms for 200k ids) so the first retrieve() does not pay for it.
    this.rowById = new Map();
    for (let i = 0; i < ids.length; i++) this.rowById.set(ids[i]!, i);
    if (this.rowById.size !== ids.length) throw new RangeError(`duplicate point ids (${ids.length - this.rowById.size})`);
  }

  /** Row index of a point id, or undefined. */
  rowOf(id: PointId): number | undefined {
    return this.rowById.get(id);
  }

  /** A zero-copy view of one row's vector. */
  vectorOf(row: number): Float32Array {
    return this.vectors.subarray(row * this.dims, (row + 1) * this.dims);
  }

  /** Builds graph, lexical and payload indexes from points (ids must be unique). CPU-bound. */
  static build(points: readonly Point[], params: SegmentBuildParams, onProgress: SegmentProgress = () => {}): Segment {
    const { dims } = params;
    if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer (got ${dims})`);
    const count = points.length;
    const ids = new Array<PointId>(count);
    const payloads = new Array<RepoPayload>(count);
    const vectors = new Float32Array(count * dims);
    const seen = new Set<PointId>();
    for (let i = 0; i < count; i++) {
      const p = points[i]!;
      if (p.vector.length !== dims) throw new RangeError(`point ${p.id}: vector has ${p.vector.length} dims, expected ${dims}`);
      if (seen.has(p.id)) throw new RangeError(`duplicate point id ${p.id}`);
      seen.add(p.id);
      ids[i] = p.id;
      payloads[i] = p.payload;
      vectors.set(p.vector, i * dims);
    }
    const seed = params.hnsw.seed ?? DEFAULT_HNSW_SEED;
    let graph: HnswGraph | null = null;
    if (count > 0) {
      onProgress("hnsw", 0, count);
      graph = HnswGraph.build(vectors, dims, count, { ...params.hnsw, seed }, (done, total) => onProgress("hnsw", done, total));
      onProgress("hnsw", count, count);
    }
    const subgraphs =
      count > 0
        ? buildSubgraphs(payloads, vectors, dims, { ...params.hnsw, seed }, params.subgraphs ?? DEFAULT_SUBGRAPH_OPTIONS, (done, total) =>
            onProgress("subgraphs", done, total),
          )
        : [];
    onProgress("lexical", 0, count);
    const lexical = count > 0 ? LexicalIndex.build(payloads.map(lexicalDocOf)) : null;
    onProgress("lexical", count, count);
    onProgress("payload-index", 0, count);
    const payloadIndex = PayloadIndex.build(ids, payloads);
    onProgress("payload-index", count, count);
    const meta: SegmentMeta = {
      version: params.version,
      count,
      dims,
      embedderId: params.embedderId,
      createdAt: new Date().toISOString(),
      hnsw: count > 0 ? { m: params.hnsw.m, efConstruction: params.hnsw.efConstruction, seed } : null,
    };
    return new Segment(meta, ids, payloads, vectors, graph, lexical, payloadIndex, subgraphs);
  }

  /**
   * Writes the segment into `dir` (which must be new and empty or absent-but-creatable by the
   * caller), fsyncing every file and the directory. The manifest is written last, so a directory
   * without one is never mistaken for a complete version.
   */
  async writeTo(dir: string, onProgress: SegmentProgress = () => {}): Promise<SegmentManifest> {
    const files = {} as Record<SegmentFile, FileEntry>;
    const total = SEGMENT_FILES.length + 1;
    let done = 0;
    for (const name of SEGMENT_FILES) {
      onProgress("write", done, total);
      files[name] = await writeHashed(path.join(dir, name), this.fileParts(name));
      done++;
    }
    const manifest: SegmentManifest = {
      format: FORMAT_NAME,
      formatVersion: FORMAT_VERSION,
      version: this.version,
      count: this.count,
      dims: this.dims,
      embedderId: this.embedderId,
      createdAt: this.createdAt,
      hnsw: this.hnswParams,
      files,
    };
    await writeFileDurable(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + "\n");
    await fsyncDir(dir);
    onProgress("write", total, total);
    return manifest;
  }

  private fileParts(name: SegmentFile): Iterable<FileData> {
    switch (name) {
      case "ids.json":
        return [asciiJson(JSON.stringify(this.ids))];
      case "payloads.json":
        return jsonArrayParts(this.payloads);
      case "vectors.f32":
        return [new Uint8Array(this.vectors.buffer, this.vectors.byteOffset, this.vectors.byteLength)];
      case "hnsw.bin":
        return this.graph ? [this.graph.serialize()] : [];
      case "lexical.bin":
        return this.lexical ? [this.lexical.serialize()] : [];
      case "subgraphs.bin":
        return [serializeSubgraphs(this.subgraphs)];
    }
  }

  /**
   * Loads and validates a version directory: manifest format and version, every file's size and
   * checksum, and internal consistency. Throws IndexFormatError with the reason on any mismatch.
   * Checksums are computed on a worker thread while this thread parses, so they cost little time.
   */
  static async load(dir: string, opts: { verifyChecksums?: boolean; expectVersion?: string; previous?: Segment | null } = {}): Promise<Segment> {
    const manifest = await readManifest(dir);
    if (opts.expectVersion !== undefined && manifest.version !== opts.expectVersion) {
      throw new IndexFormatError(dir, `manifest says version ${manifest.version}, expected ${opts.expectVersion}`);
    }
    // Sizes first: a truncated file is reported as such, before any expensive read.
    const names = segmentFiles(manifest.formatVersion);
    await Promise.all(
      names.map(async (name) => {
        const st = await stat(path.join(dir, name)).catch((err) => {
          throw new IndexFormatError(dir, `missing ${name} (${(err as Error).message})`, err);
        });
        const want = manifest.files[name].bytes;
        if (st.size !== want) {
          throw new IndexFormatError(dir, `${name} is ${st.size} bytes but the manifest says ${want} (truncated or corrupted)`);
        }
      }),
    );
    const checksums = opts.verifyChecksums === false ? null : verifyChecksums(dir, manifest);
    checksums?.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    let seg: Segment;
    try {
      const bufs = await Promise.all(names.map((name) => readFile(path.join(dir, name))));
      seg = Segment.decode(
        dir,
        manifest,
        Object.fromEntries(names.map((name, i) => [name, bufs[i]!])) as Partial<Record<SegmentFile, Buffer>> as Record<SegmentFile, Buffer>,
        opts.previous ?? null,
      );
    } catch (err) {
      await checksums; // a checksum mismatch explains a decoding failure better than the failure itself
      throw err;
    }
    await checksums;
    return seg;
  }

  private static decode(dir: string, manifest: SegmentManifest, data: Record<SegmentFile, Buffer>, previous: Segment | null): Segment {
    const { count, dims } = manifest;
    if (data["vectors.f32"].byteLength !== count * dims * 4) {
      throw new IndexFormatError(dir, `vectors.f32 holds ${data["vectors.f32"].byteLength} bytes, expected count×dims×4 = ${count * dims * 4}`);
    }
    const ids = parseJsonArray<PointId>(dir, "ids.json", data["ids.json"], count);
    for (let i = 0; i < count; i++) if (typeof ids[i] !== "string") throw new IndexFormatError(dir, `ids.json[${i}] is not a string`);
    const payloads = parseJsonArray<RepoPayload>(dir, "payloads.json", data["payloads.json"], count);
    const shared = previous ? sharePayloads(ids, payloads, previous) : 0;
    const vectors = float32View(data["vectors.f32"]);
    let graph: HnswGraph | null = null;
    let lexical: LexicalIndex | null = null;
    let reanalysed = false;
    const sub = data["subgraphs.bin"] as Buffer | undefined; // absent in format version 1
    const subgraphs = sub === undefined ? [] : decode(dir, "subgraphs.bin", () => deserializeSubgraphs(sub, count, dims));
    if (count > 0) {
      graph = decode(dir, "hnsw.bin", () => HnswGraph.deserialize(data["hnsw.bin"]));
      // An index written by an older analyzer is re-analysed from the payloads rather than refused
      // (14 s for the full index on two busy cores): an upgrade serves its existing index at once.
      const format = lexicalFormatOf(data["lexical.bin"]);
      reanalysed = format !== null && format < LEXICAL_FORMAT_VERSION;
      lexical = reanalysed ? LexicalIndex.build(payloads.map(lexicalDocOf)) : decode(dir, "lexical.bin", () => LexicalIndex.deserialize(data["lexical.bin"]));
      if (lexical.docCount !== count) throw new IndexFormatError(dir, `lexical.bin indexes ${lexical.docCount} documents, expected ${count}`);
    }
    return decode(dir, "ids.json/payloads.json", () => {
      const payloadIndex = PayloadIndex.build(ids, payloads);
      return new Segment(manifest, ids, payloads, vectors, graph, lexical, payloadIndex, subgraphs, reanalysed, shared);
    });
  }
}

/**
 * Puts the previous version's payload object in place of every equal one (same id, same content), and
 * returns how many; a changed one is recorded as the old one's successor (src/dataset/payload-lineage.ts).
 * What the ranker computes once per repository is cached by payload object (src/core/rank/features.ts),
 * so a version of all-new objects was searched like a cold process: the same 400 dev queries right after
 * a swap took 1.34× as long as right before it on average and 1.6× at p95 and p99; with the objects
 * shared, 1.07× and 1.0× (`npm run bench:search`). Both versions' heap while the new one loads: 235
 * instead of 393 MiB for the full index. The content hash (`hash`) rules most rows out at once; equal
 * hashes are confirmed field by field, so what a search reads is always what the version's files say.
 */
function sharePayloads(ids: readonly PointId[], payloads: RepoPayload[], previous: Segment): number {
  let shared = 0;
  for (let i = 0; i < payloads.length; i++) {
    const row = previous.rowOf(ids[i]!);
    if (row === undefined) continue;
    const old = previous.payloads[row]!;
    const now = payloads[i]!;
    if (old.hash === now.hash && jsonEqual(old, now)) {
      payloads[i] = old;
      forgetPredecessor(old);
      shared++;
    } else {
      recordPredecessor(now, old);
    }
  }
  return shared;
}

/**
 * Structural equality of two values JSON.parse made: equal primitives, equal arrays, the same keys with
 * equal values. Twice as fast as util.isDeepStrictEqual here (about 0.4 against 0.8 s over the full
 * index's payloads), which also checks prototypes and kinds of object JSON never makes.
 */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const k of keys) if (!Object.hasOwn(y, k) || !jsonEqual(x[k], y[k])) return false;
  return true;
}

/**
 * SHA-256 of every data file, computed on a worker thread that streams the files (from the page
 * cache: the main thread is reading them at the same time). Rejects with IndexFormatError on a mismatch.
 */
async function verifyChecksums(dir: string, manifest: SegmentManifest): Promise<void> {
  const names = segmentFiles(manifest.formatVersion);
  const files = names.map((name) => path.join(dir, name));
  const digests = await new Promise<string[]>((resolve, reject) => {
    const worker = new Worker(CHECKSUM_WORKER, { eval: true, workerData: files });
    worker.once("message", (msg: { digests?: string[]; error?: string }) =>
      msg.digests ? resolve(msg.digests) : reject(new IndexFormatError(dir, `cannot checksum: ${msg.error}`)),
    );
    worker.once("error", (err) => reject(new IndexFormatError(dir, `cannot checksum: ${err.message}`, err)));
    worker.once("exit", (code) => reject(new IndexFormatError(dir, `checksum worker exited with code ${code}`)));
  });
  names.forEach((name, i) => {
    if (digests[i] !== manifest.files[name].sha256) throw new IndexFormatError(dir, `${name} checksum mismatch (corrupted)`);
  });
}

const CHECKSUM_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const { openSync, readSync, closeSync } = require("node:fs");
try {
  const buf = Buffer.allocUnsafe(4 << 20);
  const digests = workerData.map((file) => {
    const h = createHash("sha256");
    const fd = openSync(file, "r");
    try {
      let n;
      while ((n = readSync(fd, buf, 0, buf.length, null)) > 0) h.update(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
    return h.digest("hex");
  });
  parentPort.postMessage({ digests });
} catch (err) {
  parentPort.postMessage({ error: String((err && err.message) || err) });
}
`;

async function readManifest(dir: string): Promise<SegmentManifest> {
  let raw: string;
  try {
    raw = await readFile(path.join(dir, MANIFEST_FILE), "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new IndexFormatError(dir, code === "ENOENT" ? `no ${MANIFEST_FILE} (missing or incomplete version)` : (err as Error).message, err);
  }
  let m: SegmentManifest;
  try {
    m = JSON.parse(raw) as SegmentManifest;
  } catch (err) {
    throw new IndexFormatError(dir, `${MANIFEST_FILE} is not valid JSON (truncated or corrupted)`, err);
  }
  if (m?.format !== FORMAT_NAME) throw new IndexFormatError(dir, `unknown format ${JSON.stringify(m?.format)}, expected ${FORMAT_NAME}`);
  if (!READABLE_VERSIONS.includes(m.formatVersion)) {
    throw new IndexFormatError(
      dir,
      `format version ${m.formatVersion} is not supported (this build reads versions ${READABLE_VERSIONS.join(" and ")}); rebuild the index`,
    );
  }
  const problems: string[] = [];
  if (typeof m.version !== "string") problems.push("version");
  if (!Number.isInteger(m.count) || m.count < 0) problems.push("count");
  if (!Number.isInteger(m.dims) || m.dims < 1) problems.push("dims");
  if (typeof m.embedderId !== "string") problems.push("embedderId");
  if (typeof m.createdAt !== "string") problems.push("createdAt");
  for (const name of segmentFiles(m.formatVersion)) {
    const f = m.files?.[name];
    if (!f || !Number.isInteger(f.bytes) || f.bytes < 0 || typeof f.sha256 !== "string") problems.push(`files.${name}`);
  }
  if (problems.length) throw new IndexFormatError(dir, `${MANIFEST_FILE} has invalid fields: ${problems.join(", ")}`);
  return m;
}

function parseJsonArray<T>(dir: string, name: string, buf: Buffer, count: number): T[] {
  let v: unknown;
  try {
    // Written ASCII-only (see asciiJson): decoding as latin1 is a plain copy, ~5× faster than UTF-8.
    v = JSON.parse(isAscii(buf) ? buf.toString("latin1") : buf.toString("utf8"));
  } catch (err) {
    throw new IndexFormatError(dir, `${name} is not valid JSON`, err);
  }
  if (!Array.isArray(v) || v.length !== count) {
    throw new IndexFormatError(dir, `${name} must be an array of ${count} entries (got ${Array.isArray(v) ? v.length : typeof v})`);
  }
  return v as T[];
}

function decode<T>(dir: string, name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new IndexFormatError(dir, `${name} cannot be decoded: ${(err as Error).message}`, err);
  }
}

/** A Float32Array over the buffer without copying, unless the buffer is misaligned. */
export function float32View(buf: Uint8Array): Float32Array {
  if (buf.byteOffset % 4 === 0) return new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

/**
 * Escapes every non-ASCII character as \\uXXXX. Still the same JSON for any reader, but an ASCII file
 * decodes and parses ~25% faster at load (many descriptions are CJK).
 */
export function asciiJson(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** Serialises a big array lazily in slices, so no single giant string is ever built. */
function* jsonArrayParts(items: readonly unknown[], sliceSize = 2048): Generator<string> {
  if (items.length === 0) {
    yield "[]";
    return;
  }
  for (let i = 0; i < items.length; i += sliceSize) {
    const body = asciiJson(JSON.stringify(items.slice(i, i + sliceSize)));
    yield (i === 0 ? "[" : ",") + body.slice(1, -1);
  }
  yield "]";
}

async function writeHashed(file: string, parts: Iterable<FileData>): Promise<FileEntry> {
  const h = createHash("sha256");
  const bytes = await writeFileDurable(file, parts, (buf) => h.update(buf));
  return { bytes, sha256: h.digest("hex") };
}
