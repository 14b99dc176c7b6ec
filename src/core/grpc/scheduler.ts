/**
 * Admission and fair scheduling of the core's searches, shared by both ports of a process.
 *
 * At most `maxRunning` searches run at once. A search that finds every slot taken waits in its
 * caller's queue; when a search ends, its slot goes to the head of the next caller's queue in
 * round-robin order over the callers that are waiting. So a caller's share of the slots does not grow
 * with how much it sends: a flood of thousands from one caller delays another caller's search by about
 * one search, not by the flood. Bounds: `maxQueuedPerCaller` waiting per caller and `maxQueued` in all;
 * beyond them a search is refused at once with RESOURCE_EXHAUSTED (ErrorCode RATE_LIMIT_EXCEEDED),
 * which costs the core nothing.
 *
 * Work-conserving: while slots are free and nobody waits, a search starts at once (synchronously, so
 * the searches of one SearchStream message still start in the same turn and run interleaved stage by
 * stage, engine.ts). Once searches wait, freed slots are handed out at setImmediate, after the turn's
 * I/O: a search runs in microtasks from start to end, so a synchronous hand-over would run a whole
 * backlog inside one turn, and another caller's search, still unread on its socket, could not even
 * join the round. A waiting search whose deadline passes or whose caller cancels leaves its queue
 * (the abort signal).
 */
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { Caller } from "./auth.js";

export interface SchedulerLimits {
  /** Searches running at once, all callers. >= 1. */
  readonly maxRunning: number;
  /** Searches waiting, all callers. >= 0. */
  readonly maxQueued: number;
  /** Searches waiting, per caller. >= 0. */
  readonly maxQueuedPerCaller: number;
}

export type RejectReason = "queue_full" | "caller_queue_full" | "stream_full" | "batch_full";

/** What the scheduler reports, per caller label (src/core/metrics.ts). */
export interface SchedulerMetrics {
  /** A search started running after waiting `waitSeconds` (0 when it did not wait). */
  started(caller: string, waitSeconds: number): void;
  /** Running or waiting counts of a caller changed by `delta`. */
  running(caller: string, delta: number): void;
  queued(caller: string, delta: number): void;
  rejected(caller: string, reason: RejectReason): void;
}

interface Waiter {
  readonly enqueuedAt: number;
  readonly start: () => void;
}

class CallerQueue {
  readonly waiting: Waiter[] = [];
  constructor(
    readonly key: string,
    readonly label: string,
  ) {}
}

/** Releases a search's slot; a second call does nothing. */
export type Release = () => void;

export class FairScheduler {
  private runningCount = 0;
  private queuedCount = 0;
  private readonly queues = new Map<string, CallerQueue>();
  /** Callers with searches waiting, served round robin from `cursor`. */
  private readonly ring: CallerQueue[] = [];
  private cursor = 0;
  /** A hand-over of free slots is scheduled. */
  private handoffScheduled = false;

  constructor(
    private readonly limits: SchedulerLimits,
    private readonly metrics?: SchedulerMetrics,
  ) {
    if (!(limits.maxRunning >= 1)) throw new RangeError(`maxRunning must be >= 1 (got ${limits.maxRunning})`);
  }

  /** Searches running now. */
  get running(): number {
    return this.runningCount;
  }

  /** Searches waiting now. */
  get queued(): number {
    return this.queuedCount;
  }

  /**
   * A slot for one search of `caller`: resolves with its release once the search may run. Rejects with
   * RESOURCE_EXHAUSTED beyond the queue bounds, or with the signal's reason when aborted while waiting.
   */
  acquire(caller: Caller, signal: AbortSignal): Promise<Release> {
    if (signal.aborted) return Promise.reject(signal.reason as unknown);
    if (this.runningCount < this.limits.maxRunning && this.queuedCount === 0) return Promise.resolve(this.begin(caller.label, 0));
    let q = this.queues.get(caller.key);
    if ((q?.waiting.length ?? 0) >= this.limits.maxQueuedPerCaller) return Promise.reject(this.refuse(caller.label, "caller_queue_full"));
    if (this.queuedCount >= this.limits.maxQueued) return Promise.reject(this.refuse(caller.label, "queue_full"));
    if (!q) {
      q = new CallerQueue(caller.key, caller.label);
      this.queues.set(caller.key, q);
    }
    const queue = q;
    return new Promise<Release>((resolve, reject) => {
      const onAbort = (): void => {
        const i = queue.waiting.indexOf(waiter);
        if (i < 0) return;
        queue.waiting.splice(i, 1);
        this.dequeued(queue);
        reject(signal.reason as unknown);
      };
      const waiter: Waiter = {
        enqueuedAt: performance.now(),
        start: () => {
          signal.removeEventListener("abort", onAbort);
          resolve(this.begin(queue.label, (performance.now() - waiter.enqueuedAt) / 1000));
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      if (queue.waiting.length === 0) this.ring.push(queue);
      queue.waiting.push(waiter);
      this.queuedCount++;
      this.metrics?.queued(queue.label, 1);
      // A slot may be free while a hand-over is pending: this search joins the round for it.
      if (this.runningCount < this.limits.maxRunning) this.scheduleHandoff();
    });
  }

  /** Counts a search refused before it reached the scheduler (stream and message caps, server.ts). */
  refuse(label: string, reason: RejectReason): ReposearchError {
    this.metrics?.rejected(label, reason);
    const why: Record<RejectReason, string> = {
      queue_full: "the search core is at capacity",
      caller_queue_full: "too many searches queued for this caller",
      stream_full: "too many searches open on this stream",
      batch_full: "too many searches in one message",
    };
    return new ReposearchError(ErrorCode.RateLimitExceeded, `${why[reason]}; retry later`);
  }

  private begin(label: string, waitSeconds: number): Release {
    this.runningCount++;
    this.metrics?.running(label, 1);
    this.metrics?.started(label, waitSeconds);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.runningCount--;
      this.metrics?.running(label, -1);
      if (this.queuedCount > 0) this.scheduleHandoff();
    };
  }

  private scheduleHandoff(): void {
    if (this.handoffScheduled) return;
    this.handoffScheduled = true;
    setImmediate(() => {
      this.handoffScheduled = false;
      this.next();
    });
  }

  /** Hands free slots to waiting searches, one caller after the other. */
  private next(): void {
    while (this.runningCount < this.limits.maxRunning && this.ring.length > 0) {
      if (this.cursor >= this.ring.length) this.cursor = 0;
      const queue = this.ring[this.cursor]!;
      const waiter = queue.waiting.shift()!;
      // dequeued() removes an emptied queue from the ring, which moves the next caller to `cursor`.
      if (!this.dequeued(queue)) this.cursor++;
      waiter.start();
    }
  }

  /** Bookkeeping after a waiter left `queue`; true when the queue emptied and left the ring. */
  private dequeued(queue: CallerQueue): boolean {
    this.queuedCount--;
    this.metrics?.queued(queue.label, -1);
    if (queue.waiting.length > 0) return false;
    const i = this.ring.indexOf(queue);
    if (i >= 0) {
      this.ring.splice(i, 1);
      if (i < this.cursor) this.cursor--;
    }
    this.queues.delete(queue.key);
    return true;
  }
}
