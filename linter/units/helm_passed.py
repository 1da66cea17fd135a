"""A set's render answered from Helm's own buffer: the child's answers without Python copies.

helm_child.py renders through `helm_render`, called with helm_python's own ctypes declaration of
it. Helm's answer, a compact JSON object of template path -> output, is cut at the templates where
it lies (`entries`), each output compared with the last set's by a digest, and the answer line
written from the library's buffer, an output the last set rendered alike as null. Decoding it,
keeping the last set's texts and encoding the answer again (the public `Chart.render`) held four
more copies of each render (kyverno's main chart: 3.5 MB a set) and grew the child's heap by
~65 MB over a chart's sets, where the whole linter's peak memory is counted.

Only the child imports this (ctypes, blake2): helm.py, in the linter's process, does not.
"""

from __future__ import annotations

import ctypes
import json
import re
from typing import Any, BinaryIO

try:  # hashlib itself maps OpenSSL's library too: ~3.7 MB more in each child, where every MB is counted
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b

from .helm_child import limited, staged


class Passed:
    """helm_render called through helm_python's own ctypes declaration, its JSON answer written
    from the library's buffer: a line `{"manifests": <Helm's JSON>}`."""

    SIGNATURE = (ctypes.c_int32, [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)])

    def __init__(self, native: Any, errors: Any, libc: Any) -> None:
        self.native, self.errors, self.libc = native, errors, libc

    @classmethod
    def of(cls, helm: Any) -> Passed | None:
        """None when helm_python's declaration of helm_render (or of helm_free_string) is not the
        one this was written against, when what it is called with (a chart's handle, the SDK's
        string and error helpers) is not there, or when the C library's strlen cannot be had."""
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
            if not (callable(_native.lib.helm_render) and callable(_native.take_string) and callable(errors.raise_for_code)
                    and callable(helm.Chart._raw)):
                return None
        except (ImportError, AttributeError, OSError, TypeError):
            return None
        return cls(_native, errors, libc)

    def render(self, helm: Any, chart_folder: str, value_set: dict[str, Any], max_output: int,
               previous: dict[bytes, bytes], out: BinaryIO) -> dict[str, Any] | None:
        """None once the answer is written; else the answer to write (an error, or a render that
        must be decoded: over `max_output` bytes of JSON, or not in the shape `entries` reads).
        `previous` holds the last set's templates (their names as JSON, their outputs' digests)."""
        return staged(helm, chart_folder, value_set,
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
            cut = entries(data) if size <= max_output else None  # JSON is no shorter than its texts
            if cut is None:
                previous.clear()
                manifests = json.loads(bytes(data) or b"{}")
                return limited(manifests, max_output)
            _write_alike_as_null(data, cut, previous, out)
            return None
        finally:
            if rendered.value:
                self.native.lib.helm_free_string(rendered)


_QUOTE = re.compile(rb'"')


def entries(data: memoryview) -> list[tuple[bytes, int, int]] | None:
    """Helm's answer, a compact JSON object of strings, cut without decoding it: each template's
    name (a JSON string, quotes included) and where its output's JSON string starts and ends; None
    for any other shape."""
    size = len(data)
    if size < 2 or data[0] != ord("{") or data[size - 1] != ord("}"):
        return None
    found: list[tuple[bytes, int, int]] = []
    at = 1 if size > 2 else size
    while at < size:
        name_end = _string_end(data, at)
        if name_end is None or name_end >= size or data[name_end] != ord(":"):
            return None
        value_end = _string_end(data, name_end + 1)
        if value_end is None or value_end >= size:
            return None
        found.append((bytes(data[at:name_end]), name_end + 1, value_end))
        if data[value_end] == ord(","):
            at = value_end + 1
        elif data[value_end] == ord("}") and value_end == size - 1:
            at = size
        else:
            return None
    return found


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


def _write_alike_as_null(data: memoryview, cut: list[tuple[bytes, int, int]], previous: dict[bytes, bytes],
                         out: BinaryIO) -> None:
    """The line `{"manifests": {...}}`, each output the last set rendered alike as null, the others
    written from `data`; `previous` becomes this set's digests."""
    digests = {name: blake2b(data[start:end], digest_size=32).digest() for name, start, end in cut}
    out.write(b'{"manifests":{')
    for index, (name, start, end) in enumerate(cut):
        out.write(b"," + name + b":" if index else name + b":")
        out.write(b"null" if previous.get(name) == digests[name] else data[start:end])
    out.write(b"}}\n")
    out.flush()
    previous.clear()
    previous.update(digests)
