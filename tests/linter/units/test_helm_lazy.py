"""helm.py places a rendered object's fields when a finding asks for them: its name's place at once
(every object's is shown in messages), the rest on first use, from the chart's parsed templates or,
for a render read back from the cache, from the chart's files (issue 23: mapping every field of
every value set's objects was most of the lint's own CPU on kyverno's and prometheus-community's
charts, whose findings are few).

The ledger fixture (tests/fixtures/repos/helm-chart, ct's ci/*-values.yaml layout) writes names and
labels through `include`d helpers, a List, a test hook and values spliced with toYaml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fieldwarden.linter.units import helm, render_cache
from fieldwarden.linter.units.plan import HELM, RenderJob
from fieldwarden.linter.units.rendered import locate

pytest.importorskip("helm_python")

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "repos" / "helm-chart"
CHART = "charts/ledger"
SETS = [helm.ValueSet(()), helm.ValueSet((f"{CHART}/ci/ha-values.yaml",)), helm.ValueSet((f"{CHART}/ci/recreate-values.yaml",))]
NAME = ("metadata", "name")
KIND, API_VERSION = ("kind",), ("apiVersion",)  # where FW601 and FW603 go: placed with the name
REPLICAS = ("spec", "replicas")


def _whole(renders: list[helm.Render]) -> list[list[dict[helm.FieldPath, helm.Place]]]:
    return [[obj.positions for obj in render.objects] for render in renders]


def test_names_are_placed_as_the_whole_mapping_places_them_and_nothing_else_is_placed() -> None:
    lazy, whole = helm.render_chart_sets(REPO, CHART, SETS), helm.render_chart_sets(REPO, CHART, SETS)
    placed = _whole(whole)
    objects = [obj for render in lazy for obj in render.objects]
    assert objects and all(obj.recipe is not None for obj in objects)
    names = [locate(obj, path) for obj in objects for path in (NAME, KIND, API_VERSION)]
    assert all(obj.recipe is not None for obj in objects)  # the names' places (and kinds') did not place the rest
    assert all(set(obj.table) <= set(positions) for obj, positions in zip(objects, sum(placed, [])))
    assert sum(set(obj.table) < set(positions) for obj, positions in zip(objects, sum(placed, []))) >= len(objects) - 3
    assert names == [locate(obj, path) for render in whole for obj in render.objects for path in (NAME, KIND, API_VERSION)]
    by_object = list(zip(names[::3], names[1::3], names[2::3]))
    assert all(kind[1] and api[1] for name, kind, api in by_object if name[1])  # on their own lines, as the name is
    deployment = next(obj for obj in objects if obj.text.startswith("apiVersion: apps/v1\nkind: Deployment"))
    assert locate(deployment, REPLICAS) == ((f"{CHART}/templates/deployment.yaml", 9, 3), True)  # placed when asked
    assert _whole(lazy) == placed
    assert all(obj.recipe is None for obj in objects)


def test_objects_never_placed_are_placed_from_the_charts_files_after_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    made, whole = helm.render_chart_sets(root, CHART, SETS), helm.render_chart_sets(root, CHART, SETS)
    made[0].objects[0].positions  # one placed before it is saved: kept whole
    for number, (value_set, render) in enumerate(zip(SETS, made)):
        job = RenderJob(HELM, CHART, value_set.files)
        render_cache.save(root, job, "tool", [], render, {})
        loaded = render_cache.load(root, job, "tool", [])
        assert loaded is not None
        assert [obj.recipe is None for obj in loaded.objects] == [number == 0] + [False] * (len(render.objects) - 1)
        helm.bind(root, CHART, value_set, loaded)
        assert [locate(obj, path) for obj in loaded.objects for path in (NAME, KIND)] == [
            locate(obj, path) for obj in whole[number].objects for path in (NAME, KIND)]
        assert [obj.positions for obj in loaded.objects] == [obj.positions for obj in whole[number].objects]
        assert all(obj.recipe is None for obj in loaded.objects)


def test_each_rendered_document_is_read_once_and_that_reading_handed_to_the_linter() -> None:
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    first = renders[0].objects
    assert first and all(obj.loaded is not None and obj.loaded.documents[0].data["metadata"]["name"] for obj in first)
    texts = {obj.text for obj in first}
    later = [obj for render in renders[1:] for obj in render.objects]
    assert any(obj.text in texts for obj in later)  # rendered alike by another set: read with the first
    assert all((obj.loaded is None) == (obj.text in texts) for obj in later)


def test_what_every_set_shares_is_read_once_per_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart's values.yaml is parsed once for all its sets, and a template's output that a set
    renders as the set before did is not cut into documents again (kyverno's CRDs, 27 sets)."""
    read: list[str] = []
    cut: list[str] = []
    real_yaml, real_separator = helm._yaml, helm._SEPARATOR

    class Separator:
        def split(self, text: str) -> list[str]:
            cut.append(text)
            return real_separator.split(text)

    monkeypatch.setattr(helm, "_yaml", lambda text, file: read.append(file) or real_yaml(text, file))
    monkeypatch.setattr(helm, "_SEPARATOR", Separator())
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    assert read.count(f"{CHART}/values.yaml") == 1 and read.count(f"{CHART}/ci/ha-values.yaml") == 1
    assert cut and len(cut) == len(set(cut))  # each output cut once: the ledger fixture renders some alike in every set
    assert len(cut) < sum(len(render.objects) for render in renders)
    assert _whole(renders) == _whole(helm.render_chart_sets(REPO, CHART, SETS))


def test_sets_are_mapped_as_their_replies_come_and_the_child_is_done_before_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's work on a set overlaps Helm's on the next; a chart's child is kept or ended once it
    has answered the last set, not left beside that set's mapping (prometheus-community's charts: the
    process tree's peak rose from ~290 to 340-380 MB until it was)."""
    from fieldwarden.linter.units import helm_pool

    events: list[str] = []
    real_rendered, real_give_back = helm._rendered, helm_pool.give_back
    monkeypatch.setattr(helm, "_rendered", lambda *args: events.append("mapped") or real_rendered(*args))
    monkeypatch.setattr(helm_pool, "give_back", lambda child: events.append("done") or real_give_back(child))
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    assert events == ["mapped", "mapped", "done", "mapped"]
    assert _whole(renders) == _whole(helm.render_chart_sets(REPO, CHART, SETS))


def test_a_large_documents_reading_is_not_held_for_the_linter(monkeypatch: pytest.MonkeyPatch) -> None:
    """kyverno's 1.4 MB CRDs (kyverno/kyverno 111e07bbec charts/crds): their readings, held until the
    chart's sets were all rendered, sat beside its 200 MB Helm child; the linter reads them again."""
    monkeypatch.setattr(helm, "HANDED", 400)
    objects = helm.render_chart_sets(REPO, CHART, SETS[:1])[0].objects
    assert any(len(obj.text) < 400 for obj in objects) and any(len(obj.text) >= 400 for obj in objects)
    assert all((obj.loaded is not None) == (len(obj.text) < 400) for obj in objects)


def test_templates_are_not_parsed_ahead_while_every_core_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a Helm child rendering on every core, parsing ahead would take a core from one of them (kyverno's
    main chart's first set came ~0.15 s later beside kyverno-policies' child): the parse waits for the reply."""
    from fieldwarden.linter.units import helm_pool, helmmap

    events: list[str] = []
    real_parse, real_rendered = helmmap.parse_template, helm._rendered
    monkeypatch.setattr(helmmap, "parse_template", lambda text, file: events.append(file) or real_parse(text, file))
    monkeypatch.setattr(helm, "_rendered", lambda *args: events.append("mapped") or real_rendered(*args))
    monkeypatch.setattr(helm_pool, "core_idle", lambda: False)
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    assert events[0] == "mapped" and f"{CHART}/templates/deployment.yaml" in events
    monkeypatch.undo()
    assert _whole(renders) == _whole(helm.render_chart_sets(REPO, CHART, SETS))


@pytest.mark.parametrize("child", ["slow", "answered at once"])
def test_templates_are_parsed_while_the_child_renders_the_first_set(monkeypatch: pytest.MonkeyPatch, child: str) -> None:
    """Waiting for a chart's first set (the child starts, loads Helm's engine, renders) is filled with
    parsing its templates: kyverno's two 1.4 MB CRD templates took ~1 s of the parent after Helm's work.
    Whether the reply is there is the child's timing, so the test says it: a child still rendering
    (every template parsed ahead, each once) and one that has answered (nothing parsed ahead); the
    renders are the same either way."""
    from fieldwarden.linter.units import helmmap

    events: list[str] = []
    real_parse, real_rendered, real_ahead = helmmap.parse_template, helm._rendered, helm._Templates.read_ahead
    monkeypatch.setattr(helmmap, "parse_template", lambda text, file: events.append(file) or real_parse(text, file))
    monkeypatch.setattr(helm, "_rendered", lambda *args: events.append("mapped") or real_rendered(*args))
    answered = (lambda: False) if child == "slow" else (lambda: True)
    monkeypatch.setattr(helm._Templates, "read_ahead", lambda self, _: real_ahead(self, answered))
    renders = helm.render_chart_sets(REPO, CHART, SETS)
    first = events.index("mapped")
    if child == "slow":
        assert f"{CHART}/templates/deployment.yaml" in events[:first]
        assert len(set(events[:first])) == first  # each parsed once
        assert f"{CHART}/templates/deployment.yaml" not in events[first:]  # and not again when mapped
    else:
        assert first == 0
    monkeypatch.setattr(helm._Templates, "read_ahead", real_ahead)
    assert _whole(renders) == _whole(helm.render_chart_sets(REPO, CHART, SETS))
