/**
 * The two transports of the MCP server.
 *
 * Streamable HTTP, stateless: every POST gets a fresh server and transport bound to that request's
 * RepoSearchApi (the caller's key, IP and request id), answers with one JSON body (no SSE stream) and
 * is forgotten. No session id is issued, so any gateway process or replica can answer any message,
 * and nothing outlives a request; the tools need neither server-initiated messages nor resumption.
 *
 * stdio: one server for the life of the process, reading stdin and writing stdout (logs go to
 * stderr, so they never corrupt the protocol stream); it ends when the client closes stdin.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RepoSearchApi } from "./api.js";
import { createMcpServer, type McpServerOptions } from "./server.js";

/** Answers one MCP message posted over Streamable HTTP; `body` is the parsed JSON body. */
export async function handleStreamableHttp(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  api: RepoSearchApi,
  options: McpServerOptions,
): Promise<void> {
  const server = createMcpServer(api, options);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** Serves MCP on this process's stdin and stdout until the client closes stdin. */
export async function serveStdio(api: RepoSearchApi, options: McpServerOptions): Promise<void> {
  const server = createMcpServer(api, options);
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
    process.stdin.once("end", () => void server.close());
  });
  await server.connect(new StdioServerTransport());
  await closed;
}
