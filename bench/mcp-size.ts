/**
 * `npm run bench:mcp-size`: how large a `search_repositories` result is, in tokens (approximated as
 * characters / 4), at `limit` 10 in compact and full detail, on the index of the data dir (the full
 * index `npm start` builds, by default). The MCP server runs in this process over the in-process core
 * and the SDK's in-memory transport; the SDK's Client calls the tool exactly as an agent would.
 *
 * Three sizes per result: the JSON of `structuredContent`, the text rendering in `content`, and the
 * whole `CallToolResult` as it travels (both together). Queries: the first `--queries` (default 20)
 * of bench/head-queries.jsonl. Writes results/mcp-size.json and prints the figures.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { logger, setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { createMcpServer } from "../src/mcp/server.js";
import { openLocalApi } from "../src/server/local-api.js";

const { values } = parseArgs({ options: { "data-dir": { type: "string" }, queries: { type: "string" }, out: { type: "string" } } });
const config = loadConfig(process.env, values["data-dir"] ? { DATA_DIR: values["data-dir"] } : {});
const QUERY_COUNT = Number(values.queries ?? 20);
const OUT = values.out ?? path.join(projectRoot, "results", "mcp-size.json");
const CHARS_PER_TOKEN = 4;
const LIMIT = 10;

interface Sizes {
  readonly structuredChars: number;
  readonly textChars: number;
  readonly resultChars: number;
}

interface Summary {
  readonly meanTokens: { readonly structured: number; readonly text: number; readonly result: number };
  readonly maxTokens: { readonly structured: number; readonly text: number; readonly result: number };
}

const tokens = (chars: number): number => Math.round(chars / CHARS_PER_TOKEN);

function summarise(runs: readonly Sizes[]): Summary {
  const mean = (f: (s: Sizes) => number) => tokens(runs.reduce((a, s) => a + f(s), 0) / runs.length);
  const max = (f: (s: Sizes) => number) => tokens(Math.max(...runs.map(f)));
  return {
    meanTokens: { structured: mean((s) => s.structuredChars), text: mean((s) => s.textChars), result: mean((s) => s.resultChars) },
    maxTokens: { structured: max((s) => s.structuredChars), text: max((s) => s.textChars), result: max((s) => s.resultChars) },
  };
}

async function main(): Promise<void> {
  setLogLevel("warn");
  const queries = (await readFile(path.join(projectRoot, "bench", "head-queries.jsonl"), "utf8"))
    .split("\n")
    .filter((l) => l.trim())
    .slice(0, QUERY_COUNT)
    .map((l) => (JSON.parse(l) as { query: string }).query);
  const api = await openLocalApi(config, { logger: logger.child({ component: "core" }) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(api, { version: "bench" });
  await server.connect(serverSide);
  const client = new Client({ name: "mcp-size", version: "1" });
  await client.connect(clientSide);
  await client.listTools(); // the client validates structured output against the listed schemas from here on
  const runs: Record<"compact" | "full", Sizes[]> = { compact: [], full: [] };
  try {
    for (const detail of ["compact", "full"] as const) {
      for (const query of queries) {
        const result = (await client.callTool({ name: "search_repositories", arguments: { query, limit: LIMIT, detail } })) as CallToolResult;
        if (result.isError) throw new Error(`search_repositories failed for ${JSON.stringify(query)}: ${JSON.stringify(result.content)}`);
        const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
        runs[detail].push({
          structuredChars: JSON.stringify(result.structuredContent).length,
          textChars: text.length,
          resultChars: JSON.stringify(result).length,
        });
      }
    }
  } finally {
    await client.close();
    await api.close();
  }
  const report = {
    benchmark: "mcp-size",
    date: new Date().toISOString(),
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}`,
    dataDir: config.dataDir,
    tool: "search_repositories",
    limit: LIMIT,
    queries: queries.length,
    tokensAre: `characters / ${CHARS_PER_TOKEN}`,
    compact: summarise(runs.compact),
    full: summarise(runs.full),
  };
  await mkdir(path.dirname(OUT), { recursive: true });
  await writeFile(OUT, JSON.stringify(report, null, 2) + "\n");
  console.log(`search_repositories, limit ${LIMIT}, ${queries.length} head queries, tokens = characters / ${CHARS_PER_TOKEN} (mean / max):`);
  for (const detail of ["compact", "full"] as const) {
    const s = report[detail];
    console.log(
      `  ${detail.padEnd(7)}  whole result ${s.meanTokens.result} / ${s.maxTokens.result}   structuredContent ${s.meanTokens.structured} / ${s.maxTokens.structured}   text ${s.meanTokens.text} / ${s.maxTokens.text}`,
    );
  }
  console.log(`wrote ${path.relative(projectRoot, OUT)}`);
}

await main();
