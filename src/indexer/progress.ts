/**
 * Progress for long batch stages: a redrawn bar with rate and ETA on a terminal, and a log line every
 * `intervalMs` otherwise (CI, containers, files), so both humans and log collectors see it move.
 */
import type { Logger } from "../common/logger.js";

export interface ProgressOptions {
  readonly logger: Logger;
  /** Write a bar to this stream when it is a TTY; otherwise log lines. */
  readonly stream?: NodeJS.WriteStream;
  readonly intervalMs: number;
}

function fmtDuration(s: number): string {
  if (!Number.isFinite(s) || s < 0) return "?";
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export class Progress {
  private stage = "";
  private total = 0;
  private done = 0;
  private startedAt = 0;
  private lastDraw = 0;
  private lastLog = 0;
  private readonly tty: boolean;

  constructor(private readonly opts: ProgressOptions) {
    this.tty = Boolean(opts.stream?.isTTY);
  }

  start(stage: string, total: number): void {
    this.finish();
    this.stage = stage;
    this.total = total;
    this.done = 0;
    this.startedAt = Date.now();
    this.lastLog = this.startedAt;
    this.lastDraw = 0;
  }

  update(done: number, total?: number): void {
    if (total !== undefined) this.total = total;
    this.done = done;
    const now = Date.now();
    if (this.tty) {
      if (now - this.lastDraw >= 100 || done >= this.total) {
        this.lastDraw = now;
        this.opts.stream!.write(`\r${this.line()}\x1b[K`);
      }
    } else if (now - this.lastLog >= this.opts.intervalMs) {
      this.lastLog = now;
      this.opts.logger.info("progress", this.fields());
    }
  }

  /** Ends the current stage (prints its final state). */
  finish(): void {
    if (!this.stage) return;
    if (this.tty) this.opts.stream!.write(`\r${this.line()}\x1b[K\n`);
    else this.opts.logger.info("stage done", { ...this.fields(), seconds: (Date.now() - this.startedAt) / 1000 });
    this.stage = "";
  }

  private rate(): number {
    const s = (Date.now() - this.startedAt) / 1000;
    return s > 0 ? this.done / s : 0;
  }

  private fields(): Record<string, unknown> {
    const rate = this.rate();
    return {
      stage: this.stage,
      done: this.done,
      total: this.total,
      percent: this.total ? Math.round((1000 * this.done) / this.total) / 10 : null,
      perSecond: Math.round(rate),
      eta: rate > 0 && this.total ? fmtDuration((this.total - this.done) / rate) : null,
    };
  }

  private line(): string {
    const width = 24;
    const frac = this.total ? Math.min(1, this.done / this.total) : 0;
    const filled = Math.round(frac * width);
    const rate = this.rate();
    const eta = rate > 0 && this.total ? fmtDuration((this.total - this.done) / rate) : "?";
    return `${this.stage.padEnd(10)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${(frac * 100).toFixed(1).padStart(5)}% ${this.done.toLocaleString("en-US")}/${this.total.toLocaleString("en-US")} ${Math.round(rate).toLocaleString("en-US")}/s ETA ${eta}`;
  }
}
