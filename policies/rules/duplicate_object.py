"""The same object is defined twice in the manifests.

## What it does
Reports every definition of an object whose identity — API group (not version),
kind, namespace and name — is defined more than once, naming the other places.
`extensions` Deployments, DaemonSets and ReplicaSets count as `apps`; an unset
namespace counts as `default-namespace` (configuration, `default` unless set),
and cluster-scoped kinds ignore `metadata.namespace`.

Only objects of one apply unit are compared. In a plain folder (nothing says it is one
apply), two files that share at least two objects, making up at least half of the smaller
file's, are alternatives a user applies one of (an install, a namespace install and an HA
install side by side): each is linted in a unit of its own with the folder's other files, and
a notice says so once per folder. The same object twice in one file, or one object in two
otherwise different files, is still reported; list the folder under `units:` when its files
are applied together.

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

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
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
        yield index, Violation(
            ("metadata", "name"), message([objects[i].origin for i in places[key] if i != index]),
            "keep a single definition of each object",
        )


def message(others: Sequence[str]) -> str:
    """What a definition says, naming the other places (`path:line`) in order."""
    return f"defined more than once (also at {', '.join(others)})"


def others_in(text: str) -> list[str]:
    """The other places a message names (the inverse of `message`)."""
    head = "defined more than once (also at "
    return text[len(head):-1].split(", ") if text.startswith(head) and text.endswith(")") else []
