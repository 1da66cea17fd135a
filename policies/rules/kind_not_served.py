"""The cluster serves no such kind in this apiVersion (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, reports an object whose `apiVersion` and `kind` the
cluster's API discovery does not list, on its `apiVersion` line, naming the versions of that
group the cluster does serve, if any. An object whose CustomResourceDefinition is among the
manifests of the same run is not reported (a notice says it was not checked).

## Why is this bad?
`kubectl apply` fails with `no matches for kind`: the CRD is not installed in this cluster
(yet), or the manifest uses an apiVersion that the cluster no longer serves (a removed beta
version after an upgrade).

## Example
```yaml
apiVersion: autoscaling/v2beta2   # removed in Kubernetes 1.26
kind: HorizontalPodAutoscaler
metadata:
  name: web
```

## Use instead
Use a served version (`autoscaling/v2`), or install the CRD before the objects that use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW509"
NAME = "kind-not-served"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """The object's kind, when discovery does not list it."""
    if case.served:
        return
    api_version, kind = case.manifest.get("apiVersion"), case.manifest.get("kind")
    message = f'the cluster serves no kind "{kind}" in version "{api_version}": the apply fails (no matches for kind)'
    if case.served_versions:
        message += f"; it serves {', '.join(case.served_versions)}"
    yield Violation(("apiVersion",), message,
                    "use a version the cluster serves, or install the CustomResourceDefinition first")
