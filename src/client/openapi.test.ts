import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "vitest";
import { CLIENT_TYPES_FILE, renderClientTypes } from "../../bench/client-types.js";
import { projectRoot } from "../config/config.js";
import { openApiDocument } from "../gateway/openapi.js";

test("src/client/openapi.ts is generated from the served OpenAPI document and up to date (npm run generate:client)", async () => {
  const onDisk = readFileSync(path.join(projectRoot, CLIENT_TYPES_FILE), "utf8");
  assert.ok(onDisk === (await renderClientTypes()), `${CLIENT_TYPES_FILE} is stale: run \`npm run generate:client\``);
});

test("the generated types name every path and schema of the document", () => {
  const onDisk = readFileSync(path.join(projectRoot, CLIENT_TYPES_FILE), "utf8");
  for (const p of Object.keys(openApiDocument.paths)) assert.ok(onDisk.includes(`"${p}": {`), `path ${p}`);
  for (const s of Object.keys(openApiDocument.components.schemas)) assert.match(onDisk, new RegExp(`^ +readonly ${s}:`, "m"), `schema ${s}`);
});
