"""A workload's selector selects the pods of another workload in its namespace.

## What it does
Reports a workload whose selector selects the pod template labels of another workload
of the same namespace in the linted set — and that other workload too, since its pods
are the ones being fought over. Each finding points at the workload's own selector and
names the other objects with the place they are defined. Selectors are evaluated as
the API server does (`matchLabels` and `matchExpressions`), and a ReplicationController
without a selector counts with its template labels, which the server copies into it.

Not judged: Jobs without `spec.manualSelector: true` and CronJobs (the server gives
their Jobs a unique `controller-uid` selector), and workloads whose selector is missing,
empty or invalid (FW101 reports those; the API server refuses most of them). Objects
defined twice under one identity are FW305's business, not an overlap. An unset
namespace is the configured `default-namespace`.

## Why is this bad?
A controller manages the pods its selector selects. When two Deployments (ReplicaSets,
StatefulSets, ...) select the same pods, each counts the other's pods as its own: one
scales down what the other just created, rollouts stall, and pods are adopted by the
wrong owner after a restart. Kubernetes does not stop you from creating overlapping
selectors; it only warns in its documentation. Two Deployments that both select
`app: mysql` — a case found in real repositories — share their pods, and every Service
selecting `app: mysql` balances over both databases. That is why this is an error, inside
any set of objects applied together.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector:
    matchLabels: {app: web}            # also selects web-canary's pods
  template:
    metadata:
      labels: {app: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-canary}
spec:
  selector:
    matchLabels: {app: web, track: canary}
  template:
    metadata:
      labels: {app: web, track: canary}
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector:
    matchLabels: {app: web, track: stable}
  template:
    metadata:
      labels: {app: web, track: stable}
```
"""

from __future__ import annotations

from collections import defaultdict

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..kube import WORKLOADS, group_kind, kinds_of, pod_template_labels, selector_path
from ..model import ERROR, FieldPath, Violation
from ..rule import SET, SetObject
from ..selectors import Selector, TemplateIndex
from ._workload_selectors import (
    MANUAL_SELECTOR_PATHS,
    SELECTOR_PATHS,
    TEMPLATE_LABEL_PATHS,
    effective_selector,
    namespace_of,
)

CODE = "FW105"
NAME = "selector-overlap"
SEVERITY = ERROR
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
CONTEXT_PATHS: tuple[FieldPath, ...] = (*SELECTOR_PATHS, *TEMPLATE_LABEL_PATHS, *MANUAL_SELECTOR_PATHS)

_NAMED = 3  # others named in one message; the rest are counted


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield one violation per target workload whose selector overlaps another workload's."""
    default_namespace = str(conf.get("default-namespace", "default"))
    target_set = set(targets)
    workloads: dict[str, list[int]] = defaultdict(list)
    for index, (item, kind) in enumerate(zip(objects, kinds_of(objects))):
        if kind in WORKLOADS:
            workloads[namespace_of(item, default_namespace)].append(index)
    for namespace in sorted(workloads):
        members = workloads[namespace]
        if target_set.isdisjoint(members):
            continue
        selectors: dict[int, Selector] = {}
        for index in members:
            selector = effective_selector(objects[index].data)
            if selector is not None:
                selectors[index] = selector
        if len(selectors) < 2 or target_set.isdisjoint(selectors):
            continue
        yield from _namespace(objects, target_set, selectors)


def _namespace(
    objects: Sequence[SetObject], targets: set[int], selectors: dict[int, Selector]
) -> Iterator[tuple[int, Violation]]:
    """Overlaps among the workloads of one namespace: one query of the index per workload."""
    index = TemplateIndex((i, pod_template_labels(objects[i].data)) for i in selectors)
    selects_others: dict[int, list[int]] = {}
    selected_by: dict[int, list[int]] = defaultdict(list)
    for owner, selector in selectors.items():
        key = objects[owner].key
        hits = [i for i in index.matching(selector) if i != owner and (key is None or objects[i].key != key)]
        if owner in targets:
            selects_others[owner] = hits
        for hit in hits:
            if hit in targets:
                selected_by[hit].append(owner)
    for target in sorted(targets.intersection(selectors)):
        forward = selects_others.get(target, [])
        backward = selected_by.get(target, [])
        if not forward and not backward:
            continue
        parts: list[str] = []
        if forward:
            parts.append(f"selector {selectors[target]} also selects the pods of {_names(objects, forward)}")
        if backward:
            parts.append(f"its pods are also selected by {_names(objects, backward)}")
        group, kind = group_kind(objects[target].data)
        path = selector_path(group, kind)
        assert path is not None
        yield target, Violation(
            path,
            "; ".join(parts) + ": their controllers fight over the same pods",
            "give each workload a selector label no other workload's pods carry "
            "(e.g. app.kubernetes.io/instance), on both the selector and the template",
        )


def _names(objects: Sequence[SetObject], indices: list[int]) -> str:
    """`Deployment/ns/web (web.yaml:4)`, up to a few, then a count."""
    named: list[str] = []
    for i in sorted(indices)[:_NAMED]:
        item = objects[i]
        label = item.key.label() if item.key is not None else str(item.data.get("kind", "object"))
        named.append(f"{label} ({item.origin})")
    rest = len(indices) - len(named)
    return ", ".join(named) + (f" and {rest} more" if rest > 0 else "")
