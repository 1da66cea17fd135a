"""The compiled reader of plain YAML (linter/_plainyaml.c through linter/plainload.py).

It must answer exactly what the full loader answers (the data with its types, each document's lines,
and the position of every field, present or not) wherever it answers at all, and leave everything
else to the full loader. Checked on every manifest under tests/ and examples/, on crafted texts, and
on texts Hypothesis makes; the input text must come back unchanged (the reader is C).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from fieldwarden.linter import analyse as analyse_module, plainload
from fieldwarden.linter.analyse import _PATHS, _PATHS_MAX, _objects, _take, analyse, context_tree
from fieldwarden.linter.loader import MAX_DEPTH, MAX_DOCUMENTS, decode, load, locate
from fieldwarden.policies.config import Settings
from fieldwarden.policies.schemas import validate as validate_module

ROOT = Path(__file__).resolve().parents[2]

if not plainload.available():
    if os.environ.get("FIELDWARDEN_REQUIRE_COMPILED"):  # CI builds it: its absence is a failure there
        pytest.fail("linter/_plainyaml.c was not built (a C compiler and libyaml's headers are needed)", pytrace=False)
    pytest.skip("the compiled reader is not built here", allow_module_level=True)


def paths(data: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path of `data`, and one absent step below each mapping and sequence."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*prefix, key))
        yield (*prefix, "absent")
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*prefix, index))
        yield (*prefix, len(data))
    yield (*prefix, 0, "deeper")


def same_as_full(text: str) -> bool:
    """Whether the reader answered; where it did, that its answer is the full loader's (asserted)."""
    kept = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    plain = plainload.load_plain(text)
    assert text == kept, "the reader changed its input"
    if plain is None:
        return False
    full = load(text)
    assert not full.problems and not full.template_like, (full.problems, text[:200])
    assert len(plain) == len(full.documents)
    for mine, theirs in zip(plain, full.documents):
        assert repr(mine.data) == repr(theirs.data)  # (types too: 1 vs 1.0 vs True)
        assert (mine.index, mine.start_line, mine.end_line) == (theirs.index, theirs.start_line, theirs.end_line)
        for path in paths(theirs.data):
            assert mine.node.locate(mine.data, path) == locate(theirs.node, path), path
    return True


def manifests() -> list[Path]:
    return sorted(p for folder in ("tests", "examples") for p in (ROOT / folder).rglob("*")
                  if p.suffix in (".yaml", ".yml", ".json") and p.is_file())


def test_every_manifest_of_the_repository_reads_as_the_full_loader_reads_it() -> None:
    answered = 0
    for path in manifests():
        text, _ = decode(path.read_bytes())
        if text is not None:
            answered += same_as_full(text)
    assert answered > 300  # most are plain: the comparison is not vacuous


PLAIN = {
    "scalars": "a: 1\nb: 1.5\nc: true\nd: yes\ne: ~\nf:\ng: null\nh: 0x1f\ni: 0o17\nj: 1_000\nk: .inf\nl: -.NaN\n"
               "m: 2024-01-01\nn: '1'\no: \"true\"\np: 1e3\nq: +12\nr: 012\ns: 0b101\nt: 1:30\nu: NO\nv: =\nw: <x>\n",
    "keys that look like other types": "1: a\ntrue: b\nnull: c\n~: d\n1.5: e\n'<<': f\n",
    "flow": "{a: [1, 2, {b: c}], 'd': \"e\", f: []}\n",
    "json": '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "ConfigMap", "apiVersion": "v1", '
            '"metadata": {"name": "x"}}]}\n',
    "documents": "---\na: 1\n---\n---\n- x\n- - y\n...\n---\nplain text\n",
    "comments only": "# nothing here\n",
    "empty": "",
    "block scalars": "a: |\n  one\n  two\nb: >-\n  folded\n  text\nc: |+\n  kept\n\n",
    "nested lists": "a:\n- - - 1\n    - 2\n  - 3\n- b: [c, {d: e}]\n  f: g\n",
    "unicode": "name: café\nemoji: \"\\U0001F600\"\n日本: 語\n",
    "crlf": "a: 1\r\nb:\r\n  - c\r\n",
    "document end marker": "a: 1\n...\n---\nb: 2\n...\n",
    "scalar document": "just text\n",
    "byte order marks": "\ufeff---\na: 1\n---\n\ufeffb: 2\n",
    "deep but within the limit": "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n",
}


@pytest.mark.parametrize("text", PLAIN.values(), ids=PLAIN.keys())
def test_plain_texts_read_as_the_full_loader_reads_them(text: str) -> None:
    assert same_as_full(text)


LEFT_TO_THE_FULL_LOADER = {
    "anchor and alias": "a: &x [1]\nb: *x\n",
    "anchor alone": "a: &x 1\n",
    "merge key": "a: &x {b: 1}\nc:\n  <<: *x\n",
    "plain merge key without anchors": "<<: {b: 1}\nc: 2\n",
    "explicit tag": "a: !!str 1\n",
    "local tag": "a: !thing x\n",
    "non-specific tag": "a: ! 12\n",
    "tagged mapping": "a: !!map {b: 1}\n",
    "duplicate key": "a: 1\na: 2\n",
    "complex key": "? [a, b]\n: c\n",
    "mapping as key": "{a: 1}: b\n",
    "syntax error": "a: [1, 2\n",
    "syntax error in a later document": "a: 1\n---\nb: [\n",
    "bare document after an end marker": "a: 1\n...\nb: 2\n",
    "too deep": "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "template": "a: {{ .Values.x }}\n",
    "too many documents": "---\n" * (MAX_DOCUMENTS + 1),
    "alias chain": "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 100)),
    "lone surrogate": "a: \ud800\n",
}


@pytest.mark.parametrize("text", LEFT_TO_THE_FULL_LOADER.values(), ids=LEFT_TO_THE_FULL_LOADER.keys())
def test_anything_but_plain_yaml_is_left_to_the_full_loader(text: str) -> None:
    assert not same_as_full(text)


def test_a_scalar_value_is_resolved_once_and_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    memo: dict[str, Any] = {}
    monkeypatch.setattr(plainload, "_VALUES", memo)
    calls: list[str] = []
    resolve = plainload._plain_value
    monkeypatch.setattr(plainload, "_plain_value", lambda text: calls.append(text) or resolve(text))
    long = "1" * 65
    assert [d.data for d in plainload.load_plain(f"- 80\n- 80\n- {long}\n- {long}\n- true\n- xyz\n") or []] == \
        [[80, 80, int(long), int(long), True, "xyz"]]
    assert calls == ["80", long, long, "true"] and set(memo) == {"80", "true"}  # (no implicit type starts with x)
    memo.update((str(n), n) for n in range(100_000 - len(memo)))
    assert plainload.load_plain("- 12345678901\n") is not None and len(memo) == 100_000


YAML_TEXT = st.lists(st.sampled_from([*"ab1 :-?,[]{}#&*!|>'\"\n\t.~<", "\u00e9", "  ", ": ", "- ", "\n  ", "---\n", "...\n", "<<", "\ufeff"]),
                     max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(YAML_TEXT)
def test_any_text_is_read_as_the_full_loader_reads_it_or_left_to_it(text: str) -> None:
    same_as_full(text)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(DATA, st.sampled_from([None, True, False]), st.sampled_from([None, "'", '"']))
def test_dumped_data_reads_as_the_full_loader_reads_it(data: Any, flow: bool | None, style: str | None) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, default_style=style, allow_unicode=True)
    assert same_as_full(text) or "!!" in text  # (quoted non-strings are dumped with their tags)


def test_a_file_lints_the_same_with_and_without_the_c_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings({}, None)
    files = [p for p in manifests() if "fixtures" in p.parts]
    with_reader = [analyse(str(p), p.read_bytes(), "", settings, True, p) for p in files]
    monkeypatch.setattr(analyse_module, "load_plain", lambda text: None)
    without = [analyse(str(p), p.read_bytes(), "", settings, True, p) for p in files]
    monkeypatch.setattr(validate_module, "_fits", None)  # and without the C schema check: all in Python
    in_python = [analyse(str(p), p.read_bytes(), "", settings, True, p) for p in files]
    assert with_reader == without == in_python
    assert sum(len(r.objects) for r in with_reader) > 100 and any(r.findings for r in with_reader)


def projections(documents: Any, project: Any) -> list[tuple[str, list[tuple[Any, Any]]]]:
    """Each object's projection and located paths (in order), by `project(obj, place, tree, locations)`."""
    found = []
    for document in documents:
        for _, place, obj in _objects(document.node, document.data):
            locations: dict[Any, Any] = {}
            found.append((repr(project(obj, place, context_tree(), locations)), list(locations.items())))
    return found


def _over_nodes(obj: Any, node: Any, tree: Any, locations: Any) -> Any:
    out: dict[str, Any] = {}
    _take(obj, out, node, tree, (), locations)
    return out


def _over_table(obj: Any, spot: Any, tree: Any, locations: Any) -> Any:
    return plainload.project(obj, spot, tree, locations, _PATHS, _PATHS_MAX)


def test_projections_over_the_table_equal_those_over_the_node_trees() -> None:
    objects = 0
    for path in manifests():
        text, _ = decode(path.read_bytes())
        plain = plainload.load_plain(text) if text is not None else None
        if plain is None:
            continue
        assert text is not None
        mine = projections(plain, _over_table)
        assert mine == projections(load(text).documents, _over_nodes), path
        objects += len(mine)
    assert objects > 300


def _shaped(tree: Any) -> Any:
    """Objects whose keys come from the projection tree (and others), to the tree's depth."""
    steps = [step for step in tree if step != "*"]
    leaf = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.booleans())
    if "*" in tree:
        inner = _shaped(tree["*"][1]) if tree["*"][1] else leaf
        return st.lists(st.one_of(inner, leaf), max_size=3)
    if not steps:
        return leaf
    children = {step: st.deferred(lambda step=step: _shaped(tree[step][1]) if tree[step][1] else leaf) for step in steps}
    return st.dictionaries(st.sampled_from([*steps, "other"]), leaf, max_size=3).flatmap(
        lambda keys: st.fixed_dictionaries({key: children.get(key, leaf) for key in keys}))


@settings(max_examples=300, deadline=None)
@given(_shaped(context_tree()), st.sampled_from([None, True, False]))
def test_projections_of_any_shape_equal_those_over_the_node_trees(body: Any, flow: bool | None) -> None:
    obj = {"apiVersion": "v1", "kind": "Thing", **(body if isinstance(body, dict) else {})}
    text = yaml.safe_dump(obj, default_flow_style=flow, sort_keys=False)
    plain = plainload.load_plain(text)
    assert plain is not None
    assert projections(plain, _over_table) == projections(load(text).documents, _over_nodes)


def test_a_table_that_does_not_fit_the_data_projects_nothing() -> None:
    plain = plainload.load_plain("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: {a: b}\n")
    assert plain is not None
    document = plain[0]
    short = plainload.Spot(document.node.cells[:6], document.node.first, 1, 1)  # two entries of the table's six
    locations: dict[Any, Any] = {}
    assert plainload.project(document.data, short, context_tree(), locations, {}, 10) is None and locations == {}


def test_an_error_in_the_resolver_falls_back_and_an_interrupt_goes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(kind: type[BaseException]) -> Any:
        def resolve(text: str) -> Any:
            raise kind(text)
        return resolve

    monkeypatch.setattr(plainload, "_VALUES", {})
    monkeypatch.setattr(plainload, "_plain_value", failing(ValueError))
    assert plainload.load_plain("a: 12\n") is None
    monkeypatch.setattr(plainload, "_plain_value", failing(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        plainload.load_plain("a: 12\n")
