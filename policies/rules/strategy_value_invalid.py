"""A rollout strategy field holds a value the API server rejects.

## What it does
Checks Deployment `spec.strategy` and StatefulSet / DaemonSet `spec.updateStrategy` the
way apps validation does (`ValidateDeploymentStrategy`, `ValidateStatefulSetSpec`,
`ValidateDaemonSetUpdateStrategy`, `ValidatePositiveIntOrPercent`,
`IsNotMoreThan100Percent`), plus the JSON decoding that precedes it, and reports each
offending field:

- `type` other than `RollingUpdate` / `Recreate` (Deployment), `RollingUpdate` /
  `OnDelete` / `Recreate` (StatefulSet) or `RollingUpdate` / `OnDelete` (DaemonSet).
  Types are case-sensitive: `recreate` and `Rolling` are rejected. An empty or absent
  type is not reported here: the server defaults it to `RollingUpdate` (FW201 notes an
  absent one);
- StatefulSet `type: Recreate`, at **warning** level: Kubernetes 1.37 added it as an
  alpha type behind the `StatefulSetRecreateStrategy` feature gate, off by default;
  where the gate is off (every release before 1.37, and 1.37 by default) the API server
  rejects it (`must be 'RollingUpdate' or 'OnDelete'`). On a cluster that enables the
  gate, suppress the finding;
- `strategy`, `updateStrategy` or `rollingUpdate` that is not a mapping;
- `maxSurge` / `maxUnavailable` that is not a non-negative integer or a percent string
  of digits and `%`: `"25"` (a quoted number), `-1`, `"-5%"`, `"abc"`, `1.5`, `1.0`,
  `true` are all rejected;
- `maxUnavailable` above `100%` (Deployment, DaemonSet, StatefulSet) and DaemonSet
  `maxSurge` above `100%` (a Deployment may surge by more than 100%);
- DaemonSet `maxSurge` and `maxUnavailable` both non-zero — a DaemonSet uses one or the
  other. `maxUnavailable` defaults to `1`, so `maxSurge: 1` alone is rejected too; the
  finding points at `maxSurge`, as the API server's does;
- StatefulSet `rollingUpdate.partition` that is not an integer or is negative;
- StatefulSet `rollingUpdate.maxUnavailable` checked like a Deployment's: an integer or
  a percent string, at most `100%`, and — unlike a Deployment's — never zero (`0`,
  `"0%"`: `cannot be 0`). The field is beta (`MaxUnavailableStatefulSet`); where the gate
  is off the server drops it on create instead of validating it, but a manifest that
  sets it expects it to work.

`rollingUpdate` is not examined when the type is `Recreate` / `OnDelete`: FW202 reports
the whole block then. Both limits zero is FW203.

Deployments have no `podReplacementPolicy` to check: KEP-5882 proposes
`spec.podReplacementPolicy` (`TerminationStarted` / `TerminationComplete`), but no
Kubernetes release up to 1.37 has the field in `apps/v1` (Jobs' `podReplacementPolicy`
is another, GA field).

## Why is this bad?
The API server refuses the object, so the apply (or the Helm release, or the GitOps
sync) fails — often only in the cluster, long after the change was merged. Quoted
numbers are a classic: `maxSurge: "1"` looks right and is rejected
(`must be a valid percent`).

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  strategy:
    type: Rolling
    rollingUpdate:
      maxSurge: "1"
      maxUnavailable: 150%
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 50%
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..intorstr import INT32_MAX, IntOrPercent, parse, parse_int32, value_or
from ..kube import get_path, group_kind
from ..model import ERROR, WARNING, FieldPath, Violation
from ..rule import OBJECT

CODE = "FW204"
NAME = "strategy-value-invalid"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

ROLLING = "RollingUpdate"
RECREATE = "Recreate"

# (group, kind) -> (strategy field, its types as apps/v1 defines them, RollingUpdate first)
_KINDS = {
    ("apps", "Deployment"): ("strategy", (ROLLING, RECREATE)),
    ("apps", "StatefulSet"): ("updateStrategy", (ROLLING, "OnDelete", RECREATE)),
    ("apps", "DaemonSet"): ("updateStrategy", (ROLLING, "OnDelete")),
}

_INT_OR_PERCENT_HINT = 'use a non-negative integer (1) or a percent string ("25%")'


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = frozenset(_KINDS)


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation for each strategy field the API server would reject."""
    group, kind = group_kind(obj)
    found = _KINDS.get((group, kind))
    if found is None:
        return
    field, types = found
    base: FieldPath = ("spec", field)
    strategy = get_path(obj, base)
    if strategy is None:
        return
    if not isinstance(strategy, dict):
        yield Violation(base, f"spec.{field} must be a mapping, not {_show(strategy)}", f"set spec.{field}.type")
        return
    kind_type = strategy.get("type")
    if kind_type not in (None, ""):
        yield from _check_type(base, kind_type, types)
    if kind == "StatefulSet" and kind_type == RECREATE:
        yield Violation(
            base + ("type",),
            "updateStrategy.type Recreate needs the StatefulSetRecreateStrategy feature gate (alpha in Kubernetes 1.37, "
            "off by default); without it the API server rejects it (must be 'RollingUpdate' or 'OnDelete')",
            "use RollingUpdate or OnDelete; on a cluster that enables the gate, suppress this finding",
            WARNING,
        )
    if kind_type in types and kind_type != ROLLING:
        return  # rollingUpdate beside Recreate/OnDelete is FW202's finding
    rolling = strategy.get("rollingUpdate")
    if rolling is None:
        return
    path: FieldPath = base + ("rollingUpdate",)
    if not isinstance(rolling, dict):
        yield Violation(
            path,
            f"spec.{field}.rollingUpdate must be a mapping, not {_show(rolling)}",
            "give it maxSurge / maxUnavailable keys, or remove it",
        )
        return
    if kind == "StatefulSet":
        yield from _check_statefulset(path, rolling)
    else:
        yield from _check_limits(path, rolling, daemonset=kind == "DaemonSet")


def _check_type(base: FieldPath, value: Any, valid: tuple[str, ...]) -> Iterator[Violation]:
    if isinstance(value, str) and value in valid:
        return
    where = f"{base[-1]}.type"
    choices = ", ".join(valid[:-1]) + f" or {valid[-1]}"
    if isinstance(value, str):
        same = [v for v in valid if v.lower() == value.lower()]
        hint = f"types are case-sensitive: write {same[0]}" if same else f"use {choices}"
        message = f"{where} {_show(value)} is not a strategy type ({choices})"
    else:
        hint = f"use {choices}"
        message = f"{where} must be the string {choices}, not {_show(value)}"
    yield Violation(base + ("type",), message, hint)


def _check_limits(path: FieldPath, rolling: Mapping[str, Any], daemonset: bool) -> Iterator[Violation]:
    """maxUnavailable / maxSurge of a Deployment or a DaemonSet."""
    valid: dict[str, IntOrPercent] = {}
    for name in ("maxUnavailable", "maxSurge"):
        raw = rolling.get(name)
        if raw is None:
            continue
        value, problem = parse(raw)
        if value is None:
            yield Violation(path + (name,), f"{name} {_show(raw)} {problem}", _INT_OR_PERCENT_HINT)
            continue
        valid[name] = value
        if value.over_100_percent and (name == "maxUnavailable" or daemonset):
            yield Violation(path + (name,), f"{name} {value} must not be greater than 100%", "use at most 100%")
    if not daemonset or "maxSurge" not in valid:
        return
    unavailable = value_or(rolling.get("maxUnavailable"), IntOrPercent(1, False)).value
    surge = valid["maxSurge"]
    if unavailable is None or unavailable.is_zero or surge.is_zero:
        return
    said = "defaults to 1" if rolling.get("maxUnavailable") is None else f"is {unavailable}"
    yield Violation(
        path + ("maxSurge",),
        f"maxSurge is {surge} and maxUnavailable {said}: a DaemonSet may use only one of them",
        "set maxUnavailable: 0 to surge new pods first, or remove maxSurge",
    )


def _check_statefulset(path: FieldPath, rolling: Mapping[str, Any]) -> Iterator[Violation]:
    """partition / maxUnavailable of a StatefulSet."""
    raw = rolling.get("partition")
    if raw is not None:
        partition = parse_int32(raw)
        if partition is None:
            too_big = isinstance(raw, int) and not isinstance(raw, bool)
            problem = f"is out of range (at most {INT32_MAX})" if too_big else "must be an integer"
            yield Violation(path + ("partition",), f"partition {_show(raw)} {problem}", "use a whole number of pods, e.g. 0")
        elif partition < 0:
            yield Violation(path + ("partition",), f"partition {partition} must not be negative", "use 0 to update every pod")
    raw = rolling.get("maxUnavailable")
    if raw is None:
        return
    value, problem = parse(raw)
    if value is None:
        yield Violation(path + ("maxUnavailable",), f"maxUnavailable {_show(raw)} {problem}", _INT_OR_PERCENT_HINT)
    elif value.is_zero:
        yield Violation(
            path + ("maxUnavailable",),
            f"maxUnavailable {value} must be at least 1 on a StatefulSet",
            "use 1 (one pod at a time) or more, or remove it",
        )
    elif value.over_100_percent:
        yield Violation(path + ("maxUnavailable",), f"maxUnavailable {value} must not be greater than 100%", "use at most 100%")


def _show(value: Any) -> str:
    """A value as it reads in YAML, short."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif isinstance(value, dict):
        text = "a mapping"
    elif isinstance(value, list):
        text = "a list"
    else:
        text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."
