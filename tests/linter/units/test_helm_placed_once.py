"""A finding's place on a chart's rendered object is worked out from the chart's files (helm.bind): a
document the chart's value sets render alike is read and mapped once for all of them, and only the
templates that define a helper it uses are parsed for it (issue 23 row e: placing 70 findings on
prometheus-community/helm-charts cf408a290's charts, after every render had ended, parsed ~360
templates again, most of them only `include`-ing the helpers, and read and mapped each set's copy of
one object anew).

The ledger fixture (tests/fixtures/repos/helm-chart, chart-testing's ci/*-values.yaml layout, as
prometheus-community's charts have it) renders its ServiceAccount and Service alike in its three
value sets and its Deployment differently in each.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fieldwarden.linter.units import helm, helmmap

pytest.importorskip("helm_python")

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "repos" / "helm-chart"
CHART = "charts/ledger"
SETS = [helm.ValueSet(()), helm.ValueSet((f"{CHART}/ci/ha-values.yaml",)), helm.ValueSet((f"{CHART}/ci/recreate-values.yaml",))]


def _kind(render: helm.Render, kind: str) -> helm.RenderedObject:
    return next(obj for obj in render.objects if f"\nkind: {kind}\n" in obj.text)


def _apart(renders: list[helm.Render]) -> list[list[dict[helm.FieldPath, helm.Place]]]:
    """Each set's objects placed as each set alone would place them (a chart context of its own)."""
    for value_set, render in zip(SETS, renders):
        helm.bind(REPO, CHART, value_set, render)
    return [[obj.positions for obj in render.objects] for render in renders]


def test_a_document_the_sets_render_alike_is_read_once_and_each_sets_places_are_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    account = [_kind(render, "ServiceAccount") for render in renders]
    deployment = [_kind(render, "Deployment") for render in renders]
    assert account[0].text == account[1].text == account[2].text  # the same document in every set
    assert len({obj.text for obj in deployment}) == 3  # a document each set renders its own way
    read: list[str] = []
    mapped: list[str] = []
    real_load, real_map = helm.load, helmmap.map_object
    monkeypatch.setattr(helm, "load", lambda text: read.append(text) or real_load(text))
    monkeypatch.setattr(helmmap, "map_object", lambda node, template, *rest: mapped.append(template.file)
                        or real_map(node, template, *rest))
    placed = [[obj.positions for obj in render.objects] for render in renders]
    assert read.count(account[0].text) == 1 and mapped.count(f"{CHART}/templates/serviceaccount.yaml") == 1
    assert all(read.count(obj.text) == 1 for obj in deployment)  # a changed document is read anew
    assert mapped.count(f"{CHART}/templates/deployment.yaml") == 3
    monkeypatch.setattr(helm, "load", real_load)
    monkeypatch.setattr(helmmap, "map_object", real_map)
    assert placed == _apart(helm.render_chart_sets(REPO, CHART, SETS))
    replicas = [obj.positions[("spec", "replicas")] for obj in deployment]
    assert replicas == [(f"{CHART}/templates/deployment.yaml", 9, 3)] * 3


def test_placing_a_finding_parses_its_template_and_the_helpers_definitions_only(monkeypatch: pytest.MonkeyPatch) -> None:
    renders = helm.render_chart_sets(REPO, CHART, SETS[:1])
    parsed: list[str] = []
    real_parse = helmmap.parse_template
    monkeypatch.setattr(helmmap, "parse_template", lambda text, file: parsed.append(file) or real_parse(text, file))
    deployment = _kind(renders[0], "Deployment")
    labels = deployment.positions
    assert labels[("metadata", "labels", "app.kubernetes.io/managed-by")] == (f"{CHART}/templates/_helpers.tpl", 42, 1)
    assert labels[("metadata", "labels", "app.kubernetes.io/component")] == (f"{CHART}/templates/deployment.yaml", 7, 5)
    # hpa.yaml, pdb.yaml, service.yaml... `include` the same helpers: not read for this object
    assert sorted(parsed) == [f"{CHART}/templates/_helpers.tpl", f"{CHART}/templates/deployment.yaml"]


def test_the_findings_of_each_set_keep_their_lines_and_units(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    done = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--format", "json", "charts/ledger"],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    import json

    found = {(f["file"], f["line"], f["column"], f["code"], tuple(f.get("units") or ())) for f in json.loads(done.stdout)}
    assert (f"{CHART}/templates/deployment.yaml", 9, 3, "FW301", (f"{CHART} (helm, ci/ha-values.yaml)",)) in found
    assert (f"{CHART}/values.yaml", 35, 3, "FW202", (f"{CHART} (helm, ci/recreate-values.yaml)",)) in found
    assert (f"{CHART}/values.yaml", 71, 5, "FW202", (f"{CHART} (helm, ci/recreate-values.yaml)",)) in found
