"""A CRD's served versions compiled as the API server reads them (policies/schemas/crd.py): CRD dict -> compiled
form -> problems, spelt as kube-apiserver 1.32 spells a custom resource's (tests/e2e/test_schema_agreement.py
checks the same objects against the real server)."""

from __future__ import annotations

from typing import Any

import yaml

from fieldwarden.policies.schemas.crd import Catalog, compile_version, custom_resource, pruned_nulls
from fieldwarden.policies.schemas.validate import describe, validate
from tests.helpers import FIXTURES

CRD: dict[str, Any] = yaml.safe_load((FIXTURES / "schema_agreement" / "widget-crd.yaml").read_text())
WIDGET: dict[str, Any] = {"apiVersion": "agreement.fieldwarden.io/v1", "kind": "Widget", "metadata": {"name": "gear"},
                          "spec": {"size": 3, "mode": "fast", "port": 8080, "labels": {"tier": "front"},
                                   "parts": [{"name": "cog", "count": 2}]}}


def said(obj: dict[str, Any], catalog: Catalog | None = None) -> list[tuple[tuple[str | int, ...], str]]:
    compiled, problems = custom_resource(catalog or Catalog([CRD]), obj, "1.32")
    assert compiled is not None
    return [(p.path, describe(p)) for p in problems]


def widget(**spec: Any) -> dict[str, Any]:
    return {**WIDGET, "spec": {**WIDGET["spec"], **spec}}


def test_a_valid_widget_and_what_the_schema_leaves_open() -> None:
    assert said(WIDGET) == []
    assert said(widget(port="http")) == []  # x-kubernetes-int-or-string
    assert said(widget(extra={"anything": [1, {"deep": True}]})) == []  # x-kubernetes-preserve-unknown-fields
    assert said(widget(note=None)) == []  # nullable
    assert said(widget(template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"image": "a"}})) == []
    assert said(widget(size=0)) == []  # minimum: not checked offline (docs/schema-validation.md)


def test_unknown_fields_everywhere_the_server_refuses_them() -> None:
    assert said(widget(colour="red")) == [(("spec", "colour"), 'unknown field "spec.colour"')]
    assert said({**WIDGET, "size": 3}) == [(("size",), 'unknown field "size"')]
    assert said({**WIDGET, "metadata": {"name": "gear", "title": "Gear"}}) == [
        (("metadata", "title"), 'unknown field "metadata.title"')]  # the built-in ObjectMeta, whatever the CRD says
    assert said(widget(parts=[{"name": "cog", "weight": 5}])) == [
        (("spec", "parts", 0, "weight"), 'unknown field "spec.parts[0].weight"')]
    assert said(widget(template={"apiVersion": "v1", "kind": "Pod", "spec": {"image": "a", "tag": "v1"}})) == [
        (("spec", "template", "spec", "tag"), 'unknown field "spec.template.spec.tag"')]


def test_an_embedded_resource_needs_its_apiversion_and_kind() -> None:
    assert said(widget(template={"spec": {"image": "a"}})) == [
        (("spec", "template"), "spec.template.apiVersion: Required value"),
        (("spec", "template"), "spec.template.kind: Required value")]


def test_types_enums_required_and_a_map_key_after_a_dot() -> None:
    assert said(widget(size="big")) == [(("spec", "size"), "spec.size: expected integer, got string")]
    assert said(widget(enabled="yes")) == [(("spec", "enabled"), "spec.enabled: expected boolean, got string")]
    assert said(widget(labels={"tier": 1})) == [(("spec", "labels", "tier"), "spec.labels.tier: expected string, got integer")]
    assert said(widget(mode="slow")) == [
        (("spec", "mode"), 'spec.mode: Unsupported value: "slow": supported values: "fast", "safe"')]
    assert said(widget(parts=[{"count": 2}])) == [(("spec", "parts", 0), "spec.parts[0].name: Required value")]
    spec = dict(WIDGET["spec"])
    del spec["size"]
    assert said({**WIDGET, "spec": spec}) == [(("spec",), "spec.size: Required value")]


def test_a_null_where_the_schema_is_not_nullable_is_pruned_as_the_server_prunes_it() -> None:
    assert said(widget(owner=None)) == []  # (kube-apiserver 1.32 accepts it: the field is dropped)
    assert said(widget(size=None)) == [(("spec",), "spec.size: Required value")]
    compiled = Catalog([CRD]).compiled("agreement.fieldwarden.io/v1", "Widget", "1.32")
    assert compiled is not None
    kept = widget(note=None)
    assert pruned_nulls(compiled, kept) is kept
    assert pruned_nulls(compiled, widget(owner=None)) == WIDGET


def test_a_required_field_with_a_default_is_filled_by_the_server() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "required": ["size", "mode"], "properties": {
        "size": {"type": "integer", "default": 1}, "mode": {"type": "string"}}}}}
    problems = validate(compile_version(schema), {"apiVersion": "x/v1", "kind": "X", "spec": {}})
    assert [describe(p) for p in problems] == ["spec.mode: Required value"]


def test_only_served_versions_and_the_first_crd_of_a_kind_count() -> None:
    catalog = Catalog([CRD])
    assert catalog.compiled("agreement.fieldwarden.io/v1alpha1", "Widget", "1.32") is None
    assert catalog.unserved("agreement.fieldwarden.io/v1alpha1", "Widget") == (
        "apiVersion", "Widget agreement.fieldwarden.io/v1alpha1 is not served by its CRD widgets.agreement.fieldwarden.io "
        "(served: agreement.fieldwarden.io/v1)")
    assert catalog.unserved("agreement.fieldwarden.io/v1", "Gizmo") == (
        "kind", 'the CRDs of agreement.fieldwarden.io define no kind "Gizmo" (they define Widget)')
    assert catalog.unserved("other.example.com/v1", "Gizmo") is None
    open_crd = yaml.safe_load(yaml.safe_dump(CRD))
    open_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert said(widget(colour="red"), Catalog([CRD, open_crd])) == [(("spec", "colour"), 'unknown field "spec.colour"')]
    assert said(widget(colour="red"), Catalog([CRD]).with_crds([open_crd])) == []  # a render's own CRD first


def test_malformed_crds_are_skipped_not_raised() -> None:
    catalog = Catalog([{"spec": None}, {"spec": {"group": "a.example.com", "names": {"kind": "A"}, "versions": "v1"}},
                       {"spec": {"group": "b.example.com", "names": {"kind": "B"}, "versions": [None, {"name": "v1", "served": True}]}}])
    assert sorted(catalog.versions) == [("b.example.com", "B")]
    compiled = catalog.compiled("b.example.com/v1", "B", "1.32")  # no schema: an object with apiVersion, kind, metadata
    assert compiled is not None and [describe(p) for p in validate(compiled, {"apiVersion": "b.example.com/v1", "kind": "B",
                                                                                "spec": {}})] == ['unknown field "spec"']
