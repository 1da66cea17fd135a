"""A Service's selector matches no pod template of the workloads in its namespace.

## What it does
Reports a Service with a non-empty `spec.selector` that selects the pod template labels
of no workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController,
Job, CronJob) and no Pod of the same namespace in the linted set — the files named on
the command line plus, unless `--no-context`, the rest of the project, so a Service
changed alone in a pre-commit run is still checked against the Deployment it selects.

The check only runs when the set holds at least one workload or Pod in that namespace:
otherwise the pods may well come from elsewhere (another repository, a Helm chart). A
custom resource with a `spec.template.metadata.labels` map (an OpenKruise CloneSet, an
Argo Rollout, ...) counts as a possible pod source. An unset namespace is the configured
`default-namespace`.

Not judged: ExternalName Services, Services without a selector or with `selector: {}`
(their endpoints are managed by hand), and requirements on labels that controllers add
to pods with values a manifest cannot know (`pod-template-hash`,
`controller-revision-hash`, `statefulset.kubernetes.io/pod-name`, `job-name`,
`controller-uid`, ...): a Service selecting `statefulset.kubernetes.io/pod-name: db-0`
is judged on its other labels. A selector the API server would refuse (a label value
that is a number, an invalid key) is reported here too, whatever the set holds.

## Why is this bad?
A Service that selects no pod has no endpoints: clients get connection refused or
time-outs, usually because of a typo or a label renamed on one side only.

## Example
```yaml
apiVersion: v1
kind: Service
metadata: {name: cart}
spec:
  selector: {app: carts}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  selector:
    matchLabels: {app: cart}
  template:
    metadata:
      labels: {app: cart}
```

## Use instead
```yaml
apiVersion: v1
kind: Service
metadata: {name: cart}
spec:
  selector: {app: cart}
```
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ..kube import get_path, group_kind
from ..model import WARNING, FieldPath, Violation, format_path
from ..rule import SET, SetObject
from ..selectors import parse_map_selector
from ._workload_selectors import TEMPLATE_LABEL_PATHS, UNMATCHED_HINT, PodLookup, first_per_path

CODE = "FW103"
NAME = "service-selects-nothing"
SEVERITY = WARNING
SCOPE = SET
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
CONTEXT_PATHS: tuple[FieldPath, ...] = (
    ("spec", "selector"),
    ("spec", "type"),
    ("metadata", "labels"),
    *TEMPLATE_LABEL_PATHS,
)

_SELECTOR: FieldPath = ("spec", "selector")


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation for each target Service whose selector selects no pod of the set."""
    services = [i for i in targets if group_kind(objects[i].data) == ("", "Service")]
    if not services:
        return
    pods = PodLookup(objects, str(conf.get("default-namespace", "default")))
    for index in services:
        data = objects[index].data
        if get_path(data, ("spec", "type")) == "ExternalName":
            continue
        selector, problems = parse_map_selector(get_path(data, _SELECTOR))
        for path, message in first_per_path(problems):
            yield index, Violation(
                _SELECTOR + path,
                f"{format_path(_SELECTOR + path)}: {message}; it selects no pods",
                "a Service selector is a map of label keys to string values: quote numbers and booleans",
            )
        if selector is None or selector.is_empty:
            continue
        where = pods.selects_nothing(index, selector)
        if where:
            yield index, Violation(
                _SELECTOR, f"selector {selector} matches no pod template {where}", UNMATCHED_HINT
            )
