"""The namespace the objects go to does not exist in the cluster (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, reports once per namespace that the cluster does not have
and the manifests do not create either: on the first object that goes there (its
`metadata.namespace`, or its `metadata` when the namespace is the default one), with the
number of objects concerned and the API server's message (`namespaces "shop" not found`).
Objects of a namespace that a Namespace manifest of the same run creates are not checked (a
dry run cannot see a namespace that does not exist yet), and a notice says so.

## Why is this bad?
Every object of that namespace fails to apply. It usually means a typo, a namespace created
by hand in one cluster and forgotten in the next, or a deploy order that relies on another
repository.

## Example
```yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shpo   # the cluster has `shop`
```

## Use instead
Fix the namespace, or add its Namespace manifest to what is applied first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW508"
NAME = "namespace-missing"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Once per missing namespace, on its first object."""
    from ..live import nearest, status_message

    if not case.missing_namespace:
        return
    meta = case.manifest.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    said = status_message(case.refusal or {})
    count = case.missing_namespace
    objects = f"{count} object{'s' if count != 1 else ''} of these manifests go{'es' if count == 1 else ''} there"
    yield Violation(
        nearest(case.manifest, ("metadata", "namespace"), case.manifest),
        f"the namespace does not exist in the cluster{f' ({said})' if said else ''}: {objects}, and the apply "
        "fails for each",
        f"create the namespace first, or fix metadata.namespace{f' ({namespace})' if namespace else ''}",
    )
