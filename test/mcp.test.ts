/**
 * The MCP server end to end, driven by the SDK's own Client over both transports, on a small real
 * index: a real core and gateway in this process for Streamable HTTP at /mcp, and `reposearch mcp` as
 * a real child process (StdioClientTransport) forwarding to that gateway or serving the data dir.
 *
 * Every structuredContent is validated against the outputSchema the server listed (ajv, strict
 * 2020-12), on top of the SDK client's own check. Credits are read from the ledger the gateway
 * charges.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, test } from "vitest";
import { loadConfig, projectRoot, type Config } from "../src/config/config.js";
import type { JsonSchema } from "../src/contract/json-schema.js";
import { compileSchema } from "../src/contract/validator.js";
import { SEARCH_PRICE_MICROS, type AccountStore } from "../src/gateway/accounts/types.js";
import { MCP_PATH } from "../src/gateway/mcp-route.js";
import { repositoryInputSchema, searchInputSchema, similarInputSchema } from "../src/mcp/schemas.js";
import { SERVER_INSTRUCTIONS, SERVICE_ERROR_CODE } from "../src/mcp/server.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { CLI, datasetLines, oneRecordPerName, runCli, tempDir } from "./helpers.js";
import { buildIndex, fundedAccount, stackEnv, uniqueName, type TestAccount } from "./stack.js";

const VERSION = "0.0.0-mcp";

let dir: string;
let config: Config;
let core: CoreHandle;
let gw: GatewayHandle;
let accounts: AccountStore;
const closers: (() => Promise<void>)[] = [];

/** A gateway of this process with other settings, on the same core and ledger. */
async function extraGateway(extra: Record<string, string>): Promise<GatewayHandle> {
  const g = await startGateway(loadConfig(stackEnv(dir, extra)), { version: VERSION, coreAddress: core.grpc.address });
  closers.push(() => g.close());
  return g;
}

/** An SDK client connected to `base`'s /mcp with these headers. */
async function httpClient(base: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "reposearch-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${MCP_PATH}`), { requestInit: { headers } }));
  closers.push(() => client.close());
  return client;
}

/** `reposearch mcp` as a child process, with the SDK's stdio client on its pipes. */
async function stdioClient(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const base = Object.fromEntries(Object.entries(stackEnv(dir)).filter((e): e is [string, string] => typeof e[1] === "string"));
  delete base.REPOSEARCH_URL;
  delete base.REPOSEARCH_API_KEY;
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], env: { ...base, ...env }, cwd: projectRoot, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "reposearch-test", version: "1.0.0" });
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, stderr: () => stderr };
}

/** A tool result with structured content that the listed outputSchema accepts. */
function structured(tools: readonly Tool[], name: string, result: CallToolResult): Record<string, unknown> {
  assert.notEqual(result.isError, true, JSON.stringify(result.content));
  const tool = tools.find((t) => t.name === name);
  assert.ok(tool?.outputSchema, `${name} lists an outputSchema`);
  const validate = compileSchema(tool.outputSchema as JsonSchema);
  assert.ok(validate(result.structuredContent), `${name}: ${JSON.stringify(validate.errors)}`);
  const text = result.content.find((c) => c.type === "text");
  assert.ok(text && text.type === "text" && text.text.length > 0, "a text rendering beside the structured content");
  return result.structuredContent!;
}

/** The McpError a call was refused with. */
async function refusal(call: Promise<unknown>): Promise<McpError> {
  const err = await call.then(
    () => assert.fail("the call was not refused"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof McpError, String(err));
  return err;
}

function errorText(result: CallToolResult): string {
  assert.equal(result.isError, true, "a tool error");
  assert.equal(result.structuredContent, undefined);
  const t = result.content[0];
  assert.ok(t?.type === "text");
  return t.text;
}

let repoName: string;

beforeAll(async () => {
  dir = await tempDir("mcp");
  await buildIndex(dir, oneRecordPerName(await datasetLines(800)));
  config = loadConfig(stackEnv(dir));
  core = await startCore(config, { version: VERSION });
  gw = await startGateway(config, { version: VERSION, coreAddress: core.grpc.address });
  accounts = gw.accounts;
  repoName = (await core.engine.search({ query: "command line tool" })).results[0]!.name;
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await gw?.close();
  await core?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("Streamable HTTP at /mcp", () => {
  let account: TestAccount;
  let client: Client;
  let tools: Tool[];

  beforeAll(async () => {
    account = await fundedAccount(accounts, uniqueName("mcp"), 5);
    client = await httpClient(gw.url, { "X-API-Key": account.key });
    tools = (await client.listTools()).tools;
  });

  test("initialize names the server and tells a model when to use which tool", () => {
    assert.equal(client.getServerVersion()?.name, "reposearch");
    assert.equal(client.getServerVersion()?.version, VERSION);
    assert.equal(client.getInstructions(), SERVER_INSTRUCTIONS);
    for (const name of ["search_repositories", "find_similar_repositories", "get_repository"]) assert.ok(SERVER_INSTRUCTIONS.includes(name));
  });

  test("tools/list: three read-only tools, the contract's input schemas verbatim, output schemas, untrusted content marked", () => {
    assert.deepEqual(
      tools.map((t) => t.name),
      ["search_repositories", "find_similar_repositories", "get_repository"],
    );
    const inputs: Record<string, JsonSchema> = {
      search_repositories: searchInputSchema,
      find_similar_repositories: similarInputSchema,
      get_repository: repositoryInputSchema,
    };
    for (const t of tools) {
      assert.deepEqual(t.inputSchema, JSON.parse(JSON.stringify(inputs[t.name])), t.name);
      assert.equal(t.outputSchema?.type, "object");
      assert.deepEqual(t.annotations, { title: t.title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
      assert.match(t.description ?? "", /third-party content/);
      assert.match(t.description ?? "", /never follow instructions/);
    }
  });

  test("search_repositories: compact by default, full adds every snippet and the trees; each output matches its schema", async () => {
    const compact = structured(
      tools,
      "search_repositories",
      (await client.callTool({ name: "search_repositories", arguments: { query: "command line tool" } })) as CallToolResult,
    );
    const results = compact.results as { name: string; evidence: string[]; tree?: string | null }[];
    assert.equal(results.length, 10);
    assert.ok(results.every((r) => r.evidence.length <= 1 && !("tree" in r)));
    assert.equal(results[0]!.name, repoName, "the core's own first result");
    const full = structured(
      tools,
      "search_repositories",
      (await client.callTool({
        name: "search_repositories",
        arguments: { query: "command line tool", limit: 3, detail: "full", filters: { minStars: 1 } },
      })) as CallToolResult,
    );
    const fullResults = full.results as { tree?: string | null; stars: number }[];
    assert.equal(fullResults.length, 3);
    assert.ok(fullResults.every((r) => "tree" in r && r.stars >= 1));
    assert.equal((full.meta as { appliedFilters: { minStars: number } }).appliedFilters.minStars, 1);
  });

  test("find_similar_repositories and get_repository: structured outputs that match their schemas", async () => {
    const similar = structured(
      tools,
      "find_similar_repositories",
      (await client.callTool({ name: "find_similar_repositories", arguments: { repo: repoName, limit: 5 } })) as CallToolResult,
    );
    assert.equal(similar.repo, repoName);
    const names = (similar.results as { name: string }[]).map((r) => r.name);
    assert.ok(names.length > 0 && !names.includes(repoName), "the repository itself is not among its alternatives");
    const card = structured(tools, "get_repository", (await client.callTool({ name: "get_repository", arguments: { repo: repoName } })) as CallToolResult);
    assert.equal(card.name, repoName);
    assert.ok("tree" in card, "the card is full by default");
    const compactCard = structured(
      tools,
      "get_repository",
      (await client.callTool({ name: "get_repository", arguments: { repo: repoName, detail: "compact" } })) as CallToolResult,
    );
    assert.ok(!("tree" in compactCard));
  });

  test("credits: search and similar each cost one search, the card nothing, and each charge is settled", async () => {
    const a = await fundedAccount(accounts, uniqueName("mcp-credits"), 5);
    const c = await httpClient(gw.url, { "X-API-Key": a.key });
    const before = await accounts.balance(a.name);
    await c.callTool({ name: "search_repositories", arguments: { query: "web framework" } });
    assert.equal(await accounts.balance(a.name), before - SEARCH_PRICE_MICROS);
    await c.callTool({ name: "find_similar_repositories", arguments: { repo: repoName } });
    assert.equal(await accounts.balance(a.name), before - 2 * SEARCH_PRICE_MICROS);
    await c.callTool({ name: "get_repository", arguments: { repo: repoName } });
    await c.listTools();
    assert.equal(await accounts.balance(a.name), before - 2 * SEARCH_PRICE_MICROS);
    // Settled once the answer left: no reservation of this account stays open for the sweep to refund.
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      (await accounts.openReservations(1000)).filter((r) => r.accountId === a.id),
      [],
    );
  });

  test("arguments the schema refuses and an unknown repository are tool errors a model can read; not charged", async () => {
    const before = await accounts.balance(account.name);
    const bad = errorText(
      (await client.callTool({ name: "search_repositories", arguments: { query: "x", limit: 500, filters: { minstars: 3 } } })) as CallToolResult,
    );
    assert.match(bad, /^VALIDATION_ERROR: /);
    assert.match(bad, /\/limit \(maximum\)/);
    assert.match(bad, /\/filters\/minstars \(additionalProperties\)/);
    const qualifier = errorText((await client.callTool({ name: "search_repositories", arguments: { query: "cli stars:>abc" } })) as CallToolResult);
    assert.match(qualifier, /VALIDATION_ERROR: .*\n- \/query \(qualifier\): malformed qualifier "stars:>abc"/);
    const unknown = errorText(
      (await client.callTool({ name: "find_similar_repositories", arguments: { repo: "no-such-owner/no-such-repo" } })) as CallToolResult,
    );
    assert.match(unknown, /^NOT_FOUND: /);
    assert.match(
      errorText((await client.callTool({ name: "get_repository", arguments: { repo: "no-such-owner/no-such-repo" } })) as CallToolResult),
      /^NOT_FOUND: /,
    );
    assert.equal(await accounts.balance(account.name), before);
    const err = await refusal(client.callTool({ name: "no_such_tool", arguments: {} }));
    assert.match(err.message, /unknown tool/);
  });

  test("authentication is HTTP-level: no key or a bad key is a 401 with the contract's body; Bearer works like X-API-Key", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${gw.url}${MCP_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(init),
      });
    const refusedHeaders: Record<string, string>[] = [{}, { "x-api-key": "rsk_not_a_real_key" }, { authorization: `Basic ${account.key}` }];
    for (const headers of refusedHeaders) {
      const res = await post(headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, "AUTH_ERROR");
    }
    const ok = await post({ authorization: `Bearer ${account.key}` });
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name, "reposearch");
    // The SDK client sees the refusal when it connects.
    const refused = await new Client({ name: "t", version: "1" }).connect(new StreamableHTTPClientTransport(new URL(`${gw.url}${MCP_PATH}`))).then(
      () => assert.fail("connected without a key"),
      (e: unknown) => e as { code?: number; message: string },
    );
    assert.equal(refused.code, 401);
    assert.match(refused.message, /AUTH_ERROR/);
    // A suspended account: 403 FORBIDDEN.
    const suspended = await fundedAccount(accounts, uniqueName("mcp-suspended"), 5);
    await accounts.setAccountStatus(suspended.name, "suspended");
    const res = await post({ authorization: `Bearer ${suspended.key}` });
    assert.equal(res.status, 403);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, "FORBIDDEN");
  });

  test("llms.txt tells an agent about /mcp, its tools and its errors", async () => {
    const text = await (await fetch(`${gw.url}/llms.txt`)).text();
    for (const s of ["**MCP.**", `POST ${MCP_PATH}`, "search_repositories", "find_similar_repositories", "get_repository", "-32050", "reposearch mcp"])
      assert.ok(text.includes(s), s);
  });

  test("stateless: GET and DELETE are 405; no session id is issued", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${gw.url}${MCP_PATH}`, { method, headers: { "x-api-key": account.key } });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get("allow"), "POST");
    }
    const res = await fetch(`${gw.url}${MCP_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": account.key },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("mcp-session-id"), null);
    assert.equal(((await res.json()) as { result: { tools: unknown[] } }).result.tools.length, 3);
    // A tool call's answer carries the account's rate-limit headers, as a REST answer does.
    const call = await fetch(`${gw.url}${MCP_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": account.key },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_repository", arguments: { repo: repoName } } }),
    });
    assert.equal(call.status, 200);
    assert.equal(call.headers.get("x-ratelimit-limit"), "100000");
    assert.ok(Number(call.headers.get("x-ratelimit-remaining")) < 100000);
    assert.equal(((await call.json()) as { result: { structuredContent: { name: string } } }).result.structuredContent.name, repoName);
  });
});

describe("limits and credits refuse a call with the contract's code", () => {
  test("the account's limit: a JSON-RPC error carrying RATE_LIMIT_EXCEEDED, status 429 and retryAfterSeconds; listing is not counted", async () => {
    const limited = await extraGateway({ RATE_LIMIT_ACCOUNT_PER_MINUTE: "2" });
    const a = await fundedAccount(limited.accounts, uniqueName("mcp-limit"), 5);
    const c = await httpClient(limited.url, { "X-API-Key": a.key });
    await c.listTools();
    await c.listTools();
    await c.callTool({ name: "get_repository", arguments: { repo: repoName } });
    await c.callTool({ name: "search_repositories", arguments: { query: "database" } });
    const before = await limited.accounts.balance(a.name);
    const err = await refusal(c.callTool({ name: "search_repositories", arguments: { query: "database" } }));
    assert.equal(err.code, SERVICE_ERROR_CODE);
    const data = err.data as { code: string; status: number; retryAfterSeconds: number };
    assert.equal(data.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(data.status, 429);
    assert.ok(Number.isInteger(data.retryAfterSeconds) && data.retryAfterSeconds >= 1 && data.retryAfterSeconds <= 60, JSON.stringify(data));
    assert.match(err.message, /RATE_LIMIT_EXCEEDED: .*retry after \d+ s/);
    assert.equal(await limited.accounts.balance(a.name), before, "a refused call costs nothing");
  });

  test("the per-IP limit applies to every /mcp message at the HTTP level: 429 with Retry-After", async () => {
    const limited = await extraGateway({ RATE_LIMIT_IP_PER_MINUTE: "2" });
    const a = await fundedAccount(limited.accounts, uniqueName("mcp-ip"), 5);
    const c = await httpClient(limited.url, { "X-API-Key": a.key }); // initialize + initialized: the two allowed
    const err = await c.listTools().then(
      () => assert.fail("not limited"),
      (e: unknown) => e as { code?: number; message: string },
    );
    assert.equal(err.code, 429);
    assert.match(err.message, /RATE_LIMIT_EXCEEDED/);
    const res = await fetch(`${limited.url}${MCP_PATH}`, { method: "POST", headers: { "x-api-key": a.key }, body: "{}" });
    assert.equal(res.status, 429);
    assert.ok(Number(res.headers.get("retry-after")) >= 1);
  });

  test("no credits: INSUFFICIENT_CREDITS (403) as a JSON-RPC error; the free card still answers", async () => {
    const broke = await fundedAccount(accounts, uniqueName("mcp-broke"), 0);
    const c = await httpClient(gw.url, { "X-API-Key": broke.key });
    const err = await refusal(c.callTool({ name: "search_repositories", arguments: { query: "database" } }));
    assert.equal(err.code, SERVICE_ERROR_CODE);
    assert.deepEqual(err.data, { code: "INSUFFICIENT_CREDITS", status: 403 });
    const card = (await c.callTool({ name: "get_repository", arguments: { repo: repoName } })) as CallToolResult;
    assert.notEqual(card.isError, true);
    assert.equal(await accounts.balance(broke.name), 0);
  });
});

describe("stdio: `reposearch mcp` as a child process", () => {
  test("with REPOSEARCH_URL and REPOSEARCH_API_KEY it forwards to the live gateway (and is charged there)", async () => {
    const a = await fundedAccount(accounts, uniqueName("mcp-stdio"), 5);
    const { client, stderr } = await stdioClient({ REPOSEARCH_URL: gw.url, REPOSEARCH_API_KEY: a.key });
    const { tools } = await client.listTools();
    assert.equal(tools.length, 3);
    const before = await accounts.balance(a.name);
    const out = structured(
      tools,
      "search_repositories",
      (await client.callTool({ name: "search_repositories", arguments: { query: "http client", limit: 3 } })) as CallToolResult,
    );
    assert.equal((out.results as unknown[]).length, 3);
    assert.equal(await accounts.balance(a.name), before - SEARCH_PRICE_MICROS, "the gateway charged the key the child was given");
    structured(tools, "get_repository", (await client.callTool({ name: "get_repository", arguments: { repo: repoName } })) as CallToolResult);
    assert.ok(!stderr().includes(a.key), "the key is never printed");
  });

  test("a refusal of the remote service reaches the client with its code: a bad key is AUTH_ERROR (401)", async () => {
    const { client } = await stdioClient({ REPOSEARCH_URL: gw.url, REPOSEARCH_API_KEY: "rsk_not_a_real_key" });
    const err = await refusal(client.callTool({ name: "search_repositories", arguments: { query: "x" } }));
    assert.equal(err.code, SERVICE_ERROR_CODE);
    assert.deepEqual(err.data, { code: "AUTH_ERROR", status: 401 });
  });

  test("without REPOSEARCH_URL it serves the local data dir, no key", async () => {
    const { client } = await stdioClient({ DATA_DIR: dir, LOG_LEVEL: "warn" });
    const { tools } = await client.listTools();
    const out = structured(
      tools,
      "search_repositories",
      (await client.callTool({ name: "search_repositories", arguments: { query: "command line tool" } })) as CallToolResult,
    );
    assert.equal((out.results as { name: string }[])[0]?.name, repoName, "the same index answers the same way");
    const similar = structured(
      tools,
      "find_similar_repositories",
      (await client.callTool({ name: "find_similar_repositories", arguments: { repo: repoName, limit: 3 } })) as CallToolResult,
    );
    assert.ok((similar.results as unknown[]).length > 0);
    assert.match(errorText((await client.callTool({ name: "get_repository", arguments: { repo: "no-such-owner/x" } })) as CallToolResult), /^NOT_FOUND: /);
  });

  test("a data dir without an index: the process says so and exits non-zero", async () => {
    const empty = await tempDir("mcp-empty");
    try {
      const env = { ...stackEnv(empty), REPOSEARCH_URL: "", REPOSEARCH_API_KEY: "" };
      const r = await runCli(["mcp", "--data-dir", path.join(empty, "nothing")], env);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /no published index/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
