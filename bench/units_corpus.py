"""Generate a deterministic repository of rendered apply units for the benchmarks: charts and kustomizations.

    python bench/units_corpus.py OUTPUT_FOLDER [--charts 40] [--apps 20] [--seed 7]

`charts/<name>/`: Helm charts laid out as `helm create` lays them out (helpers, a Deployment
with probes, env and volumes, Service, ServiceAccount, ConfigMap, HPA, PDB and Ingress behind
switches, sometimes a worker Deployment or a CronJob, a test hook), with 0 to 2
`ci/*-values.yaml` files each, as chart-testing runs them.
`apps/<name>/`: a kustomize base (Deployment, Service, HPA, PDB, ServiceAccount,
NetworkPolicy, a configMapGenerator over an env file) and its `overlays/staging` and
`overlays/production` (namespace, labels, images, strategic-merge and JSON patches,
generator merges), with two shared components. Each overlay is a unit: 20 apps make 40.

A few per cent of the units carry a problem the linter reports (replicas under an HPA, a
selector that misses its template, a rollout that cannot progress). The same seed always
gives the same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import corpus  # bench/corpus.py: the stamp that spares regenerating

VERSION = 1  # bump when the output changes, so cached corpora are regenerated
STAMP = corpus.STAMP

_WORDS = (
    "atlas beacon birch cedar comet delta ember falcon fern glacier harbor iris jade juniper kestrel "
    "lagoon lumen maple meadow nebula nova onyx orbit pine quartz raven ridge sable sage summit"
).split()
_ROLES = (
    "api gateway auth billing search catalog cart checkout inventory ledger mailer notifier payments "
    "profile ranker reports scheduler session storage tracker uploader"
).split()


# -- Helm ---------------------------------------------------------------------------------------

_HELPERS = """\
{{/*
Expand the name of the chart.
*/}}
{{- define "@C.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Create a default fully qualified app name.
We truncate at 63 chars because some Kubernetes name fields are limited to this (by the DNS naming spec).
If release name contains chart name it will be used as a full name.
*/}}
{{- define "@C.fullname" -}}
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
Create chart name and version as used by the chart label.
*/}}
{{- define "@C.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels
*/}}
{{- define "@C.labels" -}}
helm.sh/chart: {{ include "@C.chart" . }}
{{ include "@C.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: @TEAM
{{- end }}

{{/*
Selector labels
*/}}
{{- define "@C.selectorLabels" -}}
app.kubernetes.io/name: {{ include "@C.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Create the name of the service account to use
*/}}
{{- define "@C.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "@C.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
"""

_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
spec:
@REPLICAS
  revisionHistoryLimit: {{ .Values.revisionHistoryLimit }}
  strategy:
    {{- toYaml .Values.strategy | nindent 4 }}
  selector:
    matchLabels:
      {{- include "@C.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: server
  template:
    metadata:
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "@C.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: server
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      serviceAccountName: {{ include "@C.serviceAccountName" . }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ .Chart.Name }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .Values.service.targetPort }}
              protocol: TCP
            {{- if .Values.metrics.enabled }}
            - name: metrics
              containerPort: {{ .Values.metrics.port }}
              protocol: TCP
            {{- end }}
          env:
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- range $name, $value := .Values.env }}
            - name: {{ $name }}
              value: {{ $value | quote }}
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "@C.fullname" . }}
          livenessProbe:
            httpGet:
              path: {{ .Values.probes.liveness }}
              port: http
            periodSeconds: 10
          readinessProbe:
            httpGet:
              path: {{ .Values.probes.readiness }}
              port: http
            periodSeconds: 5
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with .Values.volumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .Values.volumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
"""

_WORKER = """\
{{- if .Values.worker.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "@C.fullname" . }}-worker
  labels:
    {{- include "@C.labels" . | nindent 4 }}
    app.kubernetes.io/component: worker
spec:
  replicas: {{ .Values.worker.replicaCount }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "@C.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: worker
  template:
    metadata:
      labels:
        {{- include "@C.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: worker
    spec:
      serviceAccountName: {{ include "@C.serviceAccountName" . }}
      terminationGracePeriodSeconds: 120
      containers:
        - name: worker
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          args: ["worker", "--queue={{ .Values.worker.queue }}", "--concurrency={{ .Values.worker.concurrency }}"]
          envFrom:
            - configMapRef:
                name: {{ include "@C.fullname" . }}
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
{{- end }}
"""

_CRONJOB = """\
{{- if .Values.cleanup.enabled }}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ include "@C.fullname" . }}-cleanup
  labels:
    {{- include "@C.labels" . | nindent 4 }}
spec:
  schedule: {{ .Values.cleanup.schedule | quote }}
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        metadata:
          labels:
            {{- include "@C.selectorLabels" . | nindent 12 }}
            app.kubernetes.io/component: cleanup
        spec:
          restartPolicy: OnFailure
          serviceAccountName: {{ include "@C.serviceAccountName" . }}
          containers:
            - name: cleanup
              image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
              args: ["cleanup", "--older-than={{ .Values.cleanup.retention }}"]
              resources:
                requests:
                  cpu: 50m
                  memory: 64Mi
{{- end }}
"""

_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
  {{- with .Values.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
    {{- if .Values.metrics.enabled }}
    - port: {{ .Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
      name: metrics
    {{- end }}
  selector:
    {{- include "@C.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/component: server
"""

_SERVICEACCOUNT = """\
{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "@C.serviceAccountName" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ .Values.serviceAccount.automount }}
{{- end }}
"""

_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
data:
  {{- range $key, $value := .Values.config }}
  {{ $key }}: {{ $value | quote }}
  {{- end }}
"""

_HPA = """\
{{- if .Values.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "@C.fullname" . }}
  minReplicas: {{ .Values.autoscaling.minReplicas }}
  maxReplicas: {{ .Values.autoscaling.maxReplicas }}
  metrics:
    {{- if .Values.autoscaling.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .Values.autoscaling.targetCPUUtilizationPercentage }}
    {{- end }}
    {{- if .Values.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ .Values.autoscaling.targetMemoryUtilizationPercentage }}
    {{- end }}
{{- end }}
"""

_PDB = """\
{{- if .Values.podDisruptionBudget.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
spec:
  {{- with .Values.podDisruptionBudget.minAvailable }}
  minAvailable: {{ . }}
  {{- end }}
  {{- with .Values.podDisruptionBudget.maxUnavailable }}
  maxUnavailable: {{ . }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "@C.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: server
{{- end }}
"""

_INGRESS = """\
{{- if .Values.ingress.enabled -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ include "@C.fullname" . }}
  labels:
    {{- include "@C.labels" . | nindent 4 }}
  {{- with .Values.ingress.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .Values.ingress.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- if .Values.ingress.tls }}
  tls:
    {{- range .Values.ingress.tls }}
    - hosts:
        {{- range .hosts }}
        - {{ . | quote }}
        {{- end }}
      secretName: {{ .secretName }}
    {{- end }}
  {{- end }}
  rules:
    {{- range .Values.ingress.hosts }}
    - host: {{ .host | quote }}
      http:
        paths:
          {{- range .paths }}
          - path: {{ .path }}
            pathType: {{ .pathType }}
            backend:
              service:
                name: {{ include "@C.fullname" $ }}
                port:
                  number: {{ $.Values.service.port }}
          {{- end }}
    {{- end }}
{{- end }}
"""

_TEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: "{{ include "@C.fullname" . }}-test-connection"
  labels:
    {{- include "@C.labels" . | nindent 4 }}
  annotations:
    "helm.sh/hook": test
spec:
  containers:
    - name: wget
      image: busybox:1.36
      command: ['wget']
      args: ['{{ include "@C.fullname" . }}:{{ .Values.service.port }}{{ .Values.probes.readiness }}']
  restartPolicy: Never
"""

_NOTES = """\
1. Get the application URL by running these commands:
{{- if .Values.ingress.enabled }}
{{- range $host := .Values.ingress.hosts }}
  http{{ if $.Values.ingress.tls }}s{{ end }}://{{ $host.host }}
{{- end }}
{{- else }}
  kubectl --namespace {{ .Release.Namespace }} port-forward svc/{{ include "@C.fullname" . }} 8080:{{ .Values.service.port }}
{{- end }}
"""

_HELMIGNORE = """\
# Patterns to ignore when building packages.
.DS_Store
.git/
.gitignore
*.swp
*.bak
*.tmp
*.orig
*~
.idea/
.vscode/
"""


# -- kustomize ----------------------------------------------------------------------------------

_MONITORING = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - target:
      kind: Deployment
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: any
      spec:
        template:
          metadata:
            annotations:
              prometheus.io/scrape: "true"
              prometheus.io/port: "9090"
"""

_HARDENING = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - target:
      kind: Deployment
    patch: |-
      - op: add
        path: /spec/template/spec/securityContext
        value:
          runAsNonRoot: true
          seccompProfile:
            type: RuntimeDefault
      - op: add
        path: /spec/template/spec/automountServiceAccountToken
        value: false
"""


class Units:
    """Builds the file texts; `rng` drives every choice."""

    def __init__(self, seed: int, charts: int, apps: int) -> None:
        self.rng = random.Random(seed)
        self.files: dict[str, str] = {}
        self.helm_units: list[tuple[str, list[str]]] = []  # (chart folder, values files)
        self.kustomize_units: list[str] = []
        self.problems: dict[str, int] = {}
        self.names: set[str] = set()
        self.charts, self.apps = charts, apps

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def problem(self, name: str, p: float) -> bool:
        if self.chance(p):
            self.problems[name] = self.problems.get(name, 0) + 1
            return True
        return False

    def name(self) -> str:
        while True:
            candidate = f"{self.rng.choice(_ROLES)}-{self.rng.choice(_WORDS)}"
            if candidate not in self.names:
                self.names.add(candidate)
                return candidate

    def generate(self) -> None:
        for _ in range(self.charts):
            self.chart(self.name())
        self.files["components/monitoring/kustomization.yaml"] = _MONITORING
        self.files["components/hardening/kustomization.yaml"] = _HARDENING
        for _ in range(self.apps):
            self.app(self.name())
        self.files["README.md"] = "# platform\n\nCharts in `charts/`, kustomize apps in `apps/`.\n"

    # -- a chart ------------------------------------------------------------------------------

    def chart(self, name: str) -> None:
        rng = self.rng
        team = rng.choice(_WORDS)
        base = f"charts/{name}"
        unguarded = self.problem("replicas-under-hpa (ha values)", 0.08)
        replicas = "  replicas: {{ .Values.replicaCount }}" if unguarded else (
            "  {{- if not .Values.autoscaling.enabled }}\n  replicas: {{ .Values.replicaCount }}\n  {{- end }}")
        worker, cleanup = self.chance(0.4), self.chance(0.3)
        texts = {
            "Chart.yaml": (f"apiVersion: v2\nname: {name}\ndescription: The {name.replace('-', ' ')} service of team {team}\n"
                           f"type: application\nversion: {rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}\n"
                           f"appVersion: \"{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}\"\n"
                           f"maintainers:\n  - name: {team}\n    email: {team}@example.com\n"),
            ".helmignore": _HELMIGNORE,
            "values.yaml": self.values(name, worker, cleanup),
            "templates/_helpers.tpl": _HELPERS,
            "templates/deployment.yaml": _DEPLOYMENT.replace("@REPLICAS", replicas),
            "templates/service.yaml": _SERVICE,
            "templates/serviceaccount.yaml": _SERVICEACCOUNT,
            "templates/configmap.yaml": _CONFIGMAP,
            "templates/hpa.yaml": _HPA,
            "templates/pdb.yaml": _PDB,
            "templates/ingress.yaml": _INGRESS,
            "templates/NOTES.txt": _NOTES,
            "templates/tests/test-connection.yaml": _TEST,
        }
        if worker:
            texts["templates/worker.yaml"] = _WORKER
        if cleanup:
            texts["templates/cleanup-cronjob.yaml"] = _CRONJOB
        sets: list[list[str]] = [[]]
        for ci in rng.sample(["ha", "minimal", "ingress"], rng.choice((0, 1, 1, 2, 2))):
            texts[f"ci/{ci}-values.yaml"] = self.ci_values(ci, name)
            sets.append([f"{base}/ci/{ci}-values.yaml"])
        for path, text in texts.items():
            self.files[f"{base}/{path}"] = text.replace("@C", name).replace("@TEAM", team)
        self.helm_units.extend((base, values) for values in sets)

    def values(self, name: str, worker: bool, cleanup: bool) -> str:
        rng = self.rng
        env = "\n".join(f"  {name.upper().replace('-', '_')}_{key}: \"{rng.randint(1, 500)}\""
                        for key in rng.sample(["POOL_SIZE", "TIMEOUT_MS", "RETRIES", "CACHE_TTL", "BATCH", "WORKERS",
                                               "MAX_BODY_KB", "RATE_LIMIT"], rng.randint(2, 6)))
        config = "\n".join(f"  {key}: {value}" for key, value in rng.sample([
            ("LOG_LEVEL", "info"), ("LOG_FORMAT", "json"), ("FEATURE_FLAGS", "\"search-v2,checkout-v3\""),
            ("DB_HOST", f"{name}-db"), ("DB_PORT", "\"5432\""), ("REDIS_URL", f"redis://{name}-cache:6379/0"),
            ("TRACING_ENDPOINT", "http://otel-collector.observability:4317"), ("REGION", "eu-west-1"),
            ("CURRENCY", "EUR"), ("SMTP_HOST", "smtp.example.com")], rng.randint(4, 9)))
        surge, unavailable = rng.choice((("25%", "0"), ("1", "0"), ("25%", "25%")))
        if self.problem("rollout-cannot-progress", 0.03):
            surge, unavailable = "0", "0"
        lines = [
            f"# Default values for {name}.",
            "# This is a YAML-formatted file.",
            "",
            f"replicaCount: {rng.randint(1, 4)}",
            "revisionHistoryLimit: 5",
            "",
            "image:",
            f"  repository: registry.example.com/{name}",
            "  pullPolicy: IfNotPresent",
            "  # Overrides the image tag whose default is the chart appVersion.",
            "  tag: \"\"",
            "",
            "imagePullSecrets: []",
            "nameOverride: \"\"",
            "fullnameOverride: \"\"",
            "",
            "serviceAccount:",
            "  create: true",
            "  automount: false",
            "  annotations: {}",
            "  name: \"\"",
            "",
            "podAnnotations: {}",
            "podLabels: {}",
            "",
            "podSecurityContext:",
            "  runAsNonRoot: true",
            f"  fsGroup: {rng.choice((1000, 2000, 10001))}",
            "",
            "securityContext:",
            "  allowPrivilegeEscalation: false",
            "  readOnlyRootFilesystem: true",
            "  capabilities:",
            "    drop:",
            "      - ALL",
            "",
            "strategy:",
            "  type: RollingUpdate",
            "  rollingUpdate:",
            f"    maxSurge: {surge}",
            f"    maxUnavailable: {unavailable}",
            "",
            "service:",
            "  type: ClusterIP",
            "  port: 80",
            f"  targetPort: {rng.choice((8080, 3000, 8000))}",
            "  annotations: {}",
            "",
            "metrics:",
            f"  enabled: {str(self.chance(0.6)).lower()}",
            "  port: 9090",
            "",
            "probes:",
            "  liveness: /healthz",
            "  readiness: /readyz",
            "",
            "ingress:",
            "  enabled: false",
            "  className: nginx",
            "  annotations: {}",
            "  hosts:",
            f"    - host: {name}.example.com",
            "      paths:",
            "        - path: /",
            "          pathType: Prefix",
            "  tls: []",
            "",
            "resources:",
            "  requests:",
            f"    cpu: {rng.choice((50, 100, 250, 500))}m",
            f"    memory: {rng.choice((64, 128, 256, 512))}Mi",
            "  limits:",
            f"    memory: {rng.choice((256, 512, 1024))}Mi",
            "",
            "autoscaling:",
            "  enabled: false",
            "  minReplicas: 2",
            f"  maxReplicas: {rng.choice((5, 10, 20))}",
            "  targetCPUUtilizationPercentage: 75",
            "  # targetMemoryUtilizationPercentage: 80",
            "",
            "podDisruptionBudget:",
            "  enabled: false",
            "  minAvailable: 1",
            "",
            "env:",
            env,
            "",
            "config:",
            config,
            "",
            "worker:",
            f"  enabled: {str(worker).lower()}",
            "  replicaCount: 2",
            f"  queue: {name}-jobs",
            f"  concurrency: {rng.choice((4, 8, 16))}",
            "  resources:",
            "    requests:",
            "      cpu: 100m",
            "      memory: 128Mi",
            "    limits:",
            "      memory: 512Mi",
            "",
            "cleanup:",
            f"  enabled: {str(cleanup).lower()}",
            f"  schedule: \"{rng.randint(0, 59)} {rng.randint(0, 5)} * * *\"",
            "  retention: 720h",
            "",
            "volumes: []",
            "volumeMounts: []",
            "",
            "nodeSelector: {}",
            "",
            "tolerations: []",
            "",
            "affinity: {}",
        ]
        return "\n".join(lines) + "\n"

    def ci_values(self, kind: str, name: str) -> str:
        if kind == "ha":
            return ("# What production runs.\nreplicaCount: 3\nautoscaling:\n  enabled: true\n  minReplicas: 3\n"
                    "  maxReplicas: 15\npodDisruptionBudget:\n  enabled: true\naffinity:\n  podAntiAffinity:\n"
                    "    preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 100\n        podAffinityTerm:\n"
                    "          topologyKey: kubernetes.io/hostname\n          labelSelector:\n            matchLabels:\n"
                    f"              app.kubernetes.io/name: {name}\n")
        if kind == "minimal":
            return ("# The smallest install: no metrics, no extras.\nreplicaCount: 1\nmetrics:\n  enabled: false\n"
                    "worker:\n  enabled: false\ncleanup:\n  enabled: false\nresources:\n  requests:\n    cpu: 10m\n"
                    "    memory: 32Mi\n")
        return ("ingress:\n  enabled: true\n  annotations:\n    cert-manager.io/cluster-issuer: letsencrypt\n  hosts:\n"
                f"    - host: {name}.ci.example.com\n      paths:\n        - path: /\n          pathType: Prefix\n"
                f"  tls:\n    - secretName: {name}-tls\n      hosts:\n        - {name}.ci.example.com\n")

    # -- a kustomize app ------------------------------------------------------------------------

    def app(self, name: str) -> None:
        rng = self.rng
        base = f"apps/{name}/base"
        port = rng.choice((8080, 3000, 8000))
        labels = f"app.kubernetes.io/name: {name}"
        template_labels = labels if not self.problem("selector-misses-template", 0.03) else f"app.kubernetes.io/name: {name}-web"
        env_lines = "\n".join(f"            - name: {key}\n              value: \"{rng.randint(1, 900)}\""
                              for key in rng.sample(["POOL_SIZE", "TIMEOUT_MS", "RETRIES", "CACHE_TTL", "BATCH"], rng.randint(1, 4)))
        self.files[f"{base}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - serviceaccount.yaml\n"
            "  - deployment.yaml\n  - service.yaml\n  - hpa.yaml\n  - pdb.yaml\n  - networkpolicy.yaml\n"
            f"labels:\n  - pairs:\n      app.kubernetes.io/part-of: {name}\nconfigMapGenerator:\n  - name: {name}-config\n"
            "    envs:\n      - config.env\n")
        self.files[f"{base}/config.env"] = "\n".join(
            f"{key}={value}" for key, value in [("LOG_LEVEL", "info"), ("LOG_FORMAT", "json"), ("PORT", str(port)),
                                                 ("DB_HOST", f"{name}-db"), ("CACHE_URL", f"redis://{name}-cache:6379")]) + "\n"
        self.files[f"{base}/serviceaccount.yaml"] = (
            f"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\nautomountServiceAccountToken: false\n")
        replicas = f"  replicas: {rng.randint(2, 4)}\n" if self.problem("replicas-under-hpa", 0.1) else ""
        self.files[f"{base}/deployment.yaml"] = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    {labels}
spec:
{replicas}  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {labels}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        {template_labels}
    spec:
      serviceAccountName: {name}
      terminationGracePeriodSeconds: 30
      containers:
        - name: {name}
          image: registry.example.com/{name}:{rng.randint(1, 9)}.{rng.randint(0, 30)}.0
          imagePullPolicy: IfNotPresent
          ports:
            - name: http
              containerPort: {port}
          env:
{env_lines}
          envFrom:
            - configMapRef:
                name: {name}-config
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            periodSeconds: 5
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          resources:
            requests:
              cpu: {rng.choice((100, 200, 500))}m
              memory: {rng.choice((128, 256, 512))}Mi
            limits:
              memory: {rng.choice((512, 1024))}Mi
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir: {{}}
"""
        self.files[f"{base}/service.yaml"] = (
            f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  selector:\n    {labels}\n  ports:\n"
            "    - name: http\n      port: 80\n      targetPort: http\n")
        self.files[f"{base}/hpa.yaml"] = (
            f"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: {name}\nspec:\n"
            f"  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {name}\n  minReplicas: 2\n"
            f"  maxReplicas: {rng.choice((6, 10, 20))}\n  metrics:\n    - type: Resource\n      resource:\n        name: cpu\n"
            "        target:\n          type: Utilization\n          averageUtilization: 70\n")
        self.files[f"{base}/pdb.yaml"] = (
            f"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {name}\nspec:\n  maxUnavailable: 1\n"
            f"  selector:\n    matchLabels:\n      {labels}\n")
        self.files[f"{base}/networkpolicy.yaml"] = (
            f"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: {name}\nspec:\n  podSelector:\n"
            f"    matchLabels:\n      {labels}\n  policyTypes:\n    - Ingress\n  ingress:\n    - from:\n"
            "        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: ingress-nginx\n"
            "      ports:\n        - port: http\n")
        for env in ("staging", "production"):
            self.overlay(name, env)

    def overlay(self, name: str, env: str) -> None:
        rng = self.rng
        folder = f"apps/{name}/overlays/{env}"
        components = ["../../../../components/hardening"]
        if env == "production" or self.chance(0.3):
            components.append("../../../../components/monitoring")
        patches = ["  - path: resources.yaml"]
        cpu, memory = (("1", "1Gi") if env == "production" else ("100m", "256Mi"))
        self.files[f"{folder}/resources.yaml"] = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: {name}
          resources:
            requests:
              cpu: {cpu}
              memory: {memory}
            limits:
              memory: {memory}
"""
        if self.chance(0.5):
            patches.append("  - path: hpa.yaml\n    target:\n      kind: HorizontalPodAutoscaler")
            self.files[f"{folder}/hpa.yaml"] = (
                f"- op: replace\n  path: /spec/maxReplicas\n  value: {rng.choice((4, 30, 40))}\n"
                f"- op: replace\n  path: /spec/minReplicas\n  value: {rng.choice((1, 3))}\n")
        if self.chance(0.4):
            patches.append("  - path: affinity.yaml")
            self.files[f"{folder}/affinity.yaml"] = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: topology.kubernetes.io/zone
                labelSelector:
                  matchLabels:
                    app.kubernetes.io/name: {name}
"""
        self.files[f"{folder}/config.env"] = f"LOG_LEVEL={'debug' if env == 'staging' else 'warn'}\nENVIRONMENT={env}\n"
        prefix = "namePrefix: staging-\n" if env == "staging" and self.chance(0.5) else ""
        self.files[f"{folder}/kustomization.yaml"] = (
            f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {name}-{env}\n{prefix}"
            f"labels:\n  - pairs:\n      environment: {env}\nresources:\n  - ../../base\ncomponents:\n"
            + "".join(f"  - {c}\n" for c in components)
            + "images:\n"
            f"  - name: registry.example.com/{name}\n    newTag: {rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}\n"
            f"configMapGenerator:\n  - name: {name}-config\n    behavior: merge\n    envs:\n      - config.env\n"
            "patches:\n" + "\n".join(patches) + "\n")
        self.kustomize_units.append(folder)


def write(folder: Path, seed: int = 7, charts: int = 40, apps: int = 20) -> dict[str, Any]:
    """(Re)generate the repository into `folder` unless an identical one is already there."""
    stamp = {"version": VERSION, "seed": seed, "charts": charts, "apps": apps}
    stored = corpus.generated(folder, stamp)
    if stored is not None:
        return stored
    units = Units(seed, charts, apps)
    units.generate()
    return corpus.replace(folder, units.files, {**stamp, "helm_units": units.helm_units,
                                                "kustomize_units": units.kustomize_units, "problems": units.problems})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--charts", type=int, default=40)
    parser.add_argument("--apps", type=int, default=20, help="kustomize apps, each with two overlays (units)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    info = write(args.folder, args.seed, args.charts, args.apps)
    print(f"{info['files']} files, {info['bytes'] / 1e3:.0f} kB in {args.folder}: {args.charts} charts rendered "
          f"{len(info['helm_units'])} times, {len(info['kustomize_units'])} kustomize units")
    print("injected problems: " + ", ".join(f"{k} {v}" for k, v in sorted(info["problems"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
