"""A rolling update may neither add a pod nor take one down, so it can never progress.

## What it does
Reports a Deployment or DaemonSet rolling update whose `maxSurge` and `maxUnavailable`
are both zero, counting a field that is absent (or `null`) as the value the API server
defaults it to (apps/v1):

| kind | `maxUnavailable` default | `maxSurge` default |
| --- | --- | --- |
| Deployment | `25%` | `25%` |
| DaemonSet | `1` | `0` |

So `maxUnavailable: 0` alone is fine on a Deployment, but on a DaemonSet it can never
progress: the missing `maxSurge` is `0`. The finding points at `maxUnavailable`, where
the API server reports it.

Zero means zero *as written*, exactly as apps validation checks it: `0` and `"0%"` are
zero, `"1%"` is not, whatever the replica count. Percentages that round to nothing
(`maxUnavailable: "10%"` of 3 replicas is 0 pods) are not reported: the API server
accepts them, and the Deployment controller, when both limits resolve to 0, allows one
unavailable pod anyway (`ResolveFenceposts`); the DaemonSet controller rounds both up.
Values that are malformed (`"abc"`, `"25"`, `-1`) are left to FW204, which names them.
Strategies whose type is not `RollingUpdate` (after defaulting) are not checked.

## Why is this bad?
A rollout that may not surge a new pod and may not remove an old one cannot move.
The API server rejects the object: `spec.strategy.rollingUpdate.maxUnavailable: Invalid
value: 0: may not be 0 when `maxSurge` is 0` (Deployment), `...maxUnavailable: Required
value: cannot be 0 when maxSurge is 0` (DaemonSet).

## Example
```yaml
apiVersion: apps/v1
kind: DaemonSet
spec:
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0   # maxSurge defaults to 0
```

## Use instead
```yaml
apiVersion: apps/v1
kind: DaemonSet
spec:
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1         # start the new pod on a node before stopping the old one
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..intorstr import IntOrPercent, value_or
from ..kube import get_path, group_kind
from ..model import ERROR, Violation
from ..rule import OBJECT

CODE = "FW203"
NAME = "rollout-cannot-progress"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

# (group, kind) -> (strategy field, default maxUnavailable, default maxSurge)
_ROLLING = {
    ("apps", "Deployment"): ("strategy", IntOrPercent(25, True), IntOrPercent(25, True)),
    ("apps", "DaemonSet"): ("updateStrategy", IntOrPercent(1, False), IntOrPercent(0, False)),
}


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = frozenset(_ROLLING)


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation at maxUnavailable when both limits are zero after defaulting."""
    group, kind = group_kind(obj)
    found = _ROLLING.get((group, kind))
    if found is None:
        return
    field, default_unavailable, default_surge = found
    strategy = get_path(obj, ("spec", field))
    if strategy is not None and not isinstance(strategy, dict):
        return
    if (strategy or {}).get("type") not in (None, "", "RollingUpdate"):
        return
    rolling = (strategy or {}).get("rollingUpdate")
    if not isinstance(rolling, dict):
        return  # absent: both limits take their non-zero defaults; malformed: FW204
    unavailable = value_or(rolling.get("maxUnavailable"), default_unavailable).value
    surge = value_or(rolling.get("maxSurge"), default_surge).value
    if unavailable is None or surge is None or not (unavailable.is_zero and surge.is_zero):
        return
    if rolling.get("maxSurge") is None:
        message = f"maxUnavailable is {unavailable} and maxSurge, unset, defaults to 0 on a {kind}"
    else:
        message = f"maxSurge {surge} and maxUnavailable {unavailable} are both zero"
    yield Violation(
        ("spec", field, "rollingUpdate", "maxUnavailable"),
        f"{message}: the rollout can neither add nor remove a pod; the API server rejects it",
        "allow one of them, e.g. maxSurge: 1 (new pod first) or maxUnavailable: 1",
    )
