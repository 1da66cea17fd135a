"""A Deployment, StatefulSet or DaemonSet leaves its rollout strategy type to the server.

## What it does
Reports a Deployment without `spec.strategy.type`, and a StatefulSet or DaemonSet
without `spec.updateStrategy.type`.

## Why is this bad?
The API server fills in `RollingUpdate` and its `rollingUpdate` parameters. Those
server-defaulted fields stay in the live object: when the manifest later switches to
`type: Recreate` (or `OnDelete`), the defaulted `rollingUpdate` survives the merge and
the apply fails with `may not be specified when strategy type is 'Recreate'`. Kubernetes'
own guide to declarative management says to set the strategy explicitly.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  replicas: 3
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  replicas: 3
  strategy:
    type: RollingUpdate
```
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..kube import get_path, group_kind
from ..model import WARNING, Violation
from ..rule import OBJECT

CODE = "FW201"
NAME = "strategy-type-missing"
SEVERITY = WARNING
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_STRATEGY_FIELD = {
    ("apps", "Deployment"): ("strategy", "RollingUpdate or Recreate"),
    ("apps", "StatefulSet"): ("updateStrategy", "RollingUpdate or OnDelete"),
    ("apps", "DaemonSet"): ("updateStrategy", "RollingUpdate or OnDelete"),
}


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation when the strategy type is absent."""
    group, kind = group_kind(obj)
    found = _STRATEGY_FIELD.get((group, kind))
    if found is None:
        return
    field, choices = found
    if get_path(obj, ("spec", field, "type")) is None:
        yield Violation(
            ("spec", field, "type"),
            f"no explicit spec.{field}.type; the server defaults it",
            f"set spec.{field}.type to {choices}",
        )
