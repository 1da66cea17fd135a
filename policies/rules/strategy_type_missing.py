"""A Deployment, StatefulSet or DaemonSet leaves its rollout strategy type to the server.

## What it does
Reports a Deployment without `spec.strategy.type`, and a StatefulSet or DaemonSet
without `spec.updateStrategy.type`, at **info** level: it is shown, but fails a run only
with `--fail-on info` (or `rules: {FW201: {severity: warning}}` in the configuration).

## Why is this bad?
Mostly it is not, which is why this is information, not a warning. The API server fills
in `RollingUpdate` and its `rollingUpdate` parameters, and that default is stable: nine
workloads in ten in real repositories rely on it and roll out exactly as intended.

The hazard is a later change of type. The server-defaulted `rollingUpdate` stays in the
live object: when the manifest later switches to `type: Recreate` (or `OnDelete`), a
client-side `kubectl apply` keeps the defaulted `rollingUpdate`, and the API server
rejects the object (`may not be specified when strategy type is 'Recreate'`).
Kubernetes' guide to declarative management recommends writing the strategy explicitly
for that reason. What actually catches the failure is FW202 (a `rollingUpdate` block
written beside `Recreate`/`OnDelete`) and a server-side dry run against the live object;
this rule only points out where the type is left to the server.

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

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..kube import get_path, group_kind
from ..model import INFO, Violation
from ..rule import OBJECT

CODE = "FW201"
NAME = "strategy-type-missing"
SEVERITY = INFO
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_STRATEGY_FIELD = {
    ("apps", "Deployment"): ("strategy", "RollingUpdate or Recreate"),
    ("apps", "StatefulSet"): ("updateStrategy", "RollingUpdate or OnDelete"),
    ("apps", "DaemonSet"): ("updateStrategy", "RollingUpdate or OnDelete"),
}


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = frozenset(_STRATEGY_FIELD)


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
