"""Render helm/fieldwarden with Helm's own Go SDK (the `helm-python-sdk` package: no helm binary).

`render(values)` is `helm template` for release `fieldwarden` in namespace `fieldwarden`:
offline, so `lookup` finds nothing (a first install). `render_upgrade(values, api)` renders
against a cluster (the Kubernetes API test fake, tests/webhook/fake_apiserver.py) so that `lookup` reads
back the Secrets of a release that is already installed, as `helm upgrade` does.
"""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path
from typing import Any, Iterator

import helm_python as helm
import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "fieldwarden"
RELEASE = "fieldwarden"
NAMESPACE = "fieldwarden"
# The oldest Kubernetes the chart declares (Chart.yaml kubeVersion) and the newest with schemas.
KUBE_VERSIONS = ("1.27", kubernetes_validate.latest_version())

Obj = dict[str, Any]


@functools.lru_cache(maxsize=1)
def chart() -> helm.Chart:
    """The chart, loaded once (a handle into the Go library; safe to share)."""
    return helm.Chart.load(CHART)


def parse(manifests: dict[str, str]) -> list[Obj]:
    """The objects of rendered templates, in template order (NOTES.txt left out)."""
    objects: list[Obj] = []
    for name in sorted(manifests):
        if name.endswith(".txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(manifests[name]) if doc)
    return objects


def render_manifests(values: dict[str, Any] | None = None, *, namespace: str = NAMESPACE) -> dict[str, str]:
    return chart().render(values, name=RELEASE, namespace=namespace, is_install=True)


def render(values: dict[str, Any] | None = None, *, namespace: str = NAMESPACE) -> list[Obj]:
    return parse(render_manifests(values, namespace=namespace))


def notes(values: dict[str, Any] | None = None) -> str:
    manifests = render_manifests(values)
    return next(text for name, text in manifests.items() if name.endswith("NOTES.txt"))


def render_upgrade(values: dict[str, Any] | None, kubeconfig: str, *, namespace: str = NAMESPACE) -> list[Obj]:
    """Render as `helm upgrade` does: `lookup` asks the cluster of `kubeconfig`."""
    with helm.Config(kubeconfig_content=kubeconfig, namespace=namespace) as config:
        manifests = config.render(chart(), values, name=RELEASE, namespace=namespace, revision=2, is_upgrade=True)
    return parse(manifests)


def of_kind(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in of_kind(objects, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} objects named {name or 'anything'}"
    return found[0]


def deployments(objects: list[Obj]) -> dict[str, Obj]:
    """Deployments by component label (webhook, controller)."""
    return {o["metadata"]["labels"]["app.kubernetes.io/component"]: o for o in of_kind(objects, "Deployment")}


def webhooks(objects: list[Obj]) -> Iterator[tuple[str, Obj]]:
    """(configuration kind, webhook) for every webhook of both configurations."""
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for configuration in of_kind(objects, kind):
            for hook in configuration["webhooks"]:
                yield kind, hook


def secret_text(secret: Obj, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def values_schema() -> Obj:
    data: Obj = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    return data
