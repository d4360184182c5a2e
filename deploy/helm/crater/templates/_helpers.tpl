{{/* Names, labels and the values several templates share. */}}

{{- define "crater.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crater.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Cluster-scoped objects (ClusterRole, ClusterRoleBinding): the release's namespace too, so that releases of
one name in two namespaces do not collide. */}}
{{- define "crater.clusterName" -}}
{{- printf "%s-%s" (include "crater.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crater.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; "component" is added by each template. */}}
{{- define "crater.labels" -}}
helm.sh/chart: {{ include "crater.chart" . }}
app.kubernetes.io/name: {{ include "crater.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "crater.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crater.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "crater.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "crater.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "crater.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "crater.secretName" -}}
{{- default (include "crater.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "crater.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "crater.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crater.redis.fullname" -}}
{{- printf "%s-redis" (include "crater.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crater.dataClaimName" -}}
{{- default (printf "%s-data" (include "crater.fullname" .)) .Values.persistence.existingClaim -}}
{{- end -}}

{{/* Whether Crater has a database server (else SQLite in the data folder), and Redis. */}}
{{- define "crater.hasDatabase" -}}
{{- if or .Values.postgresql.enabled .Values.externalDatabase.url -}}true{{- end -}}
{{- end -}}

{{- define "crater.hasRedis" -}}
{{- if or .Values.redis.enabled .Values.externalRedis.url -}}true{{- end -}}
{{- end -}}

{{- define "crater.perProject" -}}
{{- if eq .Values.kube.namespaceMode "per-project" -}}true{{- end -}}
{{- end -}}

{{/* CRATER_PUBLIC_URLS: the values' list, else the ingress hosts (https where TLS covers the host). */}}
{{- define "crater.publicUrls" -}}
{{- if .Values.crater.publicUrls -}}
{{- join "," .Values.crater.publicUrls -}}
{{- else if .Values.ingress.enabled -}}
{{- $tlsHosts := list -}}
{{- range .Values.ingress.tls -}}{{- $tlsHosts = concat $tlsHosts (default list .hosts) -}}{{- end -}}
{{- $urls := list -}}
{{- range .Values.ingress.hosts -}}
{{- $urls = append $urls (printf "%s://%s" (ternary "https" "http" (has . $tlsHosts)) .) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}
{{- end -}}

{{/* A secret value: the one given, else the one already in the release's Secret, else a new random one. */}}
{{- define "crater.secretValue" -}}
{{- $given := index . 0 -}}{{- $existing := index . 1 -}}{{- $key := index . 2 -}}
{{- if $given -}}
{{- $given -}}
{{- else if and $existing (hasKey $existing.data $key) -}}
{{- index $existing.data $key | b64dec -}}
{{- else -}}
{{- randAlphaNum 32 -}}
{{- end -}}
{{- end -}}

{{/* Refusals of values that cannot work together. */}}
{{- define "crater.validate" -}}
{{- if not (has .Values.kube.namespaceMode (list "shared" "per-project")) -}}
{{- fail (printf "kube.namespaceMode must be shared or per-project, not %q" .Values.kube.namespaceMode) -}}
{{- end -}}
{{- if and .Values.postgresql.enabled .Values.externalDatabase.url -}}
{{- fail "postgresql.enabled and externalDatabase.url are exclusive: turn the bundled PostgreSQL off to use an external one" -}}
{{- end -}}
{{- if and .Values.redis.enabled .Values.externalRedis.url -}}
{{- fail "redis.enabled and externalRedis.url are exclusive: turn the bundled Redis off to use an external one" -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "crater.hasDatabase" .)) -}}
{{- fail "replicaCount > 1 needs PostgreSQL (postgresql.enabled or externalDatabase.url): SQLite lives on one pod's volume" -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) .Values.persistence.enabled (has "ReadWriteOnce" .Values.persistence.accessModes) -}}
{{- fail "replicaCount > 1 with a ReadWriteOnce data volume: use persistence.accessModes [ReadWriteMany] or persistence.enabled=false" -}}
{{- end -}}
{{- end -}}
