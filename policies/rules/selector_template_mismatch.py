"""A workload's selector does not select its own pod template's labels.

## What it does
Evaluates the `spec.selector` of a Deployment, ReplicaSet, StatefulSet, DaemonSet,
ReplicationController, and of a Job with `spec.manualSelector: true`, against the pod
template's `metadata.labels`, exactly as the API server does: every `matchLabels` entry
and every `matchExpressions` requirement must hold (`In`: the label is present with one
of the values; `NotIn`: absent or not one of them; `Exists`; `DoesNotExist`). The
finding points at the selector and names the first requirement, in the order written,
that the template labels fail.

Selectors that are missing, empty or invalid are FW101's; so are Jobs without
`manualSelector` and CronJobs, whose selectors the server generates. A
ReplicationController without a selector gets its template labels as selector, so it
always matches.

## Why is this bad?
The API server rejects the object: `spec.template.metadata.labels: Invalid value:
... selector does not match template labels`. Since the selector of `apps/v1` kinds is
immutable, the fix on a live workload is to change the template labels, not the
selector.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  selector:
    matchLabels: {app: checkout}
    matchExpressions:
      - {key: tier, operator: In, values: [backend]}
  template:
    metadata:
      labels: {app: checkout, tier: frontend}
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
spec:
  selector:
    matchLabels: {app: checkout}
    matchExpressions:
      - {key: tier, operator: In, values: [backend]}
  template:
    metadata:
      labels: {app: checkout, tier: backend}
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..kube import WORKLOADS, get_path, group_kind, is_workload, pod_template_labels, selector_path
from ..model import ERROR, Violation
from ..rule import OBJECT
from ..selectors import selects
from ._workload_selectors import (
    describe_labels,
    first_unsatisfied,
    parse_workload_selector,
    selector_is_generated,
    uses_map_selector,
)

CODE = "FW102"
NAME = "selector-template-mismatch"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = WORKLOADS


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation when the selector does not select the template labels."""
    group, kind = group_kind(obj)
    if not is_workload(group, kind) or selector_is_generated(obj):
        return
    selector, problems = parse_workload_selector(obj)
    if problems or selector is None or selector.is_empty:
        return  # FW101: missing, empty, invalid, or (ReplicationController) defaulted
    labels = pod_template_labels(obj)
    if selects(selector, labels):
        return
    path = selector_path(group, kind)
    assert path is not None
    failing = first_unsatisfied(get_path(obj, path), uses_map_selector(group, kind), labels) or selector
    keys = dict.fromkeys(req.key for req in failing.requirements)
    yield Violation(
        path,
        f"selector requirement {failing} does not match the pod template labels "
        f"({describe_labels(labels, keys)}); the API server rejects it",
        "change the pod template labels to satisfy the selector (the selector of an existing "
        "workload is immutable, except a ReplicationController's)",
    )
