"""The admission side of the policy core: requests, verdicts and the autoscaler index.

Admission rules are rule modules with SCOPE "admission" (see policies/rule.py) and
one of two pure functions:

- `validate(request, conf, autoscalers) -> Verdict | None` (a validating rule): None
  when the rule has nothing to say;
- `mutate(request, draft, conf, autoscalers) -> list[str]` (a mutating rule): read
  `draft.object` and change it only through `draft.writable(path)` (a copy-on-write
  `policies.draft.Draft` of `request.object`, which the webhook diffs into one JSON
  patch), and return warnings for the response.

Both read only the request and the options; the webhook does the guard clauses
(exempt namespaces, users, groups, the `fieldwarden.io/ignore` annotation,
enforcement mode) so the rules stay small.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple

from .autoscalers import is_horizontal_autoscaler, is_vpa, scale_target, vpa_target
from .model import ObjectKey

VALIDATING = "validating"
MUTATING = "mutating"


class AdmissionRequest(NamedTuple):
    """The parts of an admission.k8s.io/v1 AdmissionRequest the rules read (plain data)."""

    uid: str
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    group: str  # of request.kind
    version: str
    kind: str
    resource: str  # request.resource.resource, e.g. "pods"
    sub_resource: str  # "" | "status" | "scale" | "resize" | "ephemeralcontainers" | ...
    namespace: str  # request.namespace ("" for cluster-scoped)
    name: str  # request.name ("" when generateName is used)
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool
    username: str
    groups: tuple[str, ...]


class Verdict(NamedTuple):
    """What a validating rule says about a request."""

    allowed: bool
    message: str  # why (for a denial: the status message; else a warning)
    warnings: tuple[str, ...] = ()


class AutoscalerIndex:
    """HPAs (and KEDA ScaledObjects) and VPAs by the (namespace, group, kind, name) they target.

    Built from plain autoscaler objects; `put` and `remove` keep it current under a watch.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), default_namespace: str = "default") -> None:
        self.default_namespace = default_namespace
        self._by_identity: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self._horizontal: dict[ObjectKey, dict[tuple[str, str, str], Mapping[str, Any]]] = {}
        self._vertical: dict[ObjectKey, dict[tuple[str, str, str], Mapping[str, Any]]] = {}
        for obj in objects:
            self.put(obj)

    def _identity(self, obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return None
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
        return (str(obj.get("kind", "")), namespace or self.default_namespace, meta["name"])

    def put(self, obj: Mapping[str, Any]) -> None:
        """Add or replace an autoscaler (anything else is ignored)."""
        identity = self._identity(obj)
        if identity is None:
            return
        self.remove(obj)
        if is_horizontal_autoscaler(obj):
            target = scale_target(obj, self.default_namespace)
            table = self._horizontal
        elif is_vpa(obj):
            target = vpa_target(obj, self.default_namespace)
            table = self._vertical
        else:
            return
        self._by_identity[identity] = obj
        if target is not None:
            table.setdefault(target, {})[identity] = obj

    def remove(self, obj: Mapping[str, Any]) -> None:
        """Forget an autoscaler (by kind, namespace and name)."""
        identity = self._identity(obj)
        if identity is None or identity not in self._by_identity:
            return
        del self._by_identity[identity]
        for table in (self._horizontal, self._vertical):
            for key in [k for k, found in table.items() if identity in found]:
                del table[key][identity]
                if not table[key]:
                    del table[key]

    def horizontal(self, target: ObjectKey) -> list[Mapping[str, Any]]:
        """HPAs / ScaledObjects that scale `target`."""
        return list(self._horizontal.get(target, {}).values())

    def vertical(self, target: ObjectKey) -> list[Mapping[str, Any]]:
        """VPAs that target `target` (whatever their updateMode)."""
        return list(self._vertical.get(target, {}).values())

    def __len__(self) -> int:
        return len(self._by_identity)
