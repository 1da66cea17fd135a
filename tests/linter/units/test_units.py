"""Apply units through the real CLI: cross-object rules run inside each unit, never across units.

Each test writes a small repository (git, as pre-commit sees one) and lints it as users do.
Kustomize tests use the real kustomize (the kubectl of the `render` extra, or one on PATH).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from fieldwarden.linter.units import gitops, renders, tools
from fieldwarden.linter.units.plan import Declaration, glob_matches, is_fixture, plan
from tests.helpers import git_repo, hpa_for, lint, scaled_deployment, write

needs_kustomize = pytest.mark.skipif(tools.find_kustomize() is None, reason="no kustomize: pip install 'fieldwarden[render]'")

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {namespace}
spec:
  selector: {{app: {name}}}
  ports: [{{port: 80}}]
"""


def hits(root: Path, *args: str) -> list[tuple[str, int, int, str]]:
    """(path, line, column, code) of unsuppressed findings of `fieldwarden lint ARGS` run in root."""
    run = lint(list(args), cwd=root)
    assert run.code in (0, 1), run.stderr
    return sorted((f["file"], f["line"], f["column"], f["code"]) for f in run.findings if not f["suppressed"])


# -- plain folders ------------------------------------------------------------------------------

def test_the_same_object_in_two_clusters_is_no_duplicate(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "clusters/dev/web.yaml": scaled_deployment("web"),
        "clusters/prod/web.yaml": scaled_deployment("web"),
    })
    assert hits(root, "--select", "FW305") == []


def test_the_same_object_twice_in_one_folder_is_a_duplicate(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "clusters/dev/web.yaml": scaled_deployment("web"),
        "clusters/dev/web-copy.yaml": scaled_deployment("web"),
        "clusters/prod/web.yaml": scaled_deployment("web"),
    })
    assert hits(root, "--select", "FW305") == [
        ("clusters/dev/web-copy.yaml", 4, 3, "FW305"), ("clusters/dev/web.yaml", 4, 3, "FW305"),
    ]
    run = lint(["--select", "FW305"], cwd=root)
    assert {f["unit"] for f in run.findings} == {"clusters/dev"}
    assert "also at clusters/dev/web.yaml:4" in run.findings[0]["message"]


def test_an_hpa_in_an_unrelated_folder_does_not_own_replicas(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "apps/web/deploy.yaml": scaled_deployment("web"),
        "examples/hpa/hpa.yaml": hpa_for("web"),
    })
    assert hits(root, "--select", "FW301") == []
    write(root, "apps/web/hpa.yaml", hpa_for("web"))  # in its folder, it does
    assert hits(root, "--select", "FW301") == [("apps/web/deploy.yaml", 6, 3, "FW301")]


def test_folders_are_not_recursive(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "app/deploy.yaml": scaled_deployment("web"),
        "app/hpa/hpa.yaml": hpa_for("web"),  # kubectl apply -f app/ does not apply it
    })
    assert hits(root, "--select", "FW301") == []


def test_a_changed_service_still_sees_its_unchanged_deployment(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "app/deploy.yaml": scaled_deployment("web"),
        "app/service.yaml": SERVICE.format(name="web", namespace="default"),
        "app/worker.yaml": scaled_deployment("api"),
    })
    assert hits(root, "app/service.yaml") == []
    # FW103 judges a namespace where the unit holds a workload: without context, only the worker
    assert hits(root, "--no-context", "app/service.yaml", "app/worker.yaml") == [("app/service.yaml", 7, 3, "FW103")]


# -- declared units -------------------------------------------------------------------------------

def test_units_globs_make_recursive_units(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        ".fieldwarden.yaml": "units: [clusters/*]\n",
        "clusters/dev/apps/web.yaml": scaled_deployment("web"),
        "clusters/dev/autoscaling/hpa.yaml": hpa_for("web"),
        "clusters/prod/apps/web.yaml": scaled_deployment("web"),
        "clusters/prod/more/web.yaml": scaled_deployment("web"),
    })
    assert hits(root, "--select", "FW301,FW305") == [
        ("clusters/dev/apps/web.yaml", 6, 3, "FW301"),
        ("clusters/prod/apps/web.yaml", 4, 3, "FW305"),
        ("clusters/prod/more/web.yaml", 4, 3, "FW305"),
    ]
    run = lint(["--select", "FW301"], cwd=root)
    assert run.findings[0]["unit"] == "clusters/dev (units: clusters/*)"


def test_units_in_the_configuration_are_validated_and_shown(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {".fieldwarden.yaml": "units: clusters\n", "a.yaml": scaled_deployment("a")})
    run = lint([], cwd=root)
    assert run.code == 2 and "units" in run.stderr
    write(root, ".fieldwarden.yaml", "units: [clusters/*, 'apps/**']\n")
    from tests.linter.test_config_per_file import show

    code, out = show(["--show-settings", "a.yaml"], root)
    assert code == 0 and "units: clusters/*, apps/** (relative to .)" in out.splitlines()


def test_glob_matching_is_per_folder_segment() -> None:
    assert glob_matches("clusters/*", "clusters/dev")
    assert not glob_matches("clusters/*", "clusters/dev/apps")
    assert glob_matches("clusters/**", "clusters/dev/apps") and glob_matches("clusters/**", "clusters")
    assert glob_matches("**/overlays/*", "apps/web/overlays/prod")
    assert glob_matches(".", ".") and glob_matches("./", ".") and not glob_matches("x", ".")


ARGO_APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://example.com/org/deploy.git
    path: {path}
{extra}  destination:
    server: https://kubernetes.default.svc
    namespace: {namespace}
"""


def test_an_argo_cd_application_names_a_folder_and_its_namespace(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "argocd/apps/guestbook.yaml": ARGO_APP.format(name="guestbook", path="guestbook", extra="", namespace="shop"),
        "guestbook/deploy.yaml": scaled_deployment("web"),  # no namespace: Argo CD puts it in shop
        "guestbook/service.yaml": SERVICE.format(name="web", namespace="shop"),
        "guestbook/nested/hpa.yaml": hpa_for("web"),  # not applied: no directory.recurse
    })
    assert hits(root, "--select", "FW103,FW301") == []
    run = lint(["--select", "FW201", "--show-suppressed"], cwd=root)
    assert run.findings == []
    # recurse: the HPA below joins the unit, in the same namespace
    app = ARGO_APP.format(name="guestbook", path="guestbook", extra="    directory: {recurse: true}\n", namespace="shop")
    write(root, "argocd/apps/guestbook.yaml", app)
    assert hits(root, "--select", "FW103,FW301") == [("guestbook/deploy.yaml", 6, 3, "FW301")]
    unit = lint(["--select", "FW301"], cwd=root).findings[0]["unit"]
    assert unit == "guestbook (Argo CD Application argocd/guestbook, namespace shop)"


def test_without_the_application_the_namespace_differs(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "guestbook/deploy.yaml": scaled_deployment("web"),
        "guestbook/service.yaml": SERVICE.format(name="web", namespace="shop"),
        "guestbook/other.yaml": scaled_deployment("other").replace("name: other\n", "name: other\n  namespace: shop\n", 1),
    })
    assert hits(root, "--select", "FW103") == [("guestbook/service.yaml", 7, 3, "FW103")]


FLUX_KUSTOMIZATION = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: {path}
  prune: true
  sourceRef: {{kind: GitRepository, name: flux-system}}
{extra}"""


def test_a_flux_kustomization_names_a_recursive_folder_with_its_target_namespace(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "clusters/production/infra.yaml": FLUX_KUSTOMIZATION.format(
            name="infra", path="./infrastructure/production", extra="  targetNamespace: infra\n"),
        "infrastructure/production/web/deploy.yaml": scaled_deployment("web"),
        # in another namespace as written, but Flux puts every object in infra
        "infrastructure/production/scaling/hpa.yaml": hpa_for("web").replace(
            "name: web\nspec", "name: web\n  namespace: elsewhere\nspec", 1),
        "infrastructure/staging/web/deploy.yaml": scaled_deployment("web"),
        "infrastructure/staging/hpa.yaml": hpa_for("web"),  # the staging folders are plain: apart
    })
    assert hits(root, "--select", "FW301") == [("infrastructure/production/web/deploy.yaml", 6, 3, "FW301")]
    run = lint(["--select", "FW301"], cwd=root)
    assert run.findings[0]["object"] == "Deployment/infra/web"
    assert run.findings[0]["unit"] == "infrastructure/production (Flux Kustomization flux-system/infra, namespace infra)"


def test_gitops_paths_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    # the project is deploy/ (its configuration), the repository one folder up
    root = git_repo(tmp_path, {
        "deploy/.fieldwarden.yaml": "select: [FW301]\n",
        "deploy/flux/apps.yaml": FLUX_KUSTOMIZATION.format(name="apps", path="./deploy/apps", extra=""),
        "deploy/apps/web/deploy.yaml": scaled_deployment("web"),
        "deploy/apps/hpa/hpa.yaml": hpa_for("web"),
    })
    assert hits(root / "deploy") == [("apps/web/deploy.yaml", 6, 3, "FW301")]


# -- fixtures ---------------------------------------------------------------------------------------

def test_fixtures_are_left_out_with_a_notice_unless_asked(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "pkg/render/testdata/broken.yaml": scaled_deployment("web").replace("  selector:\n    matchLabels: {app: web}\n", ""),
        "e2e/scale/chainsaw-test.yaml": ("apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: scale}\n"
                                         "spec:\n  steps:\n  - try:\n    - apply: {file: deploy.yaml}\n"),
        "e2e/scale/deploy.yaml": scaled_deployment("web"),
        "e2e/scale/deploy-assert.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {readyReplicas: 2}\n",
        "e2e/kuttl/01-assert.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {readyReplicas: 2}\n",
    })
    run = lint([], cwd=root)
    assert (run.code, run.findings) == (0, [])
    # the chainsaw test file itself is chainsaw's object, not the cluster's: a fixture too
    assert "left out 4 test fixture files" in run.stderr and "--include-fixtures" in run.stderr
    codes = {(f["file"], f["code"]) for f in lint(["--include-fixtures"], cwd=root).findings}
    assert {("pkg/render/testdata/broken.yaml", "FW101"), ("e2e/scale/deploy-assert.yaml", "FW306"),
            ("e2e/kuttl/01-assert.yaml", "FW306")} <= codes
    # chainsaw applies no folder: deploy.yaml (applied by a step) is a unit of its own, no duplicate of the check
    assert ("e2e/scale/deploy-assert.yaml", "FW305") not in codes
    alone = lint(["e2e/scale/deploy-assert.yaml"], cwd=root)  # pre-commit passes one: left out too
    assert (alone.code, alone.findings) == (0, []) and "left out 1 test fixture file " in alone.stderr


def test_fixture_conventions() -> None:
    chainsaw = frozenset({"e2e/scale"})
    assert is_fixture("a/testdata/x.yaml", chainsaw) and is_fixture("testdata/x/y.yaml", chainsaw)
    assert is_fixture("tests/00-assert.yaml", chainsaw) and is_fixture("tests/02-errors.yaml", chainsaw)
    assert is_fixture("e2e/scale/assert.yaml", chainsaw) and is_fixture("e2e/scale/error-pod.yaml", chainsaw)
    assert not is_fixture("e2e/scale/deploy.yaml", chainsaw)
    assert not is_fixture("apps/assert.yaml", chainsaw)  # outside a chainsaw test: an ordinary name
    assert not is_fixture("apps/error-pages.yaml", chainsaw) and not is_fixture("testdata.yaml", chainsaw)
    # kyverno's cmd/cli/kubectl-kyverno/_testdata/ (the Go tool skips `_` folders too)
    assert is_fixture("cmd/cli/kubectl-kyverno/_testdata/resources/with-duplicate.yaml", chainsaw)
    assert not is_fixture("apps/_data/x.yaml", chainsaw)
    # named by a test manifest (testruns.py), whatever its name
    assert is_fixture("e2e/scale/ns-ready.yaml", chainsaw, frozenset({"e2e/scale/ns-ready.yaml"}))


# -- the plan itself -------------------------------------------------------------------------------

def test_a_recursive_declaration_claims_the_folders_and_kustomizations_below() -> None:
    files = ["c/prod/a.yaml", "c/prod/sub/b.yaml", "c/prod/k/kustomization.yaml", "c/prod/k/x.yaml", "other/c.yaml"]
    found = plan(files, ["c/prod/k"], ["c/prod/k/kustomization.yaml", "c/prod/k/x.yaml"], {},
                 [Declaration("c/prod", True, "prod", True, (), "Flux Kustomization flux-system/prod")])
    [declared, other] = found.units
    assert declared.files == ("c/prod/a.yaml", "c/prod/sub/b.yaml")
    assert [job.folder for job in declared.renders] == ["c/prod/k"]
    assert (declared.namespace, declared.force_namespace) == ("prod", True)
    assert other.name == "other" and other.files == ("other/c.yaml",)
    assert found.consumed == {"c/prod/k/kustomization.yaml", "c/prod/k/x.yaml"}


def test_a_declaration_naming_nothing_here_is_no_unit() -> None:
    found = plan(["a/x.yaml"], [], [], {}, [Declaration("elsewhere", True)])
    assert [unit.name for unit in found.units] == ["a"]


# -- kustomize --------------------------------------------------------------------------------------

KUSTOMIZE_TREE = {
    "base/deploy.yaml": scaled_deployment("web"),
    "base/kustomization.yaml": "resources: [deploy.yaml]\n",
    "overlays/dev/kustomization.yaml": "namespace: dev\nresources: [../../base]\n",
    "overlays/prod/kustomization.yaml": "namespace: prod\nresources: [../../base]\npatches:\n- path: replicas.yaml\n",
    # a strategic-merge fragment: no selector, no template; never linted as an object of its own
    "overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
}


@needs_kustomize
def test_a_kustomize_patch_fragment_is_not_an_object(tmp_path: Path) -> None:
    root = git_repo(tmp_path, dict(KUSTOMIZE_TREE))
    assert hits(root) == []
    assert hits(root, "overlays/prod/replicas.yaml") == []


@needs_kustomize
def test_a_finding_in_a_patch_is_placed_on_the_patch_line_in_its_unit(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["overlays/prod/replicas.yaml"] += "  strategy:\n    type: Recreate\n    rollingUpdate: {maxSurge: 1}\n"
    root = git_repo(tmp_path, tree)
    assert hits(root) == [("overlays/prod/replicas.yaml", 9, 5, "FW202")]
    run = lint(["overlays/prod/replicas.yaml"], cwd=root)
    [finding] = run.findings
    assert (finding["unit"], finding["object"], finding["approximate"]) == ("overlays/prod (kustomize)", "Deployment/prod/web", False)
    # a suppression comment in the patch applies to what is placed on its lines
    write(root, "overlays/prod/replicas.yaml", tree["overlays/prod/replicas.yaml"].replace(
        "rollingUpdate: {maxSurge: 1}", "rollingUpdate: {maxSurge: 1}  # fieldwarden: ignore[FW202]"))
    run = lint([], cwd=root)
    assert run.code == 0 and [f["suppressed"] for f in run.findings] == ["comment at line 9"]


@needs_kustomize
def test_a_base_under_two_overlays_is_linted_in_each_and_reported_once(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["base/deploy.yaml"] = tree["base/deploy.yaml"].replace("  strategy: {type: RollingUpdate}\n", "  strategy: {type: Recreate, rollingUpdate: {}}\n")
    root = git_repo(tmp_path, tree)
    for args in ([], ["base/deploy.yaml"]):  # the whole project, and pre-commit passing the changed base
        run = lint(args, cwd=root)
        [finding] = [f for f in run.findings if f["code"] == "FW202"]
        assert (finding["file"], finding["line"]) == ("base/deploy.yaml", 7)
        assert finding["units"] == ["overlays/dev (kustomize)", "overlays/prod (kustomize)"]


@needs_kustomize
def test_overlays_are_units_apart_and_a_set_rule_runs_inside_each(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["overlays/prod/hpa.yaml"] = hpa_for("web")
    tree["overlays/prod/kustomization.yaml"] = "namespace: prod\nresources: [../../base, hpa.yaml]\n"
    root = git_repo(tmp_path, tree)
    # the HPA scales prod's web, whose replicas the base writes; dev has no HPA
    assert hits(root, "--select", "FW301") == [("base/deploy.yaml", 6, 3, "FW301")]
    [finding] = lint(["--select", "FW301", "base/deploy.yaml"], cwd=root).findings
    assert finding["units"] == ["overlays/prod (kustomize)"]
    assert hits(root, "--select", "FW301", "overlays/dev/kustomization.yaml") == []


@needs_kustomize
def test_the_same_object_twice_in_one_overlay_fails_its_render(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["overlays/dev/web.yaml"] = scaled_deployment("web")
    tree["overlays/dev/kustomization.yaml"] = "namespace: dev\nresources:\n- ../../base\n- web.yaml\n"
    root = git_repo(tmp_path, tree)
    run = lint([], cwd=root)
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [("overlays/dev/kustomization.yaml", 4, "FW006")]
    assert "already registered id" in run.findings[0]["message"]


@needs_kustomize
def test_a_flux_kustomization_naming_a_kustomization_gives_it_the_target_namespace(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["overlays/prod/kustomization.yaml"] = "resources: [../../base, hpa.yaml]\n"
    tree["overlays/prod/hpa.yaml"] = hpa_for("web").replace("name: web\nspec", "name: web\n  namespace: team\nspec", 1)
    tree["clusters/prod/apps.yaml"] = FLUX_KUSTOMIZATION.format(name="apps", path="./overlays/prod", extra="  targetNamespace: team\n")
    root = git_repo(tmp_path, tree)
    # the Deployment names no namespace: only Flux's targetNamespace puts it beside the HPA
    assert hits(root, "--select", "FW301") == [("base/deploy.yaml", 6, 3, "FW301")]
    [finding] = lint(["--select", "FW301"], cwd=root).findings
    assert finding["unit"] == "overlays/prod (Flux Kustomization flux-system/apps, namespace team)"


def test_a_missing_renderer_makes_each_kustomization_an_fw007(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(renders, "_TOOLS", {})
    monkeypatch.setattr(tools, "find_kustomize", lambda env=None: None)
    monkeypatch.setattr(tools, "kustomize_identity", lambda env=None: None)  # (what the render cache keys by)
    root = git_repo(tmp_path, dict(KUSTOMIZE_TREE))
    run = lint([], cwd=root)
    assert run.code == 1
    assert [(f["file"], f["line"], f["code"], f["units"]) for f in run.findings] == [
        ("overlays/dev/kustomization.yaml", 1, "FW007", ["overlays/dev (kustomize)"]),
        ("overlays/prod/kustomization.yaml", 1, "FW007", ["overlays/prod (kustomize)"]),
    ]
    assert run.findings[0]["message"] == ("not linted: kustomize is not installed; pip install 'fieldwarden[render]' "
                                          "(kubectl), or put kubectl or kustomize on PATH")
    assert "not linted" not in run.stderr and "Traceback" not in run.stderr


# -- output ---------------------------------------------------------------------------------------

def test_text_github_and_sarif_name_the_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import json
    from contextlib import redirect_stdout

    from fieldwarden.cli import main

    root = git_repo(tmp_path, {
        ".fieldwarden.yaml": "units: [clusters/*]\n",
        "clusters/dev/a/web.yaml": scaled_deployment("web"),
        "clusters/dev/b/web.yaml": scaled_deployment("web"),
    })
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)

    def output(*args: str) -> str:
        out = io.StringIO()
        with redirect_stdout(out):
            main(["lint", "--select", "FW305", *args, "clusters/dev/a/web.yaml"])
        return out.getvalue()

    text = output("--format", "text").splitlines()
    assert text[1].startswith("  help: ") and text[2] == "  unit: clusters/dev (units: clusters/*)"
    assert "unit: clusters/dev (units: clusters/*)" not in output("--format", "concise")
    assert "%0Aunit: clusters/dev (units: clusters/*)%0A" in output("--format", "github")
    # the duplicate in b/ is caused by the named a/ too: reported as well (issue 22, item 8)
    result, _in_b = json.loads(output("--format", "sarif"))["runs"][0]["results"]
    assert result["properties"]["unit"] == "clusters/dev (units: clusters/*)"
    assert {"name": "clusters/dev (units: clusters/*)", "kind": "module"} in result["locations"][0]["logicalLocations"]


def test_a_folders_own_unit_is_not_repeated_in_text(tmp_path: Path) -> None:
    from fieldwarden.linter.analyse import Finding
    from fieldwarden.linter.formats import text

    finding = Finding("apps/web.yaml", 5, 1, "FW201", "info", "Deployment/default/web", "spec.strategy.type",
                      "no strategy", "set it", units=("apps",))
    assert "unit:" not in text([finding])
    assert "(place approximate)" in text([finding._replace(approximate=True)])


# -- Helm ------------------------------------------------------------------------------------------

needs_helm = pytest.mark.skipif(importlib.util.find_spec("helm_python") is None,
                                reason="no Helm engine: pip install 'fieldwarden[render]'")

CHART = {
    "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    "charts/web/values.yaml": "replicas: 2\nautoscaling: false\n",
    "charts/web/ci/hpa-values.yaml": "autoscaling: true\n",
    "charts/web/templates/deployment.yaml": scaled_deployment("web").replace("replicas: 2", "replicas: {{ .Values.replicas }}"),
    "charts/web/templates/hpa.yaml": "{{- if .Values.autoscaling }}\n" + hpa_for("web") + "{{- end }}\n",
}


@needs_helm
def test_a_chart_is_a_unit_per_value_set_and_findings_land_on_template_lines(tmp_path: Path) -> None:
    root = git_repo(tmp_path, dict(CHART))
    run = lint(["--select", "FW301"], cwd=root)
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [("charts/web/templates/deployment.yaml", 6, "FW301")]
    assert run.findings[0]["unit"] == "charts/web (helm, ci/hpa-values.yaml)"
    # pre-commit passing the changed values file: the unit it makes is linted, and what it causes is
    # reported on the template line, though the template was not named (issue 22, item 8)
    assert [(f["file"], f["line"], f["unit"]) for f in lint(["--select", "FW301", "charts/web/ci/hpa-values.yaml"],
                                                            cwd=root).findings] == [
        ("charts/web/templates/deployment.yaml", 6, "charts/web (helm, ci/hpa-values.yaml)")]
    assert [f["file"] for f in lint(["--select", "FW301", "charts/web/templates/deployment.yaml"], cwd=root).findings] == [
        "charts/web/templates/deployment.yaml"]


@needs_helm
def test_helm_values_add_a_value_set(tmp_path: Path) -> None:
    tree = dict(CHART)
    del tree["charts/web/ci/hpa-values.yaml"]
    tree["env/prod.yaml"] = "autoscaling: true\n"
    root = git_repo(tmp_path, tree)
    assert hits(root, "--select", "FW301") == []
    run = lint(["--select", "FW301", "--helm-values", "env/prod.yaml"], cwd=root)
    assert [(f["file"], f["unit"]) for f in run.findings] == [("charts/web/templates/deployment.yaml", "charts/web (helm, env/prod.yaml)")]
    named = lint(["--select", "FW301", "--helm-values", "charts/web=env/prod.yaml"], cwd=root)
    assert named.findings == run.findings
    bad = lint(["--helm-values", "env/missing.yaml"], cwd=root)
    assert bad.code == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr


@needs_helm
def test_a_missing_helm_engine_makes_the_chart_an_fw007(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(renders, "_TOOLS", {"helm": None})
    root = git_repo(tmp_path, dict(CHART))
    run = lint([], cwd=root)
    assert run.code == 1
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [("charts/web/Chart.yaml", 1, "FW007")]
    assert "pip install 'fieldwarden[render]'" in run.findings[0]["message"] and "not linted" not in run.stderr


@needs_helm
def test_flux_helmrelease_and_argo_cd_value_files_make_chart_units(tmp_path: Path) -> None:
    tree = dict(CHART)
    del tree["charts/web/ci/hpa-values.yaml"]
    tree["env/prod-values.yaml"] = "autoscaling: true\n"
    tree["charts/web/values-hpa.yaml"] = "autoscaling: true\n"
    tree["flux/web.yaml"] = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: apps\nspec:\n"
        "  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef: {kind: GitRepository, name: flux-system}\n"
        "      valuesFiles: [env/prod-values.yaml]\n"
    )
    tree["argocd/web.yaml"] = ARGO_APP.format(
        name="web", path="charts/web", extra="    helm:\n      valueFiles: [values-hpa.yaml]\n", namespace="shop")
    root = git_repo(tmp_path, tree)
    run = lint(["--select", "FW301"], cwd=root)
    assert {(f["file"], f["line"]) for f in run.findings} == {("charts/web/templates/deployment.yaml", 6)}
    assert sorted(unit for f in run.findings for unit in f["units"]) == [  # one finding each: other namespaces
        "charts/web (Argo CD Application argocd/web, namespace shop)",
        "charts/web (Flux HelmRelease apps/web, namespace apps)",
    ]


def test_a_helmrelease_from_a_helm_repository_names_no_folder(tmp_path: Path) -> None:
    """`chart: redis` from a HelmRepository is a chart name: the project's redis/ folder stays a plain unit."""
    tree = {
        "redis/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: redis\ndata: {a: b}\n",
        "flux/redis.yaml": (
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: redis\n  namespace: cache\n"
            "spec:\n  chart:\n    spec:\n      chart: redis\n      sourceRef: {kind: HelmRepository, name: bitnami}\n"
        ),
    }
    root = git_repo(tmp_path, tree)
    objects = [yaml.safe_load(tree["flux/redis.yaml"])]
    assert gitops.declarations(objects) == []
    objects[0]["spec"]["chart"]["spec"]["sourceRef"]["kind"] = "GitRepository"
    assert [d.folder for d in gitops.declarations(objects)] == ["redis"]
    run = lint(["--format", "json"], cwd=root)
    assert not any("HelmRelease" in unit for f in run.findings for unit in f["units"])


# -- the render cache ------------------------------------------------------------------------------

@needs_kustomize
def test_renders_come_from_the_cache_until_an_input_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldwarden.linter.cache import CACHE_DIR

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = git_repo(tmp_path / "repo", dict(KUSTOMIZE_TREE))
    made: list[str] = []
    real = renders._render_batch

    def counting(*args: object, **kwargs: object) -> object:
        made.extend(job.folder for job in args[1])  # type: ignore[attr-defined]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(renders, "_render_batch", counting)
    assert hits(root, "base/deploy.yaml") == [] and sorted(made) == ["overlays/dev", "overlays/prod"]
    made.clear()
    assert hits(root, "base/deploy.yaml") == [] and made == []  # warm: both from the cache
    assert len(list((root / CACHE_DIR).glob("render-*.cache"))) == 2
    write(root, "overlays/prod/replicas.yaml", KUSTOMIZE_TREE["overlays/prod/replicas.yaml"].replace(
        "replicas: 5", "replicas: 5\n  strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}"))
    assert hits(root, "overlays/prod/replicas.yaml") == [("overlays/prod/replicas.yaml", 7, 30, "FW202")]
    assert made == ["overlays/prod"]  # only the unit whose input changed
    made.clear()
    # a cache entry this user's fieldwarden did not write is never believed
    for entry in (root / CACHE_DIR).glob("render-*.cache"):
        entry.write_bytes(b"0" * 64 + b"\n" + entry.read_bytes().partition(b"\n")[2])
    assert hits(root, "overlays/prod/replicas.yaml") == [("overlays/prod/replicas.yaml", 7, 30, "FW202")]
    assert made == ["overlays/prod"]


# -- one finding, its place and its words ---------------------------------------------------------------

@needs_kustomize
def test_a_missing_field_of_a_rendered_object_goes_to_its_parent_exactly(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["base/deploy.yaml"] = tree["base/deploy.yaml"].replace("  strategy: {type: RollingUpdate}\n", "")
    root = git_repo(tmp_path, tree)
    run = lint(["--select", "FW201"], cwd=root)
    [finding] = run.findings  # once, naming both overlays
    assert (finding["file"], finding["line"], finding["column"], finding["approximate"]) == ("base/deploy.yaml", 5, 1, False)
    assert finding["units"] == ["overlays/dev (kustomize)", "overlays/prod (kustomize)"]


@needs_kustomize
def test_a_base_line_named_differently_by_two_overlays_is_one_finding(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["base/deploy.yaml"] = tree["base/deploy.yaml"].replace("  strategy: {type: RollingUpdate}\n", "  strategy: {type: Recreate, rollingUpdate: {}}\n")
    tree["overlays/dev/kustomization.yaml"] = "namespace: dev\nnamePrefix: dev-\nresources: [../../base]\n"
    root = git_repo(tmp_path, tree)
    run = lint(["--select", "FW202"], cwd=root)
    [finding] = run.findings
    assert finding["units"] == ["overlays/dev (kustomize)", "overlays/prod (kustomize)"]
    assert finding["object"] == "Deployment/dev/dev-web"  # as the first unit names it


@needs_kustomize
def test_messages_name_rendered_objects_by_their_source_line(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["overlays/prod/hpa.yaml"] = hpa_for("web")
    tree["overlays/prod/kustomization.yaml"] = "namespace: prod\nresources: [../../base, hpa.yaml]\n"
    root = git_repo(tmp_path, tree)
    [finding] = lint(["--select", "FW301"], cwd=root).findings
    assert "HorizontalPodAutoscaler/prod/web (overlays/prod/hpa.yaml:4)" in finding["message"]


def test_object_rules_name_the_namespace_the_unit_deploys_to(tmp_path: Path) -> None:
    root = git_repo(tmp_path, {
        "argocd/apps/web.yaml": ARGO_APP.format(name="web", path="web", extra="", namespace="shop"),
        "web/deploy.yaml": scaled_deployment("web").replace("  strategy: {type: RollingUpdate}\n", ""),
    })
    [finding] = lint(["--select", "FW201"], cwd=root).findings
    assert finding["object"] == "Deployment/shop/web"


def test_kuttl_steps_are_units_of_their_own(tmp_path: Path) -> None:
    cache = "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: cache\nspec:\n  size: {size}\n"
    check = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cache\nstatus: {{readyReplicas: {size}}}\n"
    root = git_repo(tmp_path, {
        "test/kuttl/resize/00-install.yaml": cache.format(size=1),
        "test/kuttl/resize/00-assert.yaml": check.format(size=1),
        "test/kuttl/resize/01-resize.yaml": cache.format(size=2),  # updates what step 00 made
        "test/kuttl/resize/01-assert.yaml": check.format(size=2),
        # numbered files in an ordinary folder are applied together: still one unit
        "deploy/00-web.yaml": scaled_deployment("web"),
        "deploy/01-web.yaml": scaled_deployment("web"),
    })
    assert hits(root, "--select", "FW305") == [("deploy/00-web.yaml", 4, 3, "FW305"), ("deploy/01-web.yaml", 4, 3, "FW305")]
    run = lint(["--select", "FW305", "--include-fixtures"], cwd=root)
    assert {f["file"] for f in run.findings} == {"deploy/00-web.yaml", "deploy/01-web.yaml"}


@needs_kustomize
def test_an_ignore_annotation_in_a_base_suppresses_what_is_found_on_the_rendered_object(tmp_path: Path) -> None:
    tree = dict(KUSTOMIZE_TREE)
    tree["base/deploy.yaml"] = tree["base/deploy.yaml"].replace(
        "  name: web\n", "  name: web\n  annotations: {fieldwarden.io/ignore: FW202}\n", 1).replace(
        "  strategy: {type: RollingUpdate}\n", "  strategy: {type: Recreate, rollingUpdate: {}}\n")
    root = git_repo(tmp_path, tree)
    run = lint([], cwd=root)
    assert run.code == 0
    assert [(f["code"], f["suppressed"]) for f in run.findings] == [("FW202", "annotation fieldwarden.io/ignore")]
