{{/*
Chart name, truncated to the 63 characters a DNS label allows.
*/}}
{{- define "reposearch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the release name, prefixed to the chart name unless it already holds it.
*/}}
{{- define "reposearch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "reposearch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels (stable across upgrades). Call with a dict:
  ctx: the root context; component: core | gateway | indexer | vector-store | config | data
  name (optional): app.kubernetes.io/name when it is not reposearch itself (qdrant)
*/}}
{{- define "reposearch.selectorLabels" -}}
app.kubernetes.io/name: {{ get . "name" | default (include "reposearch.name" .ctx) }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
The recommended labels on every object and pod template. Same dict as selectorLabels, plus
version (optional): app.kubernetes.io/version when it is not the chart's appVersion.
*/}}
{{- define "reposearch.labels" -}}
helm.sh/chart: {{ include "reposearch.chart" .ctx }}
{{ include "reposearch.selectorLabels" . }}
app.kubernetes.io/version: {{ get . "version" | default .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: reposearch
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end }}

{{/*
The reposearch image reference.
*/}}
{{- define "reposearch.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Names of the objects other templates refer to.
*/}}
{{- define "reposearch.configName" -}}
{{- printf "%s-config" (include "reposearch.fullname" .) }}
{{- end }}

{{- define "reposearch.secretName" -}}
{{- printf "%s-secrets" (include "reposearch.fullname" .) }}
{{- end }}

{{- define "reposearch.coreName" -}}
{{- printf "%s-core" (include "reposearch.fullname" .) }}
{{- end }}

{{- define "reposearch.gatewayName" -}}
{{- printf "%s-gateway" (include "reposearch.fullname" .) }}
{{- end }}

{{- define "reposearch.qdrantName" -}}
{{- printf "%s-qdrant" (include "reposearch.fullname" .) }}
{{- end }}

{{- define "reposearch.dataClaimName" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-data" (include "reposearch.fullname" .)) }}
{{- end }}

{{/*
QDRANT_URL: the bundled StatefulSet's Service, or the external URL (required then).
*/}}
{{- define "reposearch.qdrantUrl" -}}
{{- if .Values.qdrant.deploy }}
{{- printf "http://%s:6333" (include "reposearch.qdrantName" .) }}
{{- else }}
{{- required "qdrant.url is required when qdrant.deploy is false" .Values.qdrant.url }}
{{- end }}
{{- end }}

{{/*
Whether a Qdrant API key is configured (a value, or an existing Secret).
*/}}
{{- define "reposearch.qdrantApiKeyEnabled" -}}
{{- if or .Values.qdrant.apiKey .Values.qdrant.existingSecret.name }}true{{- end }}
{{- end }}

{{/*
secretKeyRef env entries. Each takes the root context.
*/}}
{{- define "reposearch.env.databaseUrl" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.postgres.existingSecret.name | default (include "reposearch.secretName" .) }}
      key: {{ ternary .Values.postgres.existingSecret.key "DATABASE_URL" (ne .Values.postgres.existingSecret.name "") }}
{{- end }}

{{- define "reposearch.env.redisUrl" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret.name | default (include "reposearch.secretName" .) }}
      key: {{ ternary .Values.redis.existingSecret.key "REDIS_URL" (ne .Values.redis.existingSecret.name "") }}
{{- end }}

{{/*
The gateway's service token to the core, as env `envName` (CORE_GATEWAY_TOKEN on the core, CORE_TOKEN
on the gateway). Call with a dict: ctx: the root context; envName.
*/}}
{{- define "reposearch.env.coreToken" -}}
{{- $v := .ctx.Values.coreAuth }}
- name: {{ .envName }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.existingSecret.name | default (include "reposearch.secretName" .ctx) }}
      key: {{ ternary $v.existingSecret.key "CORE_GATEWAY_TOKEN" (ne $v.existingSecret.name "") }}
{{- end }}

{{/*
The Qdrant API key env entry, when a key is configured. Call with a dict:
  ctx: the root context; envName: QDRANT_API_KEY (reposearch) or QDRANT__SERVICE__API_KEY (qdrant)
*/}}
{{- define "reposearch.env.qdrantApiKey" -}}
{{- $v := .ctx.Values.qdrant }}
{{- if include "reposearch.qdrantApiKeyEnabled" .ctx }}
- name: {{ .envName }}
  valueFrom:
    secretKeyRef:
      name: {{ $v.existingSecret.name | default (include "reposearch.secretName" .ctx) }}
      key: {{ ternary $v.existingSecret.key "QDRANT_API_KEY" (ne $v.existingSecret.name "") }}
{{- end }}
{{- end }}

{{/*
The shared data volume: the PVC when persistence is enabled, else an emptyDir.
*/}}
{{- define "reposearch.dataVolume" -}}
- name: data
{{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "reposearch.dataClaimName" . }}
{{- else }}
  emptyDir: {}
{{- end }}
{{- end }}
