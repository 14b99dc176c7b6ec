/**
 * `/mcp`: the MCP server (src/mcp) over Streamable HTTP, stateless, on the gateway's operations.
 *
 *   every request:  app.ts's request id, access log, client IP and per-IP limit (429 + Retry-After)
 *   POST /mcp:      body size and JSON syntax (400) → API key, `X-API-Key` or `Authorization: Bearer`
 *                   (401 AUTH_ERROR, 403 FORBIDDEN) → the MCP transport, one JSON-RPC message, one
 *                   JSON answer → per tool call: operations.ts (per-account limit, schema, debit, core)
 *   GET, DELETE:    405 (no server-to-client stream, no session to end: the transport is stateless)
 *
 * The key is checked before the transport, at the HTTP level: a key is a property of the connection a
 * client configured, not of a call, and MCP clients handle an HTTP 401 as "authentication needed" at
 * connect time (the MCP authorization spec answers a bad token with HTTP 401, too). Those refusals carry
 * the REST error body and headers unchanged. Refusals of one call (429 of the per-account limit, 403
 * INSUFFICIENT_CREDITS, 5xx) are JSON-RPC errors with `data: {code, status, retryAfterSeconds}`
 * (src/mcp/server.ts). docs/mcp.md states both.
 */
import { randomUUID } from "node:crypto";
import type { Express, Request, RequestHandler, Response } from "express";
import type { Context } from "../common/tracing.js";
import type { RepoSearchApi } from "../mcp/api.js";
import { handleStreamableHttp } from "../mcp/transports.js";
import type { Principal } from "./accounts/types.js";
import type { RateLimitDecision } from "./limiter.js";
import { OperationError, type OperationContext, type OperationObserver, type OperationResult, type Operations } from "./operations.js";

export const MCP_PATH = "/mcp";

/** What app.ts knows about a request and the route needs. */
export interface McpRequestFacts {
  /** The server-generated request id; the first tool call's ledger entry is keyed by it. */
  readonly requestId: string;
  readonly clientIp: string;
  /** The per-IP decision app.ts took for this request: the answer's rate-limit headers report whichever limit binds first. */
  readonly ipLimit?: RateLimitDecision | undefined;
  readonly traceContext?: Context | undefined;
  readonly observe?: OperationObserver | undefined;
}

export interface McpRouteDeps {
  readonly operations: Operations;
  /** The package version, announced in `initialize`. */
  readonly version: string;
  /** The gateway's JSON body parser (size limit, syntax, UTF-8), so /mcp refuses a body exactly as REST does. */
  readonly parseJson: RequestHandler;
  readonly facts: (req: Request) => McpRequestFacts;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The presented key: `X-API-Key`, else the token of `Authorization: Bearer`; undefined when neither. */
function presentedKey(req: Pick<Request, "get">): string | undefined {
  const header = req.get("x-api-key");
  if (header !== undefined) return header;
  const m = BEARER.exec(req.get("authorization") ?? "");
  return m ? m[1] : undefined;
}

/**
 * The RepoSearchApi of one authenticated HTTP request. Each tool call is one operation with its own
 * ledger id: the request's id for the first, a fresh one for any other (a JSON-RPC batch), so no two
 * calls can share one debit. A call's rate-limit headers go on the HTTP answer, and its charge is
 * settled once that answer has left (operations.ts: `settle`), as REST does.
 */
function requestApi(operations: Operations, base: Omit<OperationContext, "signal" | "requestId">, requestId: string, res: Response): RepoSearchApi {
  let calls = 0;
  const run = async <T>(signal: AbortSignal | undefined, op: (ctx: OperationContext) => Promise<OperationResult<T>>): Promise<T> => {
    const ctx: OperationContext = { ...base, signal, requestId: calls++ === 0 ? requestId : `req_${randomUUID().replace(/-/g, "")}` };
    let result: OperationResult<T>;
    try {
      result = await op(ctx);
    } catch (err) {
      if (err instanceof OperationError && !res.headersSent)
        for (const [name, value] of Object.entries(err.headers)) if (name !== "Retry-After") res.setHeader(name, value);
      throw err;
    }
    if (!res.headersSent) for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
    res.once("close", result.settle);
    return result.body;
  };
  return {
    search: (request, options) => run(options?.signal, (ctx) => operations.search({ ...ctx, body: request })),
    similar: (request, options) => run(options?.signal, (ctx) => operations.similar({ ...ctx, body: request })),
    repository: (name, options) => {
      const slash = name.indexOf("/");
      const params = { owner: name.slice(0, slash), repo: name.slice(slash + 1) };
      return run(options?.signal, (ctx) => operations.repository({ ...ctx, params }));
    },
  };
}

/** Mounts /mcp on the gateway's app (as app routes, so the access log and metrics name the route `/mcp`). */
export function mountMcp(app: Express, deps: McpRouteDeps): void {
  app.post(MCP_PATH, deps.parseJson, async (req: Request, res: Response) => {
    const facts = deps.facts(req);
    const apiKey = presentedKey(req);
    const principal: Principal = await deps.operations.authenticate(apiKey, facts.observe);
    const api = requestApi(
      deps.operations,
      { apiKey, principal, clientIp: facts.clientIp, ipLimit: facts.ipLimit, traceContext: facts.traceContext, observe: facts.observe },
      facts.requestId,
      res,
    );
    await handleStreamableHttp(req, res, req.body, api, { version: deps.version });
  });

  // Stateless: no GET stream for server-initiated messages, no session to DELETE (MCP: answer 405).
  app.all(MCP_PATH, (req: Request, res: Response) => {
    res.setHeader("Allow", "POST");
    res.status(405).json({
      jsonrpc: "2.0",
      error: { code: -32000, message: `${req.method} is not supported: this MCP endpoint is stateless; POST each message` },
      id: null,
    });
  });
}
