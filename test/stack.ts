/**
 * Shared set-up of the server tests: a small real index built with the real CLI, the environment of a
 * core and gateway started in this process (loopback, ports 0), accounts with credits and keys, and
 * requests to the search endpoint. Each test file keeps its own specifics (dataset size, fixtures,
 * limits, backends) as overrides.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import path from "node:path";
import { MICROS_PER_USD, type AccountStore } from "../src/gateway/accounts/types.js";
import { SEARCH_PATH } from "../src/gateway/openapi.js";
import { runCli, testEnv, writeJsonl, type CliResult } from "./helpers.js";

/** Writes `rows` as a JSONL dataset (`file`, default ds.jsonl) into `dataDir` and indexes it there with the real CLI; fails unless the build succeeds. */
export async function buildIndex(
  dataDir: string,
  rows: readonly (Record<string, unknown> | string)[],
  opts: { file?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const ds = await writeJsonl(path.join(dataDir, opts.file ?? "ds.jsonl"), rows);
  const built = await runCli(["index", "--dataset", ds, "--data-dir", dataDir], opts.env ?? testEnv());
  assert.equal(built.code, 0, built.stderr.slice(-2000));
  return built;
}

/**
 * Environment of an in-process core and gateway over `dataDir`: loopback, ports 0, no remote core, a
 * SQLite ledger in the data dir, the in-memory cache, limits high enough not to interfere, no reranker.
 */
export function stackEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return testEnv({
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    GRPC_PORT: "0",
    CORE_ADDRESS: "",
    LEDGER_BACKEND: "sqlite",
    LEDGER_SQLITE_PATH: "",
    CACHE_BACKEND: "memory",
    RATE_LIMIT_IP_PER_MINUTE: "100000",
    RATE_LIMIT_ACCOUNT_PER_MINUTE: "100000",
    SHUTDOWN_GRACE_MS: "1000",
    // No load balancer to drain here: in-process gateways close at once (test/shutdown.test.ts sets its own).
    SHUTDOWN_DRAIN_DELAY_MS: "0",
    RERANKER: "off",
    ...extra,
  });
}

/** A loopback port that nothing listens on (it was free a moment ago). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** `prefix-` and the start of a random UUID: a name no other run uses. */
export function uniqueName(prefix: string, chars = 8): string {
  return `${prefix}-${randomUUID().slice(0, chars)}`;
}

export interface TestAccount {
  readonly name: string;
  readonly id: string;
  /** The full secret key. */
  readonly key: string;
  readonly prefix: string;
}

/** A new account on `store` with `usd` dollars of credit (none when 0) and a fresh key. */
export async function fundedAccount(store: AccountStore, name: string, usd: number): Promise<TestAccount> {
  const account = await store.createAccount(name);
  if (usd > 0) await store.topup(name, usd * MICROS_PER_USD);
  const created = await store.createKey(name);
  return { name, id: account.id, key: created.key, prefix: created.prefix };
}

/** POSTs a search body (a string is sent as is) to the gateway at `base`, with `X-API-Key` when a key is given. */
export function postSearch(
  base: string,
  body: unknown,
  key?: string,
  headers: Record<string, string> = {},
  init: { signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${base}${SEARCH_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key !== undefined ? { "x-api-key": key } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}
