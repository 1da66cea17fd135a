"""CRDs read without their schemas until a custom resource needs one (linter/crds.py `skeletons`): the
same catalog, the same compiled schemas and the same findings as reading them whole, on real CRDs and
on the shapes a text cut cannot handle (JSON, flow style, comments, CRLF)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fieldwarden.linter import crds as crds_module, loader
from fieldwarden.linter.crds import in_text, skeletons
from fieldwarden.policies.schemas.crd import Catalog
from tests.helpers import FIXTURES, git_repo, lint

REAL = [
    FIXTURES / "schema_agreement" / "widget-crd.yaml",
    FIXTURES / "repos" / "operator" / "config" / "crd" / "bases" / "cache.example.com_memcacheds.yaml",
    FIXTURES / "repos" / "install-variants" / "manifests" / "install.yaml",
    FIXTURES / "rules" / "live_object_export" / "controller-gen-crd.yaml",
    Path(__file__).parents[1] / "e2e" / "crds" / "cert-manager.yaml",
    Path(__file__).parents[1] / "e2e" / "crds" / "vertical-pod-autoscaler.yaml",
    FIXTURES / "crds" / "prometheus-operator" / "crd-podmonitors.yaml",
    FIXTURES / "crds" / "prometheus-operator" / "crd-prometheusrules.yaml",
]
WIDGET_CRD = REAL[0].read_text()


def same_catalog(text: str) -> tuple[Catalog, Catalog]:
    """The catalog of `text` read as skeletons and read whole, asserted equal in every served version."""
    lazy, whole = Catalog(skeletons(text)), Catalog(in_text(text))
    assert lazy.versions == whole.versions and lazy.sources == whole.sources
    assert lazy.schemas.keys() == whole.schemas.keys()
    for api_version, kind in whole.schemas:
        assert lazy.compiled(api_version, kind, "1.32") == whole.compiled(api_version, kind, "1.32"), (api_version, kind)
    return lazy, whole


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_crds_read_as_skeletons_give_the_same_catalog(path: Path) -> None:
    lazy, _ = same_catalog(path.read_text())
    assert lazy  # (each file holds at least one CRD)


def test_the_schemas_are_read_only_when_a_custom_resource_needs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    text = REAL[6].read_text() + "---\n" + REAL[7].read_text()  # prometheus-operator's: ~87 kB
    read: list[int] = []
    real_load = loader.load

    def counting_load(source: str, *args: Any, **kwargs: Any) -> Any:
        read.append(len(source))
        return real_load(source, *args, **kwargs)

    monkeypatch.setattr(loader, "load", counting_load)
    catalog = Catalog(skeletons(text))
    assert len(catalog.versions) == 2 and sum(read) < len(text) / 10  # the skeletons: a small part of the text
    first = catalog.compiled("monitoring.coreos.com/v1", "PodMonitor", "1.32")
    second = catalog.compiled("monitoring.coreos.com/v1", "PrometheusRule", "1.32")
    assert first is not None and second is not None
    assert read[1:] == [len(text)]  # then the whole text, once, for any number of its schemas


def test_a_comment_at_the_margin_inside_a_schema_does_not_end_it() -> None:
    text = WIDGET_CRD.replace("            status:\n", "# status of the widget\n            status:\n")
    assert text != WIDGET_CRD
    same_catalog(text)


def test_crlf_line_ends_and_two_crds_in_one_stream() -> None:
    second = WIDGET_CRD.replace("widgets.agreement", "gizmos.agreement").replace("kind: Widget", "kind: Gizmo") \
        .replace("plural: widgets", "plural: gizmos")
    lazy, _ = same_catalog((WIDGET_CRD + "\n---\n" + second).replace("\n", "\r\n"))
    assert sorted(k for _, k in lazy.versions) == ["Gizmo", "Widget"]


def test_json_and_flow_style_schemas_are_read_whole() -> None:
    data = yaml.safe_load(WIDGET_CRD)
    as_json = json.dumps(data, indent=2)
    assert crds_module._without_schemas(as_json) is None
    same_catalog(as_json)
    flow = WIDGET_CRD.replace("        openAPIV3Schema:\n          type: object\n",
                              "        openAPIV3Schema: {type: object,\n          x-fieldwarden: 1}\n        x-cut:\n"
                              "          type: object\n")
    assert crds_module._without_schemas(flow) is None


def test_a_cut_that_leaves_the_text_unreadable_falls_back_to_reading_it_whole() -> None:
    # a sequence at the key's own indentation is part of its value: the cut stops before it
    text = WIDGET_CRD.replace("        openAPIV3Schema:\n", "        openAPIV3Schema:\n        - odd\n", 1)
    lazy, whole = Catalog(skeletons(text)), Catalog(in_text(text))
    assert lazy.versions == whole.versions and lazy.schemas == whole.schemas


def test_a_custom_resource_gets_the_same_findings(tmp_path: Path) -> None:
    widget = ("apiVersion: agreement.fieldwarden.io/v1\nkind: Widget\nmetadata:\n  name: gear\nspec:\n"
              "  size: big\n  colour: red\n")
    git_repo(tmp_path, {"crds/widgets.yaml": WIDGET_CRD, "apps/gear.yaml": widget})
    run = lint(["apps/gear.yaml"], cwd=tmp_path)
    found = sorted((f["line"], f["column"], f["code"], f["field"]) for f in run.findings)
    assert run.code == 1 and found == [(6, 3, "FW602", "spec.size"), (7, 3, "FW602", "spec.colour")]
