/**
 * The helm chart under helm/reposearch: Chart.yaml, values.yaml against values.schema.json (ajv,
 * draft-07) with bad values rejected, and static checks of the templates (every .Values path they read
 * exists, every included template is defined, blocks balance, the same kinds as k8s/, the recommended
 * labels). When a `helm` binary is installed the chart is also linted and rendered, and the rendered
 * objects are validated against the Kubernetes schemas; without one that part is skipped.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { test } from "vitest";
import { skipTest } from "./support/skip.js";
import { Ajv, type ErrorObject } from "ajv";
import { parse, parseAllDocuments } from "yaml";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { Job } from "kubernetes-models/batch/v1/Job";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { projectRoot } from "../src/config/config.js";

const CHART = path.join(projectRoot, "helm", "reposearch");
const TEMPLATES = path.join(CHART, "templates");

type Obj = Record<string, any>;

const chart = parse(readFileSync(path.join(CHART, "Chart.yaml"), "utf8")) as Obj;
const values = parse(readFileSync(path.join(CHART, "values.yaml"), "utf8")) as Obj;
const schema = JSON.parse(readFileSync(path.join(CHART, "values.schema.json"), "utf8")) as Obj;
const templateFiles = readdirSync(TEMPLATES).sort();
const templateText = (f: string) => readFileSync(path.join(TEMPLATES, f), "utf8");

function compileSchema() {
  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
  return ajv.compile(schema);
}
const fmt = (errors: ErrorObject[] | null | undefined) => (errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");

/** values.yaml with one change at a dotted path (undefined deletes). */
function withValue(dotted: string, v: unknown): Obj {
  const copy = structuredClone(values);
  const keys = dotted.split(".");
  let o: Obj = copy;
  for (const k of keys.slice(0, -1)) o = o[k];
  if (v === undefined) delete o[keys.at(-1)!];
  else o[keys.at(-1)!] = v;
  return copy;
}

test("helm: Chart.yaml is an apiVersion v2 application chart", () => {
  assert.equal(chart.apiVersion, "v2");
  assert.equal(chart.name, "reposearch");
  assert.equal(path.basename(CHART), chart.name, "the chart directory is named after the chart");
  assert.equal(chart.type ?? "application", "application");
  assert.match(String(chart.version), /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/, "version is SemVer 2");
  assert.equal(typeof chart.appVersion, "string", "appVersion is a quoted string");
  assert.ok(chart.description);
  const pkg = JSON.parse(readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version: string };
  assert.equal(chart.appVersion, pkg.version, "appVersion follows package.json");
  assert.ok(existsSync(path.join(TEMPLATES, "NOTES.txt")), "templates/NOTES.txt");
  assert.ok(existsSync(path.join(TEMPLATES, "_helpers.tpl")), "templates/_helpers.tpl");
});

test("helm: values.schema.json is a draft-07 schema that accepts values.yaml", () => {
  assert.equal(schema.$schema, "http://json-schema.org/draft-07/schema#");
  const validate = compileSchema();
  assert.ok(validate(values), `values.yaml fails its schema: ${fmt(validate.errors)}`);
});

test("helm: the schema rejects bad values", () => {
  const validate = compileSchema();
  const bad: [string, unknown, RegExp][] = [
    ["core.replicas", -1, /\/core\/replicas/],
    ["gateway.replicas", "2", /\/gateway\/replicas/],
    ["postgres.url", 5432, /\/postgres\/url/],
    ["postgres.url", "mysql://db/x", /\/postgres\/url/],
    ["redis.url", "http://redis:6379", /\/redis\/url/],
    ["redis.url", ["redis://a"], /\/redis\/url/],
    ["qdrant.url", 6333, /\/qdrant\/url/],
    ["qdrant.existingSecret", { name: "Not_A_Name", key: "k" }, /\/qdrant\/existingSecret\/name/],
    ["image.pullPolicy", "Sometimes", /\/image\/pullPolicy/],
    ["core.hpa.targetCPUUtilizationPercentage", 170, /\/core\/hpa\/targetCPUUtilizationPercentage/],
    ["gateway.hpa.minReplicas", 0, /\/gateway\/hpa\/minReplicas/],
    ["indexer.shards", 0, /\/indexer\/shards/],
    ["indexer.shards", 2.5, /\/indexer\/shards/],
    ["rateLimits.ipPerMinute", -5, /\/rateLimits\/ipPerMinute/],
    ["rateLimits.failMode", "sometimes", /\/rateLimits\/failMode/],
    ["serviceMonitor.enabled", "yes", /\/serviceMonitor\/enabled/],
    ["core.resources", { requests: { cpu: "lots" } }, /\/core\/resources\/requests\/cpu/],
    ["core.readinessProbe", { periodSeconds: 5 }, /\/core\/readinessProbe/],
    ["core.livenessProbe", { grpc: { port: "grpc" } }, /\/core\/livenessProbe\/grpc\/port/],
    ["config.logLevel", "verbose", /\/config\/logLevel/],
    ["coreReplicas", 3, /must NOT have additional properties/],
  ];
  for (const [p, v, where] of bad) {
    const ok = validate(withValue(p, v));
    assert.equal(ok, false, `${p} = ${JSON.stringify(v)} should be rejected`);
    assert.match(fmt(validate.errors), where, `${p} = ${JSON.stringify(v)}: errors name the field`);
  }
  // An external Qdrant needs its URL.
  const external = withValue("qdrant.deploy", false);
  assert.equal(validate(external), false, "qdrant.deploy=false without qdrant.url");
  external.qdrant.url = "http://qdrant.vectors.svc:6333";
  assert.ok(validate(external), fmt(validate.errors));
  // Secrets from existing Secrets instead of values.
  const refs = withValue("postgres.url", "");
  refs.postgres.existingSecret = { name: "ledger-db", key: "url" };
  assert.ok(validate(refs), fmt(validate.errors));
});

test("helm: defaults mirror the plain manifests (replicas, probes, HPA, PDB, shards)", () => {
  assert.equal(values.core.replicas, 2);
  assert.equal(values.core.readinessProbe.grpc.port, 50051);
  assert.equal(values.core.livenessProbe.grpc.port, 50051);
  assert.ok(values.gateway.livenessProbe.tcpSocket, "gateway liveness is a TCP check");
  assert.equal(values.gateway.readinessProbe.httpGet.path, "/health");
  for (const c of ["core", "gateway"]) {
    assert.equal(values[c].hpa.targetCPUUtilizationPercentage, 70);
    assert.equal(values[c].pdb.minAvailable, 1);
  }
  const job = readFileSync(path.join(projectRoot, "k8s", "20-indexer-job.yaml"), "utf8");
  assert.equal(values.indexer.shards, Number(/completions:\s*(\d+)/.exec(job)?.[1]), "indexer.shards = the k8s Job's completions");
  for (const k of ["url", "existingSecret"]) {
    assert.ok(k in values.postgres && k in values.redis && k in values.qdrant, `external services have ${k}`);
  }
  assert.match(values.postgres.url, /CHANGE-ME/);
  assert.match(values.redis.url, /CHANGE-ME/);
});

/** Whether a dotted path exists in values.yaml. */
function hasValuePath(keys: string[]): boolean {
  let o: unknown = values;
  for (const k of keys) {
    if (o === null || typeof o !== "object" || !(k in (o as Obj))) return false;
    o = (o as Obj)[k];
  }
  return true;
}

test("helm: every .Values path the templates read exists in values.yaml", () => {
  let refs = 0;
  for (const f of templateFiles) {
    for (const m of templateText(f).matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
      refs++;
      const keys = m[1]!.slice(1).split(".");
      assert.ok(hasValuePath(keys), `${f}: .Values.${keys.join(".")} is not in values.yaml`);
    }
  }
  assert.ok(refs > 50, `expected the templates to read many values, found ${refs}`);
});

test("helm: templates are balanced and only include defined templates", () => {
  const defined = new Set<string>();
  for (const f of templateFiles) for (const m of templateText(f).matchAll(/\{\{-?\s*define\s+"([^"]+)"/g)) defined.add(m[1]!);
  for (const name of ["reposearch.name", "reposearch.fullname", "reposearch.chart", "reposearch.labels", "reposearch.selectorLabels"]) {
    assert.ok(defined.has(name), `_helpers.tpl defines ${name}`);
  }
  for (const f of templateFiles) {
    const text = templateText(f);
    assert.equal((text.match(/\{\{/g) ?? []).length, (text.match(/\}\}/g) ?? []).length, `${f}: every {{ has its }}`);
    const actions = [...text.matchAll(/\{\{-?\s*(\/\*[\s\S]*?\*\/|[\s\S]*?)\s*-?\}\}/g)].map((m) => m[1]!.trim());
    let depth = 0;
    for (const a of actions) {
      if (a.startsWith("/*")) continue;
      if (/^(if|range|with|define|block)\b/.test(a)) depth++;
      else if (/^end\b/.test(a)) depth--;
      assert.ok(depth >= 0, `${f}: {{ end }} without an opening block`);
    }
    assert.equal(depth, 0, `${f}: every if/range/with/define has its end`);
    for (const m of text.matchAll(/\b(?:include|template)\s+"([^"]+)"/g)) assert.ok(defined.has(m[1]!), `${f}: includes undefined template ${m[1]}`);
    for (const m of text.matchAll(/\binclude\s+\(print\s+\$\.Template\.BasePath\s+"\/([^"]+)"\)/g))
      assert.ok(templateFiles.includes(m[1]!), `${f}: includes missing file ${m[1]}`);
  }
});

test("helm: templates produce the same kinds as k8s/, each with the recommended labels", () => {
  const kindsIn = (texts: string[]) => new Set(texts.flatMap((t) => [...t.matchAll(/^kind:\s*(\w+)\s*$/gm)].map((m) => m[1]!)));
  const k8sDir = path.join(projectRoot, "k8s");
  const k8sKinds = kindsIn(
    readdirSync(k8sDir)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => readFileSync(path.join(k8sDir, f), "utf8")),
  );
  k8sKinds.delete("Namespace"); // helm installs into the release namespace (--create-namespace)
  const manifests = templateFiles.filter((f) => f.endsWith(".yaml"));
  const helmKinds = kindsIn(manifests.map(templateText));
  assert.deepEqual([...helmKinds].sort(), [...k8sKinds].sort());
  for (const f of manifests) {
    const text = templateText(f);
    if (!/^kind:/m.test(text)) continue;
    assert.match(text, /^\s*labels:\s*\n\s*\{\{-\s*include "reposearch\.labels"/m, `${f}: metadata.labels come from reposearch.labels`);
    assert.match(text, /namespace:\s*\{\{\s*\$?\.Release\.Namespace\s*\}\}/, `${f}: objects go into the release namespace`);
  }
  const helpers = templateText("_helpers.tpl");
  const labelsDef = helpers.slice(helpers.indexOf('define "reposearch.labels"'));
  const selectorDef = helpers.slice(helpers.indexOf('define "reposearch.selectorLabels"'));
  for (const l of ["helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by"]) {
    assert.match(labelsDef.slice(0, labelsDef.indexOf("{{- end }}")), new RegExp(`^${l.replace(/[./]/g, "\\$&")}:`, "m"), `reposearch.labels sets ${l}`);
  }
  assert.match(labelsDef, /include "reposearch\.selectorLabels"/);
  for (const l of ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"]) {
    assert.match(
      selectorDef.slice(0, selectorDef.indexOf("{{- end }}")),
      new RegExp(`^${l.replace(/[./]/g, "\\$&")}:`, "m"),
      `reposearch.selectorLabels sets ${l}`,
    );
  }
  const job = templateText("indexer-job.yaml");
  assert.match(job, /completionMode: Indexed/);
  assert.match(job, /"--shard", "\$\(JOB_COMPLETION_INDEX\)\/\{\{ \$shards \}\}"/);
  assert.match(job, /completions: \{\{ \$shards \}\}/);
  assert.match(job, /parallelism: \{\{ \$shards \}\}/);
});

test("helm: the core's NetworkPolicy admits the gateway to grpc and connect and Prometheus to metrics; both sides get the core token", () => {
  const policy = templateText("core-networkpolicy.yaml");
  assert.match(policy, /^\{\{- if \.Values\.networkPolicy\.enabled \}\}/);
  assert.equal(values.networkPolicy.enabled, true, "on by default");
  assert.match(policy, /podSelector:\s*\n\s*matchLabels:\s*\n\s*\{\{- include "reposearch\.selectorLabels" \(dict "ctx" \. "component" "core"\)/);
  const [gatewayRule, prometheusRule] = policy.split(/\n {4}- from:/).slice(1);
  assert.match(gatewayRule!, /"component" "gateway"/);
  assert.deepEqual(
    [...gatewayRule!.matchAll(/- port: (\w+)/g)].map((m) => m[1]),
    ["grpc", "connect"],
  );
  assert.match(prometheusRule!, /networkPolicy\.prometheus\.namespaceSelector/);
  assert.deepEqual(
    [...prometheusRule!.matchAll(/- port: (\w+)/g)].map((m) => m[1]),
    ["metrics"],
  );
  assert.match(
    templateText("core-deployment.yaml"),
    /"envName" "CORE_GATEWAY_TOKEN"[\s\S]*name: CORE_AUTH_TOKENS\s*\n\s*value: gateway=\$\(CORE_GATEWAY_TOKEN\)/,
  );
  assert.match(templateText("gateway-deployment.yaml"), /include "reposearch\.env\.coreToken" \(dict "ctx" \. "envName" "CORE_TOKEN"\)/);
  assert.match(templateText("secret.yaml"), /CORE_GATEWAY_TOKEN: \{\{ required/);
  const validate = compileSchema();
  assert.equal(validate(withValue("coreAuth.gatewayToken", "short")), false, "a token under 24 characters is rejected");
});

function helmAvailable(): boolean {
  const r = spawnSync("helm", ["version", "--short"], { encoding: "utf8", timeout: 30_000 });
  return !r.error && r.status === 0;
}

const MODELS: Record<string, new (data: any) => { validate(): void }> = {
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

test("helm: helm lint --strict and helm template render schema-valid, labelled objects", (t) => {
  if (!helmAvailable()) {
    return skipTest(t, "helm is not installed: the templates were checked statically only (install helm to lint and render them)");
  }
  const lint = spawnSync("helm", ["lint", "--strict", CHART], { encoding: "utf8", timeout: 120_000 });
  assert.equal(lint.status, 0, `helm lint failed:\n${lint.stdout}${lint.stderr}`);
  for (const extra of [[], ["--set", "serviceMonitor.enabled=true,qdrant.deploy=false,qdrant.url=http://qdrant:6333,persistence.enabled=false"]]) {
    const r = spawnSync("helm", ["template", "reposearch", CHART, "--namespace", "reposearch", ...extra], { encoding: "utf8", timeout: 120_000 });
    assert.equal(r.status, 0, `helm template failed:\n${r.stderr}`);
    for (const d of parseAllDocuments(r.stdout)) {
      assert.equal(d.errors.length, 0, d.errors.map((e) => e.message).join("; "));
      const obj = d.toJS() as Obj | null;
      if (!obj) continue;
      const where = `${obj.kind}/${obj.metadata?.name}`;
      for (const l of [
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/component",
        "app.kubernetes.io/part-of",
        "app.kubernetes.io/version",
        "app.kubernetes.io/managed-by",
        "helm.sh/chart",
      ]) {
        assert.ok(obj.metadata?.labels?.[l], `${where}: label ${l}`);
      }
      if (obj.kind === "ServiceMonitor") continue;
      const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
      assert.ok(Model, `${where}: unexpected ${obj.apiVersion}/${obj.kind}`);
      assert.doesNotThrow(() => new Model(obj).validate(), where);
    }
  }
});
