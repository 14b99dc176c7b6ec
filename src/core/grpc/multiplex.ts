/**
 * Searches multiplexed over a few long-lived SearchStream calls (proto/reposearch/v1/search.proto):
 * searches ready in the same event-loop turn share one message each way instead of each making a
 * gRPC call, a fraction of the CPU a unary call costs in grpc-js and Node's HTTP/2 (docs/grpc.md).
 * Used by CoreClient when `streams` > 0.
 *
 * Each search behaves as a unary call would: its own deadline (sent as `timeout_ms`, and enforced
 * here too), cancellation by AbortSignal (a cancel message stops the server's work), the server's
 * ReposearchError back unchanged, UNAVAILABLE when the transport fails. A stream that ends or fails
 * fails only the searches open on it; the next search opens a fresh one.
 *
 * Streams are retired after `streamMaxAgeMs`: the retired one takes no new searches and is half-closed
 * once its open searches are answered. That keeps each stream younger than the server's shutdown
 * grace (so a core that drains or closes an old connection never cuts searches off), and lets new
 * streams land on other cores, since the channel balances calls, and a stream is one call.
 */
import * as grpc from "@grpc/grpc-js";
import type * as protoLoader from "@grpc/proto-loader";
import { ErrorCode, ReposearchError } from "../../common/errors.js";
import type { SearchResponse } from "../types.js";
import { Outbox } from "./outbox.js";
import {
  type ProtoSearchRequest,
  type ProtoSearchStreamRequest,
  type ProtoStreamSearch,
  errorFromProto,
  errorFromStatus,
  responseFromProto,
} from "./convert.js";

/** Checked by CoreClient, the only constructor of a SearchMultiplexer. */
export interface MultiplexOptions {
  /** Streams kept open at once; each search goes to the one with the fewest searches open. >= 1. */
  readonly streams: number;
  /** Age after which a stream takes no new searches and is closed once idle, in ms. > 0. */
  readonly streamMaxAgeMs: number;
  /** `authorization` metadata of every stream (the core's service token), or null. */
  readonly authorization?: string | null;
}

export interface StreamSearchOptions {
  readonly deadlineMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

interface Pending {
  readonly resolve: (value: SearchResponse) => void;
  readonly reject: (reason: unknown) => void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: (() => void) | undefined;
}

class Stream {
  readonly pending = new Map<number, Pending>();
  readonly openedAt = Date.now();
  /** Takes no new searches; half-closed once `pending` is empty. */
  retired = false;
  /** Ended or failed: nothing more arrives. */
  done = false;
  /** Searches (and ids to cancel) not yet written: what is queued together shares a message (outbox.ts). */
  private readonly outbox = new Outbox<ProtoStreamSearch | number>(
    (batch, written) => {
      if (this.done) return written();
      const searches: ProtoStreamSearch[] = [];
      const cancel: number[] = [];
      for (const item of batch) {
        if (typeof item === "number") cancel.push(item);
        else searches.push(item);
      }
      this.call.write({ searches, cancel } satisfies ProtoSearchStreamRequest, written);
    },
    () => this.halfCloseIfIdle(),
  );

  constructor(readonly call: grpc.ClientDuplexStream<ProtoSearchStreamRequest, unknown>) {}

  send(search: ProtoStreamSearch): void {
    this.outbox.push(search);
  }

  /** Stops a search: dropped from the outbox if it was not sent yet, else a cancel goes out. */
  cancel(id: number): void {
    if (!this.outbox.remove((item) => typeof item !== "number" && item.id === id) && !this.done) this.outbox.push(id);
    this.halfCloseIfIdle();
  }

  /** The pending search `id`, removed with its timer and abort listener; undefined once settled. */
  take(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (p) {
      this.pending.delete(id);
      release(p);
    }
    return p;
  }

  halfCloseIfIdle(): void {
    if (this.retired && !this.done && this.pending.size === 0 && this.outbox.empty) this.call.end();
  }
}

function release(p: Pending): void {
  clearTimeout(p.timer);
  if (p.onAbort) p.signal?.removeEventListener("abort", p.onAbort);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export class SearchMultiplexer {
  private readonly slots: (Stream | undefined)[];
  /** Every stream not yet ended, retired ones included. */
  private readonly live = new Set<Stream>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly method: protoLoader.MethodDefinition<object, object>,
    private readonly opts: MultiplexOptions,
  ) {
    this.slots = new Array<Stream | undefined>(opts.streams).fill(undefined);
  }

  search(request: ProtoSearchRequest, opts: StreamSearchOptions): Promise<SearchResponse> {
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.closed) return Promise.reject(new ReposearchError(ErrorCode.Unavailable, "search core client is closed"));
    const stream = this.pick();
    const id = this.nextId++;
    if (this.nextId > Number.MAX_SAFE_INTEGER) this.nextId = 1;
    return new Promise<SearchResponse>((resolve, reject) => {
      const settle = (): boolean => stream.take(id) !== undefined;
      // Tell the server to stop; its CANCELLED answer then finds nothing pending and is dropped.
      const cancelRemote = (): void => stream.cancel(id);
      const timer = setTimeout(() => {
        if (!settle()) return;
        cancelRemote();
        // The cause looks like the grpc.ServiceError a unary call's deadline gives.
        const cause = Object.assign(new Error("4 DEADLINE_EXCEEDED: deadline exceeded"), { code: 4, details: "Deadline exceeded" });
        reject(new ReposearchError(ErrorCode.DeadlineExceeded, "search core deadline exceeded", { cause }));
      }, opts.deadlineMs);
      timer.unref();
      const onAbort = signal
        ? (): void => {
            if (!settle()) return;
            cancelRemote();
            reject(abortReason(signal));
          }
        : undefined;
      if (signal && onAbort) signal.addEventListener("abort", onAbort, { once: true });
      stream.pending.set(id, { resolve, reject, timer, signal, onAbort });
      stream.send({ id, request, timeoutMs: opts.deadlineMs, metadata: opts.metadata ?? {} });
    });
  }

  /** Fails every open search with UNAVAILABLE and ends the streams. The channel is the caller's to close. */
  close(): void {
    this.closed = true;
    for (const s of this.live) s.call.cancel();
  }

  /** The live stream with the fewest open searches, opening one in an empty slot or retiring an old one. */
  private pick(): Stream {
    const now = Date.now();
    let best: Stream | undefined;
    for (let i = 0; i < this.slots.length; i++) {
      let s = this.slots[i];
      if (s && (s.done || now - s.openedAt >= this.opts.streamMaxAgeMs)) {
        s.retired = true;
        s.halfCloseIfIdle();
        s = undefined;
      }
      if (!s) {
        s = this.open();
        this.slots[i] = s;
      }
      if (!best || s.pending.size < best.pending.size) best = s;
    }
    return best!;
  }

  private open(): Stream {
    const metadata = new grpc.Metadata();
    if (this.opts.authorization) metadata.set("authorization", this.opts.authorization);
    const call = this.client.makeBidiStreamRequest(
      this.method.path,
      this.method.requestSerialize as (value: ProtoSearchStreamRequest) => Buffer,
      this.method.responseDeserialize,
      metadata,
    );
    const stream = new Stream(call);
    this.live.add(stream);
    call.on("data", (msg: unknown) => this.onMessage(stream, msg));
    // 'status' always follows; the failure is handled there.
    call.on("error", () => undefined);
    call.on("status", (status: grpc.StatusObject) => {
      stream.done = true;
      this.live.delete(stream);
      const slot = this.slots.indexOf(stream);
      if (slot >= 0) this.slots[slot] = undefined;
      if (stream.pending.size === 0) return;
      const err =
        status.code === 0
          ? new ReposearchError(ErrorCode.Unavailable, "search stream ended with searches open")
          : errorFromStatus({ code: status.code, details: status.details, metadata: status.metadata });
      const pending = [...stream.pending.values()];
      stream.pending.clear();
      for (const p of pending) {
        release(p);
        p.reject(err);
      }
    });
    return stream;
  }

  private onMessage(stream: Stream, msg: unknown): void {
    const outcomes = (msg as { readonly outcomes?: unknown }).outcomes;
    if (Array.isArray(outcomes)) for (const o of outcomes) this.onOutcome(stream, o);
    stream.halfCloseIfIdle();
  }

  private onOutcome(stream: Stream, outcome: unknown): void {
    const o = (outcome ?? {}) as { readonly id?: unknown; readonly response?: unknown; readonly error?: unknown };
    const id = typeof o.id === "number" ? o.id : -1;
    const p = stream.take(id);
    if (!p) return; // answered already (deadline or cancel came first)
    try {
      if (o.response !== undefined && o.response !== null) p.resolve(responseFromProto(o.response));
      else if (o.error !== undefined && o.error !== null) p.reject(errorFromProto(o.error));
      else p.reject(new ReposearchError(ErrorCode.Internal, "empty reply from the search core"));
    } catch (err) {
      p.reject(ReposearchError.from(err));
    }
  }
}
