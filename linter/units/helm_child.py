"""The Helm rendering child process: renders one chart copy with one or more value sets.

helm.py starts it (`python -I -c "from fieldwarden.linter.units.helm_child import main; main()"`)
and sends it JSON requests on stdin, one a line: a chart copy's folder, and a list of value sets
(values files' texts, release name, namespace). The answer is one JSON line per value set, in
order, each flushed as soon as it is made (a template's output the request's previous set rendered
alike is sent as null: a chart's sets mostly render the same CRDs, megabytes each), so that a set that loops or exhausts memory costs only
itself and the sets after it are rendered again in a new child. A child that answered a request
whole is given the next chart's (helm_pool.py); it ends when its stdin does.

Kept apart from helm.py so the child imports only the standard library and Helm's SDK: a
render is cheap (milliseconds), starting the process and loading the SDK is not. Before the SDK
loads, the child gives up its data beyond the memory limit and, on Linux, the right to open
sockets (helm_seccomp.py): no render reaches the network, whatever the chart holds.
"""

from __future__ import annotations

import json
import sys
from typing import Any

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
    while True:
        previous: dict[str, Any] = {}  # the templates' outputs of the request's last set rendered
        for value_set in request["sets"]:
            reply = failed if helm is None else render(helm, request["chart"], value_set, request["max_output"])
            manifests = reply.get("manifests")
            if isinstance(manifests, dict):
                reply = {"manifests": {name: None if previous.get(name) == text else text for name, text in manifests.items()}}
                previous = manifests
            _answer(reply)
        line = sys.stdin.buffer.readline()
        if not line.strip():
            return
        request = json.loads(line)


def _answer(reply: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(reply))  # the newline apart: a large render's answer is not copied once more
    sys.stdout.write("\n")
    sys.stdout.flush()


def render(helm: Any, chart_folder: str, value_set: dict[str, Any], max_output: int) -> dict[str, Any]:
    """{"manifests": {template path: text}}, or {"error", "stage"[, "type"]}."""
    stage = "values"
    try:
        values: dict[str, Any] = {}
        for index, text in enumerate(value_set["values"]):
            stage = f"values:{index}"
            values = merge(values, helm.values_from_yaml(text) or {})
        stage = "load"
        with helm.Chart.load(chart_folder) as chart:
            stage = "render"
            manifests = chart.render(values, name=value_set["release"], namespace=value_set["namespace"],
                                     is_install=True)
    except helm.HelmError as exc:
        return {"error": str(exc), "stage": stage, "type": type(exc).__name__}
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
