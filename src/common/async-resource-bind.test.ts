import assert from "node:assert/strict";
import { AsyncLocalStorage, AsyncResource, executionAsyncId } from "node:async_hooks";
import { test } from "vitest";
import { installAsyncResourceBindFix, nodeBindUsesAccessor } from "./async-resource-bind.js";

test("bound functions get a plain asyncResource property, not per-call accessor closures", () => {
  // Node 20 (this project's runtime) defines the accessor; on a Node that no longer does, nothing is replaced.
  if (!nodeBindUsesAccessor()) return void assert.equal(installAsyncResourceBindFix(), false);
  assert.equal(installAsyncResourceBindFix(), true);
  assert.equal(installAsyncResourceBindFix(), true, "idempotent");
  const resource = new AsyncResource("t");
  const bound = resource.bind(() => 1);
  const d = Object.getOwnPropertyDescriptor(bound, "asyncResource")!;
  assert.equal(d.get, undefined);
  assert.equal(d.value, resource);
  assert.equal(d.enumerable, true);
  // The static form goes through the same method.
  assert.equal(
    Object.getOwnPropertyDescriptor(
      AsyncResource.bind(() => 2),
      "asyncResource",
    )!.get,
    undefined,
  );
});

test("the replacement behaves as Node's: async scope, context, this, arguments, result, length, errors", () => {
  installAsyncResourceBindFix();
  const als = new AsyncLocalStorage<string>();
  let resource!: AsyncResource;
  let bound!: (a: number, b: number) => unknown;
  als.run("bound-here", () => {
    resource = new AsyncResource("t");
    bound = resource.bind(function (this: unknown, a: number, b: number) {
      return { sum: a + b, self: this, store: als.getStore(), id: executionAsyncId() };
    });
  });
  const receiver = { r: 1 };
  const out = bound.call(receiver, 2, 3) as { sum: number; self: unknown; store: string | undefined; id: number };
  assert.equal(out.sum, 5);
  assert.equal(out.self, receiver);
  assert.equal(out.store, "bound-here");
  assert.equal(out.id, resource.asyncId());
  assert.equal(bound.length, 2);
  assert.equal((bound as unknown as { asyncResource: AsyncResource }).asyncResource, resource);

  // bind(fn, thisArg): in Node since 14.x, missing from @types/node's signature.
  const r = new AsyncResource("t");
  const bindWithThis = r.bind as unknown as (fn: (this: unknown) => unknown, thisArg: unknown) => (this: unknown) => unknown;
  const withThis = bindWithThis.call(
    r,
    function (this: unknown) {
      return this;
    },
    receiver,
  );
  assert.equal(withThis.call({ other: true }), receiver);

  const boom = new AsyncResource("t").bind(() => {
    throw new RangeError("inside");
  });
  assert.throws(boom, RangeError);
  assert.throws(() => new AsyncResource("t").bind(null as unknown as () => void), { name: "TypeError", code: "ERR_INVALID_ARG_TYPE" });
});
