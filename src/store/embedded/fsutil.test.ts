import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ReposearchError } from "../../common/errors.js";
import { Logger } from "../../common/logger.js";
import { FileLock, isPidAlive, writeFileAtomic, writeFileDurable } from "./fsutil.js";

const quiet = new Logger();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rs-fsutil-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid of a process that has already exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(r.stdout);
}

describe("writeFileAtomic", () => {
  it("replaces the content and leaves no temp files behind", async () => {
    const f = path.join(dir, "atomic.json");
    await writeFileAtomic(f, "one");
    await writeFileAtomic(f, ["t", Buffer.from("wo")]);
    assert.equal(await readFile(f, "utf8"), "two");
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.startsWith("atomic")),
      ["atomic.json"],
    );
  });

  it("writeFileDurable refuses to overwrite and reports bytes and parts", async () => {
    const f = path.join(dir, "durable.bin");
    const seen: number[] = [];
    const bytes = await writeFileDurable(
      f,
      (function* () {
        yield "ab";
        yield new Uint8Array([1, 2, 3]);
      })(),
      (b) => seen.push(b.byteLength),
    );
    assert.equal(bytes, 5);
    assert.deepEqual(seen, [2, 3]);
    await assert.rejects(writeFileDurable(f, "x"), { code: "EEXIST" });
  });
});

describe("FileLock", () => {
  const opts = { timeoutMs: 2000, pollIntervalMs: 5, purpose: "test", logger: quiet };

  it("is exclusive: a second acquirer waits until the first releases", async () => {
    const file = path.join(dir, "LOCK-a");
    const first = await FileLock.acquire(file, opts);
    const owner = JSON.parse(await readFile(file, "utf8"));
    assert.equal(owner.pid, process.pid);
    let secondHeld = false;
    const second = FileLock.acquire(file, opts).then((l) => {
      secondHeld = true;
      return l;
    });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(secondHeld, false);
    await first.release();
    const l2 = await second;
    assert.equal(secondHeld, true);
    await l2.release();
    await assert.rejects(readFile(file), { code: "ENOENT" });
  });

  it("times out with a clear error while a live process holds it", async () => {
    const file = path.join(dir, "LOCK-b");
    const held = await FileLock.acquire(file, opts);
    await assert.rejects(FileLock.acquire(file, { ...opts, timeoutMs: 30 }), (err: unknown) => {
      assert.ok(err instanceof ReposearchError);
      assert.match(err.message, /timed out after 30 ms waiting for lock .*held by pid \d+/);
      return true;
    });
    await held.release();
  });

  it("takes over a lock whose owner is dead, and a lock file holding garbage", async () => {
    const pid = deadPid();
    assert.equal(isPidAlive(pid), false);
    const file = path.join(dir, "LOCK-c");
    await writeFile(file, JSON.stringify({ pid, hostname: hostname(), bootId: null, purpose: "crashed", acquiredAt: "x" }));
    const l = await FileLock.acquire(file, { ...opts, timeoutMs: 0 });
    assert.equal(JSON.parse(await readFile(file, "utf8")).pid, process.pid);
    await l.release();

    await writeFile(file, "{not json");
    const l2 = await FileLock.acquire(file, { ...opts, timeoutMs: 0 });
    await l2.release();
  });

  it("release does not remove a lock that someone else now holds", async () => {
    const file = path.join(dir, "LOCK-d");
    const l = await FileLock.acquire(file, opts);
    await writeFile(file, JSON.stringify({ pid: process.pid, hostname: hostname(), purpose: "other" }));
    await l.release();
    assert.match(await readFile(file, "utf8"), /other/);
  });
});
