{{/* The chart name, or nameOverride. */}}
{{- define "omni-cluster-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* fullnameOverride; else the release name when it contains the chart name; else <release>-<chart> (63). */}}
{{- define "omni-cluster-operator.fullname" -}}
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

{{- define "omni-cluster-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "omni-cluster-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "omni-cluster-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/* A Deployment's pod labels and selector (root: the chart's context; shard: "" or a shard's name). A shard's
differ in control-plane, so no Deployment's selector takes another's pods. */}}
{{- define "omni-cluster-operator.podLabels" -}}
app.kubernetes.io/name: {{ include "omni-cluster-operator.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
control-plane: controller-manager{{ if .shard }}-{{ .shard }}{{ end }}
{{- end }}

{{/* What the Services select: every pod of the release, shards' too (each serves webhooks and metrics). */}}
{{- define "omni-cluster-operator.servingLabels" -}}
app.kubernetes.io/name: {{ include "omni-cluster-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "omni-cluster-operator.labels" -}}
helm.sh/chart: {{ include "omni-cluster-operator.chart" . }}
{{ include "omni-cluster-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "omni-cluster-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "omni-cluster-operator.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Derived names keep the Go chart's suffixes, cut to Kubernetes' 63 characters (the Go chart's metrics
Service name overflowed with long release names). */}}
{{- define "omni-cluster-operator.webhookService" -}}
{{- printf "%s-webhook-service" (include "omni-cluster-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "omni-cluster-operator.metricsService" -}}
{{- printf "%s-controller-manager-metrics-service" (include "omni-cluster-operator.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "omni-cluster-operator.webhookConfiguration" -}}
{{- printf "%s-validating-webhook-configuration" (include "omni-cluster-operator.fullname" .) | trunc 253 }}
{{- end }}

{{- define "omni-cluster-operator.webhookSecret" -}}
{{- printf "%s-webhook-server-cert" (include "omni-cluster-operator.fullname" .) | trunc 253 }}
{{- end }}

{{/* The eight kinds: kind, plural. */}}
{{- define "omni-cluster-operator.kinds" -}}
OmniCluster: omniclusters
OmniConnection: omniconnections
OmniControlPlane: omnicontrolplanes
OmniHelmRelease: omnihelmreleases
OmniKubeconfigExport: omnikubeconfigexports
OmniMachine: omnimachines
OmniSecretSync: omnisecretsyncs
OmniWorkers: omniworkers
{{- end }}
