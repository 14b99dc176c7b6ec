/**
 * Warnings that repeat with traffic, throttled per key: the first of a window is logged in full,
 * the rest of the window are only counted, and one line with the count closes the window.
 *
 * Why: during an outage (Redis down, the core unreachable) every refused request used to log its own
 * warning with the cause's stack, about 1.3 KB each, so log volume grew with the traffic an attacker
 * sends. Now an outage costs one full line per key per window plus one count line, whatever the rate.
 * The window's timer is unref'd and the logger never throws, so nothing here can hold a process open
 * or fail a request.
 */
import type { Logger } from "../common/logger.js";

/** How long one full line stands for its key's repeats. */
export const WARN_WINDOW_MS = 10_000;

interface Window {
  suppressed: number;
  readonly msg: string;
  readonly timer: NodeJS.Timeout;
}

export interface ThrottledWarn {
  /** Logs `msg` with `fields` unless a line of the same key was logged less than a window ago; then only counts it. */
  warn(key: string, msg: string, fields: Record<string, unknown>): void;
}

export function throttledWarn(log: Logger, windowMs = WARN_WINDOW_MS): ThrottledWarn {
  const open = new Map<string, Window>();
  const close = (key: string): void => {
    const w = open.get(key);
    if (!w) return;
    open.delete(key);
    clearTimeout(w.timer);
    if (w.suppressed > 0) log.warn(`${w.msg} (repeated)`, { key, suppressed: w.suppressed, windowMs });
  };
  return {
    warn(key, msg, fields) {
      const w = open.get(key);
      if (w) {
        w.suppressed++;
        return;
      }
      log.warn(msg, fields);
      const timer = setTimeout(() => close(key), windowMs);
      timer.unref();
      open.set(key, { suppressed: 0, msg, timer });
    },
  };
}
