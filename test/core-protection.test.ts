/**
 * The core under a flood, with the real engine over a real index (real CLI), the real core servers
 * and gateway in this process, and real clients over loopback: one internal caller floods SearchStream
 * with searches of the expensive kind (limit 50, trees); a REST search through the gateway, which
 * authenticates to the core with its own token, is answered while the flood is still far from done.
 * Asserted by counts (how much of the flood had been answered when the REST answer arrived), never by time.
 *
 * Everything runs in this one process, so this shows the round robin with the real engine and the
 * gateway's own token; what a flood does to another process's latency is measured in docs/grpc.md.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, test } from "vitest";
import { ErrorCode } from "../src/common/errors.js";
import { setLogSink } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import * as grpc from "@grpc/grpc-js";
import { CoreClient } from "../src/core/grpc/client.js";
import { loadProtos, requestToProto } from "../src/core/grpc/convert.js";
import { startCore, startGateway, type CoreHandle, type GatewayHandle } from "../src/server/serve.js";
import { datasetLines, oneRecordPerName, tempDir } from "./helpers.js";
import { buildIndex, fundedAccount, postSearch, stackEnv } from "./stack.js";
import { expectError, waitUntil } from "./support/grpc-testkit.js";

setLogSink(() => undefined);

const FLOOD_TOKEN = "flood-token-0123456789abcdefgh";
const GATEWAY_TOKEN = "gateway-token-0123456789abcdef";
const STREAMS = 4;
const MESSAGES = 1;
const BATCH = 384;
const FLOOD = STREAMS * MESSAGES * BATCH;

let dir = "";
let core: CoreHandle | undefined;
let gateway: GatewayHandle | undefined;

beforeAll(async () => {
  dir = await tempDir("core-protection");
  await buildIndex(dir, oneRecordPerName(await datasetLines(700)).slice(0, 600), { env: stackEnv(dir, { STATIC_TRAIN_EPOCHS: "0" }) });
  const env = stackEnv(dir, {
    LEDGER_SQLITE_PATH: path.join(dir, "ledger.sqlite"),
    QUERY_CACHE_TTL_MS: "0",
    CORE_AUTH_TOKENS: `flood=${FLOOD_TOKEN},gateway=${GATEWAY_TOKEN}`,
    CORE_TOKEN: GATEWAY_TOKEN,
    CORE_MAX_RUNNING_SEARCHES: "4",
    CORE_MAX_QUEUED_SEARCHES: "10000",
    CORE_MAX_QUEUED_PER_CALLER: "10000",
    CORE_STREAM_MAX_OPEN: "10000",
    // The per-message cap would refuse most of this flood; here the scheduler alone is under test.
    CORE_STREAM_MAX_BATCH: "4096",
    CORE_TIMEOUT_MS: "60000",
  });
  const config = loadConfig(env);
  core = await startCore(config, { version: "0.0.0-protection" });
  gateway = await startGateway(config, { version: "0.0.0-protection", coreAddress: core.grpc.address });
});

afterAll(async () => {
  await gateway?.close();
  await core?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("a flood from one internal caller does not hold up the gateway's search; callers without a token are refused", async () => {
  const address = core!.grpc.address;
  const anonymous = new CoreClient(address);
  const raw = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    assert.equal((await expectError(anonymous.search({ query: "http router" }))).code, ErrorCode.AuthError);
    const account = await fundedAccount(gateway!.accounts, "protection", 5);

    // The flood: one SearchStream message of 384 searches (limit 50, with trees) on each of 4 streams,
    // written at once, as the adversarial run sent them.
    let floodDone = 0;
    const def = loadProtos().searchService.SearchStream!;
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${FLOOD_TOKEN}`);
    const streams = Array.from({ length: STREAMS }, (_, s) => {
      const call = raw.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, md);
      call.on("data", (m: { outcomes?: { response?: object }[] }) => {
        for (const o of m.outcomes ?? []) if (o.response) floodDone++;
      });
      call.on("error", () => undefined);
      for (let m = 0; m < MESSAGES; m++) {
        const searches = Array.from({ length: BATCH }, (_, i) => ({
          id: m * BATCH + i + 1,
          request: requestToProto({ query: `web framework ${s} ${m} ${i}`, limit: 50, includeTree: true }),
          timeoutMs: 120_000,
          metadata: {},
        }));
        call.write({ searches });
      }
      call.end();
      return new Promise<void>((resolve) => call.on("status", () => resolve()));
    });

    // The REST search goes in while hundreds of the flood's searches are waiting in the core.
    const inCore = async (caller: string): Promise<number> => {
      let n = 0;
      for (const gauge of [core!.metrics.callerQueued, core!.metrics.callerRunning])
        n += (await gauge.get()).values.find((v) => v.labels.caller === caller)?.value ?? 0;
      return n;
    };
    const reached = await waitUntil(async () => (await inCore("flood")) >= 200, 60_000, 5);
    assert.ok(reached, "the flood reached the core");
    const doneWhenSent = floodDone;
    const res = await postSearch(gateway!.url, { query: "command line argument parser", limit: 5 }, account.key);
    const doneWhenAnswered = floodDone;
    assert.equal(res.status, 200, await res.text());
    await Promise.all(streams);
    assert.equal(floodDone, FLOOD);
    const waitedFor = doneWhenAnswered - doneWhenSent;
    console.log(`# REST search sent after ${doneWhenSent} and answered after ${doneWhenAnswered} of ${FLOOD} flood searches`);
    // Fair share: it waits for about one of the flood's searches per slot, not for the flood.
    assert.ok(waitedFor < FLOOD / 10, `the REST search waited for ${waitedFor} of the flood's searches`);

    const metrics = await core!.metrics.registry.metrics();
    assert.match(metrics, new RegExp(`core_caller_calls_total\\{caller="flood",grpc_method="SearchStream",grpc_code="OK"\\} ${FLOOD}`));
    assert.match(metrics, /core_caller_calls_total\{caller="gateway",grpc_method="SearchStream",grpc_code="OK"\} 1/);
    assert.ok(!metrics.includes(FLOOD_TOKEN) && !metrics.includes(GATEWAY_TOKEN));
  } finally {
    anonymous.close();
    raw.close();
  }
});
