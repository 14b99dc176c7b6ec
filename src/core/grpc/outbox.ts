/**
 * The batching both ends of a SearchStream use. grpc-js writes one message at a time (the next waits
 * until the previous one's write has completed, which under load is the next event-loop turn), so one
 * message per item would trickle out one per turn. An Outbox sends, in one message, everything pushed in
 * the same turn or while the previous message was being written, at most STREAM_BATCH_MAX items.
 */
import { STREAM_BATCH_MAX } from "./convert.js";

export class Outbox<T> {
  private items: T[] = [];
  private writing = false;
  private scheduled = false;

  /**
   * @param send writes one batch as one message and calls `written` once the write has completed
   *   (or at once, when nothing can be written any more)
   * @param onDrained called when a write completes and nothing is left to send
   */
  constructor(
    private readonly send: (batch: T[], written: () => void) => void,
    private readonly onDrained: () => void,
  ) {}

  /** Nothing queued and no write in progress. */
  get empty(): boolean {
    return this.items.length === 0 && !this.writing;
  }

  push(item: T): void {
    this.items.push(item);
    if (this.scheduled || this.writing) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Removes the first queued item that matches (not yet sent); false when there is none. */
  remove(match: (item: T) => boolean): boolean {
    const i = this.items.findIndex(match);
    if (i < 0) return false;
    this.items.splice(i, 1);
    return true;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.writing || this.items.length === 0) return;
    const batch = this.items.length <= STREAM_BATCH_MAX ? this.items : this.items.splice(0, STREAM_BATCH_MAX);
    if (batch === this.items) this.items = [];
    this.writing = true;
    this.send(batch, () => {
      this.writing = false;
      if (this.items.length > 0) this.flush();
      else this.onDrained();
    });
  }
}
