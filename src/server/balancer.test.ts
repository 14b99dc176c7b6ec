import assert from "node:assert/strict";
import { createServer } from "node:http";
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { onTestFinished, test } from "vitest";
import { balancesConnections, excessOverFairShare, HANDOFF, leastLoaded, receiveConnections, SHED } from "./balancer.js";

test("leastLoaded picks the smallest count", () => {
  assert.equal(leastLoaded([3, 1, 2], 0), 1);
  assert.equal(leastLoaded([0, 5], 1), 0);
  assert.equal(leastLoaded([7], 0), 0);
  assert.equal(leastLoaded([], 0), -1);
});

test("leastLoaded breaks ties from the turn onwards, so equal workers alternate", () => {
  assert.equal(leastLoaded([2, 2, 2], 0), 0);
  assert.equal(leastLoaded([2, 2, 2], 1), 1);
  assert.equal(leastLoaded([2, 2, 2], 2), 2);
  // Cyclic: from index 2 the next tie is index 0.
  assert.equal(leastLoaded([1, 3, 4, 1], 2), 3);
  assert.equal(leastLoaded([1, 3, 4, 2], 2), 0);
});

test("a burst of connections splits evenly when each goes to the least loaded", () => {
  const counts = [0, 0];
  let turn = 0;
  for (let c = 0; c < 51; c++) {
    const i = leastLoaded(counts, turn);
    counts[i]!++;
    turn = (i + 1) % counts.length;
  }
  assert.deepEqual(counts, [26, 25]);
});

test("the balancer runs only for a cluster that serves REST, under least-connections", () => {
  const cfg = (processes: number, balancing: "least-connections" | "round-robin") => ({ server: { processes, balancing } });
  assert.equal(balancesConnections(cfg(2, "least-connections"), "all"), true);
  assert.equal(balancesConnections(cfg(2, "least-connections"), "gateway"), true);
  assert.equal(balancesConnections(cfg(2, "least-connections"), "core"), false);
  assert.equal(balancesConnections(cfg(1, "least-connections"), "all"), false);
  assert.equal(balancesConnections(cfg(4, "round-robin"), "all"), false);
});

test("a joining worker's fair share: workers above ⌈total / workers⌉ shed the excess", () => {
  assert.deepEqual(excessOverFairShare([10, 0]), [5, 0]);
  assert.deepEqual(excessOverFairShare([25, 25, 0]), [8, 8, 0]);
  assert.deepEqual(excessOverFairShare([7, 2, 0]), [4, 0, 0]);
  assert.deepEqual(excessOverFairShare([5, 5]), [0, 0]);
  assert.deepEqual(excessOverFairShare([1, 0]), [0, 0]);
  assert.deepEqual(excessOverFairShare([]), []);
});

test("a worker told to shed answers that many connections' next request with Connection: close, once each", async () => {
  const server = createServer((_req, res) => res.end("ok"));
  const handed = receiveConnections(server);
  // The primary's part, played here: accept on a TCP port and hand each socket over as a HANDOFF message.
  const front = createNetServer((socket: Socket) => void process.emit("message", { type: HANDOFF }, socket));
  await new Promise<void>((r) => front.listen(0, "127.0.0.1", () => r()));
  onTestFinished(() => {
    handed.stop();
    front.close();
    server.close();
  });
  const port = (front.address() as AddressInfo).port;
  // Three keep-alive connections, each sending raw HTTP/1.1 GETs one after another on its own socket.
  const sockets = [0, 1, 2].map(() => connect(port, "127.0.0.1"));
  /** The response's Connection header, lowercased. */
  const get = (socket: Socket): Promise<string> =>
    new Promise((resolve, reject) => {
      let head = "";
      const onData = (d: Buffer): void => {
        head += d.toString("latin1");
        if (!head.includes("\r\n\r\n") || !head.endsWith("ok")) return;
        socket.off("data", onData);
        socket.off("error", reject);
        resolve(/\r\nconnection: *([^\r]*)/i.exec(head)?.[1]?.toLowerCase() ?? "");
      };
      socket.on("data", onData);
      socket.once("error", reject);
      socket.write("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
    });
  for (const s of sockets) assert.equal(await get(s), "keep-alive");
  assert.equal(handed.sockets.size, 3);

  process.emit("message", { type: SHED, count: 2 }, undefined);
  const first = await Promise.all(sockets.map(get));
  assert.deepEqual([...first].sort(), ["close", "close", "keep-alive"]);
  // The two told to close are closed by the server; the third stays, and is not asked again.
  const kept = sockets[first.indexOf("keep-alive")]!;
  assert.equal(await get(kept), "keep-alive");
  for (let i = 0; i < 50 && handed.sockets.size > 1; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(handed.sockets.size, 1);
  kept.destroy();
});
