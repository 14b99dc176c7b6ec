/**
 * Per-IP and per-account rate limits: fixed one-minute windows (rate-limiter-flexible).
 *
 * The Redis backend counts with one atomic Lua increment per request, so the limit is exact under
 * concurrency and across any number of gateway processes that share the key prefix. The memory
 * backend is exact within one process, and within one machine's cluster (SERVE_PROCESSES > 1): there
 * the workers' counters live in the primary (cluster-limiter.ts, batched over IPC), not once per worker.
 *
 * When the Redis store cannot answer, the limiter fails closed (RATE_LIMIT_UNAVAILABLE, 503) unless
 * configured to fail open, in which case each process admits up to `failOpenPerMinute` per key from
 * an in-process counter and logs a (throttled) warning.
 */
import { Redis } from "ioredis";
import cluster from "node:cluster";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { ClusterLimitClient, memoryCounters, serveClusterLimits, type ConsumeOutcome, type LimitName, type LimitSettings } from "./cluster-limiter.js";
import type { ServiceHealth } from "./types.js";

export const WINDOW_SECONDS = 60;
/** Retry-After sent with RATE_LIMIT_UNAVAILABLE: long enough that clients do not spin. */
export const LIMITER_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export interface RateLimitDecision {
  readonly allowed: boolean;
  /** Requests allowed in the window that applied (the fail-open cap when the store was down). */
  readonly limit: number;
  readonly remaining: number;
  /** Unix time (seconds) when the current window ends. */
  readonly resetUnixSeconds: number;
  /** 0 when allowed; otherwise whole seconds until the window resets, at least 1. */
  readonly retryAfterSeconds: number;
  /** True when the decision came from the fail-open fallback because the store was unreachable. */
  readonly degraded: boolean;
}

export interface Limiter {
  readonly backend: "memory" | "redis";
  /** The Redis connection (shared with the query cache), or null for the memory backend. */
  readonly redis: Redis | null;
  consumeIp(ip: string): Promise<RateLimitDecision>;
  consumeAccount(accountId: string): Promise<RateLimitDecision>;
  /** The store's health for GET /health: a PING round trip on Redis; memory is always up. */
  cacheHealth(): Promise<ServiceHealth>;
  close(): Promise<void>;
}

export type LimiterConfig = { readonly gateway: Pick<Config["gateway"], "cacheBackend" | "redisUrl" | "redisCommandTimeoutMs" | "rateLimit"> };

export interface LimiterOptions {
  /** Shared by every gateway process that must count together. Default "reposearch:rl". */
  readonly keyPrefix?: string;
  /** How long createLimiter waits for the first Redis connection before returning anyway. Default 2000 ms. */
  readonly connectWaitMs?: number;
  /** Timeout of the PING in cacheHealth. Default 1000 ms. */
  readonly healthTimeoutMs?: number;
}

/** Logs at most one line per interval, reporting how many were suppressed. */
export function throttledLog(logger: Logger, intervalMs: number): (msg: string, fields: Record<string, unknown>) => void {
  let lastMs = 0;
  let suppressed = 0;
  return (msg, fields) => {
    const now = Date.now();
    if (now - lastMs < intervalMs) {
      suppressed++;
      return;
    }
    logger.warn(msg, suppressed > 0 ? { ...fields, suppressed } : fields);
    lastMs = now;
    suppressed = 0;
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function decisionOf(allowed: boolean, limit: number, res: Pick<RateLimiterRes, "remainingPoints" | "msBeforeNext">, degraded: boolean): RateLimitDecision {
  const msBeforeNext = Math.max(0, res.msBeforeNext);
  return {
    allowed,
    limit,
    remaining: allowed ? Math.max(0, res.remainingPoints) : 0,
    resetUnixSeconds: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(msBeforeNext / 1000)),
    degraded,
  };
}

/** Runs one consume, separating "over the limit" (a RateLimiterRes rejection) from "store failed" (an Error). */
async function tryConsume(limiter: RateLimiterAbstract, key: string): Promise<{ readonly allowed: boolean; readonly res: RateLimiterRes }> {
  try {
    return { allowed: true, res: await limiter.consume(key) };
  } catch (err) {
    if (err instanceof RateLimiterRes) return { allowed: false, res: err };
    throw err;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** How long a cluster worker waits for the primary's counter; generous, since a busy worker reads replies late. */
export const CLUSTER_LIMITER_TIMEOUT_MS = 2_000;

export async function createLimiter(config: LimiterConfig, logger: Logger, opts: LimiterOptions = {}): Promise<Limiter> {
  const { ipPerMinute, accountPerMinute, failMode, failOpenPerMinute } = config.gateway.rateLimit;
  const keyPrefix = opts.keyPrefix ?? "reposearch:rl";
  const log = logger.child({ component: "limiter" });
  const warnStoreDown = throttledLog(log, 30_000);
  const warnConnection = throttledLog(log, 30_000);

  if (config.gateway.cacheBackend === "memory" && cluster.isWorker) {
    // The counters live in the primary (cluster-limiter.ts); it can fail to answer, and then we fail closed.
    const client = new ClusterLimitClient(CLUSTER_LIMITER_TIMEOUT_MS);
    const consume = async (name: LimitName, limit: number, key: string): Promise<RateLimitDecision> => {
      let o: ConsumeOutcome;
      try {
        o = await client.consume(name, key);
      } catch (err) {
        throw new ReposearchError(ErrorCode.RateLimitUnavailable, "rate limiting is temporarily unavailable; retry later", { cause: err });
      }
      return decisionOf(o.allowed, limit, o, false);
    };
    return {
      backend: "memory",
      redis: null,
      consumeIp: (key) => consume("ip", ipPerMinute, key),
      consumeAccount: (key) => consume("account", accountPerMinute, key),
      async cacheHealth() {
        return { status: "up", latencyMs: 0 };
      },
      async close() {
        client.close();
      },
    };
  }

  if (config.gateway.cacheBackend === "memory") {
    const { ip, account } = memoryCounters(limitSettings(config), keyPrefix);
    return {
      backend: "memory",
      redis: null,
      async consumeIp(key) {
        const r = await tryConsume(ip, key);
        return decisionOf(r.allowed, ipPerMinute, r.res, false);
      },
      async consumeAccount(key) {
        const r = await tryConsume(account, key);
        return decisionOf(r.allowed, accountPerMinute, r.res, false);
      },
      async cacheHealth() {
        return { status: "up", latencyMs: 0 };
      },
      async close() {},
    };
  }

  const redis = new Redis(config.gateway.redisUrl, {
    // Fail fast instead of queueing while disconnected: a queued request would wait on a dead store.
    enableOfflineQueue: false,
    // A slow store counts as down (REDIS_COMMAND_TIMEOUT_MS).
    commandTimeout: config.gateway.redisCommandTimeoutMs,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(times * 200, 2_000),
  });
  redis.on("error", (err: unknown) => warnConnection("redis connection error", { error: errorMessage(err) }));

  // Wait briefly for the first connection so the first requests do not all fail; never fail start-up on it.
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off("ready", done);
      redis.off("error", done);
      resolve();
    };
    const timer = setTimeout(done, opts.connectWaitMs ?? 2_000);
    redis.once("ready", done);
    redis.once("error", done);
  });

  const store = (suffix: string, points: number): RateLimiterRedis =>
    new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${keyPrefix}:${suffix}`,
      points,
      duration: WINDOW_SECONDS,
      rejectIfRedisNotReady: true,
    });
  const ip = store("ip", ipPerMinute);
  const account = store("acct", accountPerMinute);
  const fallbackIp = new RateLimiterMemory({ keyPrefix: `${keyPrefix}:ip:fallback`, points: failOpenPerMinute, duration: WINDOW_SECONDS });
  const fallbackAccount = new RateLimiterMemory({ keyPrefix: `${keyPrefix}:acct:fallback`, points: failOpenPerMinute, duration: WINDOW_SECONDS });

  async function consume(limiter: RateLimiterRedis, fallback: RateLimiterMemory, limit: number, key: string): Promise<RateLimitDecision> {
    try {
      const r = await tryConsume(limiter, key);
      return decisionOf(r.allowed, limit, r.res, false);
    } catch (err) {
      warnStoreDown(`rate-limit store unavailable; failing ${failMode}`, { error: errorMessage(err) });
      if (failMode === "closed") {
        throw new ReposearchError(ErrorCode.RateLimitUnavailable, "rate limiting is temporarily unavailable; retry later", { cause: err });
      }
      const r = await tryConsume(fallback, key);
      return decisionOf(r.allowed, failOpenPerMinute, r.res, true);
    }
  }

  const healthTimeoutMs = opts.healthTimeoutMs ?? 1_000;
  return {
    backend: "redis",
    redis,
    consumeIp: (key) => consume(ip, fallbackIp, ipPerMinute, key),
    consumeAccount: (key) => consume(account, fallbackAccount, accountPerMinute, key),
    async cacheHealth() {
      const t0 = performance.now();
      try {
        await withTimeout(redis.ping(), healthTimeoutMs, "redis PING");
        return { status: "up", latencyMs: Math.round((performance.now() - t0) * 10) / 10 };
      } catch (err) {
        return { status: "down", latencyMs: Math.round((performance.now() - t0) * 10) / 10, error: errorMessage(err) };
      }
    },
    async close() {
      try {
        await withTimeout(redis.quit(), 500, "redis QUIT");
      } catch {
        // already down: nothing to flush
      } finally {
        redis.disconnect();
      }
    },
  };
}

/** In the cluster primary: holds the memory backend's counters for every worker (idempotent). */
export function serveClusterLimiter(config: LimiterConfig, keyPrefix = "reposearch:rl"): void {
  serveClusterLimits(limitSettings(config), keyPrefix);
}

function limitSettings(config: LimiterConfig): Record<LimitName, LimitSettings> {
  const { ipPerMinute, accountPerMinute } = config.gateway.rateLimit;
  return { ip: { points: ipPerMinute, durationSeconds: WINDOW_SECONDS }, account: { points: accountPerMinute, durationSeconds: WINDOW_SECONDS } };
}
