/**
 * Structured JSON-lines logger on stderr. Small on purpose: levels, bindings, and a sink that
 * tests can replace to capture output.
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export type LogSink = (line: string) => void;
let sink: LogSink = (line) => process.stderr.write(line + "\n");
let globalLevel: LogLevel = (process.env.LOG_LEVEL as LogLevel) in order ? (process.env.LOG_LEVEL as LogLevel) : "info";

/** Replace the output sink (tests capture log lines this way). Returns the previous sink. */
export function setLogSink(next: LogSink): LogSink {
  const prev = sink;
  sink = next;
  return prev;
}

export function setLogLevel(level: LogLevel): void {
  globalLevel = level;
}

export class Logger {
  constructor(private readonly bindings: Record<string, unknown> = {}) {}

  child(bindings: Record<string, unknown>): Logger {
    return new Logger({ ...this.bindings, ...bindings });
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.write("debug", msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.write("info", msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.write("warn", msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.write("error", msg, fields);
  }

  private write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    if (order[level] < order[globalLevel]) return;
    const rec: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...this.bindings };
    if (fields) {
      for (const [k, v] of Object.entries(fields)) rec[k] = v instanceof Error ? { message: v.message, stack: v.stack } : v;
    }
    sink(JSON.stringify(rec));
  }
}

export const logger = new Logger({ service: "reposearch" });
