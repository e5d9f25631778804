{{/* Names and labels shared by every template of the chart. */}}
{{- define "nereid.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nereid.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nereid.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nereid.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nereid.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "nereid.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "nereid.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nereid.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The --model-repository value for the configured source. */}}
{{- define "nereid.modelRepository" -}}
{{- $src := .Values.modelRepository.source -}}
{{- if eq $src "bucket" -}}
{{- required "modelRepository.bucket.url is required when modelRepository.source is bucket" .Values.modelRepository.bucket.url -}}
{{- else if or (eq $src "pvc") (eq $src "configMap") -}}
{{- .Values.modelRepository.mountPath -}}
{{- else -}}
{{- fail (printf "modelRepository.source must be pvc, configMap or bucket, not %q" $src) -}}
{{- end -}}
{{- end -}}

{{/* A ConfigMap key for a repository path: keys may not contain '/', so it becomes '__'. */}}
{{- define "nereid.configMapKey" -}}
{{- . | replace "/" "__" -}}
{{- end -}}
