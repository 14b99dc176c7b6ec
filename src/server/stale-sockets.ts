/**
 * A serving process listens on private Unix sockets in the temp dir, named after its pid
 * (`reposearch-core-<pid>.sock`: the in-process gateway's way to its core; `reposearch-gateway-<pid>.sock`:
 * a balanced cluster worker). A graceful stop removes them; kill -9 or an OOM kill leaves them behind.
 * At start each process removes the ones whose pid is no longer alive, and only those: a live
 * process's socket (another worker, another instance) is never touched. Each removal is logged.
 */
import { lstatSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Logger } from "../common/logger.js";

const SOCKET_NAME = /^reposearch-(?:core|gateway)-(\d+)\.sock$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists, owned by someone else.
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Removes the stale sockets of dead processes from `dir` (default: the temp dir); returns their paths. Never throws. */
export function removeStaleSockets(log: Logger, dir: string = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = SOCKET_NAME.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || alive(pid)) continue;
    const file = path.join(dir, name);
    try {
      if (!lstatSync(file).isSocket()) continue;
      rmSync(file, { force: true });
      removed.push(file);
      log.info("removed a stale socket of a process that is gone", { socket: file, pid });
    } catch (err) {
      log.warn("could not remove a stale socket", { socket: file, error: (err as Error).message });
    }
  }
  return removed;
}
