/**
 * The search core in this process, over the data dir's published index, as a RepoSearchApi: what
 * `reposearch mcp` and `reposearch search|similar|repo` use when no remote service is configured. No
 * key, no limits, no credits: the caller owns the machine. The engine validates every request with the
 * contract's schema, as it does behind gRPC, so errors read the same as a served core's.
 */
import { ErrorCode, ReposearchError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import type { Config } from "../config/config.js";
import { SearchEngine } from "../core/engine.js";
import { createReranker } from "../core/rerank/factory.js";
import { createLocalReranker } from "../core/rerank/local.js";
import type { SearchCore } from "../core/types.js";
import type { RepoSearchApi } from "../mcp/api.js";
import { openStore } from "../store/factory.js";

export interface LocalApi extends RepoSearchApi {
  /** Releases the engine and the store. */
  close(): Promise<void>;
}

/** The API over `core` (tests and the bench pass an engine they hold). */
export function coreApi(core: Required<Pick<SearchCore, "search" | "similar" | "repository">>): RepoSearchApi {
  return {
    search: (request, options) => core.search(request, { signal: options?.signal }),
    similar: (request, options) => core.similar(request, { signal: options?.signal }),
    repository: (name, options) => core.repository({ repo: name }, { signal: options?.signal }),
  };
}

/** Loads the published index of `config.dataDir` (or the configured store) and its query embedder. */
export async function openLocalApi(config: Config, opts: { logger: Logger }): Promise<LocalApi> {
  const store = await openStore(config, { logger: opts.logger });
  try {
    const info = await store.info();
    if (!info.version) throw new ReposearchError(ErrorCode.Unavailable, `no published index in ${config.dataDir}: run \`reposearch index\` first`);
    const reranker = await createReranker(config, { local: async () => createLocalReranker() });
    const engine = SearchEngine.fromConfig(config, store, { reranker, logger: opts.logger });
    await engine.sync();
    return {
      ...coreApi(engine),
      async close() {
        await engine.close();
        await store.close();
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}
