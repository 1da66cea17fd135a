"""The context cache (.fieldwarden_cache/) never gives a stale answer.

pre-commit passes only the changed files; the rest of the repository is context, and a
large context is cached per file, keyed by the file's content. These runs go through the
CLI in a temporary git repository, as pre-commit does: lint `deploy.yaml`, change the
context around it, lint again, and the second run must see the change.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter import engine
from fieldwarden.linter.cache import CACHE_DIR
from tests.helpers import lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy: {type: RollingUpdate}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-scaler
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 2
  maxReplicas: 5
"""

CONFIGMAP = """\
%sapiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
"""

REPLICAS = [("deploy.yaml", 6, 3, "FW301")]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with a Deployment, the HPA that scales it, and some other files."""
    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)  # cache even this small a context
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    write(tmp_path, "hpa.yaml", HPA % "web")
    for n in range(3):
        write(tmp_path, f"other/config-{n}.yaml", CONFIGMAP.replace("settings", f"settings-{n}") % "")
    return tmp_path


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the engine parses (cache hits are not parsed)."""
    seen: list[str] = []
    analyse = engine.analyse

    def counting(display: str, *args: Any) -> Any:
        seen.append(display)
        return analyse(display, *args)

    monkeypatch.setattr(engine, "analyse", counting)
    return seen


def run(repo: Path, *args: str) -> list[tuple[str, int, int, str]]:
    result = lint(["--select", "FW3", *args, "deploy.yaml"], cwd=repo)
    assert result.code in (0, 1), result.stderr
    return result.hits()


def test_warm_run_reads_the_cache_instead_of_parsing(repo: Path, parsed: list[str]) -> None:
    assert run(repo) == REPLICAS
    assert (repo / CACHE_DIR / "context.pickle").is_file()
    assert sorted(parsed) == ["deploy.yaml", "hpa.yaml", "other/config-0.yaml", "other/config-1.yaml", "other/config-2.yaml"]
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]  # the target only: every context file came from the cache


def test_changed_context_file_is_seen(repo: Path, parsed: list[str]) -> None:
    assert run(repo) == REPLICAS
    write(repo, "hpa.yaml", HPA % "api")  # the HPA now scales another workload
    parsed.clear()
    assert run(repo) == []
    assert parsed == ["deploy.yaml", "hpa.yaml"]
    write(repo, "hpa.yaml", HPA % "web")  # and back
    assert run(repo) == REPLICAS


def test_change_keeping_size_and_modification_time_is_seen(repo: Path) -> None:
    assert run(repo) == REPLICAS
    path = repo / "hpa.yaml"
    before = path.stat()
    path.write_text(HPA % "wex", encoding="utf-8")  # same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert run(repo) == []


def test_deleted_context_file_is_seen(repo: Path) -> None:
    assert run(repo) == REPLICAS
    (repo / "hpa.yaml").unlink()
    assert run(repo) == []
    assert run(repo, "--ignore", "FW303") == []


def test_new_context_file_is_seen(repo: Path) -> None:
    (repo / "hpa.yaml").unlink()
    assert run(repo) == []
    write(repo, "more/hpa.yaml", HPA % "web")
    assert run(repo) == REPLICAS


def test_ignored_context_file_drops_out(repo: Path) -> None:
    assert run(repo) == REPLICAS
    write(repo, ".gitignore", "hpa.yaml\n")
    assert run(repo) == []


def test_target_entry_serves_when_the_target_becomes_context(repo: Path, parsed: list[str]) -> None:
    """pre-commit passes another file next time: the previous target is context, still cached."""
    assert run(repo) == REPLICAS
    assert lint(["--select", "FW3", "hpa.yaml"], cwd=repo).code == 0
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]


def test_cached_and_fresh_results_keep_the_project_order(repo: Path) -> None:
    """Messages that list other objects read the same whether they came from the cache or not."""
    write(repo, "deploy.yaml", CONFIGMAP % "")
    write(repo, "b.yaml", CONFIGMAP % "")
    write(repo, "c.yaml", CONFIGMAP % "")
    first = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert "also at b.yaml:4, c.yaml:4" in first.findings[0]["message"]
    write(repo, "b.yaml", CONFIGMAP % "# moved down a line\n")  # b parsed again, c from the cache
    warm = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert "also at b.yaml:5, c.yaml:4" in warm.findings[0]["message"]
    for name in os.listdir(repo / CACHE_DIR):
        (repo / CACHE_DIR / name).unlink()
    cold = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert cold.findings == warm.findings


def test_unreadable_cache_is_rebuilt(repo: Path) -> None:
    assert run(repo) == REPLICAS
    (repo / CACHE_DIR / "context.pickle").write_bytes(b"not a pickle")
    assert run(repo) == REPLICAS
    write(repo, "hpa.yaml", HPA % "api")
    assert run(repo) == []
