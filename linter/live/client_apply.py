"""What client-side `kubectl apply` sends for an existing object: its three-way patch, recomputed.

kubectl compares three versions: the last applied configuration (the object's
`kubectl.kubernetes.io/last-applied-configuration` annotation: "original"), the manifest with
that annotation updated ("modified") and the live object ("current"). Its patch sets what the
manifest changes against the live object and deletes what the manifest dropped since the last
apply; what others added and the manifest never had is left alone. For built-in kinds it is a
strategic merge patch whose list and map handling comes from the API's `x-kubernetes-patch-strategy`
and `x-kubernetes-patch-merge-key` (read here from the cluster's own OpenAPI v3 documents):

- a list merged by key (containers by `name`) gets one entry per changed item, with its key,
  `{"name": ..., "$patch": "delete"}` for an item dropped since the last apply, and
  `$setElementOrder/<field>`; a merged list of scalars (finalizers) its new items and
  `$deleteFromPrimitiveList/<field>`; any other list is replaced whole when it differs;
- a map with strategy `retainKeys` (a Deployment's `strategy`, a volume) gets `$retainKeys`: the
  server then drops the keys the manifest does not set, which is why a client-side apply of
  `type: Recreate` clears the defaulted `rollingUpdate` and a server-side one does not.

Custom resources get a JSON merge patch (lists replaced whole), as kubectl sends them. This is
a reimplementation of the documented behaviour for prediction, not kubectl's code; the
annotation's JSON differs from kubectl's in escaping details, which the checks do not judge.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ...policies.live import LAST_APPLIED, MISSING, same

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"

# Groups whose kinds kubectl knows (its scheme): they get strategic merge patches. Other groups,
# the custom resources' (autoscaling.k8s.io's VPA included), get JSON merge patches.
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "extensions", "networking.k8s.io", "rbac.authorization.k8s.io",
    "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
    "certificates.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io",
    "flowcontrol.apiserver.k8s.io", "node.k8s.io", "scheduling.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "resource.k8s.io", "storagemigration.k8s.io", "internal.apiserver.k8s.io",
})


class Schema:
    """A node of an OpenAPI v3 document, with the patch strategy of the field that leads to it."""

    def __init__(self, schemas: Mapping[str, Any], node: Mapping[str, Any], strategy: str = "", merge_key: str = "") -> None:
        self.schemas = schemas
        self.node = self._resolve(node)
        self.strategy = strategy
        self.merge_key = merge_key

    def _resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        for _ in range(32):  # a reference chain, never a cycle at one node
            ref = node.get("$ref")
            if ref is None:
                parts = node.get("allOf")
                if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], Mapping):
                    ref = parts[0].get("$ref")
            if not isinstance(ref, str):
                return node
            found = self.schemas.get(ref.rsplit("/", 1)[-1])
            if not isinstance(found, Mapping):
                return node
            node = found
        return node

    def field(self, name: str) -> Schema | None:
        """The schema of a map's field (or of any value of a string map)."""
        properties = self.node.get("properties")
        prop = properties.get(name) if isinstance(properties, Mapping) else None
        if not isinstance(prop, Mapping):
            extra = self.node.get("additionalProperties")
            return Schema(self.schemas, extra) if isinstance(extra, Mapping) else None
        return Schema(self.schemas, prop, str(prop.get("x-kubernetes-patch-strategy") or ""),
                      str(prop.get("x-kubernetes-patch-merge-key") or ""))

    def items(self) -> Schema | None:
        items = self.node.get("items")
        return Schema(self.schemas, items) if isinstance(items, Mapping) else None


def root_schema(document: Mapping[str, Any], group: str, version: str, kind: str) -> Schema | None:
    """The schema of `kind` in an OpenAPI v3 document of its group-version, or None."""
    schemas = (document.get("components") or {}).get("schemas") or {}
    for node in schemas.values():
        for gvk in node.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return Schema(schemas, node)
    return None


def modified_configuration(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with its last-applied annotation set to itself, as kubectl sends it."""
    without = json.loads(json.dumps(manifest))
    notes = (without.get("metadata") or {}).get("annotations")
    if isinstance(notes, dict):
        notes.pop(LAST_APPLIED, None)
        if not notes:
            without["metadata"].pop("annotations")
    text = json.dumps(without, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
    modified: dict[str, Any] = json.loads(json.dumps(manifest))
    meta = modified.setdefault("metadata", {})
    meta.setdefault("annotations", {})[LAST_APPLIED] = text
    return modified


def three_way_patch(manifest: Mapping[str, Any], live: Mapping[str, Any], original: Mapping[str, Any] | None,
                    schema: Schema | None) -> dict[str, Any]:
    """kubectl's patch from `original` (the last applied configuration) to the manifest, against `live`.

    `schema` None: a JSON merge patch (custom resources); else a strategic merge patch.
    """
    return _maps(original or {}, modified_configuration(manifest), live, schema, schema is not None)


def _maps(original: Mapping[str, Any], modified: Mapping[str, Any], current: Mapping[str, Any], schema: Schema | None,
          strategic: bool) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, wanted in modified.items():
        have = current.get(key, MISSING)
        before = original.get(key, MISSING)
        sub = schema.field(key) if schema is not None else None
        if have is MISSING or wanted is None:
            if not (have is MISSING and wanted is None):
                patch[key] = wanted
        elif isinstance(wanted, Mapping) and isinstance(have, Mapping):
            inner = _maps(before if isinstance(before, Mapping) else {}, wanted, have, sub, strategic)
            if inner:
                patch[key] = inner
        elif isinstance(wanted, list) and isinstance(have, list) and strategic:
            _lists(patch, key, before if isinstance(before, list) else [], wanted, have, sub)
        elif not same(wanted, have):
            patch[key] = wanted
    for key in original:
        if key not in modified and key in current:
            patch[key] = None
    if patch and strategic and schema is not None and "retainKeys" in schema.strategy:
        patch["$retainKeys"] = sorted(modified)
    return patch


def _lists(patch: dict[str, Any], key: str, original: list[Any], modified: list[Any], current: list[Any],
           schema: Schema | None) -> None:
    strategy = schema.strategy if schema is not None else ""
    merge_key = schema.merge_key if schema is not None else ""
    if "merge" in strategy and merge_key and all(isinstance(item, Mapping) for item in modified):
        live = {item.get(merge_key): item for item in current if isinstance(item, Mapping)}
        before = {item.get(merge_key): item for item in original if isinstance(item, Mapping)}
        items: list[Any] = []
        item_schema = schema.items() if schema is not None else None
        for item in modified:
            name = item.get(merge_key)
            have = live.get(name)
            if have is None:
                items.append(item)
                continue
            inner = _maps(before.get(name) or {}, item, have, item_schema, True)
            if inner:
                items.append({merge_key: name, **inner})
        names = {item.get(merge_key) for item in modified}
        items.extend({merge_key: name, "$patch": "delete"} for name in before if name not in names and name in live)
        if items:
            patch[key] = items
            patch[f"$setElementOrder/{key}"] = [{merge_key: item.get(merge_key)} for item in modified]
    elif "merge" in strategy and not any(isinstance(item, (Mapping, list)) for item in modified):
        added = [item for item in modified if not any(same(item, x) for x in current)]
        dropped = [item for item in original if not any(same(item, x) for x in modified)]
        if added:
            patch[key] = added
        if dropped:
            patch[f"$deleteFromPrimitiveList/{key}"] = dropped
        if added or dropped:
            patch[f"$setElementOrder/{key}"] = list(modified)
    elif not same(modified, current):
        patch[key] = modified
