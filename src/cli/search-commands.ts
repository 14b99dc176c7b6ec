/**
 * The commands that ask reposearch something: `search`, `similar`, `repo`, and `mcp` (the MCP server
 * on stdio). Each runs against a remote service when one is given (`--url`/`--api-key`, or
 * REPOSEARCH_URL/REPOSEARCH_API_KEY; through the typed client, with its retries) and against the local
 * data dir's index otherwise (the core in this process: no key, no limits, no credits).
 *
 * Output: a table for people, `--json` for machines (the REST answer as is). A refused or failed call
 * prints the contract's code and message and exits 1; a bad flag exits 2 with the usage line.
 */
import { logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { repositoryRequestSchema, similarRequestSchema } from "../contract/repository-requests.js";
import { searchRequestSchema } from "../contract/search-request.js";
import { RepoSearchClient } from "../client/client.js";
import type { SearchResponse } from "../client/types.js";
import { contractFailure, type RepoSearchApi } from "../mcp/api.js";
import { describeFilters, renderRepository } from "../mcp/render.js";
import type { ScoredPoint } from "../store/types.js";
import { UsageError, VERSION, type Command, type CommandContext } from "./command.js";
import { checkRequest, FILTER_OPTIONS, FILTER_USAGE, filtersFromFlags, limitFromFlags } from "./search-flags.js";

const REMOTE_OPTIONS = { url: { type: "string" }, "api-key": { type: "string" } } as const;
const REMOTE_USAGE = "[--url URL --api-key KEY | --data-dir DIR]";

interface OpenedApi {
  readonly api: RepoSearchApi;
  readonly close: () => Promise<void>;
}

/** The remote service when one is configured (flags over environment), else the local index. */
async function openApi(config: Config, values: CommandContext["values"]): Promise<OpenedApi> {
  const url = typeof values.url === "string" ? values.url : config.remote.url;
  const apiKey = typeof values["api-key"] === "string" ? values["api-key"] : config.remote.apiKey;
  if (url === null) {
    if (typeof values["api-key"] === "string") throw new UsageError("--api-key needs a remote service: --url URL or REPOSEARCH_URL");
    // The local core, the store and the MCP transports load only when used (see commands.ts).
    const { openLocalApi } = await import("../server/local-api.js");
    const local = await openLocalApi(config, { logger: logger.child({ component: "core" }) });
    return { api: local, close: () => local.close() };
  }
  if (apiKey === null) throw new UsageError(`${url} needs an API key: --api-key KEY or REPOSEARCH_API_KEY`);
  let client: RepoSearchClient;
  try {
    client = new RepoSearchClient({ baseUrl: url, apiKey });
  } catch (err) {
    throw new UsageError(`--url: ${(err as Error).message}`);
  }
  return { api: client, close: async () => {} };
}

/** Runs `fn` against the API; a refused or failed call is printed as the contract states it (exit 1). */
async function withApi(ctx: CommandContext, command: string, fn: (api: RepoSearchApi) => Promise<void>): Promise<number> {
  const { api, close } = await openApi(ctx.config, ctx.values);
  try {
    await fn(api);
    return 0;
  } catch (err) {
    const f = contractFailure(err);
    if (f.code === "INTERNAL_ERROR") logger.error("command failed", { command, err });
    const lines = [`reposearch ${command}: ${f.code}: ${f.message}`, ...f.details.map((d) => `  ${d.path || "(request)"}: ${d.message}`)];
    if (f.retryAfterSeconds !== null) lines.push(`  retry after ${f.retryAfterSeconds} s`);
    console.error(lines.join("\n"));
    return 1;
  } finally {
    await close();
  }
}

const count = (n: number | null): string => (n === null ? "?" : n.toLocaleString("en-US"));

/** Fits `s` into `width` columns. */
function fit(s: string, width: number): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length <= width ? one.padEnd(width) : `${one.slice(0, Math.max(0, width - 1))}…`;
}

/** A result list as a table for a terminal, then one line of totals and filters. */
function formatTable(res: SearchResponse, columns: number): string {
  const nameW = Math.min(40, Math.max(10, ...res.results.map((r) => r.name.length)));
  const langW = Math.min(14, Math.max(8, ...res.results.map((r) => (r.language ?? "").length)));
  const fixed = 4 + nameW + 2 + 9 + 2 + langW + 2 + 10 + 2;
  const descW = Math.max(20, columns - fixed);
  const lines = [`${"#".padStart(2)}  ${fit("REPOSITORY", nameW)}  ${"STARS".padStart(9)}  ${fit("LANGUAGE", langW)}  ${fit("PUSHED", 10)}  DESCRIPTION`];
  res.results.forEach((r, i) => {
    const desc = `${r.isArchived ? "[archived] " : ""}${r.description ?? ""}`;
    lines.push(
      `${String(i + 1).padStart(2)}  ${fit(r.name, nameW)}  ${count(r.stars).padStart(9)}  ${fit(r.language ?? "", langW)}  ${fit(r.pushedAt?.slice(0, 10) ?? "", 10)}  ${fit(desc, descW).trimEnd()}`,
    );
  });
  if (res.results.length === 0) lines.push("(no repository matched)");
  lines.push(
    "",
    `${res.results.length} of ${count(res.meta.total)} matches · filters: ${describeFilters(res.meta.appliedFilters)} · ${Math.round(res.meta.timeMs)} ms`,
  );
  return lines.join("\n");
}

function print(res: SearchResponse, json: boolean): void {
  console.log(json ? JSON.stringify(res, null, 2) : formatTable(res, process.stdout.columns || 120));
}

function onePositional(positionals: readonly string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what} (got ${positionals.length})`);
  return positionals[0]!;
}

/** The `--mode` debugging path: the store's raw dense or lexical hits, no ranker, no filters. */
async function rawSearch(config: Config, text: string, limit: number, mode: "dense" | "lexical"): Promise<number> {
  const [{ openStore }, { loadQueryEmbedder }] = await Promise.all([import("../store/factory.js"), import("../embed/factory.js")]);
  const store = await openStore(config);
  try {
    const info = await store.info();
    if (!info.version || !info.embedderId) {
      console.error(`reposearch search: no published index in ${config.dataDir}: run \`reposearch index\` first`);
      return 1;
    }
    let hits: readonly ScoredPoint[];
    if (mode === "lexical") hits = await store.lexicalSearch({ text, limit });
    else {
      const embedder = await loadQueryEmbedder(config, info.embedderId);
      const [vector] = await embedder.embed([text]);
      hits = await store.denseSearch({ vector: vector!, limit });
      await embedder.close();
    }
    hits.forEach((h, i) => {
      const p = h.payload;
      console.log(`${String(i + 1).padStart(2)}. ${p.name}  ★${p.stars ?? "?"}  [${p.category ?? "uncategorized"}]  ${h.score.toFixed(4)}`);
      if (p.description) console.log(`    ${p.description.slice(0, 140)}`);
    });
    return 0;
  } finally {
    await store.close();
  }
}

export const searchCommands: Record<string, Command> = {
  search: {
    summary: "search repositories by a description of what they do (the local index, or a remote service with --url)",
    usage: `reposearch search "QUERY" ${FILTER_USAGE} ${REMOTE_USAGE} [--mode dense|lexical]`,
    options: { ...FILTER_OPTIONS, ...REMOTE_OPTIONS, mode: { type: "string" } },
    allowPositionals: true,
    async run(ctx) {
      const { values, positionals } = ctx;
      const query = positionals.join(" ").trim();
      if (!query) throw new UsageError("a query is required");
      const limit = limitFromFlags(values);
      if (values.mode !== undefined) {
        // A debugging aid kept from the first CLI: the store's own channels, unranked and unfiltered.
        if (values.mode !== "dense" && values.mode !== "lexical") throw new UsageError("--mode must be dense or lexical");
        if (values.url !== undefined || ctx.config.remote.url !== null)
          throw new UsageError("--mode reads the local index only; drop --url (or REPOSEARCH_URL)");
        return rawSearch(ctx.config, query, limit ?? 10, values.mode);
      }
      const filters = filtersFromFlags(values);
      const request = { query, ...(limit !== undefined ? { limit } : {}), ...(values.tree ? { includeTree: true } : {}), ...(filters ? { filters } : {}) };
      checkRequest(searchRequestSchema, request);
      return withApi(ctx, "search", async (api) => print(await api.search(request), Boolean(values.json)));
    },
  },
  similar: {
    summary: "repositories like OWNER/REPO: alternatives ranked by how alike they are (local index, or --url)",
    usage: `reposearch similar OWNER/REPO ${FILTER_USAGE} ${REMOTE_USAGE}`,
    options: { ...FILTER_OPTIONS, ...REMOTE_OPTIONS },
    allowPositionals: true,
    async run(ctx) {
      const { values } = ctx;
      const repo = onePositional(ctx.positionals, "OWNER/REPO");
      const limit = limitFromFlags(values);
      const filters = filtersFromFlags(values);
      const request = { repo, ...(limit !== undefined ? { limit } : {}), ...(values.tree ? { includeTree: true } : {}), ...(filters ? { filters } : {}) };
      checkRequest(similarRequestSchema, request);
      return withApi(ctx, "similar", async (api) => print(await api.similar(request), Boolean(values.json)));
    },
  },
  repo: {
    summary: "everything the index stores about OWNER/REPO: its card (local index, or --url)",
    usage: `reposearch repo OWNER/REPO [--json] ${REMOTE_USAGE}`,
    options: { json: { type: "boolean" }, ...REMOTE_OPTIONS },
    allowPositionals: true,
    async run(ctx) {
      const repo = onePositional(ctx.positionals, "OWNER/REPO");
      checkRequest(repositoryRequestSchema, { repo });
      return withApi(ctx, "repo", async (api) => {
        const card = await api.repository(repo);
        console.log(ctx.values.json ? JSON.stringify(card, null, 2) : renderRepository(card, false));
      });
    },
  },
  mcp: {
    summary: "the MCP server on stdin/stdout, for a coding agent (the local index, or a remote service with --url)",
    usage: `reposearch mcp ${REMOTE_USAGE}`,
    options: { ...REMOTE_OPTIONS },
    async run(ctx) {
      const { serveStdio } = await import("../mcp/transports.js");
      const { api, close } = await openApi(ctx.config, ctx.values);
      try {
        await serveStdio(api, { version: VERSION });
      } finally {
        await close();
      }
      return 0;
    },
  },
};
