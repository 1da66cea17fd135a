"""A manifest sets fields that another field manager owns, per its managedFields.

## What it does
When a manifest carries `metadata.managedFields` (it was exported from a cluster),
reports every field of the manifest that a field manager other than "us" owns:
the fields a server-side apply of this manifest, once changed, would conflict on.
The message is worded like the API server's conflict:

    conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas

`with subresource` appears for writes through a subresource (the HPA scales
through `scale`), `using <apiVersion>` for `Update` operations (controllers,
client-side apply), as the API server prints them. A field "us" also owns is
still reported: co-ownership only lasts while the values agree. `status`,
server bookkeeping (`uid`, `resourceVersion`, ...) and the
`last-applied-configuration` annotation are left to `live-object-export`.

Option `field-managers` lists the manager names that are "us", the tools that
apply this manifest. The default covers kubectl: `kubectl` (`kubectl apply --server-side`,
and older kubectl's other writes), `kubectl-client-side-apply` (client-side
`kubectl apply`) and `before-first-apply` (the API server's name for the owner of
the fields an object had when it was first applied server-side). The option
replaces the default; set it to the tools that deploy the manifests:

```yaml
# .fieldwarden.yaml
rules:
  managed-field-conflict:
    field-managers: [helm]                 # Helm (3: Update, 4: Apply)
    # field-managers: [argocd-controller, argocd-application-controller]  # Argo CD
    # field-managers: [kustomize-controller]  # Flux Kustomization
    # field-managers: [helm-controller]       # Flux HelmRelease
```

Malformed `managedFields` are reported once, at `metadata.managedFields`.

## Why is this bad?
Another manager (the HPA's `kube-controller-manager`, an operator, a person with
`kubectl edit`) changes these fields in the cluster. Once the manifest's value
differs, a server-side apply fails with `Apply failed with 1 conflict`; with
`--force-conflicts` (or a client-side apply) it silently takes the field back,
and the two writers fight on every deploy: replicas reset under an HPA, images
rolled back under an image updater.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  managedFields:
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}}}
spec:
  replicas: 3
```

## Use instead
Leave fields that others manage out of the manifest (and drop the exported
`managedFields`):
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec: {}
```
"""

from __future__ import annotations

from collections.abc import Mapping  # (not typing's: its isinstance is several times slower)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator

from ..model import WARNING, Violation
from ..rule import OBJECT
from .live_object_export import LAST_APPLIED_PATH

if TYPE_CHECKING:
    from ..managed_fields import Conflict

CODE = "FW307"
NAME = "managed-field-conflict"
SEVERITY = WARNING
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {
    "field-managers": {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "description": (
            "field manager names that apply these manifests (\"us\"); fields owned by any "
            "other manager are reported. Helm: [helm]; Argo CD: [argocd-controller, "
            "argocd-application-controller]; Flux: [kustomize-controller] or [helm-controller]"
        ),
    },
}
DEFAULTS: dict[str, Any] = {
    "field-managers": ["kubectl", "kubectl-client-side-apply", "before-first-apply"],
}
_MAX_REASON = 200  # error texts quote FieldsV1 keys, which may be huge


def _own_managers(conf: Mapping[str, Any]) -> frozenset[str]:
    value = conf.get("field-managers")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        value = DEFAULTS["field-managers"]
    return frozenset(value)


def manager_text(conflict: Conflict) -> str:
    """The manager as the API server prints it in a conflict (`printManager`)."""
    from ..managed_fields import go_quote

    text = go_quote(conflict.manager)
    if conflict.subresource:
        text += f" with subresource {go_quote(conflict.subresource)}"
    if conflict.operation == "Update" and conflict.api_version:
        text += f" using {conflict.api_version}"
    return text


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield one violation per field (and other manager) an apply would conflict on."""
    meta = obj.get("metadata")
    if not (meta.__class__ is dict or isinstance(meta, Mapping)) or "managedFields" not in meta:
        return
    # imported here: only live exports carry managedFields, and a lint imports what it uses
    from ..managed_fields import ManagedFieldsError, conflicts, go_quote

    mine = _own_managers(conf)
    try:
        found = conflicts(obj, mine)
    except (ManagedFieldsError, RecursionError) as exc:
        # RecursionError: absurdly nested JSON inside a `k:`/`v:` key; untrusted input
        reason = str(exc) if isinstance(exc, ManagedFieldsError) else "a FieldsV1 key nests too deeply"
        if len(reason) > _MAX_REASON:
            reason = reason[: _MAX_REASON - 3] + "..."
        yield Violation(
            ("metadata", "managedFields"),
            f"metadata.managedFields is malformed, field ownership not checked: {reason}",
            "delete metadata.managedFields: only the API server writes it",
        )
        return
    for conflict in found:
        if conflict.path == LAST_APPLIED_PATH:
            continue
        manager = manager_text(conflict)
        yield Violation(
            conflict.path,
            f"conflict with {manager}: {conflict.ssa_path}",
            f"leave the field to {go_quote(conflict.manager)} and out of the manifest, "
            "or add that manager to the rule's field-managers if it applies this manifest",
        )
