#!/usr/bin/env node
/**
 * Regenerates the WebAssembly binary embedded in src/store/embedded/int8-kernel.ts from its source,
 * src/store/embedded/int8-kernel.wat (wabt, a dev dependency). Run after editing the .wat; the
 * kernel's unit test fails while the two disagree.
 *
 *   node scripts/build-wasm.mjs [--check]
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import wabtInit from "wabt";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const WAT = path.join(root, "src/store/embedded/int8-kernel.wat");
const TS = path.join(root, "src/store/embedded/int8-kernel.ts");
const MARKER = /(export const INT8_KERNEL_WASM_BASE64 =\n {2}")[A-Za-z0-9+/=]*(";)/;

export async function compileKernel() {
  const wabt = await wabtInit();
  const mod = wabt.parseWat(path.basename(WAT), readFileSync(WAT, "utf8"), { simd: true });
  try {
    mod.validate();
    return Buffer.from(mod.toBinary({}).buffer).toString("base64");
  } finally {
    mod.destroy();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const b64 = await compileKernel();
  const ts = readFileSync(TS, "utf8");
  if (!MARKER.test(ts)) throw new Error(`${TS}: INT8_KERNEL_WASM_BASE64 declaration not found`);
  const next = ts.replace(MARKER, `$1${b64}$2`);
  if (process.argv.includes("--check")) {
    if (next !== ts) {
      console.error("int8-kernel.ts is stale: run node scripts/build-wasm.mjs");
      process.exit(1);
    }
    console.log("int8-kernel.ts matches int8-kernel.wat");
  } else {
    writeFileSync(TS, next);
    console.log(`wrote ${path.relative(root, TS)} (${Buffer.from(b64, "base64").length} bytes of WebAssembly)`);
  }
}
