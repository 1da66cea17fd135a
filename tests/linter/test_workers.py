"""Large inputs are analysed by worker processes only where cores are free (engine.workers_for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fieldwarden.linter import engine
from fieldwarden.linter.engine import PARALLEL_MIN_BYTES, workers_for
from tests.helpers import lint, write

APP = """\
# {name}: a Deployment without a strategy, and a Service whose selector misses it
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  uid: 0f2b{index:04d}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: {name}
          image: registry.example.com/{name}:1.{index}
          env: [{env}]
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector: {{app: {name}-typo}}
  ports: [{{port: 80}}]
"""


@pytest.mark.parametrize(
    ("cpus", "load", "workers"),
    [(2, 0.2, 2), (2, 1.0, 2), (2, 1.6, 1), (2, 3.5, 1), (8, 3.0, 6), (8, 0.0, 8), (1, 0.0, 1)],
)
def test_workers_are_the_cores_no_other_process_keeps_busy(cpus: int, load: float, workers: int) -> None:
    assert workers_for(cpus, load) == workers


def test_worker_processes_find_what_one_process_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same findings, in the same order, whether a large input is spread over workers or not."""
    env = ", ".join(f"{{name: V{n}, value: '{n}'}}" for n in range(140))
    for index in range(360):
        write(tmp_path, f"apps/app-{index:03d}.yaml", APP.format(name=f"app-{index:03d}", index=index, env=env))
    assert sum(p.stat().st_size for p in tmp_path.rglob("*.yaml")) > 1_000_000
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1_000_000)  # (a smaller input than the pool needs: a quicker test)
    runs = {}
    tasks: list[int] = []
    chunks = engine._chunks
    monkeypatch.setattr(engine, "_chunks", lambda *args: tasks.append(1) or chunks(*args))
    for workers in (1, 2):
        monkeypatch.setattr(engine, "_free_cpus", lambda workers=workers: workers)
        runs[workers] = lint(["--no-context", "apps"], cwd=tmp_path)
        assert bool(tasks) == (workers > 1)  # (the pool ran, cut into tasks, only with 2)
    assert runs[1].code == runs[2].code == 1
    assert runs[1].findings == runs[2].findings
    assert {f["code"] for f in runs[1].findings} >= {"FW103", "FW306"}
    assert len(runs[1].findings) >= 720


def test_an_input_under_the_threshold_is_analysed_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under PARALLEL_MIN_BYTES the workers would cost more CPU than the wall time they save."""
    env = ", ".join(f"{{name: V{n}, value: '{n}'}}" for n in range(140))
    for index in range(360):
        write(tmp_path, f"apps/app-{index:03d}.yaml", APP.format(name=f"app-{index:03d}", index=index, env=env))
    assert 1_000_000 < sum(p.stat().st_size for p in tmp_path.rglob("*.yaml")) < PARALLEL_MIN_BYTES
    tasks: list[int] = []
    chunks = engine._chunks
    monkeypatch.setattr(engine, "_chunks", lambda *args: tasks.append(1) or chunks(*args))
    monkeypatch.setattr(engine, "_free_cpus", lambda: 2)
    run = lint(["--no-context", "apps"], cwd=tmp_path)
    assert run.code == 1 and len(run.findings) >= 720
    assert not tasks
