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
    yield Violation(
        _PARTITION,
        f"partition {partition} {relation} the pod count ({said}): template changes never roll out",
        f"lower the partition below {replicas} (0 updates every pod), or suppress while staging",
    )
