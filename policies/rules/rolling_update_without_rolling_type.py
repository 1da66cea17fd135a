"""A `rollingUpdate` block sits beside a strategy type that does not roll.

## What it does
Reports `spec.strategy.rollingUpdate` on a Deployment whose `spec.strategy.type` is
`Recreate`, and `spec.updateStrategy.rollingUpdate` on a StatefulSet whose
`spec.updateStrategy.type` is `OnDelete` or `Recreate`, or a DaemonSet whose type is
`OnDelete`. The finding points at `rollingUpdate`. `rollingUpdate: null` is not
reported: it is how a manifest clears the field.

What the API server does with each (apps validation, `ValidateDeploymentStrategy`,
`ValidateStatefulSetSpec`, `ValidateDaemonSetUpdateStrategy`):

- Deployment, `Recreate`: **rejected** — `spec.strategy.rollingUpdate: Forbidden: may not
  be specified when strategy `type` is 'Recreate'`;
- StatefulSet, `OnDelete`: **rejected** — `spec.updateStrategy.rollingUpdate: Invalid
  value: only allowed for updateStrategy 'RollingUpdate'`;
- StatefulSet, `Recreate` (alpha in Kubernetes 1.37, `StatefulSetRecreateStrategy`
  feature gate; FW204 says more): the API defines `rollingUpdate` as the parameters of
  `RollingUpdate` only, and the Recreate controller deletes every pod at once whatever
  it says — the block is dead weight at best, and the leftover of a server-defaulted
  one is exactly what a later switch of type trips over;
- DaemonSet, `OnDelete`: **accepted and ignored** — validation does not look at
  `rollingUpdate` for `OnDelete`; the parameters silently come back into force if the
  type is ever switched back to `RollingUpdate`.

An empty `rollingUpdate: {}` counts as present for all three, as it does on the server.

## Why is this bad?
This is the failure of Kubernetes' guide to declarative management: a Deployment created
without `strategy` gets a server-defaulted `RollingUpdate` with `rollingUpdate`
parameters; when the manifest later says `type: Recreate`, the defaulted
`rollingUpdate` survives the merge and every apply fails. Writing the block next to
`Recreate`/`OnDelete` in the manifest fails (or, for a DaemonSet, misleads) the same way.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  strategy:
    type: Recreate
    rollingUpdate:
      maxSurge: 1
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  strategy:
    type: Recreate
```

If the live object still carries a server-defaulted block, apply once with
`rollingUpdate: null` to clear it (kubectl's documented way to clear a field).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..kube import get_path, group_kind
from ..model import ERROR, Violation
from ..rule import OBJECT

CODE = "FW202"
NAME = "rolling-update-without-rolling-type"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_REJECTED = "the API server rejects it"

# (group, kind) -> (strategy field, {type that does not roll: what becomes of rollingUpdate})
_NON_ROLLING = {
    ("apps", "Deployment"): ("strategy", {"Recreate": _REJECTED}),
    ("apps", "StatefulSet"): ("updateStrategy", {"OnDelete": _REJECTED, "Recreate": "only RollingUpdate uses it"}),
    ("apps", "DaemonSet"): ("updateStrategy", {"OnDelete": "the DaemonSet controller ignores it"}),
}


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = frozenset(_NON_ROLLING)


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation at `rollingUpdate` when the type is Recreate or OnDelete."""
    group, kind = group_kind(obj)
    found = _NON_ROLLING.get((group, kind))
    if found is None:
        return
    field, non_rolling = found
    strategy = get_path(obj, ("spec", field))
    if not isinstance(strategy, dict) or not isinstance(strategy.get("type"), str):
        return
    outcome = non_rolling.get(strategy["type"])
    if outcome is None or strategy.get("rollingUpdate") is None:
        return
    kind_type = strategy["type"]
    yield Violation(
        ("spec", field, "rollingUpdate"),
        f"spec.{field}.rollingUpdate is set but spec.{field}.type is {kind_type}; {outcome}",
        f"remove spec.{field}.rollingUpdate (write rollingUpdate: null once to clear a "
        f"server-defaulted one), or set type RollingUpdate",
    )
