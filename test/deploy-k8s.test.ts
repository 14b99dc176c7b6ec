/**
 * The plain Kubernetes manifests under k8s/: every document is validated against the Kubernetes
 * OpenAPI schemas (kubernetes-models), carries the recommended labels, and wires together: selectors
 * match pod templates, probes are the agreed ones, env references resolve, the Indexed Job shards by
 * JOB_COMPLETION_INDEX. No cluster is needed.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { test } from "vitest";
import { parseAllDocuments } from "yaml";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { Job } from "kubernetes-models/batch/v1/Job";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { projectRoot } from "../src/config/config.js";
import { knownEnvVars } from "./helpers.js";

const K8S_DIR = path.join(projectRoot, "k8s");
const NAMESPACE = "reposearch";
const RECOMMENDED_LABELS = [
  "app.kubernetes.io/name",
  "app.kubernetes.io/instance",
  "app.kubernetes.io/component",
  "app.kubernetes.io/part-of",
  "app.kubernetes.io/version",
  "app.kubernetes.io/managed-by",
] as const;

// Loose views of the parsed YAML: the schema validation below is what guarantees the shapes.
type Obj = Record<string, any>;
interface Doc {
  readonly file: string;
  readonly obj: Obj;
}

interface Validatable {
  validate(): void;
}
type ModelCtor = new (data: any) => Validatable;

const MODELS: Record<string, ModelCtor> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "batch/v1/Job": Job,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
};

/** ServiceMonitor's model when @kubernetes-models/prometheus-operator is installed, else null. */
async function serviceMonitorModel(): Promise<ModelCtor | null> {
  try {
    const specifier = "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
    const mod = (await import(specifier)) as { ServiceMonitor: ModelCtor };
    return mod.ServiceMonitor;
  } catch {
    return null;
  }
}

/** Minimal structural check of a ServiceMonitor when its schema package is absent. */
function checkServiceMonitorShape(obj: Obj): void {
  assert.equal(obj.apiVersion, "monitoring.coreos.com/v1");
  assert.equal(typeof obj.metadata?.name, "string");
  assert.ok(obj.spec?.selector?.matchLabels && typeof obj.spec.selector.matchLabels === "object", "spec.selector.matchLabels");
  assert.ok(Array.isArray(obj.spec?.endpoints) && obj.spec.endpoints.length > 0, "spec.endpoints");
  for (const ep of obj.spec.endpoints as Obj[]) {
    assert.ok(typeof ep.port === "string" && ep.port.length > 0, "endpoint.port (a named Service port)");
    if (ep.path !== undefined) assert.match(String(ep.path), /^\//);
    if (ep.interval !== undefined) assert.match(String(ep.interval), /^\d+(ms|s|m|h)$/);
  }
}

function loadYamlDocs(dir: string): Doc[] {
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  const docs: Doc[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(dir, file), "utf8");
    for (const d of parseAllDocuments(text)) {
      if ("errors" in d && d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join("; ")}`);
      if ("warnings" in d && d.warnings.length) throw new Error(`${file}: ${d.warnings.map((e) => e.message).join("; ")}`);
      const obj = d.toJS() as Obj | null;
      if (obj === null || obj === undefined) continue;
      docs.push({ file, obj });
    }
  }
  return docs;
}

const docs = loadYamlDocs(K8S_DIR);
const where = (d: Doc) => `${d.file}: ${d.obj.kind}/${d.obj.metadata?.name}`;
const ofKind = (kind: string) => docs.filter((d) => d.obj.kind === kind);
const named = (kind: string, name: string): Obj => {
  const d = docs.find((x) => x.obj.kind === kind && x.obj.metadata?.name === name);
  assert.ok(d, `${kind}/${name} exists in k8s/`);
  return d.obj;
};
const podSpecOf = (o: Obj): Obj =>
  o.kind === "Job" || o.kind === "Deployment" || o.kind === "StatefulSet" ? o.spec.template.spec : assert.fail(`${o.kind} has no pod template`);
const container = (o: Obj, name: string): Obj => {
  const c = (podSpecOf(o).containers as Obj[]).find((x) => x.name === name);
  assert.ok(c, `${o.kind}/${o.metadata.name} has a container named ${name}`);
  return c;
};
const isSubset = (small: Record<string, string>, big: Record<string, string> | undefined) => !!big && Object.entries(small).every(([k, v]) => big[k] === v);

test("k8s: every document parses, has a known kind, and passes the Kubernetes schema", async () => {
  assert.ok(docs.length >= 15, `expected the full set of manifests, found ${docs.length}`);
  const smModel = await serviceMonitorModel();
  for (const d of docs) {
    const key = `${d.obj.apiVersion}/${d.obj.kind}`;
    if (d.obj.kind === "ServiceMonitor") {
      if (smModel) assert.doesNotThrow(() => new smModel(d.obj).validate(), where(d));
      else checkServiceMonitorShape(d.obj);
      continue;
    }
    const Model = MODELS[key];
    assert.ok(Model, `${where(d)}: no schema for ${key} (an unexpected kind or apiVersion)`);
    try {
      new Model(d.obj).validate();
    } catch (err) {
      assert.fail(`${where(d)} fails the Kubernetes schema: ${(err as Error).message}`);
    }
  }
  if (!smModel) console.log("# @kubernetes-models/prometheus-operator not installed: ServiceMonitors checked structurally only");
});

test("k8s: the schema validation is live (a broken Deployment is rejected)", () => {
  const core = structuredClone(named("Deployment", "reposearch-core"));
  core.spec.replicas = "two";
  assert.throws(() => new Deployment(core).validate(), /replicas/);
  const probe = structuredClone(named("Deployment", "reposearch-core"));
  probe.spec.template.spec.containers[0].readinessProbe.grpc.port = "grpc";
  assert.throws(() => new Deployment(probe).validate(), /grpc/);
});

test("k8s: the expected objects exist, all in the reposearch namespace", () => {
  const expected: [string, string][] = [
    ["Namespace", "reposearch"],
    ["ConfigMap", "reposearch-config"],
    ["Secret", "reposearch-secrets"],
    ["PersistentVolumeClaim", "reposearch-data"],
    ["Deployment", "reposearch-core"],
    ["Service", "reposearch-core"],
    ["HorizontalPodAutoscaler", "reposearch-core"],
    ["PodDisruptionBudget", "reposearch-core"],
    ["Deployment", "reposearch-gateway"],
    ["Service", "reposearch-gateway"],
    ["HorizontalPodAutoscaler", "reposearch-gateway"],
    ["PodDisruptionBudget", "reposearch-gateway"],
    ["StatefulSet", "reposearch-qdrant"],
    ["Service", "reposearch-qdrant"],
    ["Job", "reposearch-indexer"],
    ["ServiceMonitor", "reposearch-core"],
    ["ServiceMonitor", "reposearch-gateway"],
  ];
  for (const [kind, name] of expected) named(kind, name);
  const seen = new Set<string>();
  for (const d of docs) {
    const id = `${d.obj.kind}/${d.obj.metadata?.name}`;
    assert.ok(!seen.has(id), `${id} is defined twice`);
    seen.add(id);
    if (d.obj.kind !== "Namespace") assert.equal(d.obj.metadata?.namespace, NAMESPACE, `${where(d)}: namespace`);
  }
});

test("k8s: every object and pod template carries the recommended app.kubernetes.io labels", () => {
  const check = (labels: Record<string, string> | undefined, what: string) => {
    for (const l of RECOMMENDED_LABELS) assert.ok(labels && typeof labels[l] === "string" && labels[l] !== "", `${what}: label ${l}`);
    assert.equal(labels!["app.kubernetes.io/part-of"], "reposearch", `${what}: part-of`);
    assert.equal(labels!["app.kubernetes.io/instance"], "reposearch", `${what}: instance`);
    assert.equal(labels!["app.kubernetes.io/managed-by"], "kubectl", `${what}: managed-by`);
  };
  const { version } = JSON.parse(readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version: string };
  for (const d of docs) {
    check(d.obj.metadata?.labels, where(d));
    if (d.obj.metadata.labels["app.kubernetes.io/name"] === "reposearch") {
      assert.equal(d.obj.metadata.labels["app.kubernetes.io/version"], version, `${where(d)}: version label follows package.json`);
    }
    for (const c of (d.obj.spec?.template?.spec?.containers ?? []) as Obj[]) {
      if (/^reposearch(:|$)|\/reposearch(:|$)/.test(c.image)) assert.equal(c.image.split(":").at(-1), version, `${where(d)}: image tag follows package.json`);
    }
    if (d.obj.spec?.template?.metadata) check(d.obj.spec.template.metadata.labels, `${where(d)} pod template`);
    for (const vct of (d.obj.spec?.volumeClaimTemplates ?? []) as Obj[]) check(vct.metadata?.labels, `${where(d)} volumeClaimTemplate ${vct.metadata?.name}`);
  }
});

test("k8s: selectors match their pod templates; Services, HPAs, PDBs and ServiceMonitors point at real targets", () => {
  const workloads = [...ofKind("Deployment"), ...ofKind("StatefulSet")].map((d) => d.obj);
  for (const w of workloads) {
    const sel = w.spec.selector.matchLabels as Record<string, string>;
    assert.ok(isSubset(sel, w.spec.template.metadata.labels), `${w.kind}/${w.metadata.name}: selector ⊆ template labels`);
    assert.ok(!("app.kubernetes.io/version" in sel), `${w.kind}/${w.metadata.name}: the selector must not hold the version (immutable)`);
  }
  for (const { obj: svc } of ofKind("Service")) {
    const target = workloads.find((w) => isSubset(svc.spec.selector, w.spec.template.metadata.labels));
    assert.ok(target, `Service/${svc.metadata.name} selects no workload`);
    const containerPorts = new Set((target.spec.template.spec.containers as Obj[]).flatMap((c) => ((c.ports ?? []) as Obj[]).map((p) => p.name)));
    for (const p of svc.spec.ports as Obj[]) {
      if (typeof p.targetPort === "string")
        assert.ok(containerPorts.has(p.targetPort), `Service/${svc.metadata.name}: targetPort ${p.targetPort} is a container port name`);
    }
  }
  for (const { obj: hpa } of ofKind("HorizontalPodAutoscaler")) {
    assert.equal(hpa.apiVersion, "autoscaling/v2");
    const ref = hpa.spec.scaleTargetRef;
    assert.ok(
      workloads.some((w) => w.kind === ref.kind && w.metadata.name === ref.name),
      `HPA/${hpa.metadata.name} targets ${ref.kind}/${ref.name}`,
    );
    const cpu = (hpa.spec.metrics as Obj[]).find((m) => m.type === "Resource" && m.resource?.name === "cpu");
    assert.equal(cpu?.resource.target.type, "Utilization");
    assert.equal(cpu?.resource.target.averageUtilization, 70, `HPA/${hpa.metadata.name}: CPU 70%`);
    assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas >= hpa.spec.minReplicas);
  }
  for (const { obj: pdb } of ofKind("PodDisruptionBudget")) {
    assert.equal(pdb.apiVersion, "policy/v1");
    assert.equal(pdb.spec.minAvailable, 1);
    assert.ok(
      workloads.some((w) => isSubset(pdb.spec.selector.matchLabels, w.spec.template.metadata.labels)),
      `PDB/${pdb.metadata.name} selects pods`,
    );
  }
  for (const { obj: sm } of ofKind("ServiceMonitor")) {
    const svc = ofKind("Service").find((s) => isSubset(sm.spec.selector.matchLabels, s.obj.metadata.labels));
    assert.ok(svc, `ServiceMonitor/${sm.metadata.name} selects a Service by its labels`);
    const portNames = new Set((svc.obj.spec.ports as Obj[]).map((p) => p.name));
    for (const ep of sm.spec.endpoints as Obj[]) {
      assert.ok(portNames.has(ep.port), `ServiceMonitor/${sm.metadata.name}: port ${ep.port} is on Service/${svc.obj.metadata.name}`);
      assert.equal(ep.path, "/metrics");
    }
    assert.deepEqual(sm.spec.namespaceSelector?.matchNames, [NAMESPACE]);
  }
});

test("k8s: core Deployment: 2 replicas, native gRPC probes on 50051, resources, non-root, read-only root with /tmp", () => {
  const core = named("Deployment", "reposearch-core");
  assert.equal(core.spec.replicas, 2);
  const c = container(core, "core");
  assert.deepEqual(c.args, ["serve", "--role", "core"]);
  for (const probe of ["readinessProbe", "livenessProbe"]) {
    assert.equal(c[probe]?.grpc?.port, 50051, `core ${probe} is a grpc probe on 50051`);
  }
  if (c.startupProbe) assert.equal(c.startupProbe.grpc?.port, 50051);
  const ports = Object.fromEntries((c.ports as Obj[]).map((p) => [p.name, p.containerPort]));
  assert.deepEqual(ports, { grpc: 50051, connect: 50052, metrics: 9464 });
  checkHardening(core, c);
});

test("k8s: core Service is headless with grpc 50051, connect 50052 and metrics 9464", () => {
  const svc = named("Service", "reposearch-core");
  assert.equal(svc.spec.clusterIP, "None");
  const ports = Object.fromEntries((svc.spec.ports as Obj[]).map((p) => [p.name, p.port]));
  assert.deepEqual(ports, { grpc: 50051, connect: 50052, metrics: 9464 });
});

test("k8s: gateway Deployment: tcpSocket liveness, httpGet /health readiness, dns:/// core address", () => {
  const gw = named("Deployment", "reposearch-gateway");
  const c = container(gw, "gateway");
  assert.deepEqual(c.args, ["serve", "--role", "gateway"]);
  assert.ok(c.livenessProbe?.tcpSocket, "liveness is a TCP check (GET /health answers 503 on dependency outages)");
  assert.ok(!c.livenessProbe.httpGet, "liveness must not call /health");
  assert.equal(c.readinessProbe?.httpGet?.path, "/health");
  const httpPort = (c.ports as Obj[]).find((p) => p.name === "http");
  assert.equal(httpPort?.containerPort, 8080);
  assert.ok([8080, "http"].includes(c.readinessProbe.httpGet.port));
  checkHardening(gw, c);
  const cm = named("ConfigMap", "reposearch-config");
  assert.equal(cm.data.CORE_ADDRESS, "dns:///reposearch-core:50051", "gRPC round robin over the headless core Service");
  const envNames = new Set(((c.env ?? []) as Obj[]).map((e) => e.name));
  for (const v of ["DATABASE_URL", "REDIS_URL"]) assert.ok(envNames.has(v), `gateway gets ${v} from the Secret`);
  const gwSvc = named("Service", "reposearch-gateway");
  assert.ok((gwSvc.spec.ports as Obj[]).some((p) => p.port === 8080 && p.name === "http"));
});

function checkHardening(workload: Obj, c: Obj): void {
  const what = `${workload.kind}/${workload.metadata.name}`;
  const pod = podSpecOf(workload);
  assert.equal(pod.securityContext?.runAsNonRoot, true, `${what}: pod runAsNonRoot`);
  assert.ok(typeof pod.securityContext?.runAsUser === "number" && pod.securityContext.runAsUser > 0, `${what}: numeric non-root uid`);
  assert.equal(c.securityContext?.readOnlyRootFilesystem, true, `${what}: readOnlyRootFilesystem`);
  assert.equal(c.securityContext?.allowPrivilegeEscalation, false, `${what}: no privilege escalation`);
  assert.deepEqual(c.securityContext?.capabilities?.drop, ["ALL"], `${what}: drop all capabilities`);
  const tmp = ((c.volumeMounts ?? []) as Obj[]).find((m) => m.mountPath === "/tmp");
  assert.ok(tmp, `${what}: /tmp is mounted`);
  const vol = (pod.volumes as Obj[]).find((v) => v.name === tmp.name);
  assert.ok(vol?.emptyDir, `${what}: /tmp is an emptyDir`);
  assert.ok(c.resources?.requests?.cpu && c.resources?.requests?.memory, `${what}: resource requests`);
  assert.ok(c.resources?.limits?.memory, `${what}: memory limit`);
}

test("k8s: every reposearch workload is hardened (non-root, read-only root, /tmp emptyDir)", () => {
  for (const d of [...ofKind("Deployment"), ...ofKind("StatefulSet"), ...ofKind("Job")]) {
    for (const c of podSpecOf(d.obj).containers as Obj[]) checkHardening(d.obj, c);
  }
});

test("k8s: the indexer is an Indexed Job whose shard comes from JOB_COMPLETION_INDEX", () => {
  const job = named("Job", "reposearch-indexer");
  assert.equal(job.spec.completionMode, "Indexed");
  const n = job.spec.completions as number;
  assert.ok(Number.isInteger(n) && n >= 1);
  assert.equal(job.spec.parallelism, n, "parallelism = completions");
  const pod = podSpecOf(job);
  assert.ok(["Never", "OnFailure"].includes(pod.restartPolicy));
  const c = container(job, "indexer");
  assert.equal(c.command, undefined, "no shell wrapper: the image's entrypoint runs the CLI");
  const args = c.args as string[];
  assert.equal(args[0], "index");
  const shard = args[args.indexOf("--shard") + 1];
  assert.equal(shard, `$(JOB_COMPLETION_INDEX)/${n}`, "--shard $(JOB_COMPLETION_INDEX)/N, expanded by Kubernetes");
  assert.ok(args.includes("--dataset"));
  // Every $(VAR) in args must be defined in the container's env (or be JOB_COMPLETION_INDEX, set by the Job controller).
  const envNames = new Set(((c.env ?? []) as Obj[]).map((e) => e.name));
  for (const m of args.join(" ").matchAll(/\$\(([A-Z_][A-Z0-9_]*)\)/g)) {
    assert.ok(m[1] === "JOB_COMPLETION_INDEX" || envNames.has(m[1]!), `$(${m[1]}) in args is defined in env`);
  }
});

test("k8s: Qdrant is a StatefulSet with volumeClaimTemplates behind a headless Service", () => {
  const sts = named("StatefulSet", "reposearch-qdrant");
  const svc = named("Service", sts.spec.serviceName);
  assert.equal(svc.spec.clusterIP, "None");
  const vct = sts.spec.volumeClaimTemplates as Obj[];
  assert.ok(vct.length >= 1);
  const c = podSpecOf(sts).containers[0] as Obj;
  assert.match(c.image, /^qdrant\/qdrant:/);
  assert.ok((c.volumeMounts as Obj[]).some((m) => m.name === vct[0]!.metadata.name && m.mountPath === "/qdrant/storage"));
  assert.ok(c.readinessProbe && c.livenessProbe);
  assert.equal(named("ConfigMap", "reposearch-config").data.QDRANT_URL, `http://${svc.metadata.name}:6333`);
});

test("k8s: a NetworkPolicy admits only the gateway to the core's gRPC and Connect ports and Prometheus to its metrics", () => {
  const policy = named("NetworkPolicy", "reposearch-core");
  const core = named("Deployment", "reposearch-core");
  const gateway = named("Deployment", "reposearch-gateway");
  assert.ok(isSubset(policy.spec.podSelector.matchLabels, core.spec.template.metadata.labels), "it selects the core's pods");
  assert.ok(!isSubset(policy.spec.podSelector.matchLabels, gateway.spec.template.metadata.labels), "and not the gateway's");
  assert.deepEqual(policy.spec.policyTypes, ["Ingress"]);
  const rules = policy.spec.ingress as Obj[];
  const portsOf = (r: Obj) => (r.ports as Obj[]).map((p) => String(p.port)).sort();
  const coreContainerPorts = (container(core, "core").ports as Obj[]).map((p) => String(p.name));
  for (const r of rules) for (const p of portsOf(r)) assert.ok(coreContainerPorts.includes(p), `port ${p} is a named port of the core`);
  // Every rule names its peers and its ports: no rule admits everyone, or every port.
  for (const r of rules) assert.ok((r.from as Obj[] | undefined)?.length && (r.ports as Obj[] | undefined)?.length, JSON.stringify(r));
  const fromGateway = rules.filter((r) =>
    (r.from as Obj[]).some((f) => f.podSelector && !f.namespaceSelector && isSubset(f.podSelector.matchLabels, gateway.spec.template.metadata.labels)),
  );
  assert.deepEqual(fromGateway.flatMap(portsOf).sort(), ["connect", "grpc"]);
  const others = rules.filter((r) => !fromGateway.includes(r));
  assert.deepEqual(others.flatMap(portsOf), ["metrics"], "everyone else (Prometheus) reaches the metrics port only");
  assert.ok(others.every((r) => (r.from as Obj[]).every((f) => f.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "prometheus")));
  // And the core demands the gateway's token, which the gateway sends.
  const coreEnv = container(core, "core").env as Obj[];
  const gatewayEnv = container(gateway, "gateway").env as Obj[];
  assert.equal(coreEnv.find((e) => e.name === "CORE_AUTH_TOKENS")?.value, "gateway=$(CORE_GATEWAY_TOKEN)");
  const tokenRef = (env: Obj[], name: string) => env.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.key;
  assert.equal(tokenRef(coreEnv, "CORE_GATEWAY_TOKEN"), "CORE_GATEWAY_TOKEN");
  assert.equal(tokenRef(gatewayEnv, "CORE_TOKEN"), "CORE_GATEWAY_TOKEN");
  assert.ok(
    coreEnv.findIndex((e) => e.name === "CORE_GATEWAY_TOKEN") < coreEnv.findIndex((e) => e.name === "CORE_AUTH_TOKENS"),
    "$(CORE_GATEWAY_TOKEN) expands only when defined earlier",
  );
});

test("k8s: env references resolve and the Secret holds only obvious placeholders", () => {
  const cm = named("ConfigMap", "reposearch-config");
  const secret = named("Secret", "reposearch-secrets");
  const secretData: Record<string, string> = { ...(secret.stringData ?? {}) };
  for (const [k, v] of Object.entries((secret.data ?? {}) as Record<string, string>)) secretData[k] = Buffer.from(v, "base64").toString("utf8");
  for (const key of ["DATABASE_URL", "REDIS_URL", "QDRANT_API_KEY"]) {
    assert.ok(key in secretData, `Secret has ${key}`);
    assert.match(secretData[key]!, /CHANGE-ME/, `Secret ${key} is a clearly marked placeholder`);
  }
  for (const key of ["DATABASE_URL", "REDIS_URL", "QDRANT_API_KEY"]) assert.ok(!(key in cm.data), `${key} belongs in the Secret, not the ConfigMap`);
  const known = knownEnvVars();
  for (const key of Object.keys(cm.data)) assert.ok(known.has(key), `ConfigMap key ${key} is a configuration variable the service reads`);
  for (const d of [...ofKind("Deployment"), ...ofKind("StatefulSet"), ...ofKind("Job")]) {
    for (const c of podSpecOf(d.obj).containers as Obj[]) {
      for (const ef of (c.envFrom ?? []) as Obj[]) {
        if (ef.configMapRef) assert.equal(ef.configMapRef.name, cm.metadata.name, `${where(d)}: envFrom ConfigMap`);
        if (ef.secretRef) assert.equal(ef.secretRef.name, secret.metadata.name, `${where(d)}: envFrom Secret`);
      }
      for (const e of (c.env ?? []) as Obj[]) {
        const cmRef = e.valueFrom?.configMapKeyRef;
        const sRef = e.valueFrom?.secretKeyRef;
        if (cmRef) assert.ok(cmRef.name === cm.metadata.name && cmRef.key in cm.data, `${where(d)}: ${e.name} -> ConfigMap key ${cmRef.key}`);
        if (sRef) assert.ok(sRef.name === secret.metadata.name && sRef.key in secretData, `${where(d)}: ${e.name} -> Secret key ${sRef.key}`);
      }
      for (const m of (c.volumeMounts ?? []) as Obj[]) {
        assert.ok(
          (podSpecOf(d.obj).volumes ?? []).some((v: Obj) => v.name === m.name) ||
            (d.obj.spec.volumeClaimTemplates ?? []).some((v: Obj) => v.metadata.name === m.name),
          `${where(d)}: volume ${m.name} is defined`,
        );
      }
    }
    for (const v of (podSpecOf(d.obj).volumes ?? []) as Obj[]) {
      if (v.persistentVolumeClaim) named("PersistentVolumeClaim", v.persistentVolumeClaim.claimName);
    }
  }
});
