/**
 * The memory rate limiter across node:cluster workers, with one IPC message per event-loop turn.
 *
 * The counters live in the primary (rate-limiter-flexible's RateLimiterMemory), so a limit counts
 * once per machine. rate-limiter-flexible's own RateLimiterCluster sends one message and arms one
 * timer per consume, and the primary answers each on its own: two round trips per search. Under
 * load a worker reads tens of requests per turn, so here the consumes of one turn travel as one
 * message, the primary answers them in one message, and one timer guards the batch.
 */
import cluster, { type Worker } from "node:cluster";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { TurnBatch } from "../common/turn-batch.js";

/** Worker → primary: consumes, in order. */
export const LIMIT_REQUEST = "reposearch:limit";
/** Primary → worker: one outcome per consume, in the same order. */
export const LIMIT_REPLY = "reposearch:limit-reply";

/** The limiters the primary holds, by name. */
export type LimitName = "ip" | "account";

export interface LimitSettings {
  readonly points: number;
  readonly durationSeconds: number;
}

/** What a consume yields: allowed or not, with the window's state (RateLimiterRes's fields). */
export interface ConsumeOutcome {
  readonly allowed: boolean;
  readonly remainingPoints: number;
  readonly msBeforeNext: number;
}

export interface LimitRequest {
  readonly type: typeof LIMIT_REQUEST;
  readonly batch: number;
  /** [limiter name, key] per consume. */
  readonly items: readonly (readonly [LimitName, string])[];
}

export interface LimitReply {
  readonly type: typeof LIMIT_REPLY;
  readonly batch: number;
  /** [allowed 1/0, remainingPoints, msBeforeNext] per consume; null when the consume failed. */
  readonly outcomes: readonly (readonly [number, number, number] | null)[];
}

interface Pending {
  readonly name: LimitName;
  readonly key: string;
  readonly resolve: (o: ConsumeOutcome) => void;
  readonly reject: (err: Error) => void;
}

/** The memory backend's counters: in the cluster primary for every worker, or in a single serving process. */
export function memoryCounters(settings: Readonly<Record<LimitName, LimitSettings>>, keyPrefix: string): Record<LimitName, RateLimiterMemory> {
  return {
    ip: new RateLimiterMemory({ keyPrefix: `${keyPrefix}:ip`, points: settings.ip.points, duration: settings.ip.durationSeconds }),
    account: new RateLimiterMemory({ keyPrefix: `${keyPrefix}:acct`, points: settings.account.points, duration: settings.account.durationSeconds }),
  };
}

/** The reply to a worker's message, or null when it is not a limit request. */
export async function answerLimitRequest(limiters: Readonly<Record<LimitName, RateLimiterMemory>>, msg: unknown): Promise<LimitReply | null> {
  if (!isRequest(msg)) return null;
  const outcomes = await Promise.all(
    msg.items.map(async (item): Promise<LimitReply["outcomes"][number]> => {
      const [name, key] = Array.isArray(item) ? item : [];
      const limiter = name === "ip" || name === "account" ? limiters[name] : undefined;
      if (limiter === undefined || typeof key !== "string") return null;
      try {
        const res = await limiter.consume(key);
        return [1, res.remainingPoints, res.msBeforeNext];
      } catch (err) {
        if (err instanceof RateLimiterRes) return [0, err.remainingPoints, err.msBeforeNext];
        return null;
      }
    }),
  );
  return { type: LIMIT_REPLY, batch: msg.batch, outcomes };
}

let served = false;

/** In the cluster primary: answers every worker's limit requests (idempotent per process). */
export function serveClusterLimits(settings: Readonly<Record<LimitName, LimitSettings>>, keyPrefix: string): void {
  if (served) return;
  served = true;
  const limiters = memoryCounters(settings, keyPrefix);
  cluster.on("message", (worker: Worker, msg: unknown) => {
    void answerLimitRequest(limiters, msg).then((reply) => {
      // A worker that exited meanwhile cannot be answered; its requests are gone with it.
      if (reply && worker.isConnected()) worker.send(reply, () => {});
    });
  });
}

function isRequest(msg: unknown): msg is LimitRequest {
  return typeof msg === "object" && msg !== null && (msg as LimitRequest).type === LIMIT_REQUEST && Array.isArray((msg as LimitRequest).items);
}

function isReply(msg: unknown): msg is LimitReply {
  return typeof msg === "object" && msg !== null && (msg as LimitReply).type === LIMIT_REPLY && Array.isArray((msg as LimitReply).outcomes);
}

/**
 * A worker's side: consumes queued in one turn go out as one message (at setImmediate, after the
 * turn's I/O callbacks), and fail together if the primary does not answer within `timeoutMs`.
 */
export class ClusterLimitClient {
  private readonly queue = new TurnBatch<Pending>((items) => this.send(items));
  private nextBatch = 1;
  private readonly inFlight = new Map<number, { readonly items: Pending[]; readonly timer: NodeJS.Timeout }>();
  private readonly onMessage = (msg: unknown): void => {
    if (isReply(msg)) this.settle(msg);
  };

  constructor(
    private readonly timeoutMs: number,
    private readonly channel: Pick<NodeJS.Process, "send" | "on" | "off"> = process,
  ) {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError(`ClusterLimitClient: timeoutMs must be positive (got ${timeoutMs})`);
    if (typeof channel.send !== "function") throw new Error("ClusterLimitClient: this process has no IPC channel (not a cluster worker)");
    channel.on("message", this.onMessage);
  }

  consume(name: LimitName, key: string): Promise<ConsumeOutcome> {
    return new Promise((resolve, reject) => this.queue.push({ name, key, resolve, reject }));
  }

  /** Stops listening; consumes still waiting fail. */
  close(): void {
    this.channel.off("message", this.onMessage);
    const err = new Error("cluster limiter closed");
    for (const [batch, { items, timer }] of this.inFlight) {
      clearTimeout(timer);
      this.inFlight.delete(batch);
      for (const p of items) p.reject(err);
    }
    for (const p of this.queue.take()) p.reject(err);
  }

  private send(items: Pending[]): void {
    const batch = this.nextBatch++;
    const timer = setTimeout(() => this.fail(batch, new Error(`no answer from the cluster primary within ${this.timeoutMs} ms`)), this.timeoutMs);
    timer.unref();
    this.inFlight.set(batch, { items, timer });
    const request: LimitRequest = { type: LIMIT_REQUEST, batch, items: items.map((p) => [p.name, p.key] as const) };
    try {
      this.channel.send!(request, undefined, {}, (err: Error | null) => {
        if (err) this.fail(batch, err);
      });
    } catch (err) {
      this.fail(batch, err instanceof Error ? err : new Error(String(err)));
    }
  }

  private fail(batch: number, err: Error): void {
    const entry = this.inFlight.get(batch);
    if (!entry) return;
    this.inFlight.delete(batch);
    clearTimeout(entry.timer);
    for (const p of entry.items) p.reject(err);
  }

  private settle(reply: LimitReply): void {
    const entry = this.inFlight.get(reply.batch);
    if (!entry) return; // timed out already
    this.inFlight.delete(reply.batch);
    clearTimeout(entry.timer);
    entry.items.forEach((p, i) => {
      const o = reply.outcomes[i];
      if (!o) p.reject(new Error("the cluster primary could not count this request"));
      else p.resolve({ allowed: o[0] === 1, remainingPoints: o[1], msBeforeNext: o[2] });
    });
  }
}
