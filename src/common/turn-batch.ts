/**
 * Collects the items pushed during one event-loop turn and hands them over together at setImmediate,
 * after the turn's I/O callbacks: under load a serving process reads tens of requests per turn, so
 * their limiter consumes travel as one IPC message and their debits commit as one transaction.
 * With `queueMicrotask` as the schedule it collects one run of the microtask queue instead, handing
 * over before any I/O callback (the core's query embeddings: embed/batching.ts).
 * (A SearchStream's Outbox also waits for each write to complete; see core/grpc/outbox.ts.)
 */
export class TurnBatch<T> {
  private items: T[] = [];
  private scheduled = false;

  /**
   * @param run gets each turn's items, in push order; it must not throw.
   * @param schedule when the items are handed over (default setImmediate: after the turn's I/O callbacks).
   */
  constructor(
    private readonly run: (items: T[]) => void,
    private readonly schedule: (fn: () => void) => void = setImmediate,
  ) {}

  push(item: T): void {
    this.items.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      const items = this.take();
      if (items.length > 0) this.run(items);
    });
  }

  /** Removes and returns what is waiting (on close: the caller fails them instead). */
  take(): T[] {
    const items = this.items;
    this.items = [];
    return items;
  }
}
