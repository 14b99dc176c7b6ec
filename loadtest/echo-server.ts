/**
 * The transport ceiling's server: node:http on the same number of cluster processes as the service,
 * reading every request body in full and answering each with one fixed body (a real search
 * response). It does no auth, no limits, no JSON parsing, no gRPC and no search, so the RPS the
 * generator gets from it bounds what any Node HTTP service could sustain with this generator on this
 * machine. Started by transport.ts; prints "listening at URL" once every process listens.
 *
 *   node dist/loadtest/echo-server.js --processes N --body-file FILE
 */
import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { processes: { type: "string", default: "1" }, "body-file": { type: "string" }, port: { type: "string", default: "0" } },
});
const processes = Math.max(1, Number(values.processes) || 1);

function serve(): void {
  const body = readFileSync(values["body-file"]!);
  const server = createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => res.writeHead(200, { "Content-Type": "application/json; charset=utf-8", "Content-Length": body.length }).end(body));
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(values.port), "127.0.0.1", () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (cluster.isWorker) process.send!({ url });
    else console.log(`listening at ${url}`);
  });
  process.once("SIGTERM", () => server.close(() => process.exit(0)));
}

if (processes > 1 && cluster.isPrimary) {
  let ready = 0;
  for (let i = 0; i < processes; i++) {
    cluster.fork().on("message", (m: { url?: string }) => {
      if (m.url && ++ready === processes) console.log(`listening at ${m.url}`);
    });
  }
  process.once("SIGTERM", () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGTERM");
    cluster.on("exit", () => {
      if (Object.values(cluster.workers ?? {}).every((w) => !w || w.isDead())) process.exit(0);
    });
  });
} else {
  serve();
}
