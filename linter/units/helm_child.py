"""The Helm rendering child process: renders one chart copy with one or more value sets.

helm.py starts it (`python -I -c "from fieldwarden.linter.units.helm_child import main; main()"`)
and sends it JSON requests on stdin, one a line: a chart copy's folder, and a list of value sets
(values files' texts, release name, namespace). The answer is one JSON line per value set, in
order, each flushed as soon as it is made (a template's output the request's previous set rendered
alike is sent as null: a chart's sets mostly render the same CRDs, megabytes each), so that a set
that loops or exhausts memory costs only itself and the sets after it are rendered again in a new
child. A child that answered a request whole is given the next chart's (helm_pool.py); it ends
when its stdin does.

A set's templates go out as Helm's library wrote them, never made into Python strings here
(helm_passed.py); where helm_python's declaration of `helm_render` is not the one that was written
against, through the SDK's public `Chart.render` (`render`), which decodes them.

Kept apart from helm.py so the child imports only the standard library and Helm's SDK: a
render is cheap (milliseconds), starting the process and loading the SDK is not. Before the SDK
loads, the child gives up its data beyond the memory limit and, on Linux, the right to open
sockets (helm_seccomp.py): no render reaches the network, whatever the chart holds.
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO, Callable

EXTRA = "render"  # the optional dependency's extra in pyproject.toml


def main() -> None:
    """Read requests on stdin, a line each, render each value set, answer a JSON line per set on stdout."""
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return
    request = json.loads(line)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (request["memory"], request["memory"]))
    except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    from .helm_seccomp import deny_sockets

    deny_sockets()  # before Helm's Go runtime starts its threads: none of them can open a socket
    helm: Any = None
    failed: dict[str, Any] = {}
    try:
        import helm_python

        helm = helm_python
    except Exception as exc:  # the library may be missing, or fail to load for its platform
        failed = {"error": f"Helm's engine cannot be loaded ({exc}); reinstall with pip install 'fieldwarden[{EXTRA}]'",
                  "stage": "import"}
    from .helm_passed import Passed

    passed = Passed.of(helm)
    out = sys.stdout.buffer
    while True:
        previous: dict[Any, Any] = {}  # the request's last set rendered: each template's output (or its digest)
        for value_set in request["sets"]:
            if helm is None:
                reply: dict[str, Any] | None = failed
            elif passed is not None:
                reply = passed.render(helm, request["chart"], value_set, request["max_output"], previous, out)
            else:
                reply = _alike_as_null(render(helm, request["chart"], value_set, request["max_output"]), previous)
            if reply is not None:
                _answer(reply, out)
        line = sys.stdin.buffer.readline()
        if not line.strip():
            return
        request = json.loads(line)


def _answer(reply: dict[str, Any], out: BinaryIO) -> None:
    out.write(json.dumps(reply).encode())
    out.write(b"\n")
    out.flush()


def render(helm: Any, chart_folder: str, value_set: dict[str, Any], max_output: int) -> dict[str, Any]:
    """{"manifests": {template path: text}}, or {"error", "stage"[, "type"]}: through the SDK's public API."""
    reply = staged(helm, chart_folder, value_set,
                   lambda chart, values, options: limited(chart.render(values, **options), max_output))
    assert reply is not None
    return reply


def staged(helm: Any, chart_folder: str, value_set: dict[str, Any],
           rendered: Callable[[Any, dict[str, Any], dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any] | None:
    """`rendered(chart, values, options)` of the set's values files merged in order, or Helm's error
    with the stage it came from ("values:<index>", "load", "render")."""
    stage = "values"
    try:
        values: dict[str, Any] = {}
        for index, text in enumerate(value_set["values"]):
            stage = f"values:{index}"
            values = merge(values, helm.values_from_yaml(text) or {})
        stage = "load"
        with helm.Chart.load(chart_folder) as chart:
            stage = "render"
            return rendered(chart, values, {"name": value_set["release"], "namespace": value_set["namespace"],
                                            "is_install": True})
    except helm.HelmError as exc:
        return {"error": str(exc), "stage": stage, "type": type(exc).__name__}


def _alike_as_null(reply: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """The reply with each template output the last set rendered alike as null; `previous` becomes this set's."""
    manifests = reply.get("manifests")
    if not isinstance(manifests, dict):
        return reply
    alike = {name: None if previous.get(name) == text else text for name, text in manifests.items()}
    previous.clear()
    previous.update(manifests)
    return {"manifests": alike}


def limited(manifests: dict[str, str], max_output: int) -> dict[str, Any]:
    if sum(len(text) for text in manifests.values()) > max_output:
        return {"error": f"the chart renders more than {max_output >> 20} MiB", "stage": "limit"}
    return {"manifests": manifests}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Values files layered as `helm -f a -f b` does: maps merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged
