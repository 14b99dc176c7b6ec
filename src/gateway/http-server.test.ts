import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "vitest";
import express from "express";
import { Logger } from "../common/logger.js";
import { loadConfig } from "../config/config.js";
import { createAppServer } from "./http-server.js";

test("requests and responses are born with express's prototypes, and express works on them as usual", async () => {
  const app = express();
  app.set("trust proxy", "loopback");
  app.use(express.json());
  app.post("/echo/:id", (req, res) => {
    res
      .status(201)
      .set("X-Seen", req.get("x-probe") ?? "")
      .json({ id: req.params.id, q: req.query.q, body: req.body as unknown, ip: req.ip, json: req.is("application/json") });
  });
  const { server } = createAppServer(app, { limits: loadConfig({}).gateway.http, trustedProxies: [], logger: new Logger() });
  const seen: { req: boolean; res: boolean }[] = [];
  // Runs before express: what node:http created, before express's own setPrototypeOf.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ req: Object.getPrototypeOf(req) === app.request, res: Object.getPrototypeOf(res) === app.response });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const { port } = server.address() as AddressInfo;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`http://127.0.0.1:${port}/echo/${i}?q=x`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-probe": "p", "x-forwarded-for": "203.0.113.9" },
        body: JSON.stringify({ n: i }),
      });
      assert.equal(r.status, 201);
      assert.equal(r.headers.get("x-seen"), "p");
      assert.deepEqual(await r.json(), { id: String(i), q: "x", body: { n: i }, ip: "203.0.113.9", json: "application/json" });
    }
    assert.deepEqual(seen, [
      { req: true, res: true },
      { req: true, res: true },
      { req: true, res: true },
    ]);
    const miss = await fetch(`http://127.0.0.1:${port}/nowhere`);
    assert.equal(miss.status, 404);
  } finally {
    await new Promise((r) => server.close(r));
  }
});
