"""Helm chart dependencies built from their repositories, for `lint --allow-network` only.

A chart whose Chart.yaml names dependencies that its `charts/` lacks renders without them. With
`--allow-network` (the command line's choice, never the linted tree's), `build` runs
`helm dependency build` (helm-python-sdk) in a child process of its own, the only Helm process
allowed the network: the render child stays sealed (helm_seccomp.py). The child works on a
private copy holding only the chart's Chart.yaml, Chart.lock and requirements files, under a
private HOME and Helm configuration (so none of the user's repositories or registry logins is
read), within the chart's time budget (helm_budget.py); the archives it brings are read back
within the chart's size limits and unpacked as any `charts/*.tgz` (helm_archive.py). Nothing is
written into the user's tree. Dependencies from `file://` folders (or from no repository) are
not built: they stay not linted (FW007), `helm dependency build` before linting brings them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping, NamedTuple

REMOTE = ("https://", "http://", "oci://")  # repositories a dependency build may fetch from
_COPIED = ("Chart.yaml", "Chart.lock", "requirements.yaml", "requirements.lock")
_PASSED = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE",
           "SSL_CERT_DIR", "HELM_C_LIB", "SYSTEMROOT")  # the runner's network settings, never the tree's


def remote(dependency: Mapping[str, Any]) -> bool:
    """Whether a dependency comes from a chart or OCI repository (what a dependency build fetches)."""
    return str(dependency.get("repository") or "").startswith(REMOTE)


class Built(NamedTuple):
    archives: dict[str, bytes]  # chart-relative `charts/<name>-<version>.tgz` -> its bytes
    error: str  # why nothing was built ("" when it was)


def build(files: Mapping[str, bytes], scratch: Path, seconds: float, memory: int, max_file: int,
          max_total: int) -> Built:
    """`helm dependency build` on a private copy of the chart's dependency files, in a child with network.

    `files` are the chart's files (chart-relative); the archives it brings come back, each at
    most `max_file` bytes and `max_total` together, or the error that stopped it.
    """
    import subprocess

    chart = scratch / "fetch" / "chart"
    (chart / "charts").mkdir(parents=True)
    for name in _COPIED:
        if name in files:
            (chart / name).write_bytes(files[name])
    home = scratch / "fetch" / "home"
    home.mkdir()
    env = {"HOME": os.fspath(home), "TMPDIR": os.fspath(home), "LANG": "C.UTF-8",
           "XDG_CACHE_HOME": os.fspath(home / "cache"), "XDG_CONFIG_HOME": os.fspath(home / "config"),
           "XDG_DATA_HOME": os.fspath(home / "data"), "HELM_CACHE_HOME": os.fspath(home / "cache"),
           "HELM_CONFIG_HOME": os.fspath(home / "config"), "HELM_DATA_HOME": os.fspath(home / "data"),
           "DOCKER_CONFIG": os.fspath(home / "docker")}
    env.update((name, os.environ[name]) for name in _PASSED if name in os.environ)
    command = [sys.executable, "-I", "-c", "from fieldwarden.linter.units.helm_fetch import main; main()"]
    request = json.dumps({"chart": os.fspath(chart), "memory": memory})
    try:
        done = subprocess.run(command, input=request.encode(), capture_output=True, cwd=home, env=env,
                              timeout=seconds)
    except subprocess.TimeoutExpired:
        return Built({}, f"`helm dependency build` took longer than {seconds:g} s and was stopped")
    except OSError as exc:
        return Built({}, f"cannot start `helm dependency build`: {exc.strerror or exc}")
    try:
        reply = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        reply = None
    if not isinstance(reply, dict):
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return Built({}, f"`helm dependency build` failed: {last[0][:300]}")
    if reply.get("error"):
        return Built({}, f"`helm dependency build` failed: {' '.join(str(reply['error']).split())[:500]}")
    return _archives(chart / "charts", max_file, max_total)


def _archives(folder: Path, max_file: int, max_total: int) -> Built:
    """The archives the build left in `charts/`, read within the limits (regular files only)."""
    found: dict[str, bytes] = {}
    total = 0
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if not entry.name.endswith((".tgz", ".tar.gz")) or not entry.is_file(follow_symlinks=False):
            continue
        size = entry.stat(follow_symlinks=False).st_size
        total += size
        if size > max_file or total > max_total:
            return Built({}, f"the dependencies built are larger than a chart may be ({entry.name})")
        with open(entry.path, "rb") as handle:
            found[f"charts/{entry.name}"] = handle.read(max_file + 1)
    return Built(found, "" if found else "`helm dependency build` brought no chart")


def main() -> None:
    """The child: read {"chart", "memory"} on stdin, build the chart's dependencies, answer one JSON line."""
    request = json.loads(sys.stdin.buffer.read())
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (request["memory"], request["memory"]))
    except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    try:
        import helm_python as helm

        helm.dependency_build(request["chart"])
        reply: dict[str, Any] = {"built": True}
    except Exception as exc:  # the SDK's errors, or a library that does not load: said, never a traceback
        reply = {"error": str(exc) or type(exc).__name__}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
