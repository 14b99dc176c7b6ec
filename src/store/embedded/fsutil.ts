/**
 * Small filesystem helpers for crash-safe writes: durable files, atomic replace, directory fsync,
 * and an exclusive lock file that can be taken over when its owner is dead.
 *
 * Durability model (POSIX, local filesystem): data is durable once the file is fsync'd, and a
 * rename (or link/unlink) is durable once the parent directory is fsync'd.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, mkdir, open, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import { logger as rootLogger, type Logger } from "../../common/logger.js";

export type FileData = string | Uint8Array;

/** A short random suffix for temp names, so concurrent writers never collide. */
export function randomSuffix(): string {
  return randomBytes(6).toString("hex");
}

/** Marker that every temp file and directory name carries, so cleanup can recognise leftovers. */
export const TMP_MARKER = ".tmp-";
export const isTempName = (name: string): boolean => name.includes(TMP_MARKER);

/** Makes a directory's entries (creations, renames, removals) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch (err) {
    // Some platforms/filesystems cannot fsync a directory; there is nothing better to do there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM" && code !== "EBADF") throw err;
  } finally {
    await fh?.close();
  }
}

/**
 * Writes `parts` to a new file (failing if it exists) and fsyncs it. Returns the byte count.
 * `parts` may be a lazy iterable, so big files are produced and written piece by piece; `onPart`
 * sees every piece as written (for checksums). The caller makes the directory entry durable
 * (fsyncDir or a rename of the parent).
 */
export async function writeFileDurable(file: string, parts: FileData | Iterable<FileData>, onPart?: (buf: Uint8Array) => void): Promise<number> {
  const fh = await open(file, "wx");
  let bytes = 0;
  try {
    const list: Iterable<FileData> = typeof parts === "string" || parts instanceof Uint8Array ? [parts] : parts;
    for (const part of list) {
      const buf = typeof part === "string" ? Buffer.from(part, "utf8") : part;
      onPart?.(buf);
      let off = 0;
      while (off < buf.byteLength) {
        const { bytesWritten } = await fh.write(buf, off, buf.byteLength - off);
        off += bytesWritten;
      }
      bytes += buf.byteLength;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return bytes;
}

/**
 * Replaces `file` atomically: readers see either the old or the new content, never a mix, and
 * after a crash the file holds one of the two. (temp + fsync + rename + fsync dir.)
 */
export async function writeFileAtomic(file: string, parts: FileData | Iterable<FileData>): Promise<void> {
  const tmp = `${file}${TMP_MARKER}${randomSuffix()}`;
  try {
    await writeFileDurable(tmp, parts);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(file));
}

/** Renames and makes the rename durable in both parent directories. */
export async function renameDurable(from: string, to: string): Promise<void> {
  await rename(from, to);
  await fsyncDir(path.dirname(to));
  if (path.dirname(from) !== path.dirname(to)) await fsyncDir(path.dirname(from));
}

/** Removes a file or directory tree (no error when absent) and makes the removal durable. */
export async function removeDurable(target: string): Promise<void> {
  await rm(target, { recursive: true, force: true });
  await fsyncDir(path.dirname(target));
}

export async function readFileIfExists(file: string): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

export async function ensureDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
}

/** True when a process with this pid exists (on this host). EPERM means it exists but is not ours. */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Linux boot id: tells a lock left over from before a reboot (whose pid may be reused) from a live one. */
const BOOT_ID: string | null = (() => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
})();

export interface LockOwner {
  readonly pid: number;
  readonly hostname: string;
  readonly bootId: string | null;
  readonly purpose: string;
  readonly acquiredAt: string;
}

export interface LockOptions {
  /** Give up after waiting this long for a live owner to release the lock. */
  readonly timeoutMs: number;
  readonly pollIntervalMs: number;
  /** What the lock is taken for (written into the lock file for humans). */
  readonly purpose: string;
  readonly logger?: Logger;
}

/**
 * An exclusive lock file. The content (pid, host, boot id) is written to a temp file and then
 * hard-linked to the lock path, so the lock never exists without its owner recorded. A lock whose
 * owner is dead (same host, and pid gone or a different boot) is stale and is taken over.
 */
export class FileLock {
  private released = false;

  private constructor(
    readonly file: string,
    private readonly content: string,
  ) {}

  static async acquire(file: string, opts: LockOptions): Promise<FileLock> {
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs < 0) throw new RangeError(`lock timeoutMs must be ≥ 0 (got ${opts.timeoutMs})`);
    if (!Number.isFinite(opts.pollIntervalMs) || opts.pollIntervalMs < 1) {
      throw new RangeError(`lock pollIntervalMs must be ≥ 1 (got ${opts.pollIntervalMs})`);
    }
    const log = opts.logger ?? rootLogger;
    const owner: LockOwner = {
      pid: process.pid,
      hostname: hostname(),
      bootId: BOOT_ID,
      purpose: opts.purpose,
      acquiredAt: new Date().toISOString(),
    };
    const content = JSON.stringify(owner);
    const deadline = Date.now() + opts.timeoutMs;
    let warned = false;
    for (;;) {
      if (await tryCreateWithContent(file, content)) return new FileLock(file, content);
      const holder = await readLockOwner(file);
      if (holder === undefined) continue; // released between our attempt and the read
      if (isStale(holder)) {
        log.warn("taking over a stale lock", { file, holder });
        await breakLock(file, holder);
        continue;
      }
      if (Date.now() >= deadline) {
        throw new ReposearchError(ErrorCode.Unavailable, `timed out after ${opts.timeoutMs} ms waiting for lock ${file} (held by ${describe(holder)})`);
      }
      if (!warned) {
        log.info("waiting for lock", { file, holder });
        warned = true;
      }
      await sleep(Math.min(opts.pollIntervalMs, Math.max(1, deadline - Date.now())));
    }
  }

  /** Releases the lock if we still hold it. Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    // Only remove the file if it is still ours (it could have been taken over after a pid mix-up).
    const cur = await readFileIfExists(this.file);
    if (cur !== null && cur.toString("utf8") === this.content) {
      await unlink(this.file).catch((err) => {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      });
    }
  }
}

async function tryCreateWithContent(file: string, content: string): Promise<boolean> {
  const tmp = `${file}${TMP_MARKER}${randomSuffix()}`;
  await writeFileDurable(tmp, content);
  try {
    await link(tmp, file); // atomic create-if-absent, with the content already in place
    await fsyncDir(path.dirname(file));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/** The owner recorded in a lock file; null when it is unreadable garbage; undefined when absent. */
async function readLockOwner(file: string): Promise<LockOwner | null | undefined> {
  const buf = await readFileIfExists(file);
  if (buf === null) return undefined;
  try {
    const o = JSON.parse(buf.toString("utf8")) as LockOwner;
    return typeof o?.pid === "number" && typeof o.hostname === "string" ? o : null;
  } catch {
    return null;
  }
}

function isStale(holder: LockOwner | null): boolean {
  // Garbage cannot come from FileLock (content is linked in whole), so it is left over from outside.
  if (holder === null) return true;
  if (holder.hostname !== hostname()) return false; // cannot check a pid on another machine
  if (holder.bootId && BOOT_ID && holder.bootId !== BOOT_ID) return true;
  return !isPidAlive(holder.pid);
}

/**
 * Removes a stale lock. Two processes may both see the same stale lock; a short-lived `.break`
 * lock makes sure only one of them removes it, and only if it is still the same stale content.
 */
async function breakLock(file: string, holder: LockOwner | null): Promise<void> {
  const breaker = `${file}.break`;
  const fh = await open(breaker, "wx").catch(async (err) => {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    // A breaker left by a process that died mid-break is removed once it is clearly old.
    const st = await stat(breaker).catch(() => null);
    if (st && Date.now() - st.mtimeMs > 10_000) await unlink(breaker).catch(() => undefined);
    await sleep(5);
    return null;
  });
  if (fh === null) return;
  try {
    const again = await readLockOwner(file);
    if (again !== undefined && JSON.stringify(again) === JSON.stringify(holder)) await unlink(file).catch(() => undefined);
  } finally {
    await fh.close();
    await unlink(breaker).catch(() => undefined);
  }
}

function describe(holder: LockOwner | null | undefined): string {
  if (holder === undefined) return "nobody";
  if (holder === null) return "an unreadable owner";
  return `pid ${holder.pid} on ${holder.hostname} for ${holder.purpose} since ${holder.acquiredAt}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
