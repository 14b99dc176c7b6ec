/**
 * The core's Connect port end to end: a small real index built by the real indexer CLI, served by the
 * real core (startCore, in-process), and called only over loopback through @connectrpc/connect's
 * clients, over the Connect protocol (JSON on HTTP/1.1, binary on HTTP/2), gRPC (HTTP/2) and gRPC-Web
 * (HTTP/1.1), plus a plain `fetch` JSON POST as `curl` sends it. Every answer must equal the answer of
 * the gRPC port (CoreClient) for the same request: both ports run one SearchCore through one runner.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, createClient, type Client, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, it } from "vitest";
import { ErrorCode, connectCodeOf, grpcStatusOf } from "../src/common/errors.js";
import { setLogLevel } from "../src/common/logger.js";
import { loadConfig, projectRoot } from "../src/config/config.js";
import { CoreClient } from "../src/core/grpc/client.js";
import { ERROR_CODE_TRAILER, ERROR_DETAILS_TRAILER, responseFromProto } from "../src/core/grpc/convert.js";
import type { SearchRequest, SearchResponse } from "../src/core/types.js";
import { CategoryMode, ErrorDetailSchema, SearchService } from "../src/gen/reposearch/v1/search_pb.js";
import { startCore, type CoreHandle } from "../src/server/serve.js";
import { datasetLines, lastReport, tempDir, testEnv } from "./helpers.js";
import { buildIndex } from "./stack.js";
import { connectError } from "./support/grpc-testkit.js";

setLogLevel("warn");

// ---------------------------------------------------------------------------------------------
// Fixtures: a made-up word only they contain, so a search for it has a known answer.

const WORD = "quillframe";
const OWNER = "e2e-connect";
const RECENT = new Date(Date.now() - 10 * 86_400_000).toISOString();
const GO = `${OWNER}/quillframe-go`;
const GO_LOWER = `${OWNER}/quillframe-go-lower`;
const PY = `${OWNER}/quillframe-py`;
const UNKNOWNS = `${OWNER}/quillframe-unknowns`;
const FIXTURES: readonly Record<string, unknown>[] = [
  {
    name: GO,
    description: `A ${WORD} client library for Go`,
    stars: 1500,
    forks: 120,
    language: "Go",
    topics: [WORD, "golang"],
    pushedAt: RECENT,
    isArchived: false,
  },
  {
    name: GO_LOWER,
    description: `${WORD} bindings package for go programs`,
    stars: 50,
    forks: 0,
    language: "go",
    topics: [WORD],
    pushedAt: RECENT,
    isArchived: null,
  },
  {
    name: PY,
    description: `A ${WORD} parser library for Python`,
    stars: 49,
    forks: 5,
    language: "Python",
    topics: ["parser"],
    pushedAt: RECENT,
    isArchived: false,
  },
  { name: UNKNOWNS, description: `${WORD} quux frobnicator`, stars: null, forks: null, language: null, topics: [], pushedAt: null, isArchived: null },
];
const isFixture = (name: string) => name.startsWith(`${OWNER}/`);

let dataDir: string;
let core: CoreHandle;
let coreClosed = false;
/** The gRPC port's client: the reference every Connect answer must equal. */
let grpcClient: CoreClient;
const sessions: Http2SessionManager[] = [];

/** Every transport the Connect port serves, with the HTTP version and format each uses. */
function transports(): ReadonlyArray<readonly [string, Transport]> {
  const baseUrl = core.connect.url;
  const h2 = (): Http2SessionManager => {
    const m = new Http2SessionManager(baseUrl);
    sessions.push(m);
    return m;
  };
  return [
    ["Connect, JSON, HTTP/1.1", createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
    ["Connect, binary, HTTP/2", createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, sessionManager: h2() })],
    ["gRPC, HTTP/2", createGrpcTransport({ baseUrl, sessionManager: h2() })],
    ["gRPC-Web, binary, HTTP/1.1", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
    ["gRPC-Web, JSON, HTTP/2", createGrpcWebTransport({ baseUrl, httpVersion: "2", useBinaryFormat: false, sessionManager: h2() })],
  ];
}

/** A response with its server-side duration zeroed (the one field two runs of a search may differ in). */
const untimed = (r: SearchResponse): SearchResponse => ({ ...r, meta: { ...r.meta, timeMs: 0 } });

beforeAll(async () => {
  dataDir = await tempDir("core-connect");
  const built = await buildIndex(dataDir, [...(await datasetLines(600)), ...FIXTURES]);
  assert.equal(lastReport(built.stderr).published, true);
  const env = testEnv({ DATA_DIR: dataDir, HOST: "127.0.0.1", GRPC_PORT: "0", CONNECT_PORT: "0", SHUTDOWN_GRACE_MS: "3000", LOG_LEVEL: "warn" });
  delete env.RERANKER;
  core = await startCore(loadConfig(env), { version: "e2e-test" });
  grpcClient = new CoreClient(core.grpc.address, { defaultDeadlineMs: 5_000 });
  await grpcClient.waitForReady(5_000);
});

afterAll(async () => {
  for (const m of sessions) m.abort();
  grpcClient?.close();
  if (core && !coreClosed) await core.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------

describe("configuration", () => {
  it("CONNECT_PORT: 50052 by default, any free port when GRPC_PORT is 0, else as set", () => {
    assert.equal(loadConfig({}).server.connectPort, 50052);
    assert.equal(loadConfig({ GRPC_PORT: "0" }).server.connectPort, 0);
    assert.equal(loadConfig({ GRPC_PORT: "0", CONNECT_PORT: "6000" }).server.connectPort, 6000);
    assert.equal(loadConfig({ CONNECT_PORT: "0" }).server.connectPort, 0);
    assert.throws(() => loadConfig({ CONNECT_PORT: "70000" }), /CONNECT_PORT/);
    assert.match(core.connect.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(core.connect.port, 0);
  });

  it("each ErrorCode's Connect code is its gRPC status (Connect numbers its codes as gRPC does)", async () => {
    const { codeFromString } = await import("@connectrpc/connect/protocol-connect");
    for (const code of Object.values(ErrorCode)) assert.equal(codeFromString(connectCodeOf[code]), grpcStatusOf[code], code);
  });
});

describe("Search on every protocol of the Connect port", () => {
  const requests: readonly SearchRequest[] = [
    { query: WORD, limit: 50, filters: { categories: [], excludeArchived: false } },
    { query: WORD, limit: 50, filters: { language: "GO", minStars: 50, maxStars: 1500 } },
    { query: `${WORD} parser`, limit: 5, includeTree: true, filters: { topics: ["parser", "golang"] } },
    { query: "http client library", limit: 7 },
  ];

  it("answers exactly as the gRPC port does, over Connect (JSON and binary), gRPC and gRPC-Web", async () => {
    const expected = await Promise.all(requests.map((r) => grpcClient.search(r)));
    assert.deepEqual(expected[1]!.results.map((r) => r.name).sort(), [GO, GO_LOWER].sort(), "the reference finds the fixtures the filter admits");
    for (const [name, transport] of transports()) {
      const client = createClient(SearchService, transport);
      for (const [i, req] of requests.entries()) {
        const msg = await client.search({
          query: req.query,
          limit: req.limit,
          includeTree: req.includeTree,
          filters: req.filters && {
            language: req.filters.language,
            minStars: req.filters.minStars === undefined ? undefined : BigInt(req.filters.minStars),
            maxStars: req.filters.maxStars === undefined ? undefined : BigInt(req.filters.maxStars),
            excludeArchived: req.filters.excludeArchived,
            categories: req.filters.categories && { values: [...req.filters.categories] },
            topics: req.filters.topics && { values: [...req.filters.topics] },
          },
        });
        assert.deepEqual(untimed(responseFromProto(msg)), untimed(expected[i]!), `${name}: request ${i}`);
      }
    }
  });

  it("the messages carry int64 as bigint, the category mode as the generated enum, presence intact", async () => {
    const client = createClient(SearchService, transports()[1]![1]);
    const res = await client.search({ query: WORD, limit: 50, includeTree: true, filters: { categories: { values: [] } } });
    const go = res.results.find((r) => r.name === GO);
    assert.ok(go, res.results.map((r) => r.name).join(", "));
    assert.equal(go.stars, 1500n);
    assert.equal(go.forks, 120n);
    assert.ok(go.tree !== undefined && go.tree.text === undefined, "tree requested, none indexed: an empty Tree");
    const unknowns = res.results.find((r) => r.name === UNKNOWNS);
    assert.ok(unknowns);
    assert.deepEqual([unknowns.stars, unknowns.forks, unknowns.language, unknowns.isArchived], [undefined, undefined, undefined, undefined]);
    assert.equal(res.meta?.appliedFilters?.categories?.mode, CategoryMode.ALL);
    assert.ok(res.meta!.total >= 4n);
  });

  it("GetIndexStats answers as on the gRPC port", async () => {
    const want = await grpcClient.stats();
    for (const [name, transport] of transports()) {
      const s = await createClient(SearchService, transport).getIndexStats({});
      assert.deepEqual(
        [s.version, Number(s.count), s.dims, s.embedderId, s.publishedAt, [...s.methods].sort()],
        [want.version, want.count, want.dims, want.embedderId, want.publishedAt, [...want.methods].sort()],
        name,
      );
    }
  });

  it("SearchStream stays on the gRPC port: UNIMPLEMENTED here", async () => {
    const client = createClient(SearchService, transports()[2]![1]);
    async function* none() {}
    const err = await connectError(
      (async () => {
        for await (const _ of client.searchStream(none())) void _;
      })(),
    );
    assert.equal(err.code, Code.Unimplemented);
  });
});

describe("errors on the Connect port", () => {
  it("a bad request → invalid_argument, with the error code and details as on the gRPC port", async () => {
    for (const [name, transport] of transports()) {
      const client: Client<typeof SearchService> = createClient(SearchService, transport);
      const err = await connectError(client.search({ query: WORD, limit: 51, filters: { topics: { values: [] } } }));
      assert.equal(err.code, Code.InvalidArgument, name);
      assert.match(err.rawMessage, /^invalid search request: /, name);
      assert.equal(err.metadata.get(ERROR_CODE_TRAILER), ErrorCode.ValidationError, name);
      assert.ok(err.metadata.get(ERROR_DETAILS_TRAILER), `${name}: details metadata`);
      const details = err.findDetails(ErrorDetailSchema).map((d) => `${d.path}:${d.rule}`);
      assert.deepEqual(details, ["limit:maximum", "filters.topics:minItems"], name);
    }
  });

  it("an empty query → invalid_argument (the core is not asked)", async () => {
    const client = createClient(SearchService, transports()[0]![1]);
    const err = await connectError(client.search({ query: "" }));
    assert.equal(err.code, Code.InvalidArgument);
    assert.deepEqual(
      err.findDetails(ErrorDetailSchema).map((d) => `${d.path}:${d.rule}`),
      ["query:minLength"],
    );
  });

  it("a 1 ms timeout → deadline_exceeded; the server is fine afterwards", async () => {
    for (const [name, transport] of transports()) {
      const client = createClient(SearchService, transport);
      const err = await connectError(client.search({ query: "a fast http router with middleware", limit: 50, includeTree: true }, { timeoutMs: 1 }));
      assert.equal(err.code, Code.DeadlineExceeded, name);
      assert.ok((await client.search({ query: WORD })).results.length > 0, name);
    }
  });

  it("Connect and gRPC-Web calls are counted in the core's call metrics", async () => {
    const text = await core.metrics.registry.metrics();
    const line = text
      .split("\n")
      .find((l) => l.startsWith("grpc_server_handled_total{") && l.includes('grpc_method="Search"') && l.includes('grpc_code="INVALID_ARGUMENT"'));
    assert.ok(line && Number(line.split(" ").at(-1)) >= 6, line ?? text);
  });
});

describe("plain HTTP, as curl sends it", () => {
  const searchUrl = () => `${core.connect.url}/reposearch.v1.SearchService/Search`;
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(searchUrl(), { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });

  it("a JSON POST gets JSON results (proto3 JSON: int64 as strings, enums by name, every field)", async () => {
    const res = await post({ query: WORD, limit: 10, filters: { language: "go" } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    const body = (await res.json()) as {
      query: string;
      results: { name: string; stars?: string; topics: string[]; evidence: string[] }[];
      meta: { total: string; appliedFilters: { categories: { mode: string }; language: string; excludeArchived: boolean; excludeRepos: string[] } };
    };
    assert.equal(body.query, WORD);
    assert.deepEqual(
      body.results
        .map((r) => r.name)
        .filter(isFixture)
        .sort(),
      [GO, GO_LOWER].sort(),
    );
    assert.equal(body.results.find((r) => r.name === GO)?.stars, "1500");
    assert.ok(body.results.every((r) => Array.isArray(r.topics) && r.evidence.length > 0));
    assert.equal(body.meta.appliedFilters.categories.mode, "CATEGORY_MODE_DEFAULT");
    assert.equal(body.meta.appliedFilters.language, "go");
    assert.equal(body.meta.appliedFilters.excludeArchived, true);
    assert.deepEqual(body.meta.appliedFilters.excludeRepos, []);
    assert.equal(typeof body.meta.total, "string");
  });

  it("a bad request gets 400 with the Connect error body, the error code header and the details", async () => {
    const res = await post({ query: WORD, limit: 0 });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get(ERROR_CODE_TRAILER), ErrorCode.ValidationError);
    const body = (await res.json()) as { code: string; message: string; details?: { type: string }[] };
    assert.equal(body.code, "invalid_argument");
    assert.match(body.message, /^invalid search request: limit/);
    assert.deepEqual(
      body.details?.map((d) => d.type),
      ["reposearch.v1.ErrorDetail"],
    );
  });

  it("an unknown field is rejected, not ignored (a typo is reported)", async () => {
    const res = await post({ query: WORD, limt: 3 });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { code: string; message: string };
    assert.equal(body.code, "invalid_argument");
    assert.match(body.message, /limt/);
  });

  it("the Connect timeout header is the deadline (deadline_exceeded)", async () => {
    // The deadline starts when the request arrives, so on this small index a 1 ms search can now and
    // then finish in time: up to 50 tries, each either a complete answer or deadline_exceeded.
    const codes: string[] = [];
    for (let i = 0; i < 50 && !codes.includes("deadline_exceeded"); i++) {
      const res = await post({ query: "a fast http router with middleware", limit: 50, includeTree: true }, { "Connect-Timeout-Ms": "1" });
      const body = (await res.json()) as { code?: string; results?: unknown[] };
      if (res.status === 200) assert.ok(Array.isArray(body.results), JSON.stringify(body).slice(0, 200));
      codes.push(body.code ?? String(res.status));
    }
    assert.ok(codes.includes("deadline_exceeded"), codes.join(", "));
    assert.ok(
      codes.every((c) => c === "deadline_exceeded" || c === "200"),
      codes.join(", "),
    );
  });
});

describe("src/gen is what `npm run generate` writes from proto/", () => {
  it("buf generate reproduces it byte for byte", async () => {
    const out = await mkdtemp(path.join(tmpdir(), "reposearch-gen-"));
    try {
      const bin = path.join(projectRoot, "node_modules", ".bin");
      const r = spawnSync(path.join(bin, "buf"), ["generate", "--output", out], {
        cwd: projectRoot,
        env: { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` },
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stderr);
      const list = async (dir: string): Promise<string[]> =>
        (await readdir(dir, { recursive: true, withFileTypes: true }))
          .filter((e) => e.isFile())
          .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
          .sort();
      const fresh = path.join(out, "src", "gen");
      const committed = path.join(projectRoot, "src", "gen");
      assert.deepEqual(await list(fresh), await list(committed));
      for (const f of await list(fresh)) {
        assert.equal(
          await readFile(path.join(committed, f), "utf8"),
          await readFile(path.join(fresh, f), "utf8"),
          `src/gen/${f} is stale: run npm run generate`,
        );
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});

describe("shutdown", () => {
  it("closes the Connect port with the rest of the core", async () => {
    const url = core.connect.url;
    coreClosed = true;
    await core.close();
    await assert.rejects(
      fetch(`${url}/reposearch.v1.SearchService/GetIndexStats`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }),
    );
  });
});
