/**
 * GET /docs in a real headless browser: the self-hosted Swagger UI renders the published OpenAPI
 * document, shows the search operation, and the page makes no request to any other host.
 *
 * Needs Chromium (Debian/Ubuntu package `chromium`, at /usr/bin/chromium, or CHROMIUM_PATH) and the
 * `playwright-core` npm package (a dev dependency); without either the test is skipped with a message.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { afterAll, onTestFinished, test } from "vitest";
import { skipTest } from "./support/skip.js";
import { setLogLevel, setLogSink } from "../src/common/logger.js";
import { loadConfig } from "../src/config/config.js";
import { startGateway, type GatewayHandle } from "../src/server/serve.js";
import { tempDir } from "./helpers.js";
import { freePort, stackEnv } from "./stack.js";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

const restoreSink = setLogSink(() => {});
setLogLevel("warn");
let dir: string | undefined;
let gw: GatewayHandle | undefined;
afterAll(async () => {
  await gw?.close();
  setLogSink(restoreSink);
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("GET /docs renders the Swagger UI with POST /v1/codehost/search, without any external request", async (t) => {
  if (!existsSync(CHROMIUM)) {
    return skipTest(t, `no Chromium at ${CHROMIUM}: install the Debian package (apt-get install -y chromium) or set CHROMIUM_PATH`);
  }
  let playwright: typeof import("playwright-core");
  try {
    playwright = await import("playwright-core");
  } catch {
    return skipTest(t, "the playwright-core package is not installed (npm install -D playwright-core)");
  }

  // /docs needs no search core: the gateway alone, its core address pointing at nothing.
  dir = await tempDir("docs-browser");
  const config = loadConfig(stackEnv(dir, { RATE_LIMIT_IP_PER_MINUTE: "10000", SHUTDOWN_GRACE_MS: "500" }));
  gw = await startGateway(config, { version: "docs-test", coreAddress: `127.0.0.1:${await freePort()}` });
  const origin = new URL(gw.url).origin;

  const browser = await playwright.chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  onTestFinished(() => browser.close());
  const page = await browser.newPage();
  const requested: string[] = [];
  const failed: string[] = [];
  const badResponses: string[] = [];
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  page.on("request", (r) => requested.push(r.url()));
  page.on("requestfailed", (r) => failed.push(`${r.url()}: ${r.failure()?.errorText ?? "?"}`));
  page.on("response", (r) => {
    if (r.status() >= 400) badResponses.push(`${r.status()} ${r.url()}`);
  });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });

  const res = await page.goto(`${gw.url}/docs`, { waitUntil: "load", timeout: 30_000 });
  assert.equal(res?.status(), 200);
  // Swagger UI renders the operation once it has fetched and parsed /.well-known/openapi.json.
  const op = page.locator(".opblock-summary", { hasText: "/v1/codehost/search" });
  await op.first().waitFor({ state: "visible", timeout: 30_000 });
  assert.equal((await op.first().locator(".opblock-summary-method").innerText()).trim(), "POST");
  await page.locator(".opblock-summary", { hasText: "/health" }).first().waitFor({ state: "visible", timeout: 10_000 });
  const body = await page.locator("body").innerText();
  assert.match(body, /\/v1\/codehost\/search/);
  assert.match(body, /0\.0\.1/, "the document's version is shown");

  // Expanding the operation shows its request body schema.
  await op.first().click();
  await page.locator(".opblock-body").first().waitFor({ state: "visible", timeout: 10_000 });
  await page.waitForLoadState("networkidle", { timeout: 10_000 });

  const external = requested.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:"));
  assert.deepEqual(external, [], "no request leaves the server");
  assert.ok(
    requested.some((u) => u === `${origin}/.well-known/openapi.json`),
    `the page loaded the document: ${requested.join(", ")}`,
  );
  assert.deepEqual(failed, [], "no failed requests");
  assert.deepEqual(badResponses, [], "no 4xx/5xx responses");
  assert.deepEqual(pageErrors, [], "no script errors");
  assert.deepEqual(consoleErrors, [], "no console errors (e.g. Content-Security-Policy violations)");
});
