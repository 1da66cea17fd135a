"""A worker's file results sent back compactly: marshal of plain tuples, not pickle of records.

Records become plain tuples (marshal takes no tuple subclasses) and each object's positions one
flat tuple of numbers (path index, line, column, ...) into one table of the paths of the whole
batch (most objects share their paths). About half the CPU of pickling the records, on both
sides. A batch marshal cannot take (a value of a type it does not know) goes as pickle.
"""

from __future__ import annotations

import marshal
import pickle
from typing import Any

from ..policies.model import FieldPath, ObjectKey
from .analyse import FileResult, Finding, ObjectRecord
from .suppress import Directive

_MARSHAL, _PICKLE = b"M", b"P"


def pack(results: list[FileResult]) -> bytes:
    """The results as bytes for unpack()."""
    try:
        return _MARSHAL + marshal.dumps(_plain(results))
    except ValueError:  # a value marshal does not know
        return _PICKLE + pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> list[FileResult]:
    """The results pack() was given (equal records)."""
    if data[:1] == _PICKLE:
        results: list[FileResult] = pickle.loads(data[1:])
        return results
    paths, files = marshal.loads(data[1:])
    return [
        FileResult(file, [Finding(*f) for f in findings], [_record(paths, o) for o in objects],
                   [Directive(*d) for d in directives], spans, notice)
        for file, findings, objects, directives, spans, notice in files
    ]


def _plain(results: list[FileResult]) -> tuple[tuple[FieldPath, ...], list[tuple[Any, ...]]]:
    table: dict[FieldPath, int] = {}
    files = []
    for result in results:
        objects = []
        for record in result.objects:
            flat: list[int] = []
            for path, (line, column) in record.locations.items():
                index = table.get(path)
                if index is None:
                    index = table[path] = len(table)
                flat += (index, line, column)
            key = None if record.key is None else tuple(record.key)
            objects.append((key, record.label, record.projection, tuple(flat), record.origin, record.document,
                            record.prefix, record.ignore, record.ignore_at))
        files.append((result.file, [tuple(f) for f in result.findings], objects,
                      [tuple(d) for d in result.directives], result.spans, result.notice))
    return tuple(table), files


def _record(paths: tuple[FieldPath, ...], packed: tuple[Any, ...]) -> ObjectRecord:
    key, label, projection, flat, origin, document, prefix, ignore, ignore_at = packed
    numbers = iter(flat)
    locations = {paths[index]: (line, column) for index, line, column in zip(numbers, numbers, numbers)}
    return ObjectRecord(None if key is None else ObjectKey(*key), label, projection, locations, origin, document,
                        prefix, ignore, ignore_at)
