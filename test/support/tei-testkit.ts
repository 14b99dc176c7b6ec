/**
 * For tests of the TEI clients (embedder, reranker): fake services on loopback. Test support only;
 * nothing in the service imports it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A node:http server on 127.0.0.1 (port 0) serving under `pathPrefix` (which ends in `/`). `handle` gets
 * each request once its whole body is in, with its route: the path from the prefix's last `/` on.
 * Returns `state` itself, with the server's `url` and `close` added.
 */
export async function startFakeService<S extends object>(
  state: S,
  pathPrefix: string,
  handle: (req: http.IncomingMessage, res: http.ServerResponse, route: string | undefined, body: Buffer) => void,
): Promise<S & { url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle(req, res, req.url?.slice(pathPrefix.length - 1), Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref(); // a hung test must fail on its timeout, not keep the process alive
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}${pathPrefix}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
