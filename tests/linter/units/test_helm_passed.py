"""A set's render answered from Helm's own buffer (helm_passed.py, in the child of helm_child.py):
what it answers, and that a render's output crosses the child without becoming Python strings.

kyverno's charts/kyverno (111e07bbec) renders 3.5 MB a set, 27 sets; decoding, comparing and
encoding each answer grew the child's heap by ~65 MB, the largest part of the linter's peak
(bench/lint_speed.py row e). These tests fail if the answer written from Helm's buffer differs
from what the SDK's public API returns, if an output the last set rendered alike is not null, or
if a render's output is copied into Python objects on the way.
"""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fieldwarden.linter.units import helm_child, helm_passed

helm_python = pytest.importorskip("helm_python")

# a template's output with everything JSON escapes, and what would end a string or an entry if it were not
AWKWARD = ('kind: ConfigMap\ndata:\n  quoted: "a \\"b\\" c"\n  comma: "\\",\\""\n  colon: "\\":\\""\n'
           '  tail: "ends in a backslash \\\\"\n  tab: "\t"\n  html: "<a href=\'x\'>&amp;</a>"\n  unicode: "żółw ✓ 🐢"\n'
           '  brace: "}"\n')


def _chart(root: Path, templates: dict[str, str]) -> str:
    (root / "demo/templates").mkdir(parents=True)
    (root / "demo/Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n", encoding="utf-8")
    (root / "demo/values.yaml").write_text("size: 3\n", encoding="utf-8")
    for name, text in templates.items():
        (root / "demo/templates" / name).write_text(text, encoding="utf-8")
    return str(root / "demo")


def _set(*values: str) -> dict[str, Any]:
    return {"values": list(values), "release": "r", "namespace": "default"}


class _Sink:
    """An answer's bytes, counted and kept as one line."""

    def __init__(self) -> None:
        self.written = io.BytesIO()

    def write(self, data: Any) -> int:
        return self.written.write(data)

    def flush(self) -> None:
        pass


def _passed() -> helm_passed.Passed:
    passed = helm_passed.Passed.of(helm_python)
    assert passed is not None, "helm_python's declaration of helm_render is not the one helm_child.py was written for"
    return passed


def test_the_answer_written_from_helms_buffer_is_what_the_public_api_returns(tmp_path: Path) -> None:
    chart = _chart(tmp_path, {"cm.yaml": "size: {{ .Values.size | quote }}\n", "awkward.yaml": AWKWARD, "empty.yaml": ""})
    sink = _Sink()
    assert _passed().render(helm_python, chart, _set("size: 4\n"), 1 << 20, {}, sink) is None
    line = sink.written.getvalue()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    public = helm_child.render(helm_python, chart, _set("size: 4\n"), 1 << 20)
    assert json.loads(line) == public
    assert public["manifests"]["demo/templates/awkward.yaml"] == AWKWARD
    assert public["manifests"]["demo/templates/cm.yaml"] == 'size: "4"\n'


def test_an_output_the_last_set_rendered_alike_is_null_and_the_others_whole(tmp_path: Path) -> None:
    chart = _chart(tmp_path, {"cm.yaml": "size: {{ .Values.size | quote }}\n", "awkward.yaml": AWKWARD})
    passed, previous = _passed(), {}
    answers = []
    for value_set in (_set(), _set("size: 4\n"), _set("size: 4\n"), _set()):
        sink = _Sink()
        assert passed.render(helm_python, chart, value_set, 1 << 20, previous, sink) is None
        answers.append(json.loads(sink.written.getvalue())["manifests"])
    assert answers == [
        {"demo/templates/awkward.yaml": AWKWARD, "demo/templates/cm.yaml": 'size: "3"\n'},
        {"demo/templates/awkward.yaml": None, "demo/templates/cm.yaml": 'size: "4"\n'},
        {"demo/templates/awkward.yaml": None, "demo/templates/cm.yaml": None},
        {"demo/templates/awkward.yaml": None, "demo/templates/cm.yaml": 'size: "3"\n'}]


def test_helms_errors_and_the_output_limit_are_answered_as_by_the_public_api(tmp_path: Path) -> None:
    chart = _chart(tmp_path, {"cm.yaml": "size: {{ .Values.size | quote }}\n{{ fail \"no\" }}\n"})
    for value_set in (_set(), _set("size: [\n")):
        sink = _Sink()
        answer = _passed().render(helm_python, chart, value_set, 1 << 20, {}, sink)
        assert answer == helm_child.render(helm_python, chart, value_set, 1 << 20)
        assert answer is not None and answer["stage"] in ("render", "values:0") and not sink.written.getvalue()
    big = _chart(tmp_path / "big", {"cm.yaml": "data: " + "x" * 3000 + "\n"})
    previous = {b'"demo/templates/cm.yaml"': b"digest"}
    answer = _passed().render(helm_python, big, _set(), 2000, previous, _Sink())
    assert answer == helm_child.render(helm_python, big, _set(), 2000) == {
        "error": "the chart renders more than 0 MiB", "stage": "limit"}
    assert not previous  # the next set's outputs go whole


def test_a_large_render_crosses_without_becoming_python_strings(tmp_path: Path) -> None:
    """Python's allocations while a 4 MB render is answered: what the public API makes (the text
    decoded, then its JSON) against what the passed answer makes (a digest a template)."""
    chart = _chart(tmp_path, {f"cm{index}.yaml": "data: |\n" + ("  " + "y" * 60 + "\n") * 16_000 for index in range(4)})
    passed = _passed()
    peaks = []
    for answer in (lambda: passed.render(helm_python, chart, _set(), 32 << 20, {}, _Counted()),
                   lambda: helm_child.render(helm_python, chart, _set(), 32 << 20)):
        tracemalloc.start()
        answer()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] > 8_000_000
    assert peaks[0] < 200_000


class _Counted:
    def __init__(self) -> None:
        self.size = 0

    def write(self, data: Any) -> int:
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass


@given(st.dictionaries(st.text(), st.text(), max_size=8), st.booleans())
def test_entries_cut_any_compact_object_of_strings_where_json_does(templates: dict[str, str], ascii_only: bool) -> None:
    data = json.dumps(templates, separators=(",", ":"), ensure_ascii=ascii_only).encode()
    entries = helm_passed.entries(memoryview(data))
    assert entries is not None
    assert {json.loads(name): json.loads(data[start:end]) for name, start, end in entries} == templates


@pytest.mark.parametrize("data", [b"", b"{", b"[]", b'{"a":"b"', b'{"a":"b"}x', b'{"a": "b"}', b'{"a":1}', b'{"a":null}',
                                  b'{"a":{"b":"c"}}', b'{"a":"b",}', b'{"a":"b\\"}', b'{"a""b"}', b'{"a":"b"x"c":"d"}'])
def test_entries_refuse_any_other_shape(data: bytes) -> None:
    assert helm_passed.entries(memoryview(data)) is None


def test_a_helm_python_whose_declaration_of_helm_render_differs_is_used_through_its_public_api(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helm_python import _native

    assert helm_passed.Passed.of(helm_python) is not None
    with monkeypatch.context() as patched:
        patched.setattr(helm_python.Chart, "_raw", None)
        assert helm_passed.Passed.of(helm_python) is None
    monkeypatch.setitem(_native.SIGNATURES, "helm_render", (_native.SIGNATURES["helm_render"][0], []))
    assert helm_passed.Passed.of(helm_python) is None
    chart = _chart(tmp_path, {"cm.yaml": "size: {{ .Values.size | quote }}\n"})
    previous: dict[str, Any] = {}
    answers = [helm_child._alike_as_null(helm_child.render(helm_python, chart, value_set, 1 << 20), previous)
               for value_set in (_set(), _set())]
    assert answers == [{"manifests": {"demo/templates/cm.yaml": 'size: "3"\n'}}, {"manifests": {"demo/templates/cm.yaml": None}}]
