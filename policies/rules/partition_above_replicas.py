"""A StatefulSet's rolling-update partition leaves no pod to update.

## What it does
Reports a StatefulSet whose `spec.updateStrategy.rollingUpdate.partition` is greater
than **or equal to** `spec.replicas` (1 when unset), when the update strategy is
`RollingUpdate` (explicit or defaulted). The finding points at `partition`.

The StatefulSet controller updates only the pods whose ordinal is at or above the
partition; ordinals run from 0 to `replicas - 1`. So `partition: 3` with `replicas: 3`
updates nothing, exactly like `partition: 5` — hence "or equal". A StatefulSet with
`replicas: 0` is not reported (it has no pods to update). The rule reads
`spec.replicas` as written: when an autoscaler owns the count, the live value may differ.

With `spec.ordinals.start` (GA since Kubernetes 1.31) the pods are numbered from the
start ordinal — `web-5`, `web-6`, `web-7` for `start: 5, replicas: 3` — and the
partition counts from the start too: the controller updates the pods whose ordinal is at
or above `start + partition` (it compares the partition with a pod's place in the set,
ordinal minus start). So the verdict is still `partition >= replicas`, and the finding
says which ordinal the partition stands for: `partition: 6`, written to mean "update
web-6 and up", holds back every pod (it stands for ordinal 11); `partition: 1` does what
was meant. Only a `RollingUpdate` strategy has a partition; `OnDelete` and the alpha
`Recreate` are not judged.

## Why is this bad?
A template change is accepted, a new revision is recorded, and no pod ever runs it:
`kubectl rollout status` waits for ever and the release looks deployed. Kubernetes'
own tutorial stages an update this way on purpose (raise the partition to `replicas`,
change the template, lower the partition to roll out). Committed to git, such a
partition means every later change is silently held back; if that is the intent during
a canary, suppress this finding on the line.

## Example
```yaml
apiVersion: apps/v1
kind: StatefulSet
spec:
  replicas: 3
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      partition: 3
```

## Use instead
```yaml
apiVersion: apps/v1
kind: StatefulSet
spec:
  replicas: 3
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      partition: 2   # canary: only web-2 gets the new revision
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..intorstr import parse_int32
from ..kube import get_path, group_kind
from ..model import WARNING, Violation
from ..rule import OBJECT

CODE = "FW205"
NAME = "partition-above-replicas"
SEVERITY = WARNING
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_PARTITION = ("spec", "updateStrategy", "rollingUpdate", "partition")


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = frozenset({("apps", "StatefulSet")})


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation when partition >= replicas, so that no pod is ever updated."""
    if group_kind(obj) != ("apps", "StatefulSet"):
        return
    if get_path(obj, ("spec", "updateStrategy", "type")) not in (None, "", "RollingUpdate"):
        return
    partition = parse_int32(get_path(obj, _PARTITION))
    raw_replicas = get_path(obj, ("spec", "replicas"))
    replicas = 1 if raw_replicas is None else parse_int32(raw_replicas)
    if partition is None or replicas is None or replicas <= 0 or partition < replicas:
        return  # malformed values are FW204's; 0 replicas have nothing to update
    said = "spec.replicas defaults to 1" if raw_replicas is None else f"spec.replicas is {replicas}"
    relation = "equals" if partition == replicas else "is above"
    start = parse_int32(get_path(obj, ("spec", "ordinals", "start")))
    if not start or start < 0:  # absent, 0 or malformed (the API server refuses a negative start)
        yield Violation(
            _PARTITION,
            f"partition {partition} {relation} the pod count ({said}): template changes never roll out",
            f"lower the partition below {replicas} (0 updates every pod), or suppress while staging",
        )
        return
    name = get_path(obj, ("metadata", "name"))
    prefix = f"{name}-" if isinstance(name, str) and name else "ordinal "
    pods = f"{prefix}{start}" if replicas == 1 else f"{prefix}{start}..{prefix}{start + replicas - 1}"
    yield Violation(
        _PARTITION,
        f"partition {partition} {relation} the pod count ({said}): it counts from spec.ordinals.start {start}, "
        f"so it holds back every pod below ordinal {start + partition}, and the pods are {pods}: "
        "template changes never roll out",
        f"write the partition relative to the start ordinal: below {replicas} (partition = ordinal - {start}; "
        "0 updates every pod), or suppress while staging",
    )
