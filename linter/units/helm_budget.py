"""Time budgets of Helm renders: per value set, per chart (all its sets), per run (all charts).

A template can loop for as long as it is let (a three-line nested `range`), so every render is
bounded three ways: a value set by SET seconds, a chart's sets together by CHART seconds from
its first child's start, and all the charts of one lint run by RUN seconds from the run's first
render. What a budget cuts is reported on the chart's Chart.yaml, naming the value set.

The defaults can be changed only where the person running fieldwarden decides, never by the
linted tree (a pull request could otherwise lift them): FIELDWARDEN_HELM_SET_SECONDS,
FIELDWARDEN_HELM_CHART_SECONDS, FIELDWARDEN_HELM_RUN_SECONDS, each a positive number of seconds.
"""

from __future__ import annotations

import math
import os
import time
from typing import Mapping, NamedTuple

SET = 60.0
CHART = 120.0
RUN = 300.0
VARIABLES = ("FIELDWARDEN_HELM_SET_SECONDS", "FIELDWARDEN_HELM_CHART_SECONDS", "FIELDWARDEN_HELM_RUN_SECONDS")


class Budgets(NamedTuple):
    per_set: float = SET
    per_chart: float = CHART
    per_run: float = RUN


def from_environment(environ: Mapping[str, str] | None = None) -> Budgets:
    """The budgets, each from its environment variable when set; ValueError says which is wrong."""
    environ = os.environ if environ is None else environ
    values = []
    for name, default in zip(VARIABLES, Budgets()):
        text = environ.get(name, "").strip()
        if not text:
            values.append(default)
            continue
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"{name} must be a positive number of seconds, not {text[:40]!r}")
        values.append(seconds)
    return Budgets(*values)


class Clock:
    """The deadlines of one chart's renders: its own budget from now, and the run's."""

    def __init__(self, budgets: Budgets, run_started: float | None = None) -> None:
        now = time.monotonic()
        self.budgets = budgets
        self.ends = {"chart": now + budgets.per_chart,
                     "run": (now if run_started is None else run_started) + budgets.per_run}

    def waited(self, seconds: float) -> None:
        """Time spent waiting for a turn to render (other charts' children running) is not the chart's own."""
        self.ends["chart"] += seconds

    def next_wait(self) -> tuple[float, str]:
        """How long the next value set may take, and what limits it: "set", "chart" or "run"."""
        now = time.monotonic()
        which = min(self.ends, key=lambda name: self.ends[name])
        left = self.ends[which] - now
        return (self.budgets.per_set, "set") if self.budgets.per_set <= left else (max(left, 0.0), which)

    def used_up(self) -> str | None:
        """The budget ("chart" or "run") with no time left, if any."""
        now = time.monotonic()
        return next((name for name, end in self.ends.items() if end <= now), None)

    def describe(self, which: str) -> str:
        seconds = self.budgets.per_chart if which == "chart" else self.budgets.per_run
        variable = VARIABLES[1] if which == "chart" else VARIABLES[2]
        owner = "this chart's" if which == "chart" else "the run's"
        return f"{owner} Helm time budget of {seconds:g} s ({variable})"
