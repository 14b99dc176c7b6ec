import { test } from "vitest";
import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { openSource, readDataset, type DatasetItem } from "./reader.js";

const lines = [
  JSON.stringify({ name: "a/one", description: "first" }),
  "{not json",
  "",
  JSON.stringify({ name: "bad name" }),
  JSON.stringify({ name: "b/two", stars: 3 }),
];
const body = lines.join("\n") + "\n";

async function collect(source: string): Promise<DatasetItem[]> {
  const out: DatasetItem[] = [];
  for await (const it of readDataset(await openSource(source))) out.push(it);
  return out;
}

function check(items: DatasetItem[]): void {
  assert.deepEqual(
    items.map((i) => [i.kind, i.line]),
    [
      ["record", 1],
      ["reject", 2],
      ["reject", 4],
      ["record", 5],
    ],
  );
  const rej = items.filter((i) => i.kind === "reject");
  assert.match((rej[0] as { reason: string }).reason, /invalid JSON/);
  assert.match((rej[1] as { reason: string }).reason, /name/);
}

test("reads plain and gzipped JSONL from files, detecting gzip by content", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "reader-"));
  await writeFile(path.join(dir, "plain.jsonl"), body);
  await writeFile(path.join(dir, "zipped.data"), gzipSync(body));
  check(await collect(path.join(dir, "plain.jsonl")));
  check(await collect(path.join(dir, "zipped.data")));
});

test("streams from an http URL and reports HTTP errors clearly", async () => {
  const gz = gzipSync(body);
  const server = createServer((req, res) => {
    if (req.url === "/repos.jsonl.gz") {
      res.writeHead(200, { "content-type": "application/gzip", "content-length": gz.length });
      res.end(gz);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  try {
    check(await collect(`http://127.0.0.1:${port}/repos.jsonl.gz`));
    await assert.rejects(collect(`http://127.0.0.1:${port}/missing`), /HTTP 404/);
  } finally {
    server.close();
  }
});

test("a missing file is a clear error", async () => {
  await assert.rejects(collect("/nonexistent/repos.jsonl"), /no such file/);
});
