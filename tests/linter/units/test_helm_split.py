"""A chart's sets left at the end of a run's renders are shared with a second child (helm.py _run_child).

The shape of kyverno's charts/ (111e07bbec): charts/kyverno renders 17 value sets of ~0.1 s each,
charts/kyverno-policies 10 short ones; once the short chart is done its renderer slot is free, and the
last half of kyverno's sets left go to a second child. These tests fail if the replies differ from one
child's, come out of order, if a set the second child was given is lost when the first child stops
early, or if a slot or child outlives the chart.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fieldwarden.linter.units import helm, helm_pool

pytest.importorskip("helm_python")

SETS = 8


def _chart(root: Path, template: str) -> list[helm.ValueSet]:
    (root / "ledger/templates").mkdir(parents=True)
    (root / "ledger/Chart.yaml").write_text("apiVersion: v2\nname: ledger\nversion: 1.0.0\n", encoding="utf-8")
    (root / "ledger/values.yaml").write_text("size: 0\nloop: false\n", encoding="utf-8")
    (root / "ledger/templates/cm.yaml").write_text(template, encoding="utf-8")
    sets = []
    for number in range(SETS):
        (root / f"set{number}.yaml").write_text(f"size: {number}\n", encoding="utf-8")
        sets.append(helm.ValueSet((f"set{number}.yaml",)))
    return sets


TEMPLATE = "kind: ConfigMap\nmetadata:\n  name: ledger-{{ .Values.size }}\ndata:\n  size: {{ .Values.size | quote }}\n"


def _shown(renders: list[helm.Render]) -> list[list[str]]:
    return [[f"{obj.text.strip()} @ {obj.positions.get(('data', 'size'))}" for obj in render.objects]
            + [p.message for p in render.problems] for render in renders]


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[helm_pool.Child]:
    children: list[helm_pool.Child] = []
    real = helm_pool.take

    def take(memory: int) -> helm_pool.Child:
        children.append(real(memory))
        return children[-1]

    monkeypatch.setattr(helm_pool, "take", take)
    return children


def test_the_last_half_of_a_charts_sets_goes_to_a_second_child_when_a_slot_is_free(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = _chart(tmp_path, TEMPLATE)
    alone = helm.render_chart_sets(tmp_path, "ledger", sets)
    helm_pool.close_idle()
    children = _taken(monkeypatch)
    monkeypatch.setattr(helm, "SPLIT_GAIN", 0.0)  # any set is worth it (kyverno's: ~0.1 s each)
    slot = threading.BoundedSemaphore(2)
    helm_pool.expect(1)  # the run's last chart: no other waits for the free slot
    shared = helm.render_chart_sets(tmp_path, "ledger", sets, slot=slot)
    helm_pool.close_idle()
    assert _shown(shared) == _shown(alone)
    assert _shown(shared)[5] == ['kind: ConfigMap\nmetadata:\n  name: ledger-5\ndata:\n  size: "5" @ (\'ledger/templates/cm.yaml\', 5, 3)']
    assert len(children) == 2 and children[0] is not children[1]
    assert all(child.process.poll() is not None for child in children)
    assert slot.acquire(blocking=False) and slot.acquire(blocking=False)  # both slots given back


def test_no_second_child_while_another_chart_waits_or_without_a_free_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = _chart(tmp_path, TEMPLATE)
    children = _taken(monkeypatch)
    monkeypatch.setattr(helm, "SPLIT_GAIN", 0.0)
    helm_pool.expect(2)  # one more chart waits for a child: the free slot is its
    helm.render_chart_sets(tmp_path, "ledger", sets, slot=threading.BoundedSemaphore(2))
    helm_pool.close_idle()
    helm_pool.expect(1)
    full = threading.BoundedSemaphore(1)  # the chart's own slot is the only one
    helm.render_chart_sets(tmp_path, "ledger", sets, slot=full)
    helm_pool.close_idle()
    assert len(children) == 2  # a child per chart, none shared


def test_a_set_that_stops_the_first_child_has_the_second_childs_sets_rendered_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = "{{ if .Values.loop }}{{ range until 50000 }}{{ range until 50000 }}{{ end }}{{ end }}{{ end }}" + TEMPLATE
    sets = _chart(tmp_path, template)
    (tmp_path / "set2.yaml").write_text("size: 2\nloop: true\n", encoding="utf-8")  # in the first child's half
    children = _taken(monkeypatch)
    monkeypatch.setattr(helm, "SPLIT_GAIN", 0.0)
    slot = threading.BoundedSemaphore(2)
    helm_pool.expect(1)
    renders = helm.render_chart_sets(tmp_path, "ledger", sets, slot=slot, timeout=2)
    helm_pool.close_idle()
    shown = _shown(renders)
    assert shown[2] == ["rendering took longer than 2 s and was stopped"]
    assert [len(each) for each in shown] == [1] * SETS
    assert shown[SETS - 1] == [f'kind: ConfigMap\nmetadata:\n  name: ledger-{SETS - 1}\ndata:\n  size: "{SETS - 1}" '
                               "@ ('ledger/templates/cm.yaml', 5, 3)"]
    assert len(children) == 4  # the first, the second (ended unread), the one after the stop and its own second
    assert all(child.process.poll() is not None for child in children)
    assert slot.acquire(blocking=False) and slot.acquire(blocking=False)
