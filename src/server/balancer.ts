/**
 * Least-connections hand-off of REST connections to node:cluster workers (SERVE_BALANCING =
 * least-connections, the default with SERVE_PROCESSES > 1).
 *
 * Why not node:cluster's own round-robin: it hands each new connection to a worker that has
 * acknowledged its previous one, so a burst of connections goes mostly to whichever worker is idler
 * at that instant. Agents and load balancers keep their connections alive for minutes, so a burst
 * decides the split for good: 50 keep-alive connections measured 19/31 across two workers, and the
 * busier worker's requests waited 60% longer. Counting live connections per worker and handing each
 * new one to the least loaded keeps the split within one connection.
 *
 * The primary accepts (pauseOnConnect: no byte is read there) and sends the socket handle over the
 * worker's IPC channel, exactly as node:cluster does; the worker emits it on its HTTP server and
 * reports when it closes. Until a worker is serving, accepted connections wait in a bounded queue.
 *
 * A worker that joins later (a replacement after a crash) would otherwise get new connections only,
 * while keep-alive clients stay on the survivors for good. So when a worker joins, the ones above
 * their fair share are told to shed the excess: each answers its next requests on that many
 * connections with `Connection: close`, and the clients reconnect through the primary, which hands
 * those connections to the least loaded worker. Closing after a response, never an idle socket, so
 * no client loses a request it already sent.
 *
 * Shutdown loses no connection either. A draining worker tells the primary (DRAINING) and keeps
 * serving every connection handed to it until the primary answers HANDOFFS_DONE: IPC is ordered, so
 * nothing can arrive after that. When only that worker stops, the primary takes it out of the
 * rotation and answers at once. When the whole machine stops, the primary keeps listening and
 * handing connections to the draining workers (which answer them with `Connection: close`) for
 * SHUTDOWN_DRAIN_DELAY_MS, so load balancers see the health flip, then closes its listener and
 * answers every worker. Closing the listener at the signal instead reset every connection still in
 * the kernel's accept queue: requests clients had already sent.
 */
import type { Worker } from "node:cluster";
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import type { Server as HttpServer, IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../common/logger.js";
import type { BalancingPolicy } from "../config/config.js";

/** Primary → worker: a connection (its handle rides along). */
export const HANDOFF = "reposearch:connection";
/** Worker → primary: that many handed-off connections closed. */
export const CLOSED = "reposearch:connections-closed";
/** Primary → worker: close that many connections after their next response (rebalancing). */
export const SHED = "reposearch:shed-connections";
/** Worker → primary: this worker drains; stop handing it connections (now, or when the primary itself closes). */
export const DRAINING = "reposearch:worker-draining";
/** Primary → worker: no connection will be handed to this worker any more. */
export const HANDOFFS_DONE = "reposearch:handoffs-done";

/** A shed request lapses after this long, so connections idle at the time are not closed much later, when the split may be even again. */
export const SHED_WINDOW_MS = 30_000;

/** Connections accepted while no worker serves (start-up, every worker restarting); later ones are refused. */
export const PENDING_MAX = 1_024;

interface HandoffMessage {
  readonly type: typeof HANDOFF;
}

interface ClosedMessage {
  readonly type: typeof CLOSED;
  readonly count: number;
}

interface ShedMessage {
  readonly type: typeof SHED;
  readonly count: number;
}

interface DrainingMessage {
  readonly type: typeof DRAINING;
}

interface HandoffsDoneMessage {
  readonly type: typeof HANDOFFS_DONE;
}

/**
 * How many connections each worker should shed so that none holds more than its fair share
 * (⌈total / workers⌉), in the order of `counts`.
 */
export function excessOverFairShare(counts: readonly number[]): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  const fair = counts.length === 0 ? 0 : Math.ceil(total / counts.length);
  return counts.map((c) => Math.max(0, c - fair));
}

/**
 * The index of the smallest count; ties go to the first at or after `start` (cyclically), so equal
 * workers take turns. -1 when `counts` is empty.
 */
export function leastLoaded(counts: readonly number[], start: number): number {
  const n = counts.length;
  let best = -1;
  for (let k = 0; k < n; k++) {
    const i = (start + k) % n;
    if (best === -1 || counts[i]! < counts[best]!) best = i;
  }
  return best;
}

interface Slot {
  readonly worker: Worker;
  connections: number;
}

/** The primary's side: one listening socket, handing connections to the serving workers. */
export class ConnectionBalancer {
  private readonly server: NetServer;
  private readonly log: Logger;
  private readonly slots: Slot[] = [];
  private readonly pending: Socket[] = [];
  private turn = 0;
  private closed = false;
  /** The primary stops: draining workers stay in the rotation until the listener closes. */
  private stopping = false;

  constructor(opts: { logger: Logger }) {
    this.log = opts.logger;
    this.server = createServer({ pauseOnConnect: true }, (socket) => this.accept(socket));
  }

  /** Listens on host:port (0 = any free port); resolves with the URL clients use. */
  listen(port: number, host: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once("error", onError);
      this.server.listen({ port, host, exclusive: true }, () => {
        this.server.off("error", onError);
        // An accept error (EMFILE, say) must not take the primary down; the kernel keeps the backlog.
        this.server.on("error", (err) => this.log.error("balancer accept failed", { err }));
        const a = this.server.address() as AddressInfo;
        resolve(`http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`);
      });
    });
  }

  /** The worker serves: it takes connections from now on (and the queued ones first). */
  addWorker(worker: Worker): void {
    if (this.closed || this.slots.some((s) => s.worker === worker)) return;
    this.slots.push({ worker, connections: 0 });
    while (this.pending.length > 0) this.handOff(this.pending.shift()!);
    const excess = excessOverFairShare(this.slots.map((s) => s.connections));
    this.slots.forEach((slot, i) => {
      if (excess[i]! === 0) return;
      const msg: ShedMessage = { type: SHED, count: excess[i]! };
      slot.worker.send(msg);
      this.log.info("asking a worker to shed connections to the new one", { worker: slot.worker.id, connections: slot.connections, shed: excess[i] });
    });
  }

  /** The worker died or stops: it takes no more connections (its own died with it). */
  removeWorker(worker: Worker): void {
    const i = this.slots.findIndex((s) => s.worker === worker);
    if (i >= 0) this.slots.splice(i, 1);
  }

  /** Handles a worker's CLOSED and DRAINING messages; false when the message is not the balancer's. */
  onMessage(worker: Worker, msg: unknown): boolean {
    const type = (msg as { type?: unknown } | null)?.type;
    if (type === DRAINING) {
      // The whole machine stops: keep handing it connections until the listener closes (close() answers).
      if (this.stopping && !this.closed) return true;
      this.removeWorker(worker);
      this.sendDone(worker);
      return true;
    }
    const m = msg as Partial<ClosedMessage> | null;
    if (m?.type !== CLOSED) return false;
    const slot = this.slots.find((s) => s.worker === worker);
    if (slot) slot.connections = Math.max(0, slot.connections - (m.count ?? 0));
    return true;
  }

  /** The primary stops: from now on a draining worker keeps its place until close(). */
  beginShutdown(): void {
    this.stopping = true;
  }

  /** Live connections per serving worker id (tests, debugging). */
  connections(): Map<number, number> {
    return new Map(this.slots.map((s) => [s.worker.id, s.connections]));
  }

  /**
   * Stops accepting, drops queued connections (only queued while no worker serves) and tells every
   * worker that no connection will follow; connections already handed off stay with their workers.
   */
  close(): Promise<void> {
    this.closed = true;
    for (const s of this.pending.splice(0)) s.destroy();
    for (const slot of this.slots.splice(0)) this.sendDone(slot.worker);
    return new Promise((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
  }

  private sendDone(worker: Worker): void {
    if (worker.isDead() || !worker.isConnected()) return;
    const msg: HandoffsDoneMessage = { type: HANDOFFS_DONE };
    try {
      worker.send(msg);
    } catch {
      // the worker is exiting: nothing left to tell it
    }
  }

  private accept(socket: Socket): void {
    if (this.closed) return void socket.destroy();
    if (this.slots.length === 0) {
      if (this.pending.length >= PENDING_MAX) return void socket.destroy();
      this.pending.push(socket);
      socket.once("close", () => {
        const i = this.pending.indexOf(socket);
        if (i >= 0) this.pending.splice(i, 1);
      });
      return;
    }
    this.handOff(socket);
  }

  private handOff(socket: Socket): void {
    const i = leastLoaded(
      this.slots.map((s) => s.connections),
      this.turn,
    );
    const slot = this.slots[i]!;
    this.turn = (i + 1) % this.slots.length;
    slot.connections++;
    const msg: HandoffMessage = { type: HANDOFF };
    // The handle goes with the message; the primary's copy is closed once it has been sent.
    slot.worker.send(msg, socket, (err: Error | null) => {
      if (!err) return;
      slot.connections = Math.max(0, slot.connections - 1);
      socket.destroy();
      this.log.warn("connection hand-off failed", { worker: slot.worker.id, error: err.message });
    });
  }
}

/** Whether `serve` in this configuration and role runs the balancer (primary) and takes its connections (workers). */
export function balancesConnections(config: { readonly server: { readonly processes: number; readonly balancing: BalancingPolicy } }, role: string): boolean {
  return config.server.processes > 1 && config.server.balancing === "least-connections" && role !== "core";
}

/**
 * The worker's side: emits every handed-off connection on `server` and tells the primary when each
 * closes. `sockets` holds the live ones (graceful shutdown waits on them: node:http only counts the
 * connections its own listener accepted). `stop()` takes no more. On SHED, the next responses on
 * that many distinct connections carry `Connection: close` (node:http then closes after the response).
 * `drain(timeoutMs)` tells the primary this worker drains and resolves once it answers that no
 * connection will follow (or after `timeoutMs`, or when the primary is gone).
 */
export function receiveConnections(server: HttpServer): { readonly sockets: ReadonlySet<Socket>; stop(): void; drain(timeoutMs: number): Promise<void> } {
  const sockets = new Set<Socket>();
  let closedSinceReport = 0;
  let reportQueued = false;
  // Coalesced per turn of the event loop: a client that drops many connections at once costs one message.
  const report = (): void => {
    reportQueued = false;
    if (closedSinceReport === 0 || !process.connected) return;
    const msg: ClosedMessage = { type: CLOSED, count: closedSinceReport };
    closedSinceReport = 0;
    process.send!(msg);
  };
  let stopped = false;
  let handoffsDone = false;
  const onHandoffsDone = new Set<() => void>();
  let toShed = 0;
  let shedUntilMs = 0;
  const shed = new WeakSet<Socket>();
  // Prepended: express may answer synchronously in its own listener, after which no header can be set.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    if (toShed === 0) return;
    if (Date.now() > shedUntilMs) return void (toShed = 0);
    const socket = req.socket;
    if (!sockets.has(socket) || shed.has(socket)) return;
    shed.add(socket);
    toShed--;
    res.setHeader("Connection", "close");
  });
  const onMessage = (msg: unknown, handle: unknown): void => {
    if ((msg as Partial<HandoffsDoneMessage> | null)?.type === HANDOFFS_DONE) {
      handoffsDone = true;
      for (const done of onHandoffsDone) done();
      return;
    }
    const shedMsg = msg as Partial<ShedMessage> | null;
    if (shedMsg?.type === SHED) {
      toShed = Math.min(sockets.size, toShed + Math.max(0, shedMsg.count ?? 0));
      shedUntilMs = Date.now() + SHED_WINDOW_MS;
      return;
    }
    if ((msg as Partial<HandoffMessage> | null)?.type !== HANDOFF || !handle) return;
    const socket = handle as Socket;
    // Only after HANDOFFS_DONE (or its timeout) can this happen: a primary that no longer answers.
    if (stopped) return void socket.destroy();
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      closedSinceReport++;
      if (!reportQueued) {
        reportQueued = true;
        setImmediate(report);
      }
    });
    server.emit("connection", socket);
  };
  process.on("message", onMessage);
  return {
    sockets,
    stop: () => void (stopped = true),
    drain(timeoutMs: number): Promise<void> {
      if (handoffsDone || !process.connected || !process.send) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          onHandoffsDone.delete(done);
          process.off("disconnect", done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        timer.unref();
        onHandoffsDone.add(done);
        process.once("disconnect", done);
        const msg: DrainingMessage = { type: DRAINING };
        try {
          process.send!(msg);
        } catch {
          done(); // the channel closed meanwhile: no primary, no hand-offs
        }
      });
    },
  };
}
