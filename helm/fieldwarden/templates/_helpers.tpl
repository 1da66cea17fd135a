{{/* Names. */}}
{{- define "fieldwarden.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name; the objects are "<fullname>-webhook", "<fullname>-controller", ... (at most 52 + 11). */}}
{{- define "fieldwarden.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fieldwarden.webhook.fullname" -}}{{ include "fieldwarden.fullname" . }}-webhook{{- end -}}
{{- define "fieldwarden.controller.fullname" -}}{{ include "fieldwarden.fullname" . }}-controller{{- end -}}
{{- define "fieldwarden.config.name" -}}{{ include "fieldwarden.fullname" . }}-config{{- end -}}
{{/* The serving certificate's and the CA's Secrets. Each TLS mode has names of its own, so
that switching modes on a live release never makes Helm and cert-manager fight over one Secret. */}}
{{- define "fieldwarden.tls.secretName" -}}
{{ include "fieldwarden.fullname" . }}-webhook-{{ .Values.tls.certManager.enabled | ternary "cert" "tls" }}
{{- end -}}
{{- define "fieldwarden.ca.secretName" -}}
{{ include "fieldwarden.fullname" . }}-webhook-{{ .Values.tls.certManager.enabled | ternary "cert-ca" "ca" }}
{{- end -}}

{{- define "fieldwarden.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels: call with (dict "root" $ "component" "webhook"); component may be empty. */}}
{{- define "fieldwarden.labels" -}}
helm.sh/chart: {{ include "fieldwarden.chart" .root }}
{{ include "fieldwarden.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: fieldwarden
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "fieldwarden.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fieldwarden.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "fieldwarden.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{ $image.repository }}@{{ $image.digest }}
{{- else -}}
{{ $image.repository }}:{{ $image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The webhook Service's DNS names, as a list (the first is what the API server dials). */}}
{{- define "fieldwarden.webhook.dnsNames" -}}
{{- $svc := include "fieldwarden.webhook.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- toYaml (list (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) (printf "%s.%s" $svc $ns) $svc) -}}
{{- end -}}

{{/* The restricted security context of every pod and container (Pod Security Standards "restricted"). */}}
{{- define "fieldwarden.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fieldwarden.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Spread over nodes unless the values say otherwise: (dict "root" $ "component" "webhook" "values" .Values.webhook). */}}
{{- define "fieldwarden.topologySpread" -}}
{{- if .values.topologySpreadConstraints -}}
{{ toYaml .values.topologySpreadConstraints }}
{{- else -}}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: DoNotSchedule
  nodeAffinityPolicy: Honor
  nodeTaintsPolicy: Honor     # cordoned and tainted nodes are no domain to spread over
  matchLabelKeys: [pod-template-hash]   # each rollout's pods spread on their own
  labelSelector:
    matchLabels:
      {{- include "fieldwarden.selectorLabels" (dict "root" .root "component" .component) | nindent 6 }}
{{- end -}}
{{- end -}}

{{/* Scheduling and image pull fields shared by both pod templates: (dict "root" $ "values" .Values.webhook). */}}
{{- define "fieldwarden.podScheduling" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The namespaceSelector and objectSelector of every webhook. */}}
{{- define "fieldwarden.admission.selectors" -}}
{{- $excluded := concat (list .Release.Namespace "kube-system") .Values.admission.excludedNamespaces | uniq -}}
{{- $optOut := .Values.admission.optOutLabel -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        {{- toYaml $excluded | nindent 8 }}
    - key: {{ $optOut.key }}
      operator: NotIn
      values: [{{ $optOut.value | quote }}]
    {{- with .Values.admission.namespaceSelectorExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
objectSelector:
  matchExpressions:
    - key: {{ $optOut.key }}
      operator: NotIn
      values: [{{ $optOut.value | quote }}]
{{- end -}}

{{/*
The policy configuration the webhook and the controller read: values `config`, with FW401's
opt-out-label set to admission.optOutLabel, so that FW401 denies a pod update that sets the label
the webhooks' objectSelector skips (the API server sends that update, as the old pod still matches).
A config naming another opt-out-label is an error.
*/}}
{{- define "fieldwarden.config" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $rules := get $config "rules" | default dict -}}
{{- $label := .Values.admission.optOutLabel -}}
{{- range $key := list "FW401" "pod-update-not-image-only" -}}
{{- $set := get (get $rules $key | default dict) "opt-out-label" -}}
{{- if and $set (ne (toJson $set) (toJson $label)) -}}
{{- fail (printf "config.rules.%s.opt-out-label must be admission.optOutLabel (%s): the label the webhooks' objectSelector honours" $key (toJson $label)) -}}
{{- end -}}
{{- end -}}
{{- $fw401 := get $rules "FW401" | default dict -}}
{{- $_ := set $fw401 "opt-out-label" $label -}}
{{- $_ = set $rules "FW401" $fw401 -}}
{{- $_ = set $config "rules" $rules -}}
{{- toYaml $config -}}
{{- end -}}

{{/* Fields every webhook shares: (dict "root" $ "hook" .Values.admission.X "path" "/mutate" "caBundle" $caBundle). */}}
{{- define "fieldwarden.admission.common" -}}
admissionReviewVersions: [v1]
sideEffects: None
matchPolicy: Equivalent
failurePolicy: {{ .hook.failurePolicy }}
timeoutSeconds: {{ .hook.timeoutSeconds }}
clientConfig:
  service:
    name: {{ include "fieldwarden.webhook.fullname" .root }}
    namespace: {{ .root.Release.Namespace }}
    path: {{ .path }}
    port: 443
  {{- if .caBundle }}
  caBundle: {{ .caBundle }}
  {{- end }}
{{ include "fieldwarden.admission.selectors" .root }}
{{- end -}}
