{{/* The image every component runs: <global.registry>/kai:<global.tag or the chart's appVersion>, with "-fips"
appended when global.fipsMode is "on" (KAI's FIPS image variants, KAI #2007). */}}
{{- define "kai.tag" -}}
{{- $tag := .Values.global.tag | default .Chart.AppVersion -}}
{{- if eq .Values.global.fipsMode "on" -}}{{- $tag = printf "%s-fips" $tag -}}{{- end -}}
{{- $tag -}}
{{- end -}}
{{- define "kai.image" -}}
{{- printf "%s/kai:%s" .Values.global.registry (include "kai.tag" .) -}}
{{- end -}}

{{/* Where a component's pods run (KAI's global placement values). */}}
{{- define "kai.placement" -}}
{{- with .Values.global.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.global.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.global.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.global.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The container security context: kai's default (non-root, nothing escalated) with global.securityContext over it. */}}
{{- define "kai.securityContext" -}}
{{- $default := dict "runAsNonRoot" true "runAsUser" 10000 "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- toYaml (merge (deepCopy .Values.global.securityContext) $default) -}}
{{- end -}}

{{/* A component's service section of the Config. */}}
{{- define "kai.service" -}}
service:
  enabled: {{ .enabled }}
  {{- with .resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
