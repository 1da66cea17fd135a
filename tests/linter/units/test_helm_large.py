"""Two large charts' Helm children never run at once (helm.LARGE_CHART).

Measured on prometheus-community/helm-charts (bench row e): the children rendering
kube-prometheus-stack (7 MB of files) and prometheus-operator-crds (4.5 MB) each grow to ~120 MB
against ~60 MB for a small chart; when the two ran side by side the lint's process tree peaked
at 320-360 MB (the target is < 300 MB), depending only on which chart each core picked up.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from fieldwarden.linter.units import helm

CHARTS = Path(__file__).resolve().parents[2] / "fixtures" / "helm"


def _render_side_by_side(root: Path, charts: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Each chart rendered on its own thread with two slots, as renders.py does; the most children
    alive at once (a chart's child is alive until `ended` says none is, or its renders are over)."""
    run_helm = helm._run_helm
    alive, most = [0], [0]
    lock = threading.Lock()

    def running(*args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        with lock:
            alive[0] += 1
            most[0] = max(most[0], alive[0])
        left = [False]
        told = kwargs.get("ended")

        def leave() -> None:
            with lock:
                if not left[0]:
                    left[0] = True
                    alive[0] -= 1

        def ended() -> None:
            leave()
            if told is not None:
                told()

        try:
            time.sleep(0.3)  # long enough for the other thread's chart to start beside it
            yield from run_helm(*args, **{**kwargs, "ended": ended})
        finally:
            leave()

    monkeypatch.setattr(helm, "_run_helm", running)
    slots = threading.BoundedSemaphore(2)
    made: dict[str, list[Any]] = {}
    threads = [threading.Thread(target=lambda c=chart: made.setdefault(c, helm.render_chart_sets(
        root, c, [helm.ValueSet()], slot=slots))) for chart in charts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(made) == sorted(charts)
    for chart in charts:
        [render] = made[chart]
        assert render.objects and not [p for p in render.problems if "failed" in p.message], chart
    return most[0]


@pytest.mark.parametrize("large, together", [(1, 1), (1 << 30, 2)])  # every chart large; none (the control)
def test_large_charts_render_one_at_a_time(large: int, together: int, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("web", "operator"):
        shutil.copytree(CHARTS / name, tmp_path / name)
    monkeypatch.setattr(helm, "LARGE_CHART", large)
    assert _render_side_by_side(tmp_path, ["web", "operator"], monkeypatch) == together


def test_waiting_for_another_large_chart_does_not_use_up_the_charts_budget(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart's own budget (FIELDWARDEN_HELM_CHART_SECONDS) counts its renders, not its wait for a turn."""
    from fieldwarden.linter.units.helm_budget import Budgets

    shutil.copytree(CHARTS / "web", tmp_path / "web")
    monkeypatch.setattr(helm, "LARGE_CHART", 1)
    made: list[Any] = []
    with helm._LARGE:  # another large chart renders meanwhile
        thread = threading.Thread(target=lambda: made.extend(helm.render_chart_sets(
            tmp_path, "web", [helm.ValueSet()], budgets=Budgets(per_set=30, per_chart=1.0, per_run=60))))
        thread.start()
        time.sleep(1.5)  # longer than the chart's whole budget
    thread.join(60)
    [render] = made
    assert render.objects and not [p for p in render.problems if "used up" in p.message]


def test_a_charts_turn_is_free_while_its_last_set_is_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the chart's child is kept or ended, the next chart's may start (its render slot and, for a
    large chart, the large-chart lock are free) while the linter maps the last set's reply; an earlier
    set is mapped while the child renders the next, its turn held."""
    shutil.copytree(CHARTS / "web", tmp_path / "web")
    monkeypatch.setattr(helm, "LARGE_CHART", 1)
    slot = threading.BoundedSemaphore(1)
    free_while_mapped: list[tuple[bool, bool]] = []
    rendered = helm._rendered

    def free(turn: Any) -> bool:
        if not turn.acquire(blocking=False):
            return False
        turn.release()
        return True

    def mapping(*args: Any, **kwargs: Any) -> Any:
        free_while_mapped.append((free(slot), free(helm._LARGE)))
        return rendered(*args, **kwargs)

    monkeypatch.setattr(helm, "_rendered", mapping)
    made = helm.render_chart_sets(tmp_path, "web", [helm.ValueSet(), helm.ValueSet(release="second")], slot=slot)
    assert [bool(render.objects) for render in made] == [True, True]
    assert free_while_mapped == [(False, False), (True, True)]
    assert free(slot) and free(helm._LARGE)
