/** The query cache on the real Redis at REDIS_URL (default redis://127.0.0.1:6379); the rest is in src/gateway/query-cache.test.ts. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { afterAll, test } from "vitest";
import { Redis } from "ioredis";
import { Logger } from "../src/common/logger.js";
import { createRedisQueryCache } from "../src/gateway/query-cache.js";
import { emptyResponse } from "./support/core-testkit.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const redis = new Redis(REDIS_URL, { lazyConnect: true, enableOfflineQueue: true, maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());

test("redis cache: round trip with expiry, shared by key prefix", async () => {
  const keyPrefix = `test:qc:${process.pid}:${randomBytes(6).toString("hex")}`;
  const c = createRedisQueryCache(redis, { ttlMs: 200, keyPrefix, logger: new Logger() });
  assert.equal(await c.get("k"), undefined);
  await c.set("k", emptyResponse("hello"));
  assert.deepEqual(await c.get("k"), emptyResponse("hello"));
  const ttl = await redis.pttl(`${keyPrefix}:k`);
  assert.ok(ttl > 0 && ttl <= 200);
  await new Promise((r) => setTimeout(r, 260));
  assert.equal(await c.get("k"), undefined);
});
