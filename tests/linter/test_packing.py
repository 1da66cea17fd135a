"""A worker's results come back from packing.py equal to the records it analysed."""

from __future__ import annotations

import datetime
from pathlib import Path

from fieldwarden.linter.analyse import FileResult
from fieldwarden.linter.engine import _analyse_chunk
from fieldwarden.linter.packing import pack, unpack
from fieldwarden.policies.config import Settings

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "rules"  # the rules' fixtures: every kind of record


def _results(names: list[str]) -> list[FileResult]:
    loaded = [(str(path), path, path.read_bytes(), "", Settings(), False) for path in map(CORPUS.joinpath, names)]
    return _analyse_chunk(loaded, True)


def test_records_findings_and_positions_come_back_equal() -> None:
    files = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml"))
    results = _results(files)
    assert sum(len(r.objects) for r in results) > 20 and sum(len(r.findings) for r in results) > 5
    data = pack(results)
    assert data[:1] == b"M"  # marshal, not pickle
    back = unpack(data)
    assert back == results
    assert [type(r.objects[0].key) for r in back if r.objects] == [type(r.objects[0].key) for r in results if r.objects]


def test_a_value_marshal_does_not_know_goes_as_pickle() -> None:
    results = _results([sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml"))[0]])
    record = results[0].objects[0]
    odd = record._replace(projection={**record.projection, "when": datetime.date(2024, 1, 2)})
    results = [results[0]._replace(objects=[odd, *results[0].objects[1:]])]
    data = pack(results)
    assert data[:1] == b"P"
    assert unpack(data) == results
