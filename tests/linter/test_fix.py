"""Tests for fieldwarden.linter.fix: in-place removal of live-object fields."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fieldwarden.linter.fix import FieldPath, FixError, remove_fields
from fieldwarden.policies.rules import live_object_export

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fix"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def live(text: str) -> list[FieldPath]:
    """The paths FW306 reports in the first document of ``text`` (what ``--fix`` removes)."""
    return [v.path for v in live_object_export.check(yaml.safe_load(text), {})]


def fix(text: str, *paths: FieldPath, doc: int = 0) -> str:
    """Remove ``paths`` from document ``doc`` and check that a second run changes nothing."""
    result: str = remove_fields(text, {doc: paths})
    assert remove_fields(result, {doc: paths}) == result  # idempotent
    return result


def read(name: str) -> str:
    with open(FIXTURES / name, encoding="utf-8", newline="") as fh:
        text: str = fh.read()
    return text


# --- real exports -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["deployment.yaml", "deployment.json"])
def test_kubectl_export(name: str) -> None:
    text = read(name)
    fixed = fix(text, *live(text))
    assert fixed == read(name.replace(".", ".fixed.", 1))


def test_fixed_json_export_is_still_json() -> None:
    text = read("deployment.json")
    data = json.loads(fix(text, *live(text)))
    assert set(data["metadata"]) == {"name", "namespace", "labels"}
    assert data["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}
    assert "status" not in data


@pytest.mark.parametrize("dump_args", [{}, {"indent": 2}, {"indent": 4}, {"separators": (",", ":")}])
def test_json_layouts_match_json_dumps(dump_args: dict[str, Any]) -> None:
    """Removing fields from dumped JSON gives exactly the dump of the reduced object."""
    obj = json.loads(read("deployment.json"))
    expected = copy.deepcopy(obj)
    del expected["status"], expected["metadata"]["managedFields"], expected["metadata"]["uid"]
    del expected["metadata"]["resourceVersion"], expected["metadata"]["creationTimestamp"]
    del expected["metadata"]["generation"], expected["metadata"]["selfLink"]
    del expected["metadata"]["annotations"], expected["spec"]["template"]["metadata"]["creationTimestamp"]
    text = json.dumps(obj, **dump_args)
    assert fix(text, *live(text)) == json.dumps(expected, **dump_args)


# --- block mappings ---------------------------------------------------------------

def test_block_comments_before_inside_and_after() -> None:
    text = (
        "# header\n"
        "metadata:\n"
        "  name: web\n"
        "  # the uid comes from the server\n"
        "  uid: 1234 # trailing\n"
        "  namespace: default\n"
        "# comment before status stays\n"
        "status:\n"
        "  # inside status\n"
        "  replicas: 2 # trailing inside\n"
        "  conditions:\n"
        "  - type: Available\n"
        "    # deep inside\n"
        "  # still inside (indented deeper than the key)\n"
        "# belongs to spec\n"
        "spec:\n"
        "  replicas: 2\n"
    )
    assert fix(text, ("status",), ("metadata", "uid")) == (
        "# header\n"
        "metadata:\n"
        "  name: web\n"
        "  # the uid comes from the server\n"
        "  namespace: default\n"
        "# comment before status stays\n"
        "# belongs to spec\n"
        "spec:\n"
        "  replicas: 2\n"
    )


@pytest.mark.parametrize("indicator", ["|", "|-", "|+", ">", ">-", ">+", "|2"])
def test_block_scalar_values(indicator: str) -> None:
    text = (
        "metadata:\n"
        "  annotations:\n"
        "    a: keep\n"
        f"    {LAST_APPLIED}: {indicator}\n"
        "      {\"apiVersion\":\"v1\",\n"
        "       \"kind\":\"Pod\"}\n"
        "\n"
        "    # about b\n"
        "    b: keep\n"
    )
    assert fix(text, ("metadata", "annotations", LAST_APPLIED)) == (
        "metadata:\n"
        "  annotations:\n"
        "    a: keep\n"
        "    # about b\n"
        "    b: keep\n"
    )


def test_multiline_plain_and_quoted_scalars() -> None:
    text = (
        "a: 1\n"
        "plain: first\n"
        "  second # comment\n"
        "double: \"one\n"
        "  two\"\n"
        "single: 'one\n"
        "\n"
        "  two'\n"
        "z: 2\n"
    )
    assert fix(text, ("plain",), ("double",), ("single",)) == "a: 1\nz: 2\n"
    assert fix(text, ("double",)) == "a: 1\nplain: first\n  second # comment\nsingle: 'one\n\n  two'\nz: 2\n"


@pytest.mark.parametrize("indent", ["", "  "])
def test_sequence_values_both_indentations(indent: str) -> None:
    text = (
        "metadata:\n"
        "  managedFields:\n"
        f"  {indent}- manager: kubectl\n"
        f"  {indent}  fieldsV1:\n"
        f"  {indent}    f:spec: {{}}\n"
        f"  {indent}# inside the list\n"
        f"  {indent}- manager: kube-controller-manager\n"
        f"  {indent}  fieldsV1: {{f:status: {{}}}} # last line\n"
        "  name: web\n"
    )
    assert fix(text, ("metadata", "managedFields")) == "metadata:\n  name: web\n"


def test_quoted_keys() -> None:
    text = "'status': {}\n\"metadata\":\n  \"uid\": x\n  'name': y\nkind: Pod\n"
    assert fix(text, ("status",), ("metadata", "uid")) == "\"metadata\":\n  'name': y\nkind: Pod\n"


@pytest.mark.parametrize("end", ["\n", ""])
def test_last_entry_at_end_of_file(end: str) -> None:
    text = "kind: Pod\nspec: {}\nstatus:\n  phase: Running" + end
    assert fix(text, ("status",)) == "kind: Pod\nspec: {}" + end
    nested = "kind: Pod\nmetadata:\n  name: x\n  uid: y" + end
    assert fix(nested, ("metadata", "uid")) == "kind: Pod\nmetadata:\n  name: x" + end


def test_first_key_of_a_sequence_item() -> None:
    text = "items:\n- status: {}\n  # about kind\n  kind: Pod\n- status:\n    a: 1\n  kind: Svc\n"
    paths = [("items", 0, "status"), ("items", 1, "status")]
    assert fix(text, *paths) == "items:\n- # about kind\n  kind: Pod\n- kind: Svc\n"


# --- emptied parents ----------------------------------------------------------------

def test_emptied_annotations_are_removed() -> None:
    text = (
        "metadata:\n"
        "  annotations:\n"
        f"    {LAST_APPLIED}: |\n"
        "      {}\n"
        "  name: web\n"
    )
    assert fix(text, ("metadata", "annotations", LAST_APPLIED)) == "metadata:\n  name: web\n"


def test_emptied_parents_are_removed_recursively() -> None:
    text = "kind: Pod\nmetadata:\n  uid: a\n  annotations:\n    x: 1\nspec: {}\n"
    assert fix(text, ("metadata", "uid"), ("metadata", "annotations", "x")) == "kind: Pod\nspec: {}\n"
    flow = '{"kind": "Pod", "metadata": {"annotations": {"x": "1"}}, "spec": {}}'
    assert fix(flow, ("metadata", "annotations", "x")) == '{"kind": "Pod", "spec": {}}'


def test_document_root_and_sequence_items_are_never_removed() -> None:
    assert fix("# only status\nstatus:\n  a: 1\n", ("status",)) == "# only status\n{}\n"
    assert fix('{"status": {}}\n', ("status",)) == "{}\n"
    assert fix("items:\n- status: 1\n- kind: Pod\n", ("items", 0, "status")) == "items:\n- {}\n- kind: Pod\n"
    assert fix('{"items": [{"status": 1}]}', ("items", 0, "status")) == '{"items": [{}]}'


# --- flow mappings and JSON ---------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"status": {"a": [1, {"b": 2}]}, "kind": "Pod"}', '{"kind": "Pod"}'),
        ('{"kind": "Pod", "status": {"a": 1}, "spec": {}}', '{"kind": "Pod", "spec": {}}'),
        ('{"kind": "Pod", "status": {"a": 1}}', '{"kind": "Pod"}'),
        ('{ "kind": "Pod" , "status": 1 }', '{ "kind": "Pod" }'),
        ('{"status": 1,\n "kind": "Pod"}', '{"kind": "Pod"}'),
        ("m: {name: x, uid: y}  # c\nz: 1\n", "m: {name: x}  # c\nz: 1\n"),
    ],
)
def test_inline_flow_mappings(text: str, expected: str) -> None:
    paths = [("status",), ("m", "uid")]
    assert fix(text, *paths) == expected


def test_pretty_json_removes_whole_lines_and_one_comma() -> None:
    text = (
        "{\n"
        '  "kind": "Pod",\n'
        '  "metadata": {\n'
        '    "uid": "1",\n'
        '    "name": "web",\n'
        '    "resourceVersion": "2",\n'
        '    "generation": 3\n'
        "  },\n"
        '  "status": {\n'
        '    "phase": "Running"\n'
        "  }\n"
        "}\n"
    )
    paths = [("status",), ("metadata", "uid"), ("metadata", "resourceVersion"), ("metadata", "generation")]
    assert fix(text, *paths) == '{\n  "kind": "Pod",\n  "metadata": {\n    "name": "web"\n  }\n}\n'


def test_multiline_flow_mapping_with_comments() -> None:
    text = "m: {\n  a: 1,  # one\n  uid: 2,  # two\n  b: 3  # three\n}\n"
    assert fix(text, ("m", "uid")) == "m: {\n  a: 1,  # one\n  b: 3  # three\n}\n"
    assert fix(text, ("m", "uid"), ("m", "b")) == "m: {\n  a: 1  # one\n}\n"


# --- encodings and streams ----------------------------------------------------------

def test_crlf_line_endings_are_kept() -> None:
    text = "kind: Pod\r\nmetadata:\r\n  uid: x\r\n  name: y\r\nstatus:\r\n  phase: Running\r\n"
    assert fix(text, ("status",), ("metadata", "uid")) == "kind: Pod\r\nmetadata:\r\n  name: y\r\n"
    export = read("deployment.yaml")
    crlf = export.replace("\n", "\r\n")
    assert fix(crlf, *live(export)) == read("deployment.fixed.yaml").replace("\n", "\r\n")


def test_utf8_bom_is_kept() -> None:
    assert fix("\ufeffstatus: {}\nkind: Pod\n", ("status",)) == "\ufeffkind: Pod\n"
    assert fix('\ufeff{"status": {}, "kind": "Pod"}', ("status",)) == '\ufeff{"kind": "Pod"}'
    assert fix("\ufeffkind: Pod\nstatus: {}\n", ("status",)) == "\ufeffkind: Pod\n"


def test_multi_document_stream() -> None:
    text = (
        "# first\n"
        "kind: A\n"
        "status: 1\n"
        "...\n"
        "# between\n"
        "--- # second\n"
        "kind: B\n"
        "status: 2\n"
        "---\n"
        "---\n"
        "status: 4\n"
        "kind: D\n"
    )
    # Documents are counted as yaml.compose_all counts them: the empty third one is index 2.
    assert len(list(yaml.compose_all(text, Loader=yaml.CSafeLoader))) == 4
    result = remove_fields(text, {1: [("status",)], 3: [("status",)]})
    assert result == (
        "# first\nkind: A\nstatus: 1\n...\n# between\n--- # second\nkind: B\n---\n---\nkind: D\n"
    )
    assert remove_fields(text, {2: [("status",)], 9: [("status",)]}) == text


def test_kind_list_items() -> None:
    text = (
        "apiVersion: v1\n"
        "items:\n"
        "- kind: Pod\n"
        "  metadata:\n"
        "    name: a\n"
        "    uid: '1'\n"
        "  status: {phase: Running}\n"
        "- kind: Pod\n"
        "  metadata:\n"
        "    name: b\n"
        "  status:\n"
        "    phase: Pending\n"
        "kind: List\n"
        "metadata:\n"
        '  resourceVersion: ""\n'
    )
    paths = [("items", 0, "status"), ("items", 0, "metadata", "uid"), ("items", 1, "status"),
             ("metadata", "resourceVersion")]
    assert fix(text, *paths) == (
        "apiVersion: v1\n"
        "items:\n"
        "- kind: Pod\n"
        "  metadata:\n"
        "    name: a\n"
        "- kind: Pod\n"
        "  metadata:\n"
        "    name: b\n"
        "kind: List\n"
    )
    obj = {"apiVersion": "v1", "kind": "List", "items": [json.loads(read("deployment.json"))] * 3}
    paths = [("items", i, *p) for i in (0, 2) for p in live(read("deployment.json"))]
    data = json.loads(fix(json.dumps(obj, indent=4), *paths))
    assert [("status" in item, "uid" in item["metadata"]) for item in data["items"]] == [
        (False, False), (True, True), (False, False)]


def test_missing_paths_are_ignored() -> None:
    text = "kind: Pod # c\nspec:\n  x: 1\n"
    assert fix(text, ("status",), ("spec", "x", "y"), ("spec", 0, "z"), ("metadata", "uid")) == text
    assert remove_fields(text, {}) == text
    assert remove_fields("", {0: [("status",)]}) == ""


# --- refusals -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        # The mapping is anchored and aliased: editing it would change both places.
        ("a: &m {uid: 1, name: x}\nmetadata: *m\n", ("metadata", "uid"), "anchor/alias"),
        ("metadata: &m\n  uid: 1\n  name: x\nother: *m\n", ("metadata", "uid"), "anchor/alias"),
        # The removed value is an alias: its marks point at the anchor elsewhere.
        ("a: &s {phase: x}\nstatus: *s\n", ("status",), "anchor or alias"),
        # A key next to a merge key could expose a merged-in value of the same name.
        ("b: &b {uid: 1}\nmetadata:\n  <<: *b\n  uid: 2\n", ("metadata", "uid"), "merge key"),
        # A key that only comes from a merge cannot be deleted by editing text.
        ("b: &b {uid: 1}\nmetadata:\n  <<: *b\n  name: x\n", ("metadata", "uid"), "does not load"),
        # Removing the anchor would leave a dangling alias.
        ("status: &s {a: 1}\nb: *s\n", ("status",), "anchor or alias"),
        ("status: 1\nstatus: 2\n", ("status",), "duplicate key"),
        ("a: [1, 2]\n", ("a", 0), "mapping key"),
        ("a: 1\n", (), "mapping key"),
        ("a: [1\n", ("a",), "cannot parse"),
    ],
)
def test_unsafe_edits_raise_fix_error(text: str, path: FieldPath, reason: str) -> None:
    with pytest.raises(FixError, match=reason):
        remove_fields(text, {0: [path]})
