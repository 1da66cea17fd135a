"""The Helm rendering child process: renders one chart copy with one or more value sets.

helm.py starts it (`python -I -c "from fieldwarden.linter.units.helm_child import main; main()"`)
and sends it JSON requests on stdin, one a line: a chart copy's folder, and a list of value sets
(values files' texts, release name, namespace). The answer is one JSON line per value set, in
order, each flushed as soon as it is made (a template's output the request's previous set rendered
alike is sent as null: a chart's sets mostly render the same CRDs, megabytes each), so that a set
that loops or exhausts memory costs only itself and the sets after it are rendered again in a new
child. A child that answered a request whole is given the next chart's (helm_pool.py); it ends
when its stdin does.

A set's templates go out as Helm's library made them: its JSON is cut at the templates and written
from the library's own buffer, each output compared with the last set's by a digest, never made
into a Python string here (`_Passed`). Decoding it, keeping the last set's texts and encoding the
answer again held four more copies of each render (kyverno's main chart: 3.5 MB a set) and grew
this process's heap by ~65 MB over a chart's sets, where the whole linter's peak is counted. That
needs helm_python's ctypes declaration of `helm_render`; where it is not the one this was written
against, the SDK's public `Chart.render` is used (`render`).

Kept apart from helm.py so the child imports only the standard library and Helm's SDK: a
render is cheap (milliseconds), starting the process and loading the SDK is not. Before the SDK
loads, the child gives up its data beyond the memory limit and, on Linux, the right to open
sockets (helm_seccomp.py): no render reaches the network, whatever the chart holds.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import re
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
    passed = _Passed.of(helm)
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
    reply = _staged(helm, chart_folder, value_set,
                    lambda chart, values, options: _limited(chart.render(values, **options), max_output))
    assert reply is not None
    return reply


def _staged(helm: Any, chart_folder: str, value_set: dict[str, Any],
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


def _limited(manifests: dict[str, str], max_output: int) -> dict[str, Any]:
    if sum(len(text) for text in manifests.values()) > max_output:
        return {"error": f"the chart renders more than {max_output >> 20} MiB", "stage": "limit"}
    return {"manifests": manifests}


class _Passed:
    """helm_render called through helm_python's own ctypes declaration, its JSON answer written
    from the library's buffer: a line `{"manifests": <Helm's JSON>}`."""

    SIGNATURE = (ctypes.c_int32, [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)])

    def __init__(self, native: Any, errors: Any, libc: Any) -> None:
        self.native, self.errors, self.libc = native, errors, libc

    @classmethod
    def of(cls, helm: Any) -> _Passed | None:
        """None when helm_python's declaration of helm_render (or of helm_free_string) is not the
        one this was written against, or the C library's strlen cannot be had."""
        if helm is None:
            return None
        try:
            from helm_python import _native, errors

            declared = _native.SIGNATURES
            if declared.get("helm_render") != cls.SIGNATURE or \
                    declared.get("helm_free_string") != (None, [ctypes.c_void_p]):
                return None
            libc = ctypes.CDLL(None)
            libc.strlen.restype, libc.strlen.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
            if not (callable(_native.lib.helm_render) and callable(_native.take_string) and callable(errors.raise_for_code)):
                return None
        except (ImportError, AttributeError, OSError, TypeError):
            return None
        return cls(_native, errors, libc)

    def render(self, helm: Any, chart_folder: str, value_set: dict[str, Any], max_output: int,
               previous: dict[bytes, bytes], out: BinaryIO) -> dict[str, Any] | None:
        """None once the answer is written; else the answer to write (an error, or a render that
        must be decoded: over `max_output` bytes of JSON, or not in the shape `_entries` reads).
        `previous` holds the last set's templates (their names as JSON, their outputs' digests)."""
        return _staged(helm, chart_folder, value_set,
                       lambda chart, values, options: self._render_loaded(chart, values, options, max_output, previous, out))

    def _render_loaded(self, chart: Any, values: dict[str, Any], options: dict[str, Any], max_output: int,
                       previous: dict[bytes, bytes], out: BinaryIO) -> dict[str, Any] | None:
        rendered, error = ctypes.c_void_p(), ctypes.c_void_p()
        code = self.native.lib.helm_render(chart._raw(), json.dumps(values).encode(), json.dumps(options).encode(),
                                           ctypes.byref(rendered), ctypes.byref(error))
        try:
            self.errors.raise_for_code(code, self.native.take_string(error.value))  # HelmError; freed either way
            size = self.libc.strlen(rendered.value) if rendered.value else 0
            data = memoryview((ctypes.c_char * size).from_address(rendered.value or 0)).cast("B")
            entries = _entries(data) if size <= max_output else None  # JSON is no shorter than its texts
            if entries is None:
                previous.clear()
                manifests = json.loads(bytes(data) or b"{}")
                return _limited(manifests, max_output)
            _write_alike_as_null(data, entries, previous, out)
            return None
        finally:
            if rendered.value:
                self.native.lib.helm_free_string(rendered)


_QUOTE = re.compile(rb'"')


def _entries(data: memoryview) -> list[tuple[bytes, int, int]] | None:
    """Helm's answer, a compact JSON object of strings, cut without decoding it: each template's
    name (a JSON string, quotes included) and where its output's JSON string starts and ends; None
    for any other shape."""
    size = len(data)
    if size < 2 or data[0] != ord("{") or data[size - 1] != ord("}"):
        return None
    entries: list[tuple[bytes, int, int]] = []
    at = 1 if size > 2 else size
    while at < size:
        name_end = _string_end(data, at)
        if name_end is None or name_end >= size or data[name_end] != ord(":"):
            return None
        value_end = _string_end(data, name_end + 1)
        if value_end is None or value_end >= size:
            return None
        entries.append((bytes(data[at:name_end]), name_end + 1, value_end))
        if data[value_end] == ord(","):
            at = value_end + 1
        elif data[value_end] == ord("}") and value_end == size - 1:
            at = size
        else:
            return None
    return entries


def _string_end(data: memoryview, start: int) -> int | None:
    """Just past the JSON string that opens at `start`; None when none opens there or it does not close."""
    if start >= len(data) or data[start] != ord('"'):
        return None
    search = start + 1
    while True:
        quote = _QUOTE.search(data, search)
        if quote is None:
            return None
        end = quote.start()
        escapes = 0
        while data[end - 1 - escapes] == ord("\\"):
            escapes += 1
        if escapes % 2 == 0:
            return end + 1
        search = end + 1


def _write_alike_as_null(data: memoryview, entries: list[tuple[bytes, int, int]], previous: dict[bytes, bytes],
                         out: BinaryIO) -> None:
    """The line `{"manifests": {...}}`, each output the last set rendered alike as null, the others
    written from `data`; `previous` becomes this set's digests."""
    digests = {name: hashlib.blake2b(data[start:end], digest_size=32).digest() for name, start, end in entries}
    out.write(b'{"manifests":{')
    for index, (name, start, end) in enumerate(entries):
        out.write(b"," + name + b":" if index else name + b":")
        out.write(b"null" if previous.get(name) == digests[name] else data[start:end])
    out.write(b"}}\n")
    out.flush()
    previous.clear()
    previous.update(digests)


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Values files layered as `helm -f a -f b` does: maps merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged
