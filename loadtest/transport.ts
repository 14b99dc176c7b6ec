/**
 * The transport ceiling: the same generator, connections and request bodies against echo-server.ts
 * (node:http, as many processes as the service, a fixed real search response, no work). It is the
 * most any Node HTTP service could sustain here with this generator, and so puts the embedding-only
 * ceiling in proportion: when the embedder is far faster than HTTP itself, a ratio to it says more
 * about the transport than about the service.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { compiledModuleUrl } from "../src/common/compiled-url.js";
import { runPhases, type LoadRequest, type PhaseRecord } from "./loadgen.js";
import { procTreeCpuSeconds } from "./server.js";

export interface TransportCeiling {
  readonly processes: number;
  readonly connections: number;
  readonly seconds: number;
  readonly responseBytes: number;
  readonly perSecond: number;
  readonly errors: number;
  /** The echo server's CPU (primary and workers) as % of one core. */
  readonly serverCpuPct: number | null;
  /** This process's (the generator's) CPU as % of one core: near 100, the generator is the limit. */
  readonly generatorCpuPct: number;
}

/** Starts echo-server.ts with `processes` processes answering `responseBody`, runs `connections` closed loops for `seconds`. */
export async function transportCeiling(opts: {
  processes: number;
  connections: number;
  seconds: number;
  requests: readonly LoadRequest[];
  responseBody: Buffer;
}): Promise<TransportCeiling> {
  const dir = mkdtempSync(path.join(tmpdir(), "reposearch-transport-"));
  const bodyFile = path.join(dir, "body.json");
  writeFileSync(bodyFile, opts.responseBody);
  const child = spawn(
    process.execPath,
    [fileURLToPath(compiledModuleUrl("./echo-server.js", import.meta.url)), "--processes", String(opts.processes), "--body-file", bodyFile],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("echo server did not start within 10 s")), 10_000);
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const m = /listening at (\S+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once("exit", (code) => reject(new Error(`echo server exited (${code})`)));
    });
    const cpu = (): number | null => procTreeCpuSeconds(child.pid!);
    const marks: (number | null)[] = [];
    const own: number[] = [];
    const recs: PhaseRecord[] = await runPhases({
      target: { baseUrl: url, apiKey: "none" },
      requests: opts.requests,
      phases: [
        { label: "warm-up", connections: opts.connections, seconds: 2, record: false },
        { label: "transport", connections: opts.connections, seconds: opts.seconds, record: true },
      ],
      timeoutMs: 10_000,
      sampleEvery: 0,
      onBoundary: () => {
        marks.push(cpu());
        const u = process.cpuUsage();
        own.push((u.user + u.system) / 1e6);
      },
    });
    const rec = recs[0]!;
    const ok = rec.statuses["200"] ?? 0;
    const errors = Object.values(rec.errors).reduce((a, b) => a + b, 0);
    const [a, b] = [marks[1], marks[2]];
    return {
      processes: opts.processes,
      connections: opts.connections,
      seconds: rec.seconds,
      responseBytes: opts.responseBody.length,
      perSecond: ok / rec.seconds,
      errors,
      serverCpuPct: a == null || b == null ? null : Math.round(((b - a) / rec.seconds) * 1000) / 10,
      generatorCpuPct: Math.round(((own[2]! - own[1]!) / rec.seconds) * 1000) / 10,
    };
  } finally {
    child.kill("SIGTERM");
    await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));
    rmSync(dir, { recursive: true, force: true });
  }
}
