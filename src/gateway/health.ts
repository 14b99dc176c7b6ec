/**
 * GET /health. The report's services are the spec's two (db, cache); the search core is not listed
 * but decides the overall status, because without it the API cannot answer a search.
 *
 * Rules: core not SERVING (or no answer within the timeout), db down, or the gateway draining for
 * shutdown (so that load balancers stop sending before it stops listening) → unhealthy (503);
 * otherwise cache down → degraded (200); otherwise healthy (200). Every check runs in parallel under
 * its own timeout, so the endpoint answers within about `timeoutMs` even when a backend hangs.
 */
import type { AccountStore } from "./accounts/types.js";
import type { CoreApi, CoreServingStatus, HealthBody, ServiceHealth } from "./types.js";

export const HEALTH_CHECK_TIMEOUT_MS = 1_000;

export interface HealthDeps {
  readonly core: Pick<CoreApi, "health">;
  readonly accounts: Pick<AccountStore, "health">;
  readonly cacheHealth: () => Promise<ServiceHealth>;
  readonly version: string;
  /** Epoch milliseconds when the gateway started. */
  readonly startedAt: number;
  /** The gateway drains for shutdown. */
  readonly draining?: boolean;
}

class CheckTimeout extends Error {}

function withTimeout<T>(fn: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    Promise.resolve().then(fn),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const elapsedMs = (t0: number): number => Math.round((performance.now() - t0) * 10) / 10;
const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Runs a ServiceHealth-returning check; a throw or a timeout is "down" with the reason. */
async function serviceCheck(fn: () => Promise<ServiceHealth>, timeoutMs: number): Promise<ServiceHealth> {
  const t0 = performance.now();
  try {
    const h = await withTimeout(fn, timeoutMs);
    const out: ServiceHealth = { status: h.status === "up" ? "up" : "down", latencyMs: Math.max(0, Number(h.latencyMs) || 0) };
    return h.error !== undefined ? { ...out, error: String(h.error) } : out;
  } catch (err) {
    return { status: "down", latencyMs: elapsedMs(t0), error: messageOf(err) };
  }
}

export async function checkHealth(
  deps: HealthDeps,
  timeoutMs = HEALTH_CHECK_TIMEOUT_MS,
): Promise<{ readonly httpStatus: 200 | 503; readonly body: HealthBody; readonly core: CoreServingStatus | "UNREACHABLE" }> {
  const [core, db, cache] = await Promise.all([
    withTimeout(() => deps.core.health(), timeoutMs).catch((): "UNREACHABLE" => "UNREACHABLE"),
    serviceCheck(() => deps.accounts.health(), timeoutMs),
    serviceCheck(deps.cacheHealth, timeoutMs),
  ]);
  const status = deps.draining || core !== "SERVING" || db.status === "down" ? "unhealthy" : cache.status === "down" ? "degraded" : "healthy";
  const body: HealthBody = {
    status,
    services: { db, cache },
    version: deps.version,
    uptime: Math.max(0, Math.round((Date.now() - deps.startedAt) / 100) / 10),
  };
  return { httpStatus: status === "unhealthy" ? 503 : 200, body, core };
}
