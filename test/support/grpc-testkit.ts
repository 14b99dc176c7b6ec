/**
 * For tests of the gRPC core API (the unit tests here and the end-to-end tests in test/): what a failed
 * call looks like, and polling for a condition. Test support only; nothing in the service imports it.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReposearchError } from "../../src/common/errors.js";
import { PROTO_LOADER_OPTIONS } from "../../src/core/grpc/convert.js";
import { ConnectError } from "@connectrpc/connect";

/** The ReposearchError `p` rejects with; fails the test if it resolves or rejects with anything else. */
export async function expectError(p: Promise<unknown>): Promise<ReposearchError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ReposearchError, `expected ReposearchError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the call to fail");
}

/** The gRPC status code of the call behind a client error, when there was one. */
export function grpcCodeOf(err: ReposearchError): number | undefined {
  return (err.cause as Partial<grpc.ServiceError> | undefined)?.code;
}

/** Polls `cond` every `stepMs` until it holds (true) or `timeoutMs` has passed (false). */
export async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 50): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > until) return false;
    await sleep(stepMs);
  }
}

/** A raw client of the server reflection service (`version` v1 or v1alpha) at `address`, as grpcurl uses it. */
export function reflectionClient(
  address: string,
  version: "v1" | "v1alpha" = "v1",
): {
  /** Sends one request on a new stream and resolves with the first response. */
  ask<T>(request: object): Promise<T>;
  /** The names of the services the server lists. */
  listServices(): Promise<string[]>;
  close(): void;
} {
  const protoDir = path.resolve(path.dirname(createRequire(import.meta.url).resolve("@grpc/reflection")), "..", "proto");
  const pkg = protoLoader.loadSync(`grpc/reflection/${version}/reflection.proto`, { ...PROTO_LOADER_OPTIONS, includeDirs: [protoDir] });
  const info = (pkg[`grpc.reflection.${version}.ServerReflection`] as protoLoader.ServiceDefinition).ServerReflectionInfo!;
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  const ask = <T>(request: object): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const stream = raw.makeBidiStreamRequest(info.path, info.requestSerialize, info.responseDeserialize);
      stream.on("data", (msg: T) => {
        resolve(msg);
        stream.end();
      });
      stream.on("error", reject);
      stream.write(request);
    });
  return {
    ask,
    listServices: async () => {
      const msg = await ask<{ listServicesResponse?: { service?: { name: string }[] } }>({ listServices: "*" });
      return (msg.listServicesResponse?.service ?? []).map((s) => s.name);
    },
    close: () => raw.close(),
  };
}

/** The ConnectError `p` rejects with; fails the test if it resolves or rejects with anything else. */
export async function connectError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ConnectError, `expected ConnectError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the call to fail");
}
