"""The render cache keeps failed renders too (issue 23): a warm run renders nothing that did not change."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.units import kustomize, render_cache
from fieldwarden.linter.units.not_linted import NotLinted
from fieldwarden.linter.units.plan import KUSTOMIZE, RenderJob
from fieldwarden.linter.units.rendered import Render, RenderedObject, RenderProblem
from tests.helpers import FIXTURES, git_repo, lint

from .test_kustomize import needs_kustomize

FAILED = FIXTURES / "repos" / "kubeflow-failed-render"


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every kustomize build the test's runs make."""
    made: list[Any] = []
    real = kustomize._run

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(kustomize, "_run", counted)
    return made


@needs_kustomize
def test_a_failed_render_comes_back_from_the_cache_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_repo(tmp_path / "repo")
    shutil.copytree(FAILED / "options", root / "options")
    builds = _builds(monkeypatch)
    cold = lint([], cwd=root)
    assert len(builds) == 1
    failed = [(f["file"], f["line"], f["code"]) for f in cold.findings if f["code"] == "FW006"]
    assert failed == [("options/istio/kustomization.yaml", 5, "FW006")]  # the entry naming the missing file
    assert "istio-authorization-policy.yaml" in next(f["message"] for f in cold.findings if f["code"] == "FW006")

    warm = lint([], cwd=root)
    assert len(builds) == 1  # nothing built again
    assert (warm.code, warm.findings) == (cold.code, cold.findings)

    (root / "options/istio/istio-authorization-policy.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: policy\n", encoding="utf-8")
    fixed = lint([], cwd=root)
    assert len(builds) == 2  # the missing file appeared: a miss
    assert not [f for f in fixed.findings if f["code"] == "FW006"]


@needs_kustomize
def test_a_changed_kustomization_invalidates_a_cached_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_repo(tmp_path / "repo")
    shutil.copytree(FAILED / "options", root / "options")
    builds = _builds(monkeypatch)
    lint([], cwd=root)
    kustomization = root / "options/istio/kustomization.yaml"
    kept = [line for line in kustomization.read_text(encoding="utf-8").splitlines(keepends=True)
            if not line.startswith("- istio-authorization-policy.yaml")]
    kustomization.write_text("".join(kept), encoding="utf-8")
    again = lint([], cwd=root)
    assert len(builds) == 2
    assert not [f for f in again.findings if f["code"] == "FW006"]


def _job() -> RenderJob:
    return RenderJob(KUSTOMIZE, "app")


def test_why_a_unit_was_not_linted_survives_the_cache(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app/kustomization.yaml").write_text("resources: [https://example.com/x.yaml]\n", encoding="utf-8")
    why = NotLinted("it does not build without its remote entry `https://example.com/x.yaml`", "vendor it",
                    "app/kustomization.yaml", 1, 12)
    made = Render([], ["app/kustomization.yaml"], [RenderProblem("app/kustomization.yaml", 1, 1, "note")], why)
    assert render_cache.lasting(made)
    render_cache.save(tmp_path, _job(), "tool", [], made, {})
    assert render_cache.load(tmp_path, _job(), "tool", []) == made
    (tmp_path / "app/kustomization.yaml").write_text("resources: []\n", encoding="utf-8")
    assert render_cache.load(tmp_path, _job(), "tool", []) is None


@pytest.mark.parametrize("message", [
    "value set ci/a-values.yaml not rendered: this chart's Helm time budget of 120 s (FIELDWARDEN_HELM_CHART_SECONDS) was used up",
    "rendering needed more than 512 MiB of memory and was stopped",
])
def test_what_another_run_may_not_repeat_is_not_kept(message: str) -> None:
    """helm.py flags its limits (Render.passing); the same words without the flag (a chart's own `fail`) are kept."""
    problem = [RenderProblem("demo/Chart.yaml", 1, 1, message)]
    assert not render_cache.lasting(Render([], ["demo/Chart.yaml"], problem, passing=True))
    assert render_cache.lasting(Render([], ["demo/Chart.yaml"], problem))
    assert not render_cache.lasting(Render([], [], [RenderProblem("app", 1, 1, "kustomize failed: boom")]))  # read nothing


def test_a_render_stopped_by_the_run_is_not_kept_whatever_its_words_and_the_tree_s_own_error_is() -> None:
    """kustomize.py flags a build it stopped (Render.passing); its messages are not searched for wording."""
    problem = [RenderProblem("app/kustomization.yaml", 1, 1, "kustomize: kustomize did not finish within 60 s")]
    assert not render_cache.lasting(Render([], ["app/kustomization.yaml"], problem, passing=True))
    # kustomize's own error about the tree, worded like a limit: the same next run, so kept
    own = [RenderProblem("app/kustomization.yaml", 3, 1, "kustomize: accumulating resources: cannot run "
                         "patch: output exceeds the target")]
    assert render_cache.lasting(Render([], ["app/kustomization.yaml"], own))


def _crd_like(name: str) -> RenderedObject:
    """The shape of kyverno's CRD templates (kyverno/kyverno 111e07bbec charts/crds): field paths 20 deep."""
    deep: tuple[str | int, ...] = ("spec", "versions", 0, "schema", "openAPIV3Schema", "properties")
    positions: dict[tuple[str | int, ...], tuple[str, int, int]] = {(): (name, 1, 1), ("kind",): (name, 1, 1)}
    for depth in range(1, len(deep) + 1):
        positions[deep[:depth]] = (name, depth + 1, 2 * depth - 1)
    positions[("status", "conditions", 3, "type")] = (name, 30, 7)  # its parents unplaced
    return RenderedObject(f"kind: CustomResourceDefinition\nmetadata:\n  name: {name}\n", positions, (name, 1, 1),
                          frozenset({deep[:3]}))


def test_deep_objects_rendered_alike_by_a_charts_sets_come_back_identical(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app/crd.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    shared = _crd_like("app/crd.yaml")
    encoded: render_cache.Encoded = {}
    jobs = [RenderJob(KUSTOMIZE, "app", ("one.yaml",)), RenderJob(KUSTOMIZE, "app", ("two.yaml",))]
    made = [Render([shared, _crd_like("app/other.yaml")], ["app/crd.yaml"], []), Render([shared], ["app/crd.yaml"], [])]
    for job, render in zip(jobs, made):
        render_cache.save(tmp_path, job, "tool", [], render, {}, {}, encoded)
    assert len(encoded) == 2  # the object both render is encoded once
    assert [render_cache.load(tmp_path, job, "tool", []) for job in jobs] == made
    loaded = render_cache.load(tmp_path, jobs[0], "tool", [])
    assert loaded is not None and list(loaded.objects[0].positions) == list(shared.positions)  # in the same order


def test_a_field_path_naming_a_later_parent_is_refused() -> None:
    text, parents, parts, files, lines, columns, anchor, approximate, recipe = render_cache._encode_object(_crd_like("a.yaml"))
    assert parents[:3] == [-1, 0, 0] and parts[:3] == [[], ["kind"], ["spec"]] and recipe is None
    parents[2] = 5
    with pytest.raises(ValueError):
        render_cache._decode_object([text, parents, parts, files, lines, columns, anchor, approximate, recipe])


def test_a_large_object_every_set_renders_is_written_once_and_a_tampered_copy_is_a_miss(tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """kyverno's charts (kyverno/kyverno 111e07bbec charts/crds): two 1.4 MB CRDs in each of 27 value
    sets' entries were 80 MB written per cold run; kept in a file of their own, once."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app/crd.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    monkeypatch.setattr(render_cache, "SHARED", 100)
    large, small = _crd_like("app/crd.yaml"), RenderedObject("kind: ConfigMap\n", {}, ("app/crd.yaml", 1, 1))
    jobs = [RenderJob(KUSTOMIZE, "app", (name,)) for name in ("one.yaml", "two.yaml", "three.yaml")]
    made = [Render([large, small], ["app/crd.yaml"], []) for _ in jobs]
    for job, render in zip(jobs, made):
        render_cache.save(tmp_path, job, "tool", [], render, {})
    apart = list((tmp_path / ".fieldwarden_cache").glob("render-object-*.cache"))
    assert len(apart) == 1 and all(render_cache.entry_path(tmp_path, job, "tool").stat().st_size < apart[0].stat().st_size
                                   for job in jobs)
    render_cache._READ.clear()
    assert [render_cache.load(tmp_path, job, "tool", []) for job in jobs] == made
    body = apart[0].read_bytes()
    apart[0].write_bytes(body.replace(b"CustomResourceDefinition", b"CustomResourceDefinitioN"))
    render_cache._READ.clear()
    assert render_cache.load(tmp_path, jobs[0], "tool", []) is None


def test_a_large_object_a_batch_s_sets_render_alike_is_digested_once_and_written_again_when_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kyverno 111e07bbec charts/kyverno: 17 value sets render its two 1.4 MB CRDs alike, and each set's
    entry took their digests again (after the chart's Helm child had ended). Once per batch (`encoded`);
    a copy another entry's rewrite removed meanwhile is still written again."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app/crd.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    monkeypatch.setattr(render_cache, "SHARED", 100)
    digested: list[bytes] = []
    real_digest = render_cache.digest
    monkeypatch.setattr(render_cache, "digest", lambda data: digested.append(data) or real_digest(data))
    large = _crd_like("app/crd.yaml")
    jobs = [RenderJob(KUSTOMIZE, "app", (name,)) for name in ("one.yaml", "two.yaml", "three.yaml")]
    made = [Render([large], ["app/crd.yaml"], []) for _ in jobs]
    encoded: render_cache.Encoded = {}
    for number, (job, render) in enumerate(zip(jobs, made)):
        if number == 2:
            for copy in (tmp_path / ".fieldwarden_cache").glob("render-object-*.cache"):
                copy.unlink()
        render_cache.save(tmp_path, job, "tool", [], render, {}, {}, encoded)
    assert len(encoded) == 1 and sum(data == item.data for data in digested for item in encoded.values()) == 1
    render_cache._READ.clear()
    assert [render_cache.load(tmp_path, job, "tool", []) for job in jobs] == made


def test_a_large_object_an_entry_no_longer_names_is_removed_and_a_miss_is_all_it_costs(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each edit of a chart's CRD template wrote a new shared copy beside the old ones: the cache grew
    with the repository's history. Rewriting an entry removes what only its old self named."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app/crd.yaml").write_text("kind: CustomResourceDefinition\n", encoding="utf-8")
    monkeypatch.setattr(render_cache, "SHARED", 100)
    jobs = [RenderJob(KUSTOMIZE, "app", (name,)) for name in ("one.yaml", "two.yaml")]
    old, edited, other = _crd_like("app/crd.yaml"), _crd_like("app/crd2.yaml"), _crd_like("app/other.yaml")
    render_cache.save(tmp_path, jobs[0], "tool", [], Render([old, other], ["app/crd.yaml"], []), {})
    render_cache.save(tmp_path, jobs[1], "tool", [], Render([other], ["app/crd.yaml"], []), {})
    apart = tmp_path / ".fieldwarden_cache"
    assert len(list(apart.glob("render-object-*.cache"))) == 2
    edited_render = Render([edited, other], ["app/crd.yaml"], [])
    render_cache.save(tmp_path, jobs[0], "tool", [], edited_render, {})
    assert len(list(apart.glob("render-object-*.cache"))) == 2  # the old CRD's copy gone, the edited one's there
    render_cache._READ.clear()
    assert render_cache.load(tmp_path, jobs[0], "tool", []) == edited_render
    assert render_cache.load(tmp_path, jobs[1], "tool", []) == Render([other], ["app/crd.yaml"], [])  # still named: kept
    render_cache.save(tmp_path, jobs[0], "tool", [], Render([], ["app/crd.yaml"], []), {})
    assert list(apart.glob("render-object-*.cache")) == []
    render_cache._READ.clear()
    assert render_cache.load(tmp_path, jobs[1], "tool", []) is None  # another entry named it too: rendered again


def test_a_file_s_key_names_where_it_resolves_with_its_folders_resolved_once(tmp_path: Path) -> None:
    """The keys of one moment share their folders' real paths (file_digest's `folders`), and stay
    what resolving each file whole gives: through a linked folder, a linked file, a link out."""
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "base").mkdir(parents=True)
    outside.mkdir()
    (root / "base/deployment.yaml").write_text("kind: Deployment\n", encoding="utf-8")
    (outside / "deployment.yaml").write_text("kind: Deployment\n", encoding="utf-8")
    (root / "shared").symlink_to(root / "base", target_is_directory=True)
    (root / "base/linked.yaml").symlink_to(root / "base/deployment.yaml")
    (root / "base/out.yaml").symlink_to(outside / "deployment.yaml")
    paths = ["base/deployment.yaml", "shared/deployment.yaml", "base/linked.yaml", "shared/linked.yaml", "base/out.yaml",
             "base/absent.yaml"]
    folders: dict[str, str] = {}
    keys = [render_cache.file_digest(root, path, folders) for path in paths]
    assert keys == [render_cache.file_digest(root, path) for path in paths]
    assert keys[0] == keys[1] == keys[2] == keys[3] != keys[4] and keys[5] is None
    assert set(folders) == {"", "base", "shared"}
    (root / "shared").unlink()  # re-pointed at a copy: another moment's keys differ
    (root / "copy").mkdir()
    (root / "copy/deployment.yaml").write_text("kind: Deployment\n", encoding="utf-8")
    (root / "shared").symlink_to(root / "copy", target_is_directory=True)
    assert render_cache.file_digest(root, "shared/deployment.yaml", {}) != keys[1]


def test_the_helm_engine_in_the_key_is_its_files_so_an_upgrade_or_reinstall_renders_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What renders a chart is named by the stamps (size, time) of helm-python-sdk's own files, its Go
    library included, not by its version read through importlib.metadata (imported for that alone: ~15 ms
    of every chart lint's start): a reinstall of the same version makes a new key too."""
    import importlib.util
    from importlib.machinery import ModuleSpec

    from fieldwarden.linter.units import renders
    from fieldwarden.linter.units.plan import HELM

    package = tmp_path / "helm_python"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    library = package / "lib" / "libhelm.so"
    library.write_bytes(b"go")
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return ModuleSpec(name, None, origin=str(package / "__init__.py")) if name == "helm_python" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    first = renders._find_tool(HELM)
    assert first is not None and first == renders._find_tool(HELM)
    library.write_bytes(b"go, again")
    assert renders._find_tool(HELM) not in (None, first)
