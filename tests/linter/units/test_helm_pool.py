"""Helm children kept for the next chart (helm_pool.py).

The shape of prometheus-community/helm-charts (cf408a290) charts/: 44 charts, each rendered by a
child of its own until a child that answered a chart whole rendered the next (~0.15 s of CPU
saved per chart). These tests fail if a kept child renders a chart wrong, if a child that failed
is used again, or if children outlive the renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.units import helm, helm_pool

pytest.importorskip("helm_python")


def _chart(root: Path, name: str, template: str) -> None:
    (root / name / "templates").mkdir(parents=True)
    (root / name / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n", encoding="utf-8")
    (root / name / "values.yaml").write_text("size: 3\n", encoding="utf-8")
    (root / name / "templates/cm.yaml").write_text(template, encoding="utf-8")


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[helm_pool.Child]:
    children: list[helm_pool.Child] = []
    real = helm_pool.take

    def take(memory: int) -> helm_pool.Child:
        children.append(real(memory))
        return children[-1]

    monkeypatch.setattr(helm_pool, "take", take)
    return children


def _lines(render: Any) -> list[str]:
    return [f"{obj.text.strip()} @ {obj.positions.get(('data', 'size'))}" for obj in render.objects]


def test_one_child_renders_charts_in_turn_and_ends_with_the_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    children = _taken(monkeypatch)
    for name in ("first", "second"):
        _chart(tmp_path, name, f"kind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  size: {{{{ .Values.size | quote }}}}\n")
    made = [helm.render_chart(tmp_path, name, []) for name in ("first", "second")]
    assert [_lines(render) for render in made] == [
        [f'kind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  size: "3" @ (\'{name}/templates/cm.yaml\', 5, 3)']
        for name in ("first", "second")]
    assert not [p for render in made for p in render.problems]
    assert len(children) == 2 and children[0] is children[1]  # the second chart's child is the first's
    assert children[0].process.poll() is None  # kept, idle
    helm_pool.close_idle()
    assert children[0].process.poll() == 0  # ended when its stdin did


def test_a_child_that_went_over_time_is_not_used_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    children = _taken(monkeypatch)
    _chart(tmp_path, "looping", "{{ range until 50000 }}{{ range until 50000 }}{{ end }}{{ end }}")
    _chart(tmp_path, "next", "kind: ConfigMap\ndata:\n  size: {{ .Values.size | quote }}\n")
    stopped = helm.render_chart(tmp_path, "looping", [], timeout=2)
    assert "longer than 2 s" in stopped.problems[0].message
    render = helm.render_chart(tmp_path, "next", [])
    assert _lines(render) == ["kind: ConfigMap\ndata:\n  size: \"3\" @ ('next/templates/cm.yaml', 3, 3)"]
    assert len(children) == 2 and children[0] is not children[1]
    assert children[0].process.poll() is not None  # killed, not kept
    helm_pool.close_idle()


def test_a_child_that_failed_a_set_is_not_used_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    children = _taken(monkeypatch)
    monkeypatch.setattr(helm, "MEMORY", 400 << 20)  # the limit is met in ~0.5 s
    _chart(tmp_path, "growing", "{{ $s := list }}{{ range until 100000000 }}{{ $s = append $s (randAlphaNum 64) }}{{ end }}")
    assert "memory" in helm.render_chart(tmp_path, "growing", []).problems[0].message
    monkeypatch.setattr(helm, "MEMORY", 1 << 30)
    _chart(tmp_path, "next", "kind: ConfigMap\ndata:\n  size: {{ .Values.size | quote }}\n")
    assert _lines(helm.render_chart(tmp_path, "next", [])) == ["kind: ConfigMap\ndata:\n  size: \"3\" @ ('next/templates/cm.yaml', 3, 3)"]
    assert len(children) == 2 and children[0].process.poll() is not None
    helm_pool.close_idle()


@pytest.mark.parametrize("sizes", [((1 << 30) // 4, 1), (1, helm_pool.KEPT_MEMORY)])
def test_a_child_grown_past_a_quarter_of_its_limit_or_past_a_fresh_ones_memory_is_ended(
        sizes: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    child = helm_pool.take(1 << 30)
    monkeypatch.setattr(helm_pool, "memory", lambda pid: sizes)
    helm_pool.give_back(child)
    assert child.process.poll() == 0
    other = helm_pool.take(1 << 30)
    assert other is not child
    other.end(kill=True)


def test_no_child_is_kept_when_no_chart_waits_for_one() -> None:
    helm_pool.expect(2)
    first, second = helm_pool.take(1 << 30), helm_pool.take(1 << 30)
    helm_pool.give_back(first)
    assert first.process.poll() == 0  # both charts have their child: none waits
    second.end(kill=True)
    helm_pool.close_idle()


def test_one_child_at_most_is_kept() -> None:
    first, second = helm_pool.take(1 << 30), helm_pool.take(1 << 30)
    helm_pool.give_back(first)
    helm_pool.give_back(second)
    assert first.process.poll() is None and second.process.poll() == 0  # the second started for a chart of its own
    assert helm_pool.take(1 << 30) is first
    first.end(kill=True)
    third = helm_pool.take(1 << 30)
    helm_pool.give_back(third)  # the kept one ended: another may be kept
    assert helm_pool.take(1 << 30) is third
    third.end(kill=True)


def test_a_child_per_chart_rendered_at_once_is_kept() -> None:
    """Two charts render at once (two cores): both their children are kept for the charts to come, a third is not."""
    helm_pool.expect(5, keep=2)
    first, second, third = (helm_pool.take(1 << 30) for _ in range(3))
    for child in (first, second, third):
        helm_pool.give_back(child)
    assert first.process.poll() is None and second.process.poll() is None and third.process.poll() == 0
    assert {helm_pool.take(1 << 30), helm_pool.take(1 << 30)} == {first, second}
    first.end(kill=True)
    second.end(kill=True)
    helm_pool.close_idle()


def test_an_output_the_last_set_rendered_alike_crosses_once_and_comes_back_whole(tmp_path: Path) -> None:
    """kyverno's charts/kyverno (111e07bbec): 17 sets render the same CRDs, megabytes each; the child
    sends a template's output once while the sets render it alike."""
    import json
    import subprocess
    import sys

    _chart(tmp_path, "demo", "kind: ConfigMap\ndata:\n  size: {{ .Values.size | quote }}\n")
    (tmp_path / "demo/templates/crd.yaml").write_text("kind: CustomResourceDefinition\nmetadata:\n  name: big\n", encoding="utf-8")
    sets = [{"values": [], "release": "r", "namespace": "default"}, {"values": ["size: 4\n"], "release": "r", "namespace": "default"},
            {"values": ["size: 4\n"], "release": "r", "namespace": "default"}]
    request = json.dumps({"chart": str(tmp_path / "demo"), "sets": sets, "memory": 1 << 30, "max_output": 1 << 20})
    done = subprocess.run([sys.executable, "-I", "-c", "from fieldwarden.linter.units.helm_child import main; main()"],
                          input=request + "\n", capture_output=True, text=True, timeout=60)
    sent = [json.loads(line)["manifests"] for line in done.stdout.splitlines()]
    assert [sorted(name for name, text in each.items() if text is None) for each in sent] == [
        [], ["demo/templates/crd.yaml"], ["demo/templates/cm.yaml", "demo/templates/crd.yaml"]]
    (tmp_path / "size.yaml").write_text("size: 4\n", encoding="utf-8")
    renders = helm.render_chart_sets(tmp_path, "demo", [helm.ValueSet((), "", "r"), helm.ValueSet(("size.yaml",), "", "r"),
                                                        helm.ValueSet(("size.yaml",), "", "r")])
    assert [sorted(obj.text.strip() for obj in render.objects) for render in renders] == [
        ['kind: ConfigMap\ndata:\n  size: "3"', "kind: CustomResourceDefinition\nmetadata:\n  name: big"],
        ['kind: ConfigMap\ndata:\n  size: "4"', "kind: CustomResourceDefinition\nmetadata:\n  name: big"],
        ['kind: ConfigMap\ndata:\n  size: "4"', "kind: CustomResourceDefinition\nmetadata:\n  name: big"]]
    helm_pool.close_idle()


def test_children_started_ahead_render_the_charts_and_end_with_the_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """renders.render_pending starts a child per core before the charts are read and copied (kyverno's
    main chart waited ~0.1-0.2 s more for its child otherwise); those render the charts, and none outlives the run."""
    helm_pool.prestart(2, helm.MEMORY)
    helm_pool.prestart(2, helm.MEMORY)  # (idle ones count: still two)
    ahead = list(helm_pool._IDLE)
    assert len(ahead) == 2 and all(child.process.poll() is None for child in ahead)
    children = _taken(monkeypatch)
    _chart(tmp_path, "first", "kind: ConfigMap\nmetadata:\n  name: first\ndata:\n  size: {{ .Values.size | quote }}\n")
    render = helm.render_chart(tmp_path, "first", [])
    assert _lines(render) == ["kind: ConfigMap\nmetadata:\n  name: first\ndata:\n  size: \"3\" @ ('first/templates/cm.yaml', 5, 3)"]
    assert children[0] in ahead
    helm_pool.close_idle()
    assert all(child.process.poll() is not None for child in ahead)
    assert not helm_pool._IDLE


def test_core_idle_counts_the_children_rendering_a_chart_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child counts from `take` until it is given back or ended (once, however it ends): while as many
    render as there are cores, what this process does meanwhile takes a core from one of them."""
    monkeypatch.setattr(helm_pool.os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    helm_pool.expect(None)
    assert helm_pool.core_idle()
    child = helm_pool.take(helm.MEMORY)
    assert not helm_pool.core_idle()
    helm_pool.give_back(child)  # kept, idle
    assert helm_pool.core_idle()
    again = helm_pool.take(helm.MEMORY)
    assert again is child and not helm_pool.core_idle()
    again.end(kill=True)
    again.end(kill=True)
    assert helm_pool.core_idle() and helm_pool._TAKEN == [0]
    helm_pool.close_idle()
