/**
 * Streams a JSONL dataset, gzipped or plain (detected from the magic bytes, not the name), from a
 * local path or an http(s) URL, and yields validated, normalised records with their line numbers.
 * Bad lines are yielded as rejects so the caller can count and report them; nothing is dropped silently.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable, PassThrough } from "node:stream";
import { createGunzip } from "node:zlib";
import { createInterface } from "node:readline";
import { ReposearchError, ErrorCode } from "../common/errors.js";
import { isNewer, normalizeRecord } from "./normalize.js";
import type { RepoRecord } from "./record.js";

export type DatasetItem =
  { readonly kind: "record"; readonly line: number; readonly record: RepoRecord } | { readonly kind: "reject"; readonly line: number; readonly reason: string };

export interface OpenedSource {
  readonly stream: Readable;
  /** Total compressed/raw bytes when known (for progress), else null. */
  readonly totalBytes: number | null;
  /** Bytes read from the source so far. */
  bytesRead(): number;
}

const isUrl = (s: string) => /^https?:\/\//i.test(s);

export async function openSource(source: string, opts: { timeoutMs?: number } = {}): Promise<OpenedSource> {
  let raw: Readable;
  let totalBytes: number | null = null;
  if (isUrl(source)) {
    const res = await fetch(source, { signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000) }).catch((e: unknown) => {
      throw new ReposearchError(ErrorCode.ExternalService, `dataset: cannot fetch ${source}: ${(e as Error).message}`, { cause: e });
    });
    if (!res.ok || !res.body) throw new ReposearchError(ErrorCode.ExternalService, `dataset: ${source} answered HTTP ${res.status}`);
    const len = Number(res.headers.get("content-length"));
    totalBytes = Number.isFinite(len) && len > 0 ? len : null;
    raw = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>);
  } else {
    const st = await stat(source).catch(() => null);
    if (!st || !st.isFile()) throw new ReposearchError(ErrorCode.ValidationError, `dataset: no such file: ${source}`);
    totalBytes = st.size;
    raw = createReadStream(source, { highWaterMark: 1 << 20 });
  }
  let read = 0;
  raw.on("data", (chunk: Buffer) => {
    read += chunk.length;
  });
  return { stream: await gunzipIfNeeded(raw), totalBytes, bytesRead: () => read };
}

/** Peeks at the first two bytes: 1f 8b is gzip. */
async function gunzipIfNeeded(raw: Readable): Promise<Readable> {
  const first: Buffer = await new Promise((resolve, reject) => {
    const onReadable = () => {
      const chunk = raw.read() as Buffer | null;
      if (chunk === null) return;
      cleanup();
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.alloc(0));
    };
    const onError = (e: Error) => {
      cleanup();
      reject(e);
    };
    const cleanup = () => {
      raw.off("readable", onReadable);
      raw.off("end", onEnd);
      raw.off("error", onError);
    };
    raw.on("readable", onReadable);
    raw.on("end", onEnd);
    raw.on("error", onError);
  });
  const out = new PassThrough({ highWaterMark: 1 << 20 });
  out.write(first);
  raw.pipe(out);
  raw.on("error", (e) => out.destroy(e));
  if (first.length >= 2 && first[0] === 0x1f && first[1] === 0x8b) {
    const gunzip = createGunzip({ chunkSize: 1 << 20 });
    out.on("error", (e) => gunzip.destroy(e));
    return out.pipe(gunzip);
  }
  return out;
}

/** Yields every line of the source as a validated record or a reject, in order. */
export async function* readDataset(opened: OpenedSource): AsyncGenerator<DatasetItem> {
  const rl = createInterface({ input: opened.stream, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of rl) {
      line++;
      if (text.trim() === "") continue; // blank lines carry nothing; not an error
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        yield { kind: "reject", line, reason: `invalid JSON: ${(e as Error).message}` };
        continue;
      }
      const res = normalizeRecord(parsed);
      if (res.ok) yield { kind: "record", line, record: res.record };
      else yield { kind: "reject", line, reason: res.reason };
    }
  } catch (e) {
    throw new ReposearchError(ErrorCode.ValidationError, `dataset: read failed at line ${line + 1}: ${(e as Error).message}`, { cause: e });
  } finally {
    // A consumer that stops early (--limit) must not leave the file or the HTTP body open.
    rl.close();
    opened.stream.destroy();
  }
}

/**
 * Every valid record of a dataset, one per key (the newest snapshot wins; see isNewer), in the order
 * keys first appear. `limit` stops reading before the first record of a key beyond that many;
 * `onItem` sees every item read until then, rejects included.
 */
export async function readUniqueRecords(
  source: string | OpenedSource,
  opts: { readonly limit?: number | undefined; readonly onItem?: (item: DatasetItem) => void } = {},
): Promise<{ records: RepoRecord[]; duplicates: number }> {
  const opened = typeof source === "string" ? await openSource(source) : source;
  const byKey = new Map<string, RepoRecord>();
  let duplicates = 0;
  for await (const item of readDataset(opened)) {
    if (item.kind === "record") {
      const r = item.record;
      const prev = byKey.get(r.key);
      if (prev) {
        duplicates++;
        if (isNewer(r, prev)) byKey.set(r.key, r);
      } else {
        if (opts.limit !== undefined && byKey.size >= opts.limit) break;
        byKey.set(r.key, r);
      }
    }
    opts.onItem?.(item);
  }
  return { records: [...byKey.values()], duplicates };
}
