/**
 * The gateway's HTTP server: node:http creating its requests and responses with express's
 * prototypes (`app.request`, `app.response`) from the start.
 *
 * Why: express gives every request and response its prototypes with `Object.setPrototypeOf`, once
 * per request, and on V8 that change of an object's prototype made about a fifth of everything a
 * request allocates outlive the request. Measured with `--trace-gc-nvp` on a gateway under load:
 * ~9 MB promoted into the old generation per scavenge (of ~50 MB allocated), so scavenges took
 * ~19 ms and the full collections whose pauses make most of the load test's tail came every ~40 s
 * per worker. A plain node:http server doing the same prototype change promoted 7 MB per scavenge;
 * one that does not, nothing. When the prototype is already the one express sets, V8's
 * setPrototypeOf returns early and nothing else changes (node:http's documented `IncomingMessage` /
 * `ServerResponse` options exist for such subclasses).
 *
 * In front of the app stands the HTTP edge (http-edge.ts): the contract for what node:http would
 * answer by itself, timeouts, connection caps and draining.
 */
import http from "node:http";
import type { Express } from "express";
import { edgeServerOptions, installHttpEdge, type HttpEdge, type HttpEdgeOptions } from "./http-edge.js";

export interface AppServer {
  readonly server: http.Server;
  readonly edge: HttpEdge;
}

/** An http.Server for `app`, as `app.listen()` would create, minus the per-request prototype change, behind the HTTP edge. */
export function createAppServer(app: Express, edge: HttpEdgeOptions): AppServer {
  const IncomingMessage = http.IncomingMessage as unknown as (this: http.IncomingMessage, ...args: unknown[]) => void;
  const ServerResponse = http.ServerResponse as unknown as (this: http.ServerResponse, ...args: unknown[]) => void;
  // Function constructors (node:http's own are too), so that `prototype` can be the app's objects.
  function AppRequest(this: http.IncomingMessage, ...args: unknown[]): void {
    IncomingMessage.apply(this, args);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: http.ServerResponse, ...args: unknown[]): void {
    ServerResponse.apply(this, args);
  }
  AppResponse.prototype = app.response;
  const server = http.createServer({
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
    ...edgeServerOptions(),
  });
  return { server, edge: installHttpEdge(server, app, edge) };
}
