"""A Service's selector matches no pod template of the workloads in its namespace.

## What it does
Reports a Service with a non-empty `spec.selector` that selects the pods of no pod
source of its namespace in the linted set — the files named on the command line plus,
unless `--no-context`, the rest of the project, so a Service changed alone in a
pre-commit run is still checked against the Deployment it selects. An unset namespace
is the configured `default-namespace`.

Pod sources, and the labels their pods carry:

- the built-in workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet,
  ReplicationController, Job, CronJob): their pod template's labels; Pods: their labels;
- LeaderWorkerSets (`leaderworkerset.x-k8s.io`): leader pods get
  `leaderWorkerTemplate.leaderTemplate`'s labels (the worker template's when there is no
  leader template), worker pods `workerTemplate`'s, and both
  `leaderworkerset.sigs.k8s.io/name: <the set's name>`;
- custom resources whose operator may make pods. What counts is the manifest's shape,
  not a list of kinds: pod labels written where operators write them — a pod template
  (`spec.template`, `spec.podTemplate`, Strimzi's `template.pod`, also inside the
  components and lists of ECK, Flink, KubeRay, JobSet, KEDA ScaledJob, Volcano,
  RabbitMQ), pod metadata (`spec.podMetadata` of the Prometheus operator,
  `spec.inheritedMetadata` of CloudNativePG), Spark's `driver`/`executor` labels — or a
  pod count at the top of the spec (`spec.replicas`, `spec.instances`,
  `spec.numberOfInstances`). The full list of paths is `OPERATOR_LABEL_PATHS` in
  `_workload_selectors.py`. A few kinds make pods from defaults, with neither in the
  manifest, and count whatever they show (`POD_MAKING_KINDS`: the Prometheus operator's
  Prometheus, PrometheusAgent, Alertmanager and ThanosRuler, Zalando's `postgresql`
  (`acid.zalan.do`), Spotahome's `RedisFailover`). Other custom resources (a
  ServiceMonitor, a Certificate) make no pods and change nothing.

The check runs only when the namespace holds a built-in workload, a Pod or a
LeaderWorkerSet: otherwise the pods may well come from elsewhere (another repository, a
chart). A selector that matches the labels a custom resource writes is fine. One that
matches nothing is a warning, except where a custom resource of the namespace may make
the pods it selects: operators add labels of their own (`prometheus: k8s`,
`cnpg.io/cluster: pg`, `strimzi.io/cluster: events`, ...) that no manifest shows, so
fieldwarden cannot tell a typo from a selector on those labels, and reports it at
**info** level, naming the custom resources (info is shown, and fails a run only with
`--fail-on info`). A custom resource is ruled out when the labels it writes for all its
pods (`spec.template`, `spec.podTemplate`, `spec.podMetadata`, `spec.inheritedMetadata`,
Strimzi's `spec.template.pod`) contradict the selector: an Argo Rollout whose template
says `app: checkout` cannot make the pods of `app: chekout`, so that typo stays a warning.

Not judged: ExternalName Services, Services without a selector or with `selector: {}`
(their endpoints are managed by hand), selectors holding a placeholder to be filled in
(a key or value such as `<app>`, `${app}` for envsubst or Flux's post-build
substitution, `CHANGEME`, `REPLACE_ME`, `TODO`), and requirements on labels that controllers add
to pods with values a manifest cannot know (`pod-template-hash`,
`controller-revision-hash`, `statefulset.kubernetes.io/pod-name`, `job-name`,
`controller-uid`, `rollouts-pod-template-hash`, LeaderWorkerSet's `group-index`,
`worker-index`, `group-key`, ...): a Service selecting
`statefulset.kubernetes.io/pod-name: db-0` is judged on its other labels. A selector the
API server would refuse (a label value that is a number, an invalid key) is reported
here too, whatever the set holds.

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

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping, Sequence

from ..kube import get_path, kinds_of
from ..model import WARNING, FieldPath, Violation, format_path
from ..rule import SET, SetObject
from ..selectors import parse_map_selector
from ._workload_selectors import POD_SOURCE_PATHS, first_per_path, has_placeholder, pod_lookup

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
    *POD_SOURCE_PATHS,
)

_SELECTOR: FieldPath = ("spec", "selector")


def check_set(
    objects: Sequence[SetObject], targets: Sequence[int], conf: Mapping[str, Any]
) -> Iterator[tuple[int, Violation]]:
    """Yield a violation for each target Service whose selector selects no pod of the set."""
    kinds = kinds_of(objects)
    services = [i for i in targets if kinds[i] == ("", "Service")]
    if not services:
        return
    pods = pod_lookup(objects, str(conf.get("default-namespace", "default")))
    for index in services:
        data = objects[index].data
        if get_path(data, ("spec", "type")) == "ExternalName":
            continue
        if has_placeholder(get_path(data, _SELECTOR)):
            continue  # a sample or a template to fill in: not judged
        selector, problems = parse_map_selector(get_path(data, _SELECTOR))
        for path, message in first_per_path(problems):
            yield index, Violation(
                _SELECTOR + path,
                f"{format_path(_SELECTOR + path)}: {message}; it selects no pods",
                "a Service selector is a map of label keys to string values: quote numbers and booleans",
            )
        if selector is None or selector.is_empty:
            continue
        unmatched = pods.selects_nothing(index, selector)
        if unmatched is not None:
            yield index, Violation(_SELECTOR, unmatched.message(selector), unmatched.hint, unmatched.severity)
