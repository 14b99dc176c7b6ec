/**
 * Who may call the core. Internal callers (the gateway, other services) present a service token from
 * CORE_AUTH_TOKENS, as `authorization: Bearer <token>` or `x-reposearch-core-token: <token>`, on every
 * call of reposearch.v1.SearchService and of server reflection, on both ports. The token's name is the
 * caller: the `caller` metric label and the key of its fair share (scheduler.ts). A token is never
 * logged, never a label, and stored only as its SHA-256.
 *
 * grpc.health.v1 stays open: orchestrator probes (kubelet's gRPC probe, grpc_health_probe) send no
 * metadata, and health says nothing about the index or the data.
 *
 * Without tokens every caller is "anonymous", which is allowed only on a loopback listener (and the
 * Unix socket of a process running the gateway too): assertAuthAllowed refuses to start otherwise.
 * Why tokens and not mTLS: the core serves cleartext HTTP/2 on a private network, tokens need no
 * certificate authority or rotation tooling, and a mesh (Istio, Linkerd) can add mTLS underneath.
 */
import { createHash, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { ConfigError, ErrorCode, ReposearchError } from "../../common/errors.js";
import { ERROR_CODE_TRAILER } from "./convert.js";

/** The caller label of unauthenticated calls (authentication off). */
export const ANONYMOUS = "anonymous";
/** The caller label of the gateway inside the same process (role "all"), which gets a per-process token. */
export const LOCAL_CALLER = "local";
/** Where a caller may put its token instead of `authorization`. */
export const TOKEN_HEADER = "x-reposearch-core-token";
/**
 * Set by the server's interceptor on every call it lets through: the authenticated caller's name.
 * A value the client sent is dropped first, so handlers can trust it.
 */
export const CALLER_METADATA_KEY = "x-reposearch-caller";

const HEALTH_PATH_PREFIX = "/grpc.health.v1.Health/";

export type AuthFailureReason = "missing" | "invalid";

/** Who is calling: `label` is bounded (a configured name or "anonymous"); `key` separates fair shares. */
export interface Caller {
  readonly label: string;
  readonly key: string;
}

export interface CoreAuth {
  /** True when tokens are configured: every call must present one. */
  readonly enabled: boolean;
  /**
   * The caller's name for the presented credentials (`authorization` and `x-reposearch-core-token`
   * header values), "anonymous" when authentication is off, or a failure reason.
   */
  identify(authorization: string | undefined, token: string | undefined): { readonly name: string } | { readonly failure: AuthFailureReason };
}

const digest = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * `tokens`: caller name → token. The lookup is by the presented token's SHA-256, so the time it takes
 * does not depend on how much of a stored token a guess gets right.
 */
export function createCoreAuth(tokens: ReadonlyMap<string, string>): CoreAuth {
  const byDigest = new Map<string, string>();
  for (const [name, token] of tokens) byDigest.set(digest(token), name);
  const enabled = byDigest.size > 0;
  return {
    enabled,
    identify(authorization, token) {
      if (!enabled) return { name: ANONYMOUS };
      let presented = token?.trim();
      if (!presented && authorization !== undefined) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
        presented = m?.[1];
      }
      if (!presented) return { failure: "missing" };
      const name = byDigest.get(digest(presented));
      return name === undefined ? { failure: "invalid" } : { name };
    },
  };
}

/** A fresh random token for the gateway inside this process (role "all"), registered as "local". */
export function newLocalToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Whether `host` binds only to this machine: 127.0.0.0/8, ::1, an IPv4-mapped loopback, or localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .replace(/^\[|\]$/g, "")
    .toLowerCase();
  if (h === "localhost" || h === "::1") return true;
  if (h.startsWith("::ffff:")) return isLoopbackHost(h.slice("::ffff:".length));
  return isIP(h) === 4 && h.startsWith("127.");
}

/** Refuses to serve without authentication anywhere but on loopback, with a message that says what to do. */
export function assertAuthAllowed(auth: CoreAuth, host: string, what: string): void {
  if (auth.enabled || isLoopbackHost(host)) return;
  throw new ConfigError([
    `CORE_AUTH_TOKENS: the ${what} would listen on ${host} without authentication. Set CORE_AUTH_TOKENS (name=token,...) and give the gateway its token in CORE_TOKEN, or bind HOST to a loopback address (127.0.0.1, ::1); see docs/threat-model.md`,
  ]);
}

function firstString(values: grpc.MetadataValue[]): string | undefined {
  const v = values[0];
  return typeof v === "string" ? v : undefined;
}

/** The UNAUTHENTICATED error a refused call gets (the same message on both ports). */
export function authError(reason: AuthFailureReason): ReposearchError {
  return new ReposearchError(ErrorCode.AuthError, reason === "missing" ? "missing core service token" : "invalid core service token");
}

/**
 * A grpc-js server interceptor: authenticates every call except health before its handler runs, and
 * hands the handler the caller's name in CALLER_METADATA_KEY. A refused call ends UNAUTHENTICATED with
 * the reposearch-error-code trailer, so CoreClient rebuilds an AUTH_ERROR.
 */
export function authInterceptor(auth: CoreAuth, onFailure: (reason: AuthFailureReason) => void): grpc.ServerInterceptor {
  return (method, call) => {
    if (method.path.startsWith(HEALTH_PATH_PREFIX)) return new grpc.ServerInterceptingCall(call);
    return new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, mdNext) => {
            const who = auth.identify(firstString(metadata.get("authorization")), firstString(metadata.get(TOKEN_HEADER)));
            if ("failure" in who) {
              onFailure(who.failure);
              const err = authError(who.failure);
              const trailers = new grpc.Metadata();
              trailers.set(ERROR_CODE_TRAILER, err.code);
              call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: err.message, metadata: trailers });
              return;
            }
            // Handlers see who called, never the credentials.
            metadata.remove("authorization");
            metadata.remove(TOKEN_HEADER);
            metadata.set(CALLER_METADATA_KEY, who.name);
            mdNext(metadata);
          },
        });
      },
    });
  };
}

/**
 * The caller of a call the interceptor let through. Anonymous callers get one fair share per peer
 * (connection), so that with authentication off a local flood still does not starve the gateway.
 */
export function callerOf(metadata: grpc.Metadata, peer: string): Caller {
  const name = firstString(metadata.get(CALLER_METADATA_KEY)) ?? ANONYMOUS;
  return { label: name, key: name === ANONYMOUS ? `${ANONYMOUS}@${peer}` : name };
}
