{{/* The chart's name, or nameOverride. */}}
{{- define "ice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: the release name, with the chart's unless it contains it. */}}
{{- define "ice.fullname" -}}
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

{{/* Labels that name the release's objects, whatever their part. */}}
{{- define "ice.baseLabels" -}}
app.kubernetes.io/name: {{ include "ice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels that select the exporter's pods. */}}
{{- define "ice.selectorLabels" -}}
{{ include "ice.baseLabels" . }}
app.kubernetes.io/component: exporter
{{- end -}}

{{/* Labels of every object, but its component. */}}
{{- define "ice.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ice.baseLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of the exporter's objects. */}}
{{- define "ice.labels" -}}
{{ include "ice.commonLabels" . }}
app.kubernetes.io/component: exporter
{{- end -}}

{{- define "ice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret and key holding the DSN, as "name key"; empty for ironicConf. */}}
{{- define "ice.dsnSecret" -}}
{{- $db := .Values.database -}}
{{- if eq $db.source "existingSecret" -}}
{{- if not (and $db.existingSecret.name $db.existingSecret.key) -}}
{{- fail "database.source existingSecret needs database.existingSecret.name and .key" -}}
{{- end -}}
{{- printf "%s %s" $db.existingSecret.name $db.existingSecret.key -}}
{{- else if eq $db.source "secret" -}}
{{- if not $db.dsn -}}
{{- fail "database.source secret needs database.dsn" -}}
{{- end -}}
{{- printf "%s-db dsn" (include "ice.fullname" .) -}}
{{- else if eq $db.source "ironicConf" -}}
{{- if not (or .Values.ironicConf.configMap .Values.ironicConf.secret) -}}
{{- fail "database.source ironicConf needs ironicConf.configMap or ironicConf.secret" -}}
{{- end -}}
{{- else -}}
{{- fail (printf "database.source %q: want existingSecret, secret or ironicConf" $db.source) -}}
{{- end -}}
{{- end -}}

{{/* The rule file of alerts/, its job selector set to serviceMonitor.jobName. */}}
{{- define "ice.rules" -}}
{{- $rules := .Files.Get "files/ironic-conductor-exporter.rules.yml" -}}
{{- if not $rules -}}
{{- fail "files/ironic-conductor-exporter.rules.yml is missing: run go generate ./mixin" -}}
{{- end -}}
{{- $job := .Values.serviceMonitor.jobName -}}
{{- $rules | replace "job=\"ironic-conductor-exporter\"" (printf "job=%q" $job) -}}
{{- end -}}

{{/* The namespace of the release's objects: namespaceOverride, else the
release's (prometheus-community charts' namespaceOverride). */}}
{{- define "ice.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The image: [registry/]repository, then @digest when given, else :tag
(default "v" + appVersion), as prometheus-community's exporter charts
build it. */}}
{{- define "ice.image" -}}
{{- $img := .Values.image -}}
{{- $repo := $img.repository -}}
{{- if $img.registry -}}
{{- $repo = printf "%s/%s" $img.registry $img.repository -}}
{{- end -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo ($img.tag | default (printf "v%s" .Chart.AppVersion)) -}}
{{- end -}}
{{- end -}}
