/**
 * The index directory layout and the embedded store's writer: durable checkpoint chunks in
 * `staging/<writerId>/`, crash recovery by replaying them, and an atomic publish under `LOCK`.
 *
 *   <dataDir>/index/CURRENT                 {"version":"v000007"}  (the published version)
 *   <dataDir>/index/versions/v000007/       one complete, immutable segment per version
 *   <dataDir>/index/staging/<writerId>/     writer.json + 000001.chunk, 000002.chunk, …
 *   <dataDir>/index/LOCK                    held while publishing
 */
import { createHash } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { Logger } from "../../common/logger.js";
import type { RepoPayload } from "../../dataset/record.js";
import type { CommitResult, Point, PointId, StoreWriter } from "../types.js";
import {
  ensureDir,
  FileLock,
  fsyncDir,
  isTempName,
  randomSuffix,
  readFileIfExists,
  removeDurable,
  renameDurable,
  TMP_MARKER,
  writeFileAtomic,
  writeFileDurable,
} from "./fsutil.js";
import type { HnswParams } from "./hnsw.js";
import type { SubgraphOptions } from "./subgraphs.js";
import { float32View, IndexFormatError, Segment } from "./segment.js";

// ---------------------------------------------------------------------------------------------
// Layout

const LABEL_RE = /^v(\d{6,})$/;
export const formatLabel = (n: number): string => `v${String(n).padStart(6, "0")}`;
export function parseLabel(label: string): number | null {
  const m = LABEL_RE.exec(label);
  return m ? Number(m[1]) : null;
}

export class IndexDir {
  readonly root: string;
  readonly currentFile: string;
  readonly versionsDir: string;
  readonly stagingDir: string;
  readonly lockFile: string;

  constructor(dataDir: string) {
    this.root = path.join(path.resolve(dataDir), "index");
    this.currentFile = path.join(this.root, "CURRENT");
    this.versionsDir = path.join(this.root, "versions");
    this.stagingDir = path.join(this.root, "staging");
    this.lockFile = path.join(this.root, "LOCK");
  }

  versionDir(label: string): string {
    return path.join(this.versionsDir, label);
  }

  writerDir(writerId: string): string {
    return path.join(this.stagingDir, writerId);
  }

  async ensure(): Promise<void> {
    await ensureDir(this.versionsDir);
    await ensureDir(this.stagingDir);
  }

  /** The published version label, or null when nothing has been published. */
  async readCurrent(): Promise<string | null> {
    const buf = await readFileIfExists(this.currentFile);
    if (buf === null) return null;
    let label: unknown;
    try {
      label = (JSON.parse(buf.toString("utf8")) as { version?: unknown }).version;
    } catch {
      label = undefined;
    }
    if (typeof label !== "string" || parseLabel(label) === null) {
      throw new IndexFormatError(this.root, `CURRENT is malformed: ${JSON.stringify(buf.toString("utf8").slice(0, 100))}`);
    }
    return label;
  }

  /** Points CURRENT at `label` atomically and durably. */
  async writeCurrent(label: string): Promise<void> {
    await writeFileAtomic(this.currentFile, JSON.stringify({ version: label }) + "\n");
  }

  /** Complete (renamed-into-place) version labels, oldest first. */
  async listVersions(): Promise<string[]> {
    const names = await readdir(this.versionsDir).catch(() => [] as string[]);
    return names.filter((n) => parseLabel(n) !== null).sort((a, b) => parseLabel(a)! - parseLabel(b)!);
  }
}

// ---------------------------------------------------------------------------------------------
// Checkpoint chunks
//
// A chunk is one upsert() or delete() call. Binary, little-endian:
//   0  "RSCK"   4  u32 chunk format (1)   8  u32 kind (1 upsert, 2 delete)   12 u32 count
//   16 u32 dims  20 u32 jsonBytes  24..31 reserved (0)  32..63 SHA-256 of bytes [64, end)
//   64 JSON (upsert: {"ids":[…],"payloads":[…]}; delete: {"ids":[…]}), zero-padded to 4 bytes
//   then (upsert only) count × dims float32 vectors.

const CHUNK_MAGIC = 0x4b435352; // "RSCK" read as a little-endian u32
const CHUNK_FORMAT = 1;
const CHUNK_HEADER_BYTES = 64;
const CHUNK_RE = /^(\d{6,})\.chunk$/;
const WRITER_META = "writer.json";

export type ChunkOp =
  | { readonly kind: "upsert"; readonly ids: PointId[]; readonly payloads: RepoPayload[]; readonly vectors: Float32Array; readonly dims: number }
  | { readonly kind: "delete"; readonly ids: PointId[] };

export function encodeChunk(op: ChunkOp): Buffer {
  const json = Buffer.from(JSON.stringify(op.kind === "upsert" ? { ids: op.ids, payloads: op.payloads } : { ids: op.ids }), "utf8");
  const jsonPadded = (json.byteLength + 3) & ~3;
  const vecBytes = op.kind === "upsert" ? op.vectors.byteLength : 0;
  const buf = Buffer.alloc(CHUNK_HEADER_BYTES + jsonPadded + vecBytes);
  buf.writeUInt32LE(CHUNK_MAGIC, 0);
  buf.writeUInt32LE(CHUNK_FORMAT, 4);
  buf.writeUInt32LE(op.kind === "upsert" ? 1 : 2, 8);
  buf.writeUInt32LE(op.ids.length, 12);
  buf.writeUInt32LE(op.kind === "upsert" ? op.dims : 0, 16);
  buf.writeUInt32LE(json.byteLength, 20);
  json.copy(buf, CHUNK_HEADER_BYTES);
  if (op.kind === "upsert") buf.set(new Uint8Array(op.vectors.buffer, op.vectors.byteOffset, vecBytes), CHUNK_HEADER_BYTES + jsonPadded);
  createHash("sha256").update(buf.subarray(CHUNK_HEADER_BYTES)).digest().copy(buf, 32);
  return buf;
}

/** Decodes a chunk; returns a reason string when it is truncated, corrupted or foreign. Vectors are views into `buf`. */
export function decodeChunk(buf: Buffer): ChunkOp | string {
  if (buf.byteLength < CHUNK_HEADER_BYTES) return `truncated header (${buf.byteLength} bytes)`;
  if (buf.readUInt32LE(0) !== CHUNK_MAGIC) return "bad magic";
  if (buf.readUInt32LE(4) !== CHUNK_FORMAT) return `unsupported chunk format ${buf.readUInt32LE(4)}`;
  const kind = buf.readUInt32LE(8);
  const count = buf.readUInt32LE(12);
  const dims = buf.readUInt32LE(16);
  const jsonBytes = buf.readUInt32LE(20);
  const jsonPadded = (jsonBytes + 3) & ~3;
  const expected = CHUNK_HEADER_BYTES + jsonPadded + (kind === 1 ? count * dims * 4 : 0);
  if (buf.byteLength !== expected) return `size ${buf.byteLength} bytes, expected ${expected} (truncated)`;
  const sum = createHash("sha256").update(buf.subarray(CHUNK_HEADER_BYTES)).digest();
  if (!sum.equals(buf.subarray(32, 64))) return "checksum mismatch";
  let body: { ids?: unknown; payloads?: unknown };
  try {
    body = JSON.parse(buf.toString("utf8", CHUNK_HEADER_BYTES, CHUNK_HEADER_BYTES + jsonBytes)) as typeof body;
  } catch {
    return "unparseable JSON";
  }
  if (!Array.isArray(body.ids) || body.ids.length !== count) return "ids do not match the header";
  if (kind === 2) return { kind: "delete", ids: body.ids as PointId[] };
  if (kind !== 1) return `unknown kind ${kind}`;
  if (!Array.isArray(body.payloads) || body.payloads.length !== count) return "payloads do not match the header";
  const vecStart = CHUNK_HEADER_BYTES + jsonPadded;
  const vectors = float32View(buf.subarray(vecStart, vecStart + count * dims * 4));
  return { kind: "upsert", ids: body.ids as PointId[], payloads: body.payloads as RepoPayload[], vectors, dims };
}

const chunkName = (seq: number): string => `${String(seq).padStart(6, "0")}.chunk`;

// ---------------------------------------------------------------------------------------------
// Writer

/** What the writer needs from the store that opened it. */
export interface WriterHost {
  readonly dir: IndexDir;
  readonly logger: Logger;
  readonly hnsw: HnswParams;
  readonly subgraphs: SubgraphOptions;
  readonly keepVersions: number;
  readonly lockTimeoutMs: number;
  readonly lockPollIntervalMs: number;
  /** The newest published segment (loading it if CURRENT moved), or null when none is published. */
  newestBase(): Promise<Segment | null>;
  /** Serve a segment this process has just published. */
  adopt(segment: Segment): void;
}

export interface WriterOptions {
  readonly writerId: string;
  readonly dims: number;
  readonly embedderId: string;
}

interface StagedUpsert {
  readonly payload: RepoPayload;
  readonly vector: Float32Array;
}

const WRITER_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export class EmbeddedWriter implements StoreWriter {
  /** Latest staged op per point id: an upsert, or null for a delete. Insertion order is kept. */
  private readonly staged = new Map<PointId, StagedUpsert | null>();
  private nextSeq = 1;
  private stagingReady = false;
  /** Serialises this writer's operations, so chunks are numbered and applied in call order. */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly stagingPath: string;
  private readonly log: Logger;

  private constructor(
    private readonly host: WriterHost,
    readonly opts: WriterOptions,
  ) {
    this.stagingPath = host.dir.writerDir(opts.writerId);
    this.log = host.logger.child({ writerId: opts.writerId });
  }

  /** Opens a writer, replaying the checkpoints a previous writer with the same id left behind. */
  static async open(host: WriterHost, opts: WriterOptions): Promise<EmbeddedWriter> {
    const problems: string[] = [];
    if (typeof opts.writerId !== "string" || !WRITER_ID_RE.test(opts.writerId)) {
      problems.push(`writerId must match ${WRITER_ID_RE} (got ${JSON.stringify(opts.writerId)})`);
    }
    if (!Number.isInteger(opts.dims) || opts.dims < 1) problems.push(`dims must be a positive integer (got ${opts.dims})`);
    if (typeof opts.embedderId !== "string" || opts.embedderId.length === 0) problems.push("embedderId must be a non-empty string");
    if (problems.length) throw new ReposearchError(ErrorCode.ValidationError, `invalid writer options: ${problems.join("; ")}`);
    await host.dir.ensure();
    const w = new EmbeddedWriter(host, { writerId: opts.writerId, dims: opts.dims, embedderId: opts.embedderId });
    await w.recover();
    return w;
  }

  /** Number of distinct point ids with a staged upsert or delete. */
  get stagedCount(): number {
    return this.staged.size;
  }

  async hashes(): Promise<Map<PointId, string>> {
    return this.run(async () => {
      const out = new Map<PointId, string>();
      const base = this.compatible(await this.host.newestBase());
      if (base) for (let i = 0; i < base.count; i++) out.set(base.ids[i]!, base.payloads[i]!.hash);
      for (const [id, s] of this.staged) {
        if (s === null) out.delete(id);
        else out.set(id, s.payload.hash);
      }
      return out;
    });
  }

  async upsert(points: readonly Point[]): Promise<void> {
    const { dims } = this.opts;
    for (const p of points) {
      if (typeof p?.id !== "string" || p.id.length === 0) throw new ReposearchError(ErrorCode.ValidationError, "every point needs a non-empty string id");
      if (!(p.vector instanceof Float32Array) || p.vector.length !== dims) {
        throw new ReposearchError(ErrorCode.ValidationError, `point ${p.id}: vector must be a Float32Array of ${dims} dims (got ${p.vector?.length})`);
      }
      if (typeof p.payload?.hash !== "string" || typeof p.payload.key !== "string") {
        throw new ReposearchError(ErrorCode.ValidationError, `point ${p.id}: payload needs string key and hash`);
      }
    }
    if (points.length === 0) return;
    const vectors = new Float32Array(points.length * dims);
    points.forEach((p, i) => vectors.set(p.vector, i * dims));
    const op: ChunkOp = { kind: "upsert", ids: points.map((p) => p.id), payloads: points.map((p) => p.payload), vectors, dims };
    await this.run(() => this.appendChunk(op));
  }

  async delete(ids: readonly PointId[]): Promise<void> {
    for (const id of ids)
      if (typeof id !== "string" || id.length === 0) throw new ReposearchError(ErrorCode.ValidationError, "point ids must be non-empty strings");
    if (ids.length === 0) return;
    await this.run(() => this.appendChunk({ kind: "delete", ids: [...ids] }));
  }

  async commit(opts: { onProgress?: (stage: string, done: number, total: number) => void } = {}): Promise<CommitResult> {
    return this.run(() => this.doCommit(opts.onProgress ?? (() => {})));
  }

  async abort(): Promise<void> {
    return this.run(async () => {
      await this.dropStaging();
      this.log.info("staged work dropped", {});
    });
  }

  // -------------------------------------------------------------------------------------------

  private run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }

  private compatible(base: Segment | null): Segment | null {
    return base && base.dims === this.opts.dims && base.embedderId === this.opts.embedderId ? base : null;
  }

  private apply(op: ChunkOp): void {
    if (op.kind === "delete") {
      for (const id of op.ids) {
        this.staged.delete(id); // re-insert so the map order follows the latest op
        this.staged.set(id, null);
      }
      return;
    }
    for (let i = 0; i < op.ids.length; i++) {
      const id = op.ids[i]!;
      this.staged.delete(id);
      this.staged.set(id, { payload: op.payloads[i]!, vector: op.vectors.subarray(i * op.dims, (i + 1) * op.dims) });
    }
  }

  /** Durable before it resolves: temp file, fsync, rename, fsync dir. Applied in memory only after that. */
  private async appendChunk(op: ChunkOp): Promise<void> {
    await this.ensureStaging();
    const buf = encodeChunk(op);
    const file = path.join(this.stagingPath, chunkName(this.nextSeq));
    const tmp = `${file}${TMP_MARKER}${randomSuffix()}`;
    try {
      await writeFileDurable(tmp, buf);
      await renameDurable(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    this.nextSeq++;
    // Staged vectors become views into the chunk buffer, so they are held in memory only once.
    this.apply(op.kind === "upsert" ? { ...op, vectors: float32View(buf.subarray(buf.byteLength - op.vectors.byteLength)) } : op);
  }

  private async ensureStaging(): Promise<void> {
    if (this.stagingReady) return;
    await ensureDir(this.stagingPath);
    await fsyncDir(path.dirname(this.stagingPath));
    const meta = { writerId: this.opts.writerId, dims: this.opts.dims, embedderId: this.opts.embedderId, createdAt: new Date().toISOString() };
    await writeFileAtomic(path.join(this.stagingPath, WRITER_META), JSON.stringify(meta) + "\n");
    this.stagingReady = true;
  }

  /**
   * Replays the chunks of a previous writer with this id. Temp files are removed; the first
   * truncated or corrupted chunk and everything after it are removed too (later ops may depend on
   * it, and the caller redoes whatever hashes() no longer shows).
   */
  private async recover(): Promise<void> {
    const metaBuf = await readFileIfExists(path.join(this.stagingPath, WRITER_META));
    if (metaBuf === null) {
      // Nothing staged, or a writer that died before its first chunk: start clean.
      await rm(this.stagingPath, { recursive: true, force: true });
      return;
    }
    let meta: { dims?: unknown; embedderId?: unknown } = {};
    try {
      meta = JSON.parse(metaBuf.toString("utf8")) as typeof meta;
    } catch {
      // handled below as a mismatch
    }
    if (meta.dims !== this.opts.dims || meta.embedderId !== this.opts.embedderId) {
      this.log.warn("discarding staged work from a writer with a different embedder", { staged: meta, now: this.opts });
      await removeDurable(this.stagingPath);
      return;
    }
    const names = await readdir(this.stagingPath);
    const seqs: number[] = [];
    for (const name of names) {
      const m = CHUNK_RE.exec(name);
      if (m) seqs.push(Number(m[1]));
      else if (isTempName(name)) await rm(path.join(this.stagingPath, name), { force: true });
    }
    seqs.sort((a, b) => a - b);
    let replayed = 0;
    let points = 0;
    for (let i = 0; i < seqs.length; i++) {
      const seq = seqs[i]!;
      const buf = (await readFileIfExists(path.join(this.stagingPath, chunkName(seq)))) ?? Buffer.alloc(0);
      const op = seq === this.nextSeq ? decodeChunk(buf) : `missing chunk ${chunkName(this.nextSeq)}`;
      if (typeof op === "string") {
        const dropped = seqs.slice(i);
        this.log.warn("dropping damaged checkpoint chunks", { chunk: chunkName(seq), reason: op, dropped: dropped.length });
        for (const s of dropped) await rm(path.join(this.stagingPath, chunkName(s)), { force: true });
        await fsyncDir(this.stagingPath);
        break;
      }
      this.apply(op);
      this.nextSeq = seq + 1;
      replayed++;
      points += op.ids.length;
    }
    this.stagingReady = true;
    if (replayed > 0) this.log.info("resumed from checkpoints", { chunks: replayed, points, staged: this.staged.size });
  }

  private async dropStaging(): Promise<void> {
    this.staged.clear();
    this.nextSeq = 1;
    this.stagingReady = false;
    // writer.json goes first: a crash halfway through the removal then leaves a directory that the
    // next open discards as a whole, never a replayable subset of the chunks.
    await rm(path.join(this.stagingPath, WRITER_META), { force: true });
    await fsyncDir(this.stagingPath).catch(() => undefined);
    await removeDurable(this.stagingPath);
  }

  private async doCommit(onProgress: (stage: string, done: number, total: number) => void): Promise<CommitResult> {
    const { dir } = this.host;
    onProgress("lock", 0, 1);
    const lock = await FileLock.acquire(dir.lockFile, {
      timeoutMs: this.host.lockTimeoutMs,
      pollIntervalMs: this.host.lockPollIntervalMs,
      purpose: `commit by writer ${this.opts.writerId}`,
      logger: this.log,
    });
    try {
      onProgress("lock", 1, 1);
      // Another writer (another shard) may have published since we opened: build on the newest.
      const published = await this.host.newestBase();
      const base = this.compatible(published);
      if (published && !base) {
        this.log.warn("published version has a different embedder or dims; replacing it completely", {
          published: { version: published.version, embedderId: published.embedderId, dims: published.dims },
          writer: { embedderId: this.opts.embedderId, dims: this.opts.dims },
        });
      }
      onProgress("merge", 0, 1);
      const { points, upserted, deleted } = this.merge(base);
      onProgress("merge", 1, 1);
      if (upserted === 0 && deleted === 0 && !base?.lexicalReanalysed) {
        await this.dropStaging();
        this.log.info("nothing to publish", { version: published?.version ?? null });
        return { version: published?.version ?? null, upserted: 0, deleted: 0, published: false };
      }

      await dir.ensure();
      const labels = await dir.listVersions();
      const latest = Math.max(0, parseLabel(published?.version ?? "") ?? 0, ...labels.map((l) => parseLabel(l)!));
      const label = formatLabel(latest + 1);
      const segment = Segment.build(
        points,
        { version: label, dims: this.opts.dims, embedderId: this.opts.embedderId, hnsw: this.host.hnsw, subgraphs: this.host.subgraphs },
        onProgress,
      );

      const tmp = path.join(dir.versionsDir, `${label}${TMP_MARKER}${randomSuffix()}`);
      await ensureDir(tmp);
      await segment.writeTo(tmp, onProgress);
      onProgress("publish", 0, 1);
      await renameDurable(tmp, dir.versionDir(label));
      await dir.writeCurrent(label); // the commit point
      this.host.adopt(segment);
      onProgress("publish", 1, 1);
      await this.dropStaging();
      await this.collectGarbage(label, onProgress);
      this.log.info("published", { version: label, count: segment.count, upserted, deleted });
      return { version: label, upserted, deleted, published: true };
    } finally {
      await lock.release();
    }
  }

  /**
   * The new version's points: base rows in order (changed ones replaced, deleted ones dropped),
   * then new points in staging order. An upsert whose hash equals the base's is not a change.
   */
  private merge(base: Segment | null): { points: Point[]; upserted: number; deleted: number } {
    const points: Point[] = [];
    let upserted = 0;
    let deleted = 0;
    const inBase = new Set<PointId>();
    if (base) {
      for (let i = 0; i < base.count; i++) {
        const id = base.ids[i]!;
        const s = this.staged.get(id);
        if (s === undefined) {
          points.push({ id, payload: base.payloads[i]!, vector: base.vectorOf(i) });
          continue;
        }
        inBase.add(id);
        if (s === null) {
          deleted++;
        } else if (s.payload.hash === base.payloads[i]!.hash) {
          points.push({ id, payload: base.payloads[i]!, vector: base.vectorOf(i) });
        } else {
          upserted++;
          points.push({ id, payload: s.payload, vector: s.vector });
        }
      }
    }
    for (const [id, s] of this.staged) {
      if (s === null || inBase.has(id)) continue;
      upserted++;
      points.push({ id, payload: s.payload, vector: s.vector });
    }
    return { points, upserted, deleted };
  }

  /** Under the lock: removes crashed builds (temp dirs) and versions beyond keepVersions; never `current`. */
  private async collectGarbage(current: string, onProgress: (stage: string, done: number, total: number) => void): Promise<void> {
    const { dir, keepVersions } = this.host;
    const cur = parseLabel(current)!;
    const names = await readdir(dir.versionsDir).catch(() => [] as string[]);
    const older = names.filter((n) => (parseLabel(n) ?? Infinity) < cur).sort((a, b) => parseLabel(b)! - parseLabel(a)!);
    const keep = new Set([current, ...older.slice(0, keepVersions - 1)]);
    // Temp dirs and versions newer than `current` can only be leftovers of crashed commits (we hold the lock).
    const doomed = names.filter((n) => !keep.has(n));
    let done = 0;
    for (const name of doomed) {
      onProgress("gc", done++, doomed.length);
      await rm(path.join(dir.versionsDir, name), { recursive: true, force: true }).catch((err: unknown) =>
        this.log.warn("could not remove an old version", { name, err }),
      );
    }
    if (doomed.length) await fsyncDir(dir.versionsDir);
    onProgress("gc", doomed.length, doomed.length);
  }
}
