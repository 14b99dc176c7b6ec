/**
 * docker-compose.yml and the image it builds: `docker-compose config -q` accepts the file (skipped only
 * when no compose binary is installed), and the parsed file has the agreed topology: a scalable core
 * without fixed host ports, a gateway on 8080 that round-robins over the core by DNS, a one-shot
 * indexer, Qdrant/Postgres/Redis with health checks, Prometheus and Grafana wired to deploy/.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "vitest";
import { skipTest } from "./support/skip.js";
import { parse } from "yaml";
import { projectRoot } from "../src/config/config.js";
import { knownEnvVars } from "./helpers.js";

const COMPOSE_FILE = path.join(projectRoot, "docker-compose.yml");
const REPOSEARCH_SERVICES = ["indexer", "core", "gateway"] as const;

type Obj = Record<string, any>;

/** `docker-compose` (v1, Debian's package) or the `docker compose` plugin, whichever works; null if neither. */
function composeCommand(): string[] | null {
  const candidates = [["docker-compose"], ["docker", "compose"]];
  for (const c of candidates) {
    const r = spawnSync(c[0]!, [...c.slice(1), "version"], { encoding: "utf8", timeout: 30_000 });
    if (!r.error && r.status === 0) return c;
  }
  return null;
}

const compose = parse(readFileSync(COMPOSE_FILE, "utf8"), { merge: true }) as Obj;
const services = compose.services as Record<string, Obj>;
const svc = (name: string): Obj => {
  assert.ok(services[name], `service ${name} exists`);
  return services[name]!;
};
/** environment as a map, whichever of the two compose spellings (map or KEY=VALUE list) is used. */
const envOf = (s: Obj): Record<string, string> => {
  const e = s.environment ?? {};
  if (Array.isArray(e)) return Object.fromEntries(e.map((x: string) => [x.split("=")[0], x.slice(x.indexOf("=") + 1)]));
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, String(v)]));
};
const dependsOn = (s: Obj): Record<string, string> => {
  const d = s.depends_on ?? {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((n: string) => [n, "service_started"]));
  return Object.fromEntries(Object.entries(d as Record<string, Obj>).map(([k, v]) => [k, v?.condition ?? "service_started"]));
};
const commandOf = (s: Obj): string[] =>
  Array.isArray(s.command)
    ? s.command.map(String)
    : String(s.command ?? "")
        .split(/\s+/)
        .filter(Boolean);
/** Short-syntax volume "SRC:DST[:MODE]" or long syntax, as {source, target, readOnly}. */
const volumesOf = (s: Obj) =>
  ((s.volumes ?? []) as (string | Obj)[]).map((v) => {
    if (typeof v !== "string") return { source: String(v.source ?? ""), target: String(v.target), readOnly: v.read_only === true };
    // The source may be an interpolation like ${DATASET:-../data/x.gz}, whose ":-" is not a separator.
    const end = v.startsWith("${") ? v.indexOf("}") + 1 : 0;
    const parts = [v.slice(0, end) + v.slice(end).split(":")[0]!, ...v.slice(end).split(":").slice(1)];
    return { source: parts[0]!, target: parts[1] ?? parts[0]!, readOnly: parts[2]?.split(",").includes("ro") ?? false };
  });

test("compose: docker-compose config -q accepts the file", (t) => {
  const cmd = composeCommand();
  if (!cmd) {
    return skipTest(t, "neither docker-compose nor the docker compose plugin is installed (Debian: apt-get install docker-compose)");
  }
  const r = spawnSync(cmd[0]!, [...cmd.slice(1), "-f", COMPOSE_FILE, "config", "-q"], { cwd: projectRoot, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.status, 0, `${cmd.join(" ")} config -q failed:\n${r.stderr}${r.stdout}`);
});

test("compose: the stack's services exist", () => {
  for (const name of ["qdrant", "postgres", "redis", "indexer", "core", "gateway", "prometheus", "grafana"]) svc(name);
  assert.match(svc("qdrant").image, /^qdrant\/qdrant(:|$)/);
  assert.match(svc("postgres").image, /^postgres:16(\.|-|$)/);
  assert.match(svc("redis").image, /^redis:7(\.|-|$)/);
  assert.match(svc("prometheus").image, /^prom\/prometheus(:|$)/);
  assert.match(svc("grafana").image, /^grafana\/grafana(-oss)?(:|$)/);
  for (const name of REPOSEARCH_SERVICES) {
    const s = svc(name);
    assert.ok(s.build, `${name} builds the project image`);
    const dockerfile = path.join(projectRoot, String(s.build.context ?? "."), String(s.build.dockerfile ?? "Dockerfile"));
    assert.ok(existsSync(dockerfile), `${name}: ${dockerfile} exists`);
  }
});

test("compose: Qdrant has a volume and a health check; Postgres has env, a volume and a health check", () => {
  const q = svc("qdrant");
  assert.ok(
    volumesOf(q).some((v) => v.target === "/qdrant/storage"),
    "qdrant storage volume",
  );
  assert.ok(q.healthcheck?.test, "qdrant healthcheck");
  const pg = svc("postgres");
  const env = envOf(pg);
  for (const k of ["POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"]) assert.ok(env[k], `postgres ${k}`);
  assert.ok(
    volumesOf(pg).some((v) => v.target === "/var/lib/postgresql/data"),
    "postgres data volume",
  );
  assert.ok(pg.healthcheck?.test, "postgres healthcheck");
  const named = Object.keys(compose.volumes ?? {});
  for (const s of Object.values(services)) {
    for (const v of volumesOf(s)) {
      if (!v.source.startsWith(".") && !v.source.startsWith("/") && !v.source.startsWith("$"))
        assert.ok(named.includes(v.source), `named volume ${v.source} is declared`);
    }
  }
});

test("compose: the core scales (no container_name, no host port, 2 replicas) and serves gRPC on 50051, Connect on 50052", () => {
  const core = svc("core");
  assert.equal(core.container_name, undefined, "no container_name: replicas need distinct names");
  assert.equal(core.ports, undefined, "no published ports: replicas would collide on a fixed host port");
  assert.ok((core.deploy?.replicas ?? 0) >= 2, "deploy.replicas >= 2");
  assert.deepEqual(commandOf(core), ["serve", "--role", "core"]);
  const env = envOf(core);
  assert.equal(env.GRPC_PORT ?? "50051", "50051");
  assert.equal(env.CONNECT_PORT ?? "50052", "50052");
  assert.ok(((core.expose ?? []) as unknown[]).map(String).includes("50052"), "the Connect port is exposed to the network (not published)");
  assert.equal(env.HOST, "0.0.0.0", "the core listens beyond loopback");
  // ...so it needs service tokens (it refuses to start without), and the gateway presents its own.
  const gatewayToken = /^gateway=(.+)$/.exec(env.CORE_AUTH_TOKENS ?? "")?.[1];
  assert.ok(gatewayToken, "the core names the gateway's token in CORE_AUTH_TOKENS");
  assert.equal(envOf(svc("gateway")).CORE_TOKEN, gatewayToken, "the gateway sends the token the core expects");
  assert.equal(env.VECTOR_STORE, "qdrant");
  assert.match(env.QDRANT_URL ?? "", /^http:\/\/qdrant:6333\/?$/);
  assert.equal(dependsOn(core).qdrant, "service_healthy");
});

test("compose: the gateway publishes 8080, depends on the core, and round-robins over it by DNS", () => {
  const gw = svc("gateway");
  assert.deepEqual(commandOf(gw), ["serve", "--role", "gateway"]);
  const ports = (gw.ports ?? []).map(String);
  assert.ok(
    ports.some((p: string) => /(^|:)8080$/.test(p)),
    `gateway publishes container port 8080 (got ${ports.join(", ")})`,
  );
  const deps = dependsOn(gw);
  assert.ok("core" in deps, "gateway depends on core");
  assert.equal(deps.postgres, "service_healthy");
  assert.equal(deps.redis, "service_healthy");
  const env = envOf(gw);
  assert.equal(env.CORE_ADDRESS, "dns:///core:50051");
  assert.equal(env.HOST, "0.0.0.0");
  assert.equal(env.LEDGER_BACKEND, "postgres");
  assert.match(env.DATABASE_URL ?? "", /^postgres(ql)?:\/\/[^@]+@postgres:5432\//);
  assert.equal(env.CACHE_BACKEND, "redis");
  assert.match(env.REDIS_URL ?? "", /^redis:\/\/redis:6379/);
});

test("compose: the indexer is one-shot, waits for a healthy Qdrant, and reads the dataset read-only", () => {
  const ix = svc("indexer");
  assert.equal(String(ix.restart), "no");
  const cmd = commandOf(ix);
  assert.equal(cmd[0], "index");
  assert.equal(dependsOn(ix).qdrant, "service_healthy");
  const datasetArg = cmd[cmd.indexOf("--dataset") + 1] ?? envOf(ix).DATASET;
  assert.ok(datasetArg, "the dataset is given");
  const mount = volumesOf(ix).find((v) => datasetArg!.startsWith(v.target));
  assert.ok(mount, `the dataset path ${datasetArg} is inside a mounted volume`);
  assert.ok(mount.readOnly, "the dataset is mounted read-only");
  assert.match(mount.source, /^\$\{[A-Z_]+:-[^}]+\}$/, "the host path comes from an env var with a default");
  assert.equal(envOf(ix).VECTOR_STORE, "qdrant");
  // The indexer and the core share DATA_DIR (the static embedder's model).
  const data = (s: Obj) => volumesOf(s).find((v) => v.target === (envOf(s).DATA_DIR ?? "/data"))?.source;
  assert.ok(data(ix) && data(ix) === data(svc("core")), "indexer and core share the data volume");
});

test("compose: Prometheus and Grafana load the files under deploy/", () => {
  const prom = volumesOf(svc("prometheus"));
  for (const f of ["deploy/prometheus/prometheus.yml", "deploy/prometheus/alerts.yml"]) {
    const m = prom.find((v) => path.normalize(v.source) === f);
    assert.ok(m, `prometheus mounts ${f}`);
    assert.ok(existsSync(path.join(projectRoot, f)), `${f} exists`);
  }
  const config = prom.find((v) => v.source.endsWith("prometheus.yml"))!;
  const configFlag = (svc("prometheus").command ?? []).find((c: string) => c.startsWith("--config.file="));
  assert.equal(configFlag?.slice("--config.file=".length) ?? "/etc/prometheus/prometheus.yml", config.target);
  const graf = volumesOf(svc("grafana"));
  const provisioning = graf.find((v) => v.target === "/etc/grafana/provisioning");
  assert.ok(provisioning && statSync(path.join(projectRoot, provisioning.source)).isDirectory(), "grafana provisioning directory is mounted");
  const dashboards = graf.find((v) => path.normalize(v.source) === "deploy/grafana/dashboards");
  assert.ok(dashboards, "grafana mounts deploy/grafana/dashboards");
  assert.ok(existsSync(path.join(projectRoot, "deploy/grafana/dashboards/reposearch.json")));
  const provider = parse(readFileSync(path.join(projectRoot, provisioning.source, "dashboards", "reposearch.yml"), "utf8")) as Obj;
  assert.equal(provider.providers[0].options.path, dashboards.target, "the dashboard provider reads where the dashboards are mounted");
  const ds = parse(readFileSync(path.join(projectRoot, provisioning.source, "datasources", "prometheus.yml"), "utf8")) as Obj;
  assert.equal(ds.datasources[0].type, "prometheus");
  assert.match(ds.datasources[0].url, /^http:\/\/prometheus:9090/);
  for (const v of [...prom, ...graf]) {
    if (v.source.startsWith(".")) assert.ok(existsSync(path.join(projectRoot, v.source)), `bind mount source ${v.source} exists`);
  }
});

test("compose: reposearch services only set variables the service reads", () => {
  const known = knownEnvVars();
  for (const name of REPOSEARCH_SERVICES) {
    for (const key of Object.keys(envOf(svc(name)))) assert.ok(known.has(key), `${name}: ${key} is a configuration variable`);
  }
});

test("image: Dockerfile is multi-stage on node:20-bookworm-slim, prunes dev deps, runs non-root", () => {
  const text = readFileSync(path.join(projectRoot, "Dockerfile"), "utf8");
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const froms = lines.filter((l) => /^FROM\s/i.test(l));
  assert.ok(froms.length >= 2, "multi-stage");
  const nodeImage = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1];
  for (const f of froms) {
    const image = f.split(/\s+/)[1]!.replace("${NODE_IMAGE}", nodeImage ?? "");
    assert.match(image, /^node:20(\.[0-9.]+)?-bookworm-slim$/, `${f}`);
  }
  assert.match(text, /\bnpm ci\b/);
  assert.match(text, /\bnpm run build\b|\btsc\b/);
  assert.match(text, /\bnpm prune --omit=dev\b/);
  const runtime = text.slice(text.lastIndexOf("\nFROM "));
  const user = /^USER\s+(\S+)/m.exec(runtime)?.[1];
  assert.ok(user && !/^(0|root)(:|$)/.test(user), `runtime stage runs as a non-root user (USER ${user})`);
  assert.match(runtime, /^ENTRYPOINT \["node", ?"bin\/reposearch\.js"\]$/m);
  for (const p of ["proto", "dist", "bin", "node_modules"]) assert.match(runtime, new RegExp(`COPY --from=\\S+ \\S*/${p} `), `runtime copies ${p}`);
  const ignore = readFileSync(path.join(projectRoot, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim().replace(/^\/|\/$/g, ""));
  for (const p of ["data", "dist", "node_modules", "results"]) assert.ok(ignore.includes(p), `.dockerignore excludes ${p}/`);
});
