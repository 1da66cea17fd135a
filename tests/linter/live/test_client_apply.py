"""client_apply: client-side `kubectl apply`'s three-way patch, recomputed (pure: no cluster).

The schema below is a cut of the API server's OpenAPI v3 document for apps/v1 (the extensions
kubectl reads); tests/e2e/test_live_lint.py checks the patches' outcome against a real server and
against kubectl's own `--dry-run=server`.
"""

from __future__ import annotations

import json
from typing import Any

from fieldwarden.linter.live.client_apply import modified_configuration, root_schema, three_way_patch
from fieldwarden.policies.live import LAST_APPLIED

REF = "#/components/schemas/"
DOCUMENT: dict[str, Any] = {"components": {"schemas": {
    "io.k8s.api.apps.v1.Deployment": {
        "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Deployment"}],
        "properties": {"metadata": {"allOf": [{"$ref": REF + "Meta"}]}, "spec": {"allOf": [{"$ref": REF + "Spec"}]}}},
    "Meta": {"properties": {"finalizers": {"type": "array", "items": {"type": "string"},
                                           "x-kubernetes-patch-strategy": "merge"},
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "Spec": {"properties": {
        "strategy": {"allOf": [{"$ref": REF + "Strategy"}], "x-kubernetes-patch-strategy": "retainKeys"},
        "template": {"allOf": [{"$ref": REF + "Template"}]}}},
    "Strategy": {"properties": {"type": {"type": "string"}, "rollingUpdate": {"type": "object"}}},
    "Template": {"properties": {"spec": {"allOf": [{"$ref": REF + "PodSpec"}]}}},
    "PodSpec": {"properties": {"containers": {
        "type": "array", "items": {"allOf": [{"$ref": REF + "Container"}]},
        "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}},
    "Container": {"properties": {"args": {"type": "array", "items": {"type": "string"}}}},
}}}
SCHEMA = root_schema(DOCUMENT, "apps", "v1", "Deployment")


def deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}


def without_annotation(patch: dict[str, Any]) -> dict[str, Any]:
    meta = patch.get("metadata") or {}
    meta.get("annotations", {}).pop(LAST_APPLIED, None)
    if meta.get("annotations") == {}:
        meta.pop("annotations")
    if meta == {}:
        patch.pop("metadata", None)
    return patch


def test_the_annotation_is_the_manifest_itself() -> None:
    manifest = deployment(replicas=2)
    text = modified_configuration(manifest)["metadata"]["annotations"][LAST_APPLIED]
    assert json.loads(text) == manifest and text.endswith("\n")


def test_retain_keys_drops_the_defaulted_rolling_update_of_recreate() -> None:
    live = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}})
    patch = three_way_patch(deployment(strategy={"type": "Recreate"}), live, None, SCHEMA)
    assert without_annotation(patch) == {"spec": {"strategy": {"type": "Recreate", "$retainKeys": ["type"]}}}


def test_fields_dropped_since_the_last_apply_are_deleted_and_others_left_alone() -> None:
    original = deployment(replicas=3, paused=False)
    live = deployment(replicas=4, paused=False, revisionHistoryLimit=10)  # replicas by an HPA, a default
    patch = three_way_patch(deployment(), live, original, SCHEMA)
    assert without_annotation(patch) == {"spec": {"replicas": None, "paused": None}}


def test_lists_merged_by_key_get_item_patches_deletions_and_their_order() -> None:
    template = lambda *containers: {"spec": {"containers": list(containers)}}  # noqa: E731
    original = deployment(template=template({"name": "a", "image": "a:1"}, {"name": "old", "image": "o"}))
    live = deployment(template=template({"name": "a", "image": "a:1", "imagePullPolicy": "IfNotPresent"},
                                        {"name": "old", "image": "o"}, {"name": "sidecar", "image": "s"}))
    manifest = deployment(template=template({"name": "a", "image": "a:2"}, {"name": "new", "image": "n"}))
    patch = without_annotation(three_way_patch(manifest, live, original, SCHEMA))
    assert patch == {"spec": {"template": {"spec": {
        "containers": [{"name": "a", "image": "a:2"}, {"name": "new", "image": "n"}, {"name": "old", "$patch": "delete"}],
        "$setElementOrder/containers": [{"name": "a"}, {"name": "new"}],
    }}}}  # the sidecar another writer added stays


def test_merged_scalar_lists_and_atomic_lists() -> None:
    original = {**deployment(), "metadata": {"name": "web", "finalizers": ["a", "b"]}}
    live = {**deployment(), "metadata": {"name": "web", "finalizers": ["a", "b", "x"]}}
    manifest = {**deployment(), "metadata": {"name": "web", "finalizers": ["a", "c"]}}
    patch = without_annotation(three_way_patch(manifest, live, original, SCHEMA))
    assert patch == {"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["b"],
                                  "$setElementOrder/finalizers": ["a", "c"]}}  # x, another writer's, stays
    args = deployment(template={"spec": {"containers": [{"name": "a", "args": ["--x"]}]}})
    live_args = deployment(template={"spec": {"containers": [{"name": "a", "args": ["--x", "--y"]}]}})
    assert without_annotation(three_way_patch(args, live_args, args, SCHEMA)) == {"spec": {"template": {"spec": {
        "containers": [{"name": "a", "args": ["--x"]}], "$setElementOrder/containers": [{"name": "a"}]}}}}


def test_custom_resources_get_a_json_merge_patch_with_whole_lists() -> None:
    original = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": 1, "l": [1]}}
    live = {**original, "spec": {"a": 1, "l": [1], "b": 2}}
    manifest = {**original, "spec": {"l": [1, 2]}}
    assert without_annotation(three_way_patch(manifest, live, original, None)) == {"spec": {"a": None, "l": [1, 2]}}


def test_nothing_to_change_is_an_empty_patch_but_for_the_annotation() -> None:
    manifest = deployment(replicas=2)
    live = modified_configuration(manifest)
    assert three_way_patch(manifest, live, manifest, SCHEMA) == {}
