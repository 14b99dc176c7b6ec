/**
 * A short-lived cache of core answers, keyed by a hash of the validated request with defaults made
 * explicit (so `{query}` and `{query, limit: 10}` share an entry). It saves core work on repeated
 * agent queries; it does not change billing or limits, which the gateway applies before the lookup.
 * Cache failures are misses: the cache must never fail a search.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "../common/logger.js";
import type { SearchRequest, SearchResponse, SimilarRequest } from "../core/types.js";
import { LIMITS } from "../contract/search-request.js";
import { throttledLog } from "./limiter.js";

export interface QueryCache {
  get(key: string): Promise<SearchResponse | undefined>;
  set(key: string, value: SearchResponse): Promise<void>;
}

/** JSON with object keys sorted, so equal requests serialise identically. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The cache key of a validated request: sha256 over its canonical form with defaults applied. */
export function queryCacheKey(req: SearchRequest): string {
  const filters = req.filters ?? {};
  const normalised = {
    query: req.query,
    limit: req.limit ?? LIMITS.limitDefault,
    includeTree: req.includeTree ?? false,
    filters: { ...filters, excludeArchived: filters.excludeArchived ?? true },
  };
  return createHash("sha256").update(canonicalJson(normalised)).digest("hex");
}

/**
 * The cache key of a validated similar request: like queryCacheKey, in its own key space (`similar`
 * is part of the hashed form), with the repository name lowercased (names are case-insensitive).
 */
export function similarCacheKey(req: SimilarRequest): string {
  const filters = req.filters ?? {};
  const normalised = {
    similar: req.repo.toLowerCase(),
    limit: req.limit ?? LIMITS.limitDefault,
    includeTree: req.includeTree ?? false,
    filters: { ...filters, excludeArchived: filters.excludeArchived ?? true },
  };
  return createHash("sha256").update(canonicalJson(normalised)).digest("hex");
}

/** In-process LRU with a TTL per entry (Map keeps insertion order; a hit moves the entry to the end). */
export function createMemoryQueryCache(opts: { readonly ttlMs: number; readonly maxEntries: number }): QueryCache {
  const entries = new Map<string, { readonly value: SearchResponse; readonly expiresAtMs: number }>();
  return {
    async get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      entries.delete(key);
      if (e.expiresAtMs <= Date.now()) return undefined;
      entries.set(key, e);
      return e.value;
    },
    async set(key, value) {
      if (opts.maxEntries <= 0) return;
      entries.delete(key);
      entries.set(key, { value, expiresAtMs: Date.now() + opts.ttlMs });
      while (entries.size > opts.maxEntries) {
        const oldest = entries.keys().next();
        if (oldest.done) break;
        entries.delete(oldest.value);
      }
    },
  };
}

/** Entries in Redis with PX expiry, shared by every gateway process; Redis' own eviction bounds the size. */
export function createRedisQueryCache(redis: Redis, opts: { readonly ttlMs: number; readonly keyPrefix: string; readonly logger: Logger }): QueryCache {
  const warn = throttledLog(opts.logger.child({ component: "query-cache" }), 30_000);
  return {
    async get(key) {
      try {
        const raw = await redis.get(`${opts.keyPrefix}:${key}`);
        return raw === null ? undefined : (JSON.parse(raw) as SearchResponse);
      } catch (err) {
        warn("query cache read failed; treating as a miss", { error: err instanceof Error ? err.message : String(err) });
        return undefined;
      }
    },
    async set(key, value) {
      try {
        await redis.set(`${opts.keyPrefix}:${key}`, JSON.stringify(value), "PX", opts.ttlMs);
      } catch (err) {
        warn("query cache write failed", { error: err instanceof Error ? err.message : String(err) });
      }
    },
  };
}

/** The configured cache: null when QUERY_CACHE_TTL_MS is 0; Redis when the limiter runs on Redis, memory otherwise. */
export function createQueryCache(
  config: { readonly gateway: { readonly queryCacheTtlMs: number; readonly queryCacheSize: number } },
  limiter: { readonly redis: Redis | null },
  logger: Logger,
  keyPrefix = "reposearch:qc",
): QueryCache | null {
  const ttlMs = config.gateway.queryCacheTtlMs;
  if (ttlMs <= 0) return null;
  if (limiter.redis) return createRedisQueryCache(limiter.redis, { ttlMs, keyPrefix, logger });
  return createMemoryQueryCache({ ttlMs, maxEntries: config.gateway.queryCacheSize });
}
