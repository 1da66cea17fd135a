"""A PodDisruptionBudget's selector matches no pod, so it protects nothing.

## What it does
Reports a PodDisruptionBudget (`policy/v1` or `policy/v1beta1`) whose `spec.selector`
(a label selector: `matchLabels` and `matchExpressions`) selects the pod template labels
of no pod source in its namespace in the linted set. Pod sources are counted as for
FW103 (`fieldwarden explain FW103`): built-in workloads, Pods, LeaderWorkerSets'
leader and worker templates, and custom resources whose operators may make pods. The
check runs only when the namespace holds a built-in workload, a Pod or a
LeaderWorkerSet; a selector that matches nothing there is reported at **info** level
when a custom resource of the namespace may make the pods it selects (its operator labels
them in ways no manifest shows), as FW103 explains. Controller-added labels (`pod-template-hash`,
`statefulset.kubernetes.io/pod-name`, ...) are assumed to match, an unset namespace
is the configured `default-namespace`, and a selector holding a placeholder to be filled
in (`<app>`, `${app}`, `CHANGEME`: see FW103) is not judged.

What an empty or absent selector means depends on the API version, and those cases are
reported whatever the set holds:

- no `spec.selector` (or `null`): selects no pod, in both versions;
- `selector: {}` in `policy/v1`: selects **every** pod of the namespace — not reported;
- `selector: {}` in `policy/v1beta1`: selects **no** pod (the opposite of `policy/v1`).

A selector the API server would refuse (unknown operator, label value that is a
number, ...) is reported too.

## Why is this bad?
A budget that selects nothing does not stop a node drain or a cluster autoscaler from
evicting every replica at once; it usually means a typo or a label renamed on one side.

## Example
```yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: search}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: search-engine}   # the pods are labelled app=search
```

## Use instead
```yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: search}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: search}
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..kube import get_path, kinds_of
from ..model import WARNING, FieldPath, Violation, format_path
from ..rule import SET, SetObject
from ..selectors import parse_label_selector
from ._workload_selectors import POD_SOURCE_PATHS, first_per_path, has_placeholder, pod_lookup

CODE = "FW104"
NAME = "pdb-selects-nothing"
SEVERITY = WARNING
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
CONTEXT_PATHS: tuple[FieldPath, ...] = (
    ("spec", "selector"),
    *POD_SOURCE_PATHS,
)

_SELECTOR: FieldPath = ("spec", "selector")


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation for each target PodDisruptionBudget that selects no pod."""
    kinds = kinds_of(objects)
    budgets = [i for i in targets if kinds[i] == ("policy", "PodDisruptionBudget")]
    if not budgets:
        return
    pods = pod_lookup(objects, str(conf.get("default-namespace", "default")))
    for index in budgets:
        data = objects[index].data
        if has_placeholder(get_path(data, _SELECTOR)):
            continue  # a sample or a template to fill in: not judged (as FW103)
        selector, problems = parse_label_selector(get_path(data, _SELECTOR))
        for path, message in first_per_path(problems):
            yield index, Violation(
                _SELECTOR + path,
                f"{format_path(_SELECTOR + path)}: {message}; it protects no pods",
                "fix the selector so the API server accepts it",
            )
        if problems:
            continue
        if selector is None:
            yield index, Violation(
                _SELECTOR,
                "no spec.selector, so it protects no pods",
                "set spec.selector.matchLabels to the labels of the pods to protect",
            )
            continue
        if selector.is_empty:
            if data.get("apiVersion") == "policy/v1beta1":
                yield index, Violation(
                    _SELECTOR,
                    "an empty selector selects no pods in policy/v1beta1 (policy/v1 selects every pod of the namespace)",
                    "list the pods' labels in spec.selector.matchLabels, or move to policy/v1",
                )
            continue
        unmatched = pods.selects_nothing(index, selector)
        if unmatched is not None:
            yield index, Violation(_SELECTOR, unmatched.message(selector), unmatched.hint, unmatched.severity)
