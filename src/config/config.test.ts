import assert from "node:assert/strict";
import { availableParallelism, totalmem } from "node:os";
import { test } from "vitest";
import { ConfigError } from "../common/errors.js";
import { autoServeProcesses, loadConfig, MEMORY_PER_SERVE_PROCESS_BYTES } from "./config.js";

const GIB = 2 ** 30;

test("SERVE_PROCESSES: an explicit count is kept; 0 (the default) is one per CPU within the memory budget", () => {
  assert.equal(loadConfig({ SERVE_PROCESSES: "3" }).server.processes, 3);
  assert.equal(loadConfig({ SERVE_PROCESSES: "1" }).server.processes, 1);
  const auto = autoServeProcesses(availableParallelism(), totalmem());
  assert.equal(loadConfig({}).server.processes, auto);
  assert.equal(loadConfig({ SERVE_PROCESSES: "0" }).server.processes, auto);
  for (const bad of ["-1", "1.5", "two", "257"]) assert.throws(() => loadConfig({ SERVE_PROCESSES: bad }), ConfigError);
});

test("STATIC_TRAIN_THREADS: 0 (the default) is one per CPU; an explicit count is kept; validated", () => {
  assert.equal(loadConfig({}).embedder.staticTrainThreads, Math.max(1, availableParallelism()));
  assert.equal(loadConfig({ STATIC_TRAIN_THREADS: "0" }).embedder.staticTrainThreads, Math.max(1, availableParallelism()));
  assert.equal(loadConfig({ STATIC_TRAIN_THREADS: "3" }).embedder.staticTrainThreads, 3);
  for (const bad of ["-1", "1.5", "two", "65"]) assert.throws(() => loadConfig({ STATIC_TRAIN_THREADS: bad }), ConfigError);
});

test("autoServeProcesses: CPUs bound it, so does memory (one per 2 GiB), and it is never below 1", () => {
  assert.equal(MEMORY_PER_SERVE_PROCESS_BYTES, 2 * GIB);
  assert.equal(autoServeProcesses(2, 24 * GIB), 2);
  assert.equal(autoServeProcesses(64, 24 * GIB), 12);
  assert.equal(autoServeProcesses(8, 5 * GIB), 2);
  assert.equal(autoServeProcesses(8, 1 * GIB), 1);
  assert.equal(autoServeProcesses(0, 24 * GIB), 1);
});

test("DENSE_EF_SEARCH: 64 by default, separate from HNSW_EF_SEARCH, validated", () => {
  const c = loadConfig({});
  assert.equal(c.store.denseEfSearch, 64);
  assert.equal(c.store.hnswEfSearch, 160);
  assert.equal(loadConfig({ DENSE_EF_SEARCH: "100" }).store.denseEfSearch, 100);
  for (const bad of ["0", "7", "abc"]) assert.throws(() => loadConfig({ DENSE_EF_SEARCH: bad }), ConfigError);
});

test("REDIS_COMMAND_TIMEOUT_MS: 500 by default, validated", () => {
  assert.equal(loadConfig({}).gateway.redisCommandTimeoutMs, 500);
  assert.equal(loadConfig({ REDIS_COMMAND_TIMEOUT_MS: "5000" }).gateway.redisCommandTimeoutMs, 5000);
  for (const bad of ["0", "9", "60001", "slow"]) assert.throws(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: bad }), ConfigError);
});

test("CORE_AUTH_TOKENS: name=token pairs; a bad entry is named by position, never by its token", () => {
  const good = loadConfig({
    CORE_AUTH_TOKENS: " gateway=gw-token-0123456789abcdefghij , batch-jobs=bj-token-0123456789abcdefghij",
    CORE_TOKEN: "gw-token-0123456789abcdefghij",
  });
  assert.deepEqual(
    [...good.server.coreAuthTokens],
    [
      ["gateway", "gw-token-0123456789abcdefghij"],
      ["batch-jobs", "bj-token-0123456789abcdefghij"],
    ],
  );
  assert.equal(good.server.coreToken, "gw-token-0123456789abcdefghij");
  assert.equal(loadConfig({}).server.coreAuthTokens.size, 0);
  const secret = "short-secret";
  for (const spec of [
    `gateway=${secret}`,
    `Gate Way=${secret}0123456789abcdef`,
    `anonymous=${secret}0123456789abcdef`,
    `a=${secret}0123456789ab,b=${secret}0123456789ab`,
  ]) {
    assert.throws(
      () => loadConfig({ CORE_AUTH_TOKENS: spec }),
      (e: unknown) => e instanceof ConfigError && /CORE_AUTH_TOKENS: entry \d/.test(e.message) && !e.message.includes(secret),
      spec,
    );
  }
  assert.throws(
    () => loadConfig({ CORE_TOKEN: secret }),
    (e: unknown) => e instanceof ConfigError && /CORE_TOKEN/.test(e.message) && !e.message.includes(secret),
  );
});
