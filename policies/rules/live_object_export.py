"""A manifest is an export of a live object: it carries fields only the cluster writes.

## What it does
Reports, one finding per field, what `kubectl get -o yaml` (or `-o json`) copies
from a live object into a file, and what the API server or a built-in controller
wrote there:

- top-level `status`;
- in `metadata`: `managedFields`, `uid`, `resourceVersion`, `creationTimestamp`,
  `generation`, `selfLink`, `deletionTimestamp`, `deletionGracePeriodSeconds`;
- the annotations `kubectl.kubernetes.io/last-applied-configuration` (kubectl),
  `deployment.kubernetes.io/revision`, `.../desired-replicas`, `.../max-replicas`
  and `.../revision-history` (the Deployment controller, on Deployments and their
  ReplicaSets), `deprecated.daemonset.template.generation` (the API server, on
  DaemonSets), `control-plane.alpha.kubernetes.io/leader` (a leader-election lock),
  `endpoints.kubernetes.io/last-change-trigger-time` (the endpoints controller),
  `autoscaling.alpha.kubernetes.io/conditions` and `.../current-metrics` (an HPA's
  status as `autoscaling/v1` shows it);
- on a PersistentVolumeClaim, the volume binder's and scheduler's annotations
  `pv.kubernetes.io/bind-completed`, `pv.kubernetes.io/bound-by-controller`,
  `volume.kubernetes.io/storage-provisioner` (and its `volume.beta` form) and
  `volume.kubernetes.io/selected-node`.

Harmless noise is reported as **info**, not error: `creationTimestamp: null` (in
`metadata` or in a pod, job or claim template's `metadata`, where Go prints an
empty time) and a `status` holding no value at all (`status: {}`,
`status: {loadBalancer: {}}`), which is what `kubectl create --dry-run=client -o yaml`
prints, or only empty strings and lists (controller-gen's stub at the end of a generated
CRD, `status: {acceptedNames: {kind: "", plural: ""}, conditions: [], storedVersions: []}`). The rule's configured severity applies to everything else; a lower one
configured also caps the info findings.

Not reported, because a person may set them on purpose and they change what the
object does: `ownerReferences` (garbage collection), `finalizers`, a Service's
`clusterIP`/`clusterIPs`, a claim's `spec.volumeName`, a pod's `nodeName`, labels
such as `pod-template-hash` or a Job's `controller-uid`, `kubernetes.io/change-cause`,
`kubectl.kubernetes.io/restartedAt`, and the annotations of PersistentVolumes
(`pv.kubernetes.io/provisioned-by` chooses who deletes the volume).

This rule is fixable: `fieldwarden lint --fix` deletes exactly these fields in
place (keeping comments and formatting) and drops a mapping it leaves empty, such
as `metadata.annotations` that held only the last-applied annotation. Suppressed
findings are not fixed.

## Why is this bad?
These fields describe one object at one moment, not the desired state:

- a stale `resourceVersion` makes `kubectl apply` and `kubectl replace` fail with
  `the object has been modified`;
- `uid` names one particular object: once it is deleted and re-created, applying
  the manifest fails with `Precondition failed: UID in precondition`;
- `managedFields` and `last-applied-configuration` are the server's and kubectl's
  records of past applies; committed, they go stale, and an object created from
  the file starts with a wrong base for the next three-way merge;
- `volume.kubernetes.io/selected-node` pins a re-created claim to a node that may
  be gone;
- `status`, `creationTimestamp`, `generation`, `selfLink` and the controllers'
  counters are ignored or overwritten, and make every review diff noisy.

A `status` is only desired state for a custom resource whose definition has no
`status` subresource; suppress the finding there
(`# fieldwarden: ignore[live-object-export]`).

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    deployment.kubernetes.io/revision: "3"
  uid: 37a6b191-c00c-4cb1-a928-9eeeac91f984
  resourceVersion: "198"
  creationTimestamp: "2026-11-22T02:11:52Z"
spec:
  replicas: 2
status:
  replicas: 2
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
```
"""

from __future__ import annotations

from collections.abc import Mapping  # (not typing's: its isinstance is several times slower)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator

from ..model import ERROR, INFO, FieldPath, Violation
from ..rule import OBJECT

CODE = "FW306"
NAME = "live-object-export"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = True
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
LAST_APPLIED_PATH: FieldPath = ("metadata", "annotations", LAST_APPLIED)

# metadata field -> why it does not belong in a manifest
_METADATA: dict[str, str] = {
    "managedFields": "is the API server's field-ownership record",
    "uid": "names one live object; once it is re-created, an apply fails the UID precondition",
    "resourceVersion": "is a stale optimistic-lock token; an apply fails with 'the object has been modified'",
    "creationTimestamp": "is set by the API server; this value is ignored",
    "generation": "is counted by the API server; this value is ignored",
    "selfLink": "is a read-only field (no longer set since Kubernetes 1.20)",
    "deletionTimestamp": "is set by the API server while the object is being deleted",
    "deletionGracePeriodSeconds": "is set by the API server while the object is being deleted",
}

_PVC = "PersistentVolumeClaim"
# annotation -> (the kind it is reported on, or "" for any kind; why it does not belong)
_ANNOTATIONS: dict[str, tuple[str, str]] = {
    LAST_APPLIED: ("", "is kubectl's record of a past apply; committed, it misleads the next three-way merge"),
    "deployment.kubernetes.io/revision": ("", "is the Deployment controller's rollout counter"),
    "deployment.kubernetes.io/desired-replicas": ("", "is written by the Deployment controller"),
    "deployment.kubernetes.io/max-replicas": ("", "is written by the Deployment controller"),
    "deployment.kubernetes.io/revision-history": ("", "is written by the Deployment controller"),
    "deprecated.daemonset.template.generation": ("", "is the API server's DaemonSet template counter"),
    "control-plane.alpha.kubernetes.io/leader": ("", "is a live leader-election lock"),
    "endpoints.kubernetes.io/last-change-trigger-time": ("", "is written by the endpoints controller"),
    "autoscaling.alpha.kubernetes.io/conditions": ("", "is the HPA's status, as autoscaling/v1 shows it"),
    "autoscaling.alpha.kubernetes.io/current-metrics": ("", "is the HPA's status, as autoscaling/v1 shows it"),
    "pv.kubernetes.io/bind-completed": (_PVC, "is written by the volume binder"),
    "pv.kubernetes.io/bound-by-controller": (_PVC, "is written by the volume binder"),
    "volume.beta.kubernetes.io/storage-provisioner": (_PVC, "is written by the volume binder"),
    "volume.kubernetes.io/storage-provisioner": (_PVC, "is written by the volume binder"),
    "volume.kubernetes.io/selected-node": (_PVC, "is the scheduler's choice for one pod; committed, it pins the volume to that node"),
}

# Where a pod (or claim) template sits, by kind; its `metadata.creationTimestamp: null` is noise.
_TEMPLATES: tuple[FieldPath, ...] = (
    ("spec", "template"),  # Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, ReplicationController
    ("spec", "jobTemplate"),  # CronJob
    ("spec", "jobTemplate", "spec", "template"),
    ("template",),  # PodTemplate
)

# Every field path this rule reports at a fixed place, for rules that leave them to it.
EXPORT_FIELDS: tuple[FieldPath, ...] = (
    ("status",),
    *(("metadata", name) for name in _METADATA),
    *(("metadata", "annotations", name) for name in _ANNOTATIONS),
)

_HINT = "delete it (fieldwarden lint --fix does)"
_NOISE = "null is harmless noise: it is how kubectl prints an unset time"


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield one violation per live-object field present, at the field to delete."""
    if "status" in obj:
        status = obj["status"]
        if _hollow(status):
            yield Violation(("status",), "status holds no value: harmless noise from kubectl or controller-gen output", _HINT, INFO)
        else:
            yield Violation(("status",), "status is written by the cluster; this is an export of a live object", _HINT)
    meta = obj.get("metadata")
    if meta.__class__ is dict or isinstance(meta, Mapping):
        for name, why in _METADATA.items():
            if name not in meta:
                continue
            if name == "creationTimestamp" and meta[name] is None:
                yield Violation(("metadata", name), f"creationTimestamp: {_NOISE}", _HINT, INFO)
            else:
                yield Violation(("metadata", name), f"{name} {why}", _HINT)
        notes = meta.get("annotations")
        if notes is not None and (notes.__class__ is dict or isinstance(notes, Mapping)):
            for note, (kind, why) in _ANNOTATIONS.items():
                if note in notes and kind in ("", obj.get("kind")):
                    yield Violation(("metadata", "annotations", note), f"annotation {note} {why}", _HINT)
    yield from _template_noise(obj)


def _template_noise(obj: Mapping[str, Any]) -> Iterator[Violation]:
    """`creationTimestamp: null` in pod, job and claim templates (info: only noise)."""
    if "spec" not in obj and "template" not in obj:  # where every template path starts (most ConfigMaps)
        return
    templates: list[FieldPath] = list(_TEMPLATES)
    claims = _get(obj, ("spec", "volumeClaimTemplates"))
    if isinstance(claims, list):
        templates += [("spec", "volumeClaimTemplates", i) for i in range(len(claims))]
    for path in templates:
        meta = _get(obj, (*path, "metadata"))
        if meta is not None and (meta.__class__ is dict or isinstance(meta, Mapping)) and "creationTimestamp" in meta and meta["creationTimestamp"] is None:
            yield Violation((*path, "metadata", "creationTimestamp"), f"creationTimestamp: {_NOISE}", _HINT, INFO)


def _get(obj: Any, path: FieldPath) -> Any:
    """The value at `path`, or None when any step is missing or of the wrong type."""
    for part in path:
        if obj.__class__ is dict:  # (first: parsed data holds dicts, and the Mapping check is slower)
            obj = None if isinstance(part, int) else obj.get(part)
        elif obj is None:
            return None
        elif isinstance(part, int):
            obj = obj[part] if isinstance(obj, list) and 0 <= part < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def _hollow(value: Any) -> bool:
    """Whether `value` holds no scalar but null or "" (`{}`, `{loadBalancer: {}}`, controller-gen's stub)."""
    if isinstance(value, Mapping):
        return all(_hollow(v) for v in value.values())
    if isinstance(value, list):
        return all(_hollow(v) for v in value)
    return value is None or value == ""
