"""The same object is defined twice in the manifests.

## What it does
Reports every definition of an object whose identity — API group (not version),
kind, namespace and name — is defined more than once, naming the other places.
`extensions` Deployments, DaemonSets and ReplicaSets count as `apps`; an unset
namespace counts as `default-namespace` (configuration, `default` unless set),
and cluster-scoped kinds ignore `metadata.namespace`.

## Why is this bad?
Whichever file is applied last wins, so the cluster flips between the two on every
deploy, and a GitOps tool reports the object out of sync for ever.

## Example
```yaml
# base/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
# overlays/web.yaml
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: web, namespace: default}
```

## Use instead
Keep one definition; use an overlay tool (kustomize patches, Helm values) for variants.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator, Mapping, Sequence

from ..model import ERROR, ObjectKey, Violation
from ..rule import SET, SetObject

CODE = "FW305"
NAME = "duplicate-object"
SEVERITY = ERROR
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
CONTEXT_PATHS: tuple[tuple[str, ...], ...] = ()


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield one violation per target object whose identity occurs more than once."""
    places: dict[ObjectKey, list[int]] = defaultdict(list)
    for index, item in enumerate(objects):
        if item.key is not None:
            places[item.key].append(index)
    for index in targets:
        key = objects[index].key
        if key is None or len(places[key]) < 2:
            continue
        others = ", ".join(objects[i].origin for i in places[key] if i != index)
        yield index, Violation(
            ("metadata", "name"),
            f"defined more than once (also at {others})",
            "keep a single definition of each object",
        )
