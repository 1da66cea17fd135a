"""A manifest is an export of a live object: it carries fields only the cluster writes.

## What it does
Reports, one finding per field, what `kubectl get -o yaml` (or `-o json`) copies
from a live object into a file:

- top-level `status` (even `status: {}`);
- `metadata.managedFields`, `metadata.uid`, `metadata.resourceVersion`,
  `metadata.creationTimestamp`, `metadata.generation`, `metadata.selfLink`;
- the annotation `kubectl.kubernetes.io/last-applied-configuration`.

A field counts whatever its value, so `creationTimestamp: null` and `status: {}`
(what `kubectl create --dry-run=client -o yaml` prints) are reported too: they are
harmless but noisy, and `--fix` removes them with the rest. The pod template's
`spec.template.metadata.creationTimestamp: null` is not reported: the server never
writes it, it is only how Go prints an empty time.

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
- `status`, `creationTimestamp`, `generation` and `selfLink` are ignored or
  overwritten by the API server, and make every review diff noisy.

A `status` is only desired state for a custom resource whose definition has no
`status` subresource; suppress the finding there
(`# fieldwarden: ignore[live-object-export]`).

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
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

from typing import Any, Iterator, Mapping

from ..model import ERROR, FieldPath, Violation
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
    "managedFields": "is the API server's field-ownership record of a live object",
    "uid": "names one live object: once it is re-created, an apply fails the UID precondition",
    "resourceVersion": (
        "is a live object's optimistic-lock token: once stale, an apply fails "
        "with `the object has been modified`"
    ),
    "creationTimestamp": "is set by the API server; the value here is ignored",
    "generation": "is counted by the API server; the value here is ignored",
    "selfLink": "is a read-only field of live objects (no longer set since Kubernetes 1.20)",
}

# Every field this rule reports, for rules that leave them to it.
EXPORT_FIELDS: tuple[FieldPath, ...] = (
    ("status",),
    *(("metadata", name) for name in _METADATA),
    LAST_APPLIED_PATH,
)

_HINT = "delete it; `fieldwarden lint --fix` does"


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield one violation per live-object field present, at the field to delete."""
    if "status" in obj:
        status = obj["status"]
        if status is None or status == {}:
            message = "empty status is an export artefact; only the cluster writes status"
        else:
            message = "status is written by the cluster: this manifest is an export of a live object"
        yield Violation(("status",), message, _HINT)
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return
    for name, why in _METADATA.items():
        if name not in meta:
            continue
        if name == "creationTimestamp" and meta[name] is None:
            why = "null is noise from `kubectl create --dry-run -o yaml`; the API server sets it"
            yield Violation(("metadata", name), f"metadata.creationTimestamp: {why}", _HINT)
            continue
        yield Violation(("metadata", name), f"metadata.{name} {why}", _HINT)
    notes = meta.get("annotations")
    if isinstance(notes, Mapping) and LAST_APPLIED in notes:
        yield Violation(
            LAST_APPLIED_PATH,
            f"annotation {LAST_APPLIED} is kubectl's record of a past apply; "
            "committed, it goes stale and misleads the next three-way merge",
            _HINT,
        )
