"""Generate a deterministic, realistic corpus of Kubernetes manifests for the benchmarks.

    python bench/corpus.py OUTPUT_FOLDER [--objects 20000] [--seed 7]

About 2,000 files holding 20,000 objects, spread over ~100 namespace folders: one file per
application (its workload, Service, HPA, VPA, PDB, Ingress and ConfigMaps, as a multi-document
file), a shared ConfigMap file per namespace, a few `kind: List` files and a few JSON files.
Files carry comments (headers, inline notes, a few suppression comments). Most objects are
clean; a few per cent carry the problems the linter looks for (missing strategy, selectors
that miss their template, replicas under an HPA, exported live fields, duplicates, ...).

The same seed always gives the same bytes, so figures from different runs compare.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

VERSION = 3  # bump when the output changes, so cached corpora are regenerated
STAMP = ".corpus-stamp"

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_WORDS = (
    "alpha atlas beacon birch cedar comet delta ember falcon fern glacier harbor iris jade juniper "
    "kestrel lagoon lumen maple meadow nebula nova onyx orbit pine quartz raven ridge sable sage "
    "summit tern tundra umber vale willow zephyr cobalt coral dune flint grove heron "
).split()
_ROLES = (
    "api web worker gateway auth billing search catalog cart checkout inventory ledger mailer "
    "notifier payments profile ranker recommender reports scheduler session storage thumbnailer "
    "tracker uploader"
).split()
_IMAGES = ("registry.example.com/{team}/{app}", "ghcr.io/example/{app}", "docker.io/example/{app}")
_SIDECARS = (
    ("envoy", "envoyproxy/envoy:v1.29.1"),
    ("log-shipper", "fluent/fluent-bit:2.2.2"),
    ("metrics", "prom/statsd-exporter:v0.26.0"),
)


class Corpus:
    """Builds the objects and file texts; `rng` drives every choice."""

    def __init__(self, seed: int, objects: int, namespaces: int) -> None:
        self.rng = random.Random(seed)
        self.target = objects
        self.namespaces = [self._namespace_name(i) for i in range(namespaces)]
        self.count = 0
        self.files: dict[str, str] = {}
        self.problems: dict[str, int] = {}
        self.names: set[tuple[str, str]] = set()  # (namespace, app) already used
        self.suppressed: dict[int, Any] = {}  # id -> object whose replicas line gets an ignore comment

    # -- helpers ---------------------------------------------------------------------------

    def _namespace_name(self, index: int) -> str:
        return f"{_WORDS[index % len(_WORDS)]}-{_ROLES[index % len(_ROLES)]}-{index:03d}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def problem(self, name: str, p: float) -> bool:
        """Inject problem `name` with probability p (and count it)."""
        if self.chance(p):
            self.problems[name] = self.problems.get(name, 0) + 1
            return True
        return False

    # -- objects ---------------------------------------------------------------------------

    def labels(self, app: str, team: str) -> dict[str, str]:
        return {
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/part-of": team,
            "app.kubernetes.io/managed-by": "kustomize",
        }

    def metadata(self, name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if namespace is not None:
            meta["namespace"] = namespace
        meta["labels"] = dict(labels)
        if self.chance(0.3):
            meta["annotations"] = {"owner": f"team-{labels['app.kubernetes.io/part-of']}@example.com"}
        return meta

    def container(self, app: str, team: str, main: bool = True, resources: bool = True) -> dict[str, Any]:
        rng = self.rng
        if not main:
            name, image = rng.choice(_SIDECARS)
            sidecar: dict[str, Any] = {"name": name, "image": image}
            if resources:
                sidecar["resources"] = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
            return sidecar
        port = rng.choice((8080, 8000, 3000, 9090))
        env = [{"name": f"{app.upper().replace('-', '_')}_SETTING_{i}", "value": str(rng.randint(0, 9999))}
               for i in range(rng.randint(2, 8))]
        env.append({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}})
        if self.chance(0.5):
            env.append({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": f"{app}-db", "key": "password"}}})
        container: dict[str, Any] = {
            "name": app,
            "image": rng.choice(_IMAGES).format(team=team, app=app) + f":{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}",
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": env,
            "resources": {
                "requests": {"cpu": f"{rng.choice((100, 200, 250, 500))}m", "memory": f"{rng.choice((128, 256, 512))}Mi"},
                "limits": {"memory": f"{rng.choice((512, 1024))}Mi"},
            },
            "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 10},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 15},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": True}],
            "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        }
        if not resources:
            del container["resources"]
        return container

    def pod_spec(self, app: str, team: str, restart: str | None = None, resources: bool = True) -> dict[str, Any]:
        containers = [self.container(app, team, resources=resources)]
        if self.chance(0.35):
            containers.append(self.container(app, team, main=False, resources=resources))
        spec: dict[str, Any] = {
            "serviceAccountName": app,
            "containers": containers,
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config"}}],
        }
        if restart:
            spec["restartPolicy"] = restart
        if self.chance(0.3):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": team, "effect": "NoSchedule"}]
        if self.chance(0.25):
            spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                    "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}}}]}}
        return spec

    def template(self, app: str, team: str, labels: dict[str, str], restart: str | None = None,
                 resources: bool = True) -> dict[str, Any]:
        meta: dict[str, Any] = {"labels": dict(labels)}
        if self.chance(0.5):
            meta["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}
        return {"metadata": meta, "spec": self.pod_spec(app, team, restart, resources)}

    def workload(self, kind: str, app: str, team: str, ns: str, with_hpa: bool, with_vpa: bool) -> dict[str, Any]:
        labels = self.labels(app, team)
        selector_labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": team}
        template_labels = dict(labels)
        if self.problem("selector-mismatch", 0.01):
            template_labels["app.kubernetes.io/name"] = app + "-v2"
        spec: dict[str, Any] = {}
        suppress = False
        if kind in ("Deployment", "StatefulSet"):
            if not with_hpa:
                spec["replicas"] = self.rng.choice((1, 2, 3, 5))
            elif self.problem("replicas-under-hpa", 0.05):
                spec["replicas"] = self.rng.choice((1, 2, 3, 5))
                suppress = self.problem("suppression-comment", 0.3)
        if kind == "StatefulSet":
            spec["serviceName"] = app
        if self.problem("selector-missing", 0.005):
            pass
        elif self.problem("selector-empty", 0.003):
            spec["selector"] = {}
        else:
            spec["selector"] = {"matchLabels": selector_labels}
            if self.chance(0.1):
                spec["selector"]["matchExpressions"] = [
                    {"key": "app.kubernetes.io/part-of", "operator": "In", "values": [team]}]
        if kind == "Deployment":
            if not self.problem("strategy-missing", 0.04):
                if self.chance(0.8):
                    strategy: dict[str, Any] = {"type": "RollingUpdate",
                                                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
                    if self.problem("bad-max-surge", 0.01):
                        strategy["rollingUpdate"]["maxSurge"] = "125 percent"
                else:
                    strategy = {"type": "Recreate"}
                    if self.problem("recreate-with-rolling-update", 0.05):
                        strategy["rollingUpdate"] = {"maxSurge": 1}
                spec["strategy"] = strategy
        elif kind in ("StatefulSet", "DaemonSet"):
            if not self.problem("update-strategy-missing", 0.05):
                spec["updateStrategy"] = {"type": self.rng.choice(("RollingUpdate", "RollingUpdate", "OnDelete"))}
        resources = not with_vpa or self.problem("resources-under-vpa", 0.05)
        spec["template"] = self.template(app, team, template_labels, resources=resources)
        obj: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": self.metadata(app, ns, labels),
            "spec": spec,
        }
        if self.problem("live-export", 0.01):
            obj["metadata"].update({"resourceVersion": "48213", "uid": "6f1b3c2e-1d2a-4b7c-9f00-0a5f3c9d2e11",
                                    "creationTimestamp": "2024-03-01T10:00:00Z"})
            obj["status"] = {"replicas": 3, "readyReplicas": 3, "observedGeneration": 4}
        if suppress:
            self.suppressed[id(obj)] = obj  # holding it keeps its id from being reused
        return obj

    def batch(self, kind: str, app: str, team: str, ns: str) -> dict[str, Any]:
        labels = self.labels(app, team)
        job_spec: dict[str, Any] = {"backoffLimit": 3, "template": self.template(app, team, labels, "OnFailure")}
        if kind == "Job":
            return {"apiVersion": "batch/v1", "kind": "Job", "metadata": self.metadata(app, ns, labels), "spec": job_spec}
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": self.metadata(app, ns, labels),
            "spec": {
                "schedule": f"{self.rng.randint(0, 59)} {self.rng.randint(0, 23)} * * *",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"spec": job_spec},
            },
        }

    def service(self, app: str, team: str, ns: str) -> dict[str, Any]:
        selector = {"app.kubernetes.io/name": app}
        if self.problem("service-selects-nothing", 0.01):
            selector = {"app.kubernetes.io/name": app + "-old"}
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.metadata(app, ns, self.labels(app, team)),
            "spec": {"selector": selector,
                     "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]},
        }

    def hpa(self, kind: str, app: str, team: str, ns: str, name: str | None = None) -> dict[str, Any]:
        target = app + "-gone" if self.problem("hpa-target-absent", 0.01) else app
        low = self.rng.choice((2, 3))
        return {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": self.metadata(name or app, ns, self.labels(app, team)),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target},
                "minReplicas": low,
                "maxReplicas": low * self.rng.choice((3, 5, 10)),
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                                              "target": {"type": "Utilization", "averageUtilization": 70}}}],
            },
        }

    def vpa(self, kind: str, app: str, team: str, ns: str, mode: str) -> dict[str, Any]:
        return {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": self.metadata(app, ns, self.labels(app, team)),
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": app},
                "updatePolicy": {"updateMode": mode},
                "resourcePolicy": {"containerPolicies": [
                    {"containerName": "*", "controlledResources": ["cpu", "memory"],
                     "controlledValues": self.rng.choice(("RequestsAndLimits", "RequestsOnly"))}]},
            },
        }

    def pdb(self, app: str, team: str, ns: str) -> dict[str, Any]:
        selector = {"app.kubernetes.io/name": app}
        if self.problem("pdb-selects-nothing", 0.01):
            selector = {"app.kubernetes.io/name": app + "-canary"}
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": self.metadata(app, ns, self.labels(app, team)),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}},
        }

    def ingress(self, app: str, team: str, ns: str) -> dict[str, Any]:
        host = f"{app}.{ns}.example.com"
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": self.metadata(app, ns, self.labels(app, team)),
            "spec": {
                "ingressClassName": "nginx",
                "tls": [{"hosts": [host], "secretName": f"{app}-tls"}],
                "rules": [{"host": host, "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": app, "port": {"name": "http"}}}}]}}],
            },
        }

    def configmap(self, name: str, team: str, ns: str) -> dict[str, Any]:
        data = {f"setting-{i}": f"value-{self.rng.randint(0, 10**6)}" for i in range(self.rng.randint(2, 10))}
        if self.chance(0.2):
            data["app.properties"] = "\n".join(f"key{i}={self.rng.randint(0, 999)}" for i in range(12)) + "\n"
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": self.metadata(name, ns, {"app.kubernetes.io/part-of": team}), "data": data}

    def bundle(self, app: str, team: str, ns: str) -> list[dict[str, Any]]:
        """An application's objects, as they would sit in one file."""
        kind = self.rng.choices(("Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"), (70, 12, 5, 9, 4))[0]
        if kind in ("CronJob", "Job"):
            objects = [self.batch(kind, app, team, ns), self.configmap(f"{app}-config", team, ns)]
            return objects
        scaled = kind != "DaemonSet" and self.chance(0.55)
        mode = None
        if kind != "DaemonSet" and self.chance(0.35):  # a VPA; "Off" only recommends
            mode = self.rng.choice(("Off", "Off", "Initial", "Recreate", "InPlaceOrRecreate"))
        objects = [self.workload(kind, app, team, ns, scaled, mode not in (None, "Off")), self.service(app, team, ns)]
        if scaled:
            objects.append(self.hpa(kind, app, team, ns))
            if self.problem("two-hpas", 0.01):
                objects.append(self.hpa(kind, app, team, ns, name=f"{app}-memory"))
        if mode is not None:
            objects.append(self.vpa(kind, app, team, ns, mode))
        if kind != "DaemonSet":
            objects.append(self.pdb(app, team, ns))
        if kind == "Deployment" and self.chance(0.45):
            objects.append(self.ingress(app, team, ns))
        objects.append(self.configmap(f"{app}-config", team, ns))
        for extra in range(self.rng.randint(0, 3)):
            objects.append(self.configmap(f"{app}-config-{extra}", team, ns))
        return objects

    # -- files -----------------------------------------------------------------------------

    def yaml_text(self, objects: list[dict[str, Any]], header: str) -> str:
        parts = [f"# {header}\n# Generated by bench/corpus.py; edit the generator, not this file.\n"]
        for index, obj in enumerate(objects):
            text = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
            text = self.comment(text, id(obj) in self.suppressed)
            if index:
                parts.append("---\n")
            if self.chance(0.3):
                parts.append(f"# {obj['kind']} {obj['metadata'].get('name', '')}\n")
            parts.append(text)
        return "".join(parts)

    def comment(self, text: str, suppress_replicas: bool) -> str:
        """Sprinkle inline comments, and the suppression comments decided earlier."""
        lines = text.split("\n")
        for i, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith("image: ") and self.chance(0.4):
                lines[i] = line + "  # renovate: datasource=docker"
            elif line.startswith("  replicas: ") and suppress_replicas:
                lines[i] = line + "  # fieldwarden: ignore[FW301] -- autoscaler disabled during migration"
            elif stripped.startswith("replicas: ") and self.chance(0.3):
                lines[i] = line + "  # sized for peak traffic"
        return "\n".join(lines)

    def add(self, path: str, text: str, objects: int) -> None:
        self.files[path] = text
        self.count += objects

    def generate(self) -> None:
        rng = self.rng
        made = 0
        while self.count < self.target:
            ns = self.namespaces[made % len(self.namespaces)]
            team = ns.rsplit("-", 1)[0]
            made += 1
            apps = []
            for _ in range(rng.choice((1, 1, 2, 2, 3))):  # an app, or an app with its workers
                app = f"{rng.choice(_ROLES)}-{rng.choice(_WORDS)}"
                while (ns, app) in self.names:
                    app = f"{rng.choice(_ROLES)}-{rng.choice(_WORDS)}-{rng.randint(2, 99)}"
                self.names.add((ns, app))
                apps.append(app)
            objects = [obj for app in apps for obj in self.bundle(app, team, ns)]
            if self.problem("duplicate-object", 0.01):
                objects.append(objects[-1])
            app = apps[0]
            roll = rng.random()
            if roll < 0.01:  # a few JSON files (one object, or a List)
                if self.chance(0.5):
                    self.add(f"{ns}/{app}.json", json.dumps(objects[0], indent=2) + "\n", 1)
                else:
                    listing = {"apiVersion": "v1", "kind": "List", "items": objects}
                    self.add(f"{ns}/{app}.json", json.dumps(listing, indent=2) + "\n", len(objects))
            elif roll < 0.02:  # a few `kind: List` files, as `kubectl get -o yaml` writes them
                listing = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects}
                self.add(f"{ns}/{app}-list.yaml", self.yaml_text([listing], f"{app}: exported list"), len(objects))
            else:
                self.add(f"{ns}/{app}.yaml", self.yaml_text(objects, f"{', '.join(apps)} ({team})"), len(objects))
            if made % len(self.namespaces) == 0 and made // len(self.namespaces) % 4 == 1:
                # every few rounds, each namespace gets a shared-config file
                for shared_ns in self.namespaces:
                    shared_team = shared_ns.rsplit("-", 1)[0]
                    number = made // len(self.namespaces)
                    maps = [self.configmap(f"shared-{number}-{i}", shared_team, shared_ns) for i in range(rng.randint(3, 12))]
                    text = self.yaml_text(maps, f"shared configuration of {shared_ns}")
                    self.add(f"{shared_ns}/shared-config-{number}.yaml", text, len(maps))


def write(folder: Path, seed: int = 7, objects: int = 20_000, namespaces: int = 100) -> dict[str, Any]:
    """(Re)generate the corpus into `folder` unless an identical one is already there."""
    stamp = {"version": VERSION, "seed": seed, "objects": objects, "namespaces": namespaces}
    stored = generated(folder, stamp)
    if stored is not None:
        return stored
    corpus = Corpus(seed, objects, namespaces)
    corpus.generate()
    return replace(folder, corpus.files, {**stamp, "object_count": corpus.count, "problems": corpus.problems})


def generated(folder: Path, stamp: dict[str, Any]) -> dict[str, Any] | None:
    """What `folder` holds, as its stamp file says, when it was generated with these settings; else None."""
    try:
        stored = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return dict(stored) if isinstance(stored, dict) and {k: stored.get(k) for k in stamp} == stamp else None


def replace(folder: Path, files: dict[str, str], info: dict[str, Any]) -> dict[str, Any]:
    """`folder` emptied and filled with `files` (relative path -> text), and stamped with `info`
    (plus the files' count and size), which is returned."""
    if folder.exists():
        shutil.rmtree(folder)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    info = {**info, "files": len(files), "bytes": sum(len(t.encode()) for t in files.values())}
    (folder / STAMP).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    info = write(args.folder, args.seed, args.objects, args.namespaces)
    print(f"{info['files']} files, {info['object_count']} objects, {info['bytes'] / 1e6:.1f} MB in {args.folder}")
    print("injected problems: " + ", ".join(f"{k} {v}" for k, v in sorted(info["problems"].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
