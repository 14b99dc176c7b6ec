/**
 * A process-wide replacement for Node's `AsyncResource.prototype.bind` that gives every bound
 * function the same shape. Installed by the gateway (startGateway), whose gRPC client creates one
 * bound function per call: node:http2's ClientHttp2Session.request() binds its connect callback with
 * `new AsyncResource("PendingRequest").bind(...)`.
 *
 * Why: Node 20's bind() defines `asyncResource` on each bound function as an accessor with fresh
 * getter and setter closures. V8 then gives every such function its own hidden class, and that
 * hidden class (in the old generation) points at the closures, whose scope holds the bound callback,
 * hence the HTTP/2 stream and the whole gRPC call with its decoded response. The scavenger treats
 * those old-to-young pointers as roots, so each call's objects survived until the next full
 * collection. Measured with `--trace-gc-nvp`: a gRPC client alone promoted ~8.6 MB per scavenge
 * (0.45 MB with this), scavenges took 27 ms (3.5 ms); in a gateway under the load test, together
 * with the express fix in src/gateway/http-server.ts, 9.3 MB → 0.5 MB per scavenge, and the full
 * collections behind most of the tail became rare.
 *
 * Same behaviour: the function runs in the resource's async scope with the call's `this` (or
 * `thisArg`), `length` is the original's, and `asyncResource` (deprecated, DEP0172) still reads the
 * resource; it is a writable data property instead of an accessor, which is the whole change.
 */
import { AsyncResource } from "node:async_hooks";

const original = AsyncResource.prototype.bind;
let installed = false;

/** Whether this Node's bind() defines `asyncResource` as an accessor (the shape this module replaces). */
export function nodeBindUsesAccessor(): boolean {
  const probe = original.call(new AsyncResource("reposearch.probe"), () => {});
  return typeof Object.getOwnPropertyDescriptor(probe, "asyncResource")?.get === "function";
}

function bind<Func extends (...args: never[]) => unknown>(this: AsyncResource, fn: Func, thisArg?: unknown): Func {
  if (typeof fn !== "function") {
    throw Object.assign(new TypeError(`The "fn" argument must be of type function. Received ${fn === null ? "null" : typeof fn}`), {
      code: "ERR_INVALID_ARG_TYPE",
    });
  }
  // eslint-disable-next-line @typescript-eslint/no-this-alias -- the bound function must call with this resource
  const resource = this;
  const call = fn as unknown as (...args: unknown[]) => unknown;
  const bound =
    thisArg === undefined
      ? function (this: unknown, ...args: unknown[]): unknown {
          return resource.runInAsyncScope(call, this, ...args);
        }
      : resource.runInAsyncScope.bind(resource, call, thisArg);
  Object.defineProperties(bound, {
    length: { configurable: true, enumerable: false, writable: false, value: fn.length },
    asyncResource: { configurable: true, enumerable: true, writable: true, value: resource },
  });
  return bound as unknown as Func;
}

/**
 * Replaces AsyncResource.prototype.bind (and so the static AsyncResource.bind, which calls it) when
 * this Node's own defines the accessor. Idempotent. Returns whether the replacement is in place.
 */
export function installAsyncResourceBindFix(): boolean {
  if (installed) return true;
  if (AsyncResource.prototype.bind !== original || !nodeBindUsesAccessor()) return false;
  AsyncResource.prototype.bind = bind as typeof AsyncResource.prototype.bind;
  installed = true;
  return true;
}
