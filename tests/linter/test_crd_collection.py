"""Custom resources validated against the CRDs of the run (linter/crds.py): found in other files of the
project, in a chart's own render, across worker processes; kinds with no CRD at hand reported once."""

from __future__ import annotations

from pathlib import Path

import pytest

from fieldwarden.linter import engine
from fieldwarden.linter.crds import catalog
from fieldwarden.linter.units import tools
from fieldwarden.policies.config import Settings
from tests.helpers import FIXTURES, git_repo, lint

CRD = (FIXTURES / "schema_agreement" / "widget-crd.yaml").read_text()
WIDGET = """\
apiVersion: agreement.fieldwarden.io/v1
kind: Widget
metadata:
  name: gear
spec:
  size: big
  colour: red
  parts:
    - count: 2
"""
GADGETS = """\
apiVersion: gadgets.example.com/v1
kind: Gadget
metadata: {name: one}
---
apiVersion: gadgets.example.com/v1
kind: Gadget
metadata: {name: two}
---
apiVersion: gadgets.example.com/v1
kind: Sprocket
metadata: {name: three}
"""


def schema_findings(run_findings: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return sorted((f["file"], f["line"], f["column"], f["code"], f["severity"], f["message"]) for f in run_findings
                  if str(f["code"]).startswith("FW6"))


def test_a_custom_resource_is_validated_against_the_crd_in_another_file(tmp_path: Path) -> None:
    git_repo(tmp_path, {"crds/widgets.yaml": CRD, "apps/gear.yaml": WIDGET})
    run = lint(["--k8s-version", "1.32", "apps/gear.yaml"], cwd=tmp_path)
    assert run.code == 1
    assert schema_findings(run.findings) == [
        ("apps/gear.yaml", 6, 3, "FW602", "error", "spec.size: expected integer, got string"),
        ("apps/gear.yaml", 7, 3, "FW602", "error", 'unknown field "spec.colour"'),
        ("apps/gear.yaml", 9, 7, "FW602", "error", "spec.parts[0].name: Required value"),
    ]


def test_the_crd_in_the_same_file_counts_too(tmp_path: Path) -> None:
    git_repo(tmp_path, {"all.yaml": CRD + "---\n" + WIDGET.replace("  size: big\n", "  size: 3\n")})
    run = lint(["--k8s-version", "1.32", "all.yaml"], cwd=tmp_path)
    offset = CRD.count("\n") + 1
    assert [(f[1], f[3]) for f in schema_findings(run.findings)] == [(offset + 7, "FW602"), (offset + 9, "FW602")]


def test_without_its_crd_a_kind_is_reported_once_per_run_as_not_validated(tmp_path: Path) -> None:
    git_repo(tmp_path, {"a.yaml": GADGETS, "b.yaml": GADGETS, "crds/widgets.yaml": CRD})
    run = lint(["--k8s-version", "1.32", "a.yaml", "b.yaml"], cwd=tmp_path)
    assert run.code == 0  # info: never fails a run
    assert schema_findings(run.findings) == [
        ("a.yaml", 2, 1, "FW603", "info", "Gadget gadgets.example.com/v1 is not validated: no CRD for it among the linted files"),
        ("a.yaml", 10, 1, "FW603", "info",
         "Sprocket gadgets.example.com/v1 is not validated: no CRD for it among the linted files"),
    ]


def test_with_no_context_the_crd_elsewhere_is_not_at_hand(tmp_path: Path) -> None:
    git_repo(tmp_path, {"crds/widgets.yaml": CRD, "apps/gear.yaml": WIDGET})
    run = lint(["--k8s-version", "1.32", "--no-context", "apps/gear.yaml"], cwd=tmp_path)
    assert run.code == 0
    assert [(f[1], f[3], f[4]) for f in schema_findings(run.findings)] == [(2, "FW603", "info")]


def test_a_kind_or_version_its_groups_crds_do_not_serve_is_fw601(tmp_path: Path) -> None:
    alpha = WIDGET.replace("fieldwarden.io/v1", "fieldwarden.io/v1alpha1")
    typo = WIDGET.replace("kind: Widget", "kind: Widgit")
    git_repo(tmp_path, {"crds/widgets.yaml": CRD, "alpha.yaml": alpha, "typo.yaml": typo})
    run = lint(["--k8s-version", "1.32", "alpha.yaml", "typo.yaml"], cwd=tmp_path)
    assert run.code == 1
    assert schema_findings(run.findings) == [
        ("alpha.yaml", 1, 1, "FW601", "error", "Widget agreement.fieldwarden.io/v1alpha1 is not served by its CRD "
         "widgets.agreement.fieldwarden.io (served: agreement.fieldwarden.io/v1)"),
        ("typo.yaml", 2, 1, "FW601", "error",
         'the CRDs of agreement.fieldwarden.io define no kind "Widgit" (they define Widget)'),
    ]


CHART_CRD = CRD.replace("name: widgets.agreement.fieldwarden.io", "name: widgets.{{ .Values.group }}").replace(
    "group: agreement.fieldwarden.io", "group: {{ .Values.group }}")


def test_a_chart_s_rendered_crd_counts_for_the_chart_s_own_custom_resources(tmp_path: Path) -> None:
    """The CRD is a template (no plain file holds it): the chart's render has it, for the chart's objects only."""
    git_repo(tmp_path, {
        "chart/Chart.yaml": "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
        "chart/values.yaml": "group: agreement.fieldwarden.io\n",
        "chart/templates/crd.yaml": CHART_CRD,
        "chart/templates/gear.yaml": WIDGET.replace("agreement.fieldwarden.io/v1", "{{ .Values.group }}/v1"),
        "plain/gear.yaml": WIDGET,
    })
    run = lint(["--k8s-version", "1.32", "chart", "plain"], cwd=tmp_path)
    assert [(f[0], f[1], f[3]) for f in schema_findings(run.findings)] == [
        ("chart/templates/gear.yaml", 6, "FW602"), ("chart/templates/gear.yaml", 7, "FW602"),
        ("chart/templates/gear.yaml", 9, "FW602"), ("plain/gear.yaml", 2, "FW603"),
    ]


def test_worker_processes_see_the_crds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large input analysed by forked workers validates its custom resources as one process does."""
    padding = "".join(f"  k{n}: '{'x' * 60}'\n" for n in range(200))
    files = {"crds/widgets.yaml": CRD}
    for index in range(120):
        files[f"apps/gear-{index:03d}.yaml"] = WIDGET + f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{index}}}\ndata:\n{padding}"
    git_repo(tmp_path, files)
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1_000_000)
    tasks: list[int] = []
    chunks = engine._chunks
    monkeypatch.setattr(engine, "_chunks", lambda *args: tasks.append(1) or chunks(*args))
    runs = {}
    for workers in (1, 2):
        monkeypatch.setattr(engine, "_free_cpus", lambda workers=workers: workers)
        runs[workers] = lint(["--k8s-version", "1.32", "apps"], cwd=tmp_path)
        assert bool(tasks) == (workers > 1)
    assert runs[1].findings == runs[2].findings
    assert sum(1 for f in runs[2].findings if f["code"] == "FW602") == 3 * 120


@pytest.mark.skipif(tools.find_kustomize() is None, reason="no kubectl or kustomize: pip install 'fieldwarden[render]'")
def test_a_kustomization_s_rendered_crd_comes_first_for_its_own_objects(tmp_path: Path) -> None:
    """The overlay patches the CRD's schema (a `colour` field): its custom resources are read with the patched CRD,
    a plain file of the project with the CRD as written."""
    patch = ("- op: add\n  path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/colour\n"
             "  value: {type: string}\n")
    git_repo(tmp_path, {
        "base/crd.yaml": CRD,
        "base/kustomization.yaml": "resources: [crd.yaml]\n",
        "overlay/gear.yaml": WIDGET,
        "overlay/kustomization.yaml": "resources: [../base, gear.yaml]\npatches:\n  - path: colour.yaml\n"
                                      "    target: {kind: CustomResourceDefinition}\n",
        "overlay/colour.yaml": patch,
        "plain/gear.yaml": WIDGET,
    })
    run = lint(["--k8s-version", "1.32", "overlay", "plain"], cwd=tmp_path)
    assert [(f[0], f[1], f[3], f[5]) for f in schema_findings(run.findings)] == [
        ("overlay/gear.yaml", 6, "FW602", "spec.size: expected integer, got string"),
        ("overlay/gear.yaml", 9, "FW602", "spec.parts[0].name: Required value"),
        ("plain/gear.yaml", 6, "FW602", "spec.size: expected integer, got string"),
        ("plain/gear.yaml", 7, "FW602", 'unknown field "spec.colour"'),
        ("plain/gear.yaml", 9, "FW602", "spec.parts[0].name: Required value"),
    ]


def test_a_run_without_the_schema_rules_reads_no_crd(tmp_path: Path) -> None:
    git_repo(tmp_path, {"crds/widgets.yaml": CRD, "apps/gear.yaml": WIDGET})
    settings = Settings({"select": ["FW1", "FW2", "FW3"]})
    sources = [("crds/widgets.yaml", str(tmp_path / "crds/widgets.yaml"), None)]
    assert catalog(sources, lambda _display: settings) is None
    found = catalog(sources, lambda _display: Settings())
    assert found is not None and sorted(found.versions) == [("agreement.fieldwarden.io", "Widget")]


def test_a_crd_rendered_alike_for_each_value_set_is_read_and_compiled_once() -> None:
    from fieldwarden.linter.crds import RenderCRDs
    from fieldwarden.linter.units.rendered import RenderedObject

    crds = RenderCRDs()
    first = crds.of([RenderedObject(CRD, {}, ("chart/templates/crd.yaml", 1, 1))])
    second = crds.of([RenderedObject(CRD, {}, ("chart/templates/crd.yaml", 1, 1))])
    assert first is not None and second is not None and first is not second
    assert first.schemas == second.schemas and all(first.schemas[k] is second.schemas[k] for k in first.schemas)
    assert crds.of([RenderedObject(WIDGET, {}, ("chart/templates/gear.yaml", 1, 1))]) is None  # no CRD, no project
    crds.project = first
    compiled = crds.project.compiled("agreement.fieldwarden.io/v1", "Widget", "1.32")
    again = crds.of([RenderedObject(CRD, {}, ("chart/templates/crd.yaml", 1, 1))])
    assert again is not None and again.compiled("agreement.fieldwarden.io/v1", "Widget", "1.32") is compiled


def test_the_context_is_read_for_crds_only_when_a_target_may_hold_a_custom_resource(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pre-commit run of one Deployment does not read the rest of the repository again for CRDs."""
    from fieldwarden.linter import analyse

    deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
    git_repo(tmp_path, {"crds/widgets.yaml": CRD, "apps/web.yaml": deployment, "apps/gear.yaml": WIDGET,
                        "chart/templates/gear.yaml": "apiVersion: {{ .Values.group }}/v1\nkind: Widget\n"})
    read: list[str] = []
    real = analyse.read_source
    monkeypatch.setattr(analyse, "read_source", lambda path, settings: read.append(str(path)) or real(path, settings))
    context = [(name, str(tmp_path / name), None) for name in ("crds/widgets.yaml", "apps/gear.yaml")]
    settings = Settings()
    plain = catalog([("apps/web.yaml", None, deployment.encode())], lambda _display: settings, context)
    assert plain is None and read == []
    for target in ("apps/gear.yaml", "chart/templates/gear.yaml"):  # a custom group, or one a template writes
        read.clear()
        found = catalog([(target, str(tmp_path / target), None)], lambda _display: settings, context)
        assert found is not None and ("agreement.fieldwarden.io/v1", "Widget") in found.schemas
        assert read == [str(tmp_path / target), *(path for _, path, _ in context)]
    # and the lint itself: the Deployment alone is clean, the Widget is checked against the CRD elsewhere
    assert schema_findings(lint(["--k8s-version", "1.32", "apps/web.yaml"], cwd=tmp_path).findings) == []
    assert [f[3] for f in schema_findings(lint(["--k8s-version", "1.32", "apps/gear.yaml"], cwd=tmp_path).findings)] == [
        "FW602", "FW602", "FW602"]
