/**
 * Who holds a reservation (types.ts): this process, named so that a later process can tell whether
 * the holder is gone. `host` is the host name plus the pid namespace (Linux: the inode of
 * /proc/self/ns/pid), because a pid means something only within its namespace: two containers on one
 * node share neither. `instance` is random per process, so a process that got a dead one's pid (pid 1
 * in every container) is not taken for it.
 */
import { randomUUID } from "node:crypto";
import { readlinkSync } from "node:fs";
import { hostname } from "node:os";
import type { ReservationOwner } from "./types.js";

function pidNamespace(): string {
  try {
    return readlinkSync("/proc/self/ns/pid"); // e.g. "pid:[4026531836]"
  } catch {
    return "pid:?";
  }
}

/** This process as a reservation owner. */
export const PROCESS_OWNER: ReservationOwner = Object.freeze({ host: `${hostname()}/${pidNamespace()}`, pid: process.pid, instance: randomUUID() });

/**
 * Whether `owner` is certainly gone, as far as this process can tell: it ran in this host's pid
 * namespace and its pid is no longer alive, or is this process's pid under another instance. Anything
 * else (another host, a live pid, a pid reused by another process) is not known to be gone; such
 * reservations are left to their age limit.
 */
export function ownerIsGone(owner: ReservationOwner, self: ReservationOwner = PROCESS_OWNER): boolean {
  if (owner.host !== self.host) return false;
  if (owner.pid === self.pid) return owner.instance !== self.instance;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (err) {
    // EPERM: alive, someone else's process.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}
