"""Reading manifests: YAML streams, encodings, JSON, lists, merge keys, templates, stdin.

Positions are the point of most of these tests: a finding sits on the key of the offending
field (FW306 on `uid:`), or on the nearest present parent of a missing one (FW201 on `spec:`).
Runs happen from `tmp_path` so that no configuration and no git context leak in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fieldwarden.linter.loader import decode, load, locate
from tests.helpers import FIXTURES, WEB_DEPLOYMENT, Run, lint, write

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  uid: abc
"""

DEPLOYMENT = WEB_DEPLOYMENT  # `spec:` on line 5, `selector:` on line 6


def run(folder: Path, *args: str, stdin: bytes | None = None) -> Run:
    return lint(["--no-context", *args], cwd=folder, stdin=stdin)


def write_bytes(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def position(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first `needle` in `text`."""
    offset = text.index(needle)
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


# --- multi-document YAML -------------------------------------------------------------

MULTI = """\
# a header comment before the first marker
---
# a document that is only comments
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  uid: abc
...
---

---   # an empty document, with a comment on its marker
# comments heading the next object
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  uid: def
...
# a comment after the end marker
"""


def test_multi_document_stream_reports_each_object_at_its_own_lines(tmp_path: Path) -> None:
    write(tmp_path, "multi.yaml", MULTI)
    result = run(tmp_path, "multi.yaml")
    assert result.code == 1
    assert result.hits() == [("multi.yaml", 9, 3, "FW306"), ("multi.yaml", 19, 3, "FW306")]
    assert result.stderr == ""


def test_multi_document_stream_documents_and_spans() -> None:
    loaded = load(MULTI)
    assert loaded.problems == []
    objects = [d for d in loaded.documents if isinstance(d.data, dict)]
    assert [d.data["metadata"]["name"] for d in objects] == ["a", "b"]
    assert [(d.start_line, d.end_line) for d in objects] == [(5, 9), (15, 19)]
    # The comment-only and empty documents are there, as nulls, and in order.
    assert [d.index for d in loaded.documents] == list(range(len(loaded.documents)))
    assert all(d.data is None for d in loaded.documents if d not in objects)


def test_empty_and_comment_only_files_are_quietly_clean(tmp_path: Path) -> None:
    write(tmp_path, "empty.yaml", "")
    write(tmp_path, "comments.yaml", "# nothing here yet\n---\n# nor here\n")
    write(tmp_path, "markers.yaml", "---\n---\n...\n")
    result = run(tmp_path, ".")
    assert (result.code, result.findings, result.stderr) == (0, [], "")


# --- line endings and encodings ------------------------------------------------------


def test_crlf_line_endings_keep_positions(tmp_path: Path) -> None:
    text = MULTI.replace("\n", "\r\n")
    write_bytes(tmp_path, "crlf.yaml", text.encode())
    result = run(tmp_path, "crlf.yaml")
    assert result.hits() == [("crlf.yaml", 9, 3, "FW306"), ("crlf.yaml", 19, 3, "FW306")]


def test_crlf_duplicate_key_position(tmp_path: Path) -> None:
    text = "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n  name: b\r\n"
    write_bytes(tmp_path, "dup.yaml", text.encode())
    assert run(tmp_path, "dup.yaml").hits() == [("dup.yaml", 5, 3, "FW002")]


def test_utf8_bom_does_not_shift_the_first_column(tmp_path: Path) -> None:
    text = "status: {phase: Active}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
    write_bytes(tmp_path, "bom.yaml", b"\xef\xbb\xbf" + text.encode())
    result = run(tmp_path, "bom.yaml")
    # (a ConfigMap has no status: strict field validation's unknown field, FW602, on the same first key)
    assert (result.code, result.hits()) == (1, [("bom.yaml", 1, 1, "FW306"), ("bom.yaml", 1, 1, "FW602")])


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_invalid_utf8_is_placed_on_its_byte_with_or_without_bom(tmp_path: Path, bom: bytes) -> None:
    write_bytes(tmp_path, "bad.yaml", bom + b"apiVersion: v1\nkind: ConfigMap\ndata: {k: caf\xe9}\n")
    result = run(tmp_path, "bad.yaml")
    assert (result.code, result.hits()) == (1, [("bad.yaml", 3, 14, "FW004")])
    assert "byte 0xe9" in result.findings[0]["message"]


def test_utf8_bom_with_crlf(tmp_path: Path) -> None:
    text = CONFIGMAP.format(name="a").replace("\n", "\r\n")
    write_bytes(tmp_path, "bom.yaml", b"\xef\xbb\xbf" + text.encode())
    assert run(tmp_path, "bom.yaml").hits() == [("bom.yaml", 5, 3, "FW306")]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_read(tmp_path: Path, encoding: str) -> None:
    text = "\ufeff" + CONFIGMAP.format(name="caf\u00e9")  # explicit BOM for -le/-be
    if encoding == "utf-16":
        text = text[1:]  # Python's utf-16 codec writes the BOM itself
    write_bytes(tmp_path, "wide.yaml", text.encode(encoding))
    result = run(tmp_path, "wide.yaml")
    assert (result.code, result.hits()) == (1, [("wide.yaml", 5, 3, "FW306")])
    assert result.findings[0]["object"] == "ConfigMap/default/caf\u00e9"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32", "utf-16-be", "utf-32-be"])
def test_decode_with_boms(encoding: str) -> None:
    text = "a: caf\u00e9\r\n"
    data = text.encode(encoding)
    if encoding.endswith("-be"):
        data = ("\ufeff" + text).encode(encoding)
    assert decode(data) == (text, None)


def test_utf16_without_bom_is_refused() -> None:
    text, problem = decode("a: 1\n".encode("utf-16-le"))
    assert text is None and problem is not None
    assert problem.code == "FW004"


# --- kind: List ----------------------------------------------------------------------

LIST = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: a
  - "not an object"
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: b
      uid: abc
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          containers: [{name: web, image: nginx}]
"""


def test_list_items_are_objects_located_inside_the_item(tmp_path: Path) -> None:
    write(tmp_path, "list.yaml", LIST)
    result = run(tmp_path, "list.yaml", "--select", "FW2,FW306")
    assert result.code == 1
    assert result.hits() == [("list.yaml", 13, 7, "FW306"), ("list.yaml", 18, 5, "FW201")]
    objects = {f["code"]: f["object"] for f in result.findings}
    assert objects == {"FW306": "ConfigMap/default/b", "FW201": "Deployment/default/web"}


def test_list_items_take_part_in_set_rules(tmp_path: Path) -> None:
    text = LIST.replace("name: b", "name: a")
    write(tmp_path, "list.yaml", text)
    result = run(tmp_path, "list.yaml", "--select", "FW305")
    assert result.hits() == [("list.yaml", 7, 7, "FW305"), ("list.yaml", 12, 7, "FW305")]


# --- JSON ----------------------------------------------------------------------------


def test_single_line_json_positions(tmp_path: Path) -> None:
    text = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "uid": "abc"}}'
    write(tmp_path, "cm.json", text)
    result = run(tmp_path, "cm.json")
    assert result.hits() == [("cm.json", 1, text.index('"uid"') + 1, "FW306")]


def test_pretty_printed_json_positions(tmp_path: Path) -> None:
    text = """\
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "web",
    "uid": "abc"
  },
  "spec": {
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "web", "image": "nginx"}]}
    }
  }
}
"""
    write(tmp_path, "web.json", text)
    result = run(tmp_path, "web.json", "--select", "FW201,FW306")
    assert result.code == 1
    assert result.hits() == [("web.json", 6, 5, "FW306"), ("web.json", 8, 3, "FW201")]


# --- merge keys ----------------------------------------------------------------------

MERGE = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: &meta
      namespace: prod
      uid: abc
      name: a
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      <<: *meta
      name: b
"""


def test_merged_fields_are_located_in_the_anchor(tmp_path: Path) -> None:
    write(tmp_path, "merge.yaml", MERGE)
    result = run(tmp_path, "merge.yaml")
    assert result.code == 1
    assert result.hits() == [("merge.yaml", 8, 7, "FW306"), ("merge.yaml", 8, 7, "FW306")]
    assert sorted(f["object"] for f in result.findings) == ["ConfigMap/prod/a", "ConfigMap/prod/b"]


def test_merge_keys_own_keys_win_and_locate_finds_the_merged_key() -> None:
    document = load(MERGE).documents[0]
    second = document.data["items"][1]
    assert second["metadata"] == {"name": "b", "namespace": "prod", "uid": "abc"}
    item = document.node.value[2][1].value[1]  # items[1]
    assert locate(item, ("metadata", "uid")) == (8, 7)
    assert locate(item, ("metadata", "name")) == (14, 7)
    assert locate(item, ("metadata", "labels", "app")) == (12, 5)  # missing: the parent


def test_merge_key_with_a_list_of_anchors() -> None:
    text = "a: &a {x: 1}\nb: &b {x: 2, y: 3}\nc:\n  <<: [*a, *b]\n  z: 4\n"
    assert load(text).documents[0].data["c"] == {"x": 1, "y": 3, "z": 4}


# --- what is not a Kubernetes object -------------------------------------------------


def test_documents_that_are_lists_or_scalars_are_ignored_quietly(tmp_path: Path) -> None:
    write(tmp_path, "odd.yaml", "- a\n- b\n---\njust a sentence\n---\n42\n---\nnull\n---\n[1, 2]\n")
    result = run(tmp_path, "odd.yaml")
    assert (result.code, result.findings, result.stderr) == (0, [], "")


def test_yaml_that_is_not_a_kubernetes_object_is_ignored_quietly(tmp_path: Path) -> None:
    write(tmp_path, "values.yaml", "replicaCount: 3\nimage: {repository: nginx}\nstatus: {}\n")
    write(tmp_path, "Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
    write(tmp_path, "kindless.yaml", "kind: ConfigMap\nmetadata: {name: a, uid: abc}\n")
    write(tmp_path, "compose.yml", "version: '3'\nservices:\n  web: {image: nginx}\n")
    write(tmp_path, "package.json", '{"name": "web", "version": "1.0.0"}\n')
    result = run(tmp_path, ".")
    assert (result.code, result.findings, result.stderr) == (0, [], "")


# --- duplicate keys and syntax errors ------------------------------------------------


def test_duplicate_key_is_reported_at_the_second_key(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("spec:\n  selector", "spec:\n  replicas: 1\n  replicas: 2\n  selector")
    write(tmp_path, "dup.yaml", text)
    result = run(tmp_path, "dup.yaml", "--select", "FW002")
    assert (result.code, result.hits()) == (1, [("dup.yaml", 7, 3, "FW002")])
    assert "first at line 6" in result.findings[0]["message"]


def test_duplicate_key_does_not_stop_the_other_rules(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: x\n  name: a\n"
    write(tmp_path, "dup.yaml", text)
    assert run(tmp_path, "dup.yaml").hits() == [("dup.yaml", 5, 3, "FW306"), ("dup.yaml", 6, 3, "FW002")]


# A text without `&` has no aliases and is built without the alias bookkeeping (loader._Builder.plain):
# the same data and problems as with it. An anchor on an unrelated scalar sends a text the other way.
WITHOUT_ANCHORS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}, name: web2}
spec:
  replicas: 0x10
  paused: yes
  revisionHistoryLimit: ~
  <<: {minReadySeconds: 5, replicas: 1}
  template:
    spec:
      containers:
      - [1, 2.5, true, null, text, "7"]
      - {? [a]: b}
      - name: c
        name: d
"""


def test_texts_without_anchors_load_as_with_them() -> None:
    plain = load(WITHOUT_ANCHORS)
    anchored = load(WITHOUT_ANCHORS.replace("paused: yes", "paused: &x yes"))
    assert plain.documents[0].data == anchored.documents[0].data
    assert plain.documents[0].data["spec"]["replicas"] == 16  # own key wins over the merged one
    assert plain.documents[0].data["spec"]["minReadySeconds"] == 5
    assert plain.documents[0].data["spec"]["template"]["spec"]["containers"][0] == [1, 2.5, True, None, "text", "7"]
    assert plain.problems == anchored.problems
    assert [(p.code, p.line, p.column) for p in plain.problems] == [("FW002", 3, 43), ("FW002", 15, 9)]
    assert plain.template_like and anchored.template_like  # the complex key


def test_syntax_error_has_its_line_and_earlier_documents_are_still_linted(tmp_path: Path) -> None:
    text = CONFIGMAP.format(name="a") + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b: c\n"
    write(tmp_path, "broken.yaml", text)
    result = run(tmp_path, "broken.yaml")
    assert result.code == 1
    assert result.hits() == [("broken.yaml", 5, 3, "FW306"), ("broken.yaml", 10, 10, "FW001")]
    assert "Traceback" not in result.stderr


def test_unclosed_flow_sequence_is_a_syntax_error_with_a_line(tmp_path: Path) -> None:
    write(tmp_path, "flow.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\ndata: {}\n")
    result = run(tmp_path, "flow.yaml")
    assert result.code == 1
    assert [h[3] for h in result.hits()] == ["FW001"]
    assert result.hits()[0][1] in (3, 4)


# --- where findings point ------------------------------------------------------------


def test_finding_points_at_the_key_of_the_field(tmp_path: Path) -> None:
    text = CONFIGMAP.format(name="a").replace("  uid: abc", "  labels: {app: a}\n  uid: abc")
    write(tmp_path, "cm.yaml", text)
    result = run(tmp_path, "cm.yaml")
    assert result.hits() == [("cm.yaml", *position(text, "uid:"), "FW306")]
    assert result.findings[0]["field"] == "metadata.uid"


def test_missing_field_points_at_its_parent(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", "\n\n# leading lines\n" + DEPLOYMENT)
    result = run(tmp_path, "web.yaml", "--select", "FW201")
    assert result.hits() == [("web.yaml", 8, 1, "FW201")]  # `spec:`, not line 1 or the document start


def test_locate_missing_paths_fall_back_to_the_nearest_parent() -> None:
    node = load(DEPLOYMENT).documents[0].node
    assert locate(node, ("spec", "template", "spec", "containers", 0, "image")) == position(DEPLOYMENT, "image")
    assert locate(node, ("spec", "strategy", "type")) == (5, 1)
    assert locate(node, ("spec", "template", "spec", "containers", 5, "image")) == (12, 7)
    assert locate(node, ()) == (1, 1)


# --- Helm and Go templates -----------------------------------------------------------


def test_chart_templates_are_linted_through_their_rendered_chart(tmp_path: Path) -> None:
    """A chart is an apply unit (tests/linter/units/test_units.py): its templates are rendered, never skipped."""
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
    write(tmp_path, "chart/values.yaml", "replicas: 2\nname: web\n")
    write(
        tmp_path,
        "chart/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Values.name }}\n"
        "spec:\n  replicas: {{ .Values.replicas }}\n",
    )
    result = run(tmp_path, "chart")
    if "not linted" in result.stderr:  # no Helm engine here: the chart is skipped with that notice
        assert (result.code, result.findings) == (0, []) and "fieldwarden[render]" in result.stderr
        return
    assert ("deployment.yaml", 5, 1, "FW101") in result.hits()  # the rendered Deployment, on its template line
    assert {f["object"] for f in result.findings} == {"Deployment/default/web"}
    assert "skipped" not in result.stderr
    assert "Chart.yaml" not in result.stderr and "values.yaml" not in result.stderr


def test_chart_template_whose_yaml_happens_to_parse_is_linted_once_as_rendered(tmp_path: Path) -> None:
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
    write(tmp_path, "chart/templates/cm.yaml", CONFIGMAP.format(name='"{{ .Release.Name }}"'))
    result = run(tmp_path, "chart")
    if "not linted" in result.stderr:
        assert (result.code, result.findings) == (0, [])
        return
    assert result.hits() == [("cm.yaml", 5, 3, "FW306")]  # not a second time as a plain file
    assert result.findings[0]["object"] == "ConfigMap/default/release-name"


def test_standalone_file_broken_by_template_syntax_is_skipped_with_a_notice(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace(
        "spec:\n  selector", "spec:\n  {{- if .Values.strategy }}\n  strategy: {{ toYaml .Values.strategy }}\n  {{- end }}\n  selector"
    )
    write(tmp_path, "web.yaml", text)
    result = run(tmp_path, "web.yaml")
    assert (result.code, result.findings) == (0, [])
    assert "web.yaml" in result.stderr and "skipped" in result.stderr


def test_manifest_whose_strings_hold_template_syntax_is_linted(tmp_path: Path) -> None:
    text = """\
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: alerts
  uid: abc
spec:
  groups:
    - name: node
      rules:
        - alert: InstanceDown
          expr: up == 0
          annotations:
            summary: "Instance {{ $labels.instance }} is down"
            description: '{{ $labels.instance }} of job {{ $labels.job }} has been down'
"""
    write(tmp_path, "rules.yaml", text)
    result = run(tmp_path, "rules.yaml")
    assert (result.code, result.hits()) == (1, [("rules.yaml", 2, 1, "FW603"), ("rules.yaml", 5, 3, "FW306")])  # (no CRD at hand)
    assert result.stderr == ""


# --- stdin ---------------------------------------------------------------------------


def test_stdin_with_a_file_name(tmp_path: Path) -> None:
    data = CONFIGMAP.format(name="a").encode()
    result = run(tmp_path, "--stdin-filename", "k8s/cm.yaml", "-", stdin=data)
    assert result.code == 1
    assert [(f["file"], f["line"], f["column"], f["code"]) for f in result.findings] == [("k8s/cm.yaml", 5, 3, "FW306")]


def test_stdin_without_a_file_name(tmp_path: Path) -> None:
    result = run(tmp_path, "-", stdin=CONFIGMAP.format(name="a").encode())
    assert [f["file"] for f in result.findings] == ["<stdin>"]


def test_stdin_multi_document_with_bom_and_crlf(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + MULTI.replace("\n", "\r\n").encode()
    result = run(tmp_path, "--stdin-filename", "all.yaml", "-", stdin=data)
    assert result.hits() == [("all.yaml", 9, 3, "FW306"), ("all.yaml", 19, 3, "FW306")]


def test_clean_stdin(tmp_path: Path) -> None:
    result = run(tmp_path, "-", stdin=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    assert (result.code, result.findings, result.stderr) == (0, [], "")


def test_stdin_syntax_error_and_template(tmp_path: Path) -> None:
    result = run(tmp_path, "--stdin-filename", "x.yaml", "-", stdin=b"a: [1\n")
    assert (result.code, result.hits()) == (1, [("x.yaml", 2, 1, "FW001")])
    result = run(tmp_path, "--stdin-filename", "t.yaml", "-", stdin=b"kind: {{ .Values.kind }}\n")
    assert (result.code, result.findings) == (0, [])
    assert "t.yaml" in result.stderr and "skipped" in result.stderr


# --- JSON that is not a manifest (issue 22) ------------------------------------------

JSON_LINES = '{"level": "info", "msg": "started"}\n{"level": "info", "msg": "ready"}\n'
TSCONFIG = '{\n  "compilerOptions": {\n    "strict": true, // no implicit any\n  },\n}\n'
BROKEN_MANIFEST_JSON = '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  // a comment\n  "metadata": {"name": "a"}\n}\n'


def test_json_that_is_no_manifest_is_ignored_quietly(tmp_path: Path) -> None:
    devcontainer = FIXTURES / "repos" / "operator" / ".devcontainer" / "devcontainer.json"
    write_bytes(tmp_path, ".devcontainer/devcontainer.json", devcontainer.read_bytes())  # comments, a repeated key
    write(tmp_path, "logs/events.json", JSON_LINES)
    write(tmp_path, "web/tsconfig.json", TSCONFIG)
    assert load(devcontainer.read_text()).problems  # it is no YAML: the findings are left out on purpose
    result = run(tmp_path, ".")
    assert (result.code, result.findings, result.stderr) == (0, [], "")


def test_a_broken_json_manifest_keeps_its_syntax_error(tmp_path: Path) -> None:
    write(tmp_path, "cm.json", BROKEN_MANIFEST_JSON)
    write(tmp_path, "broken.yaml", "a: [1\n")  # YAML keeps FW001 whatever it holds
    result = run(tmp_path, ".")
    assert result.hits() == [("broken.yaml", 2, 1, "FW001"), ("cm.json", 5, 13, "FW001")]


@pytest.mark.parametrize(
    ("text", "line"),
    [("- " * 300 + "x\n", 1), ("a: 1\n---\n" + "- " * 300 + "x\n", 3), ("a: 1\r\n---\r\n" + "- " * 300 + "x\r\n", 3)],
    ids=["first line", "after a newline", "after CRLF"],
)
def test_block_nesting_screen_finds_the_deep_line_wherever_it_starts(text: str, line: int) -> None:
    """The textual screen (a line of 200 indents or dashes) reports where the limit is crossed, on the
    stream's first line too; without it the composer's own check would land two columns later."""
    assert load(text).problems == [
        ("FW005", line, 513, "document nests deeper than 256 levels"),
    ]


# --- the nesting screen's exact count (issue 23) --------------------------------------

def _reference_depth(text: str, limit: int) -> tuple[int, int] | None:
    """The exact count as yaml.parse() gives it: the first collection deeper than `limit`."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > limit:
                    return event.start_mark.line + 1, event.start_mark.column + 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return None
    return None


_PADDING = "pad:\n" + "  - [a, {b: c}]\n" * 600  # 1,200 openers: past the bracket screen, not JSON
_DEEP = "[" * 300 + "]" * 300


@pytest.mark.parametrize(
    "text",
    [
        _PADDING + 'fake: "' + "]" * 300 + '"\nreal: ' + _DEEP + "\n",  # a real deep nesting after a "]]]" string
        _PADDING + "fake: '" + "]" * 300 + "'\nreal: " + _DEEP + "\n",
        _PADDING + "fake: |\n  " + "]" * 300 + "\nreal: " + _DEEP + "\n",  # closers in a block scalar
        _PADDING + "# " + "]" * 300 + "\nreal: " + _DEEP + "\n",  # closers in a comment
        _PADDING + "x: " + "[" * 200 + '"' + "]" * 300 + '", ' + "[" * 100 + "]" * 300 + "\n",  # a string's closers in the flow
        _PADDING + "x: [" + "[" * 200 + "'" + "]" * 300 + "'" + "]" * 201 + "\n",  # the same, not over the limit
        _PADDING + "text: |\n  " + _DEEP + "\n",  # deep brackets inside a block scalar are text
        _PADDING + "text: >-\n  " + _DEEP + "\nb: '" + _DEEP + "'\n",  # and inside quoted scalars
        _PADDING + "note: see " + _DEEP + " here\n",  # and inside a plain scalar of a block mapping
        _PADDING + "x: " + "[" * 256 + "]" * 256 + "\n",  # 257 levels with the document's mapping
        _PADDING + "x: " + "[" * 255 + "]" * 255 + "\n",  # 256: at the limit, not over it
        _PADDING + "x: [" + "[" * 300 + "\n",  # a syntax error past the limit: the deep point is found first
        _PADDING + "x: [\n  a\n - ]]\n",  # a syntax error before any deep point
    ],
    ids=["after-double-quoted", "after-single-quoted", "after-block-scalar", "after-comment", "string-in-flow",
         "string-in-flow-shallow",
         "in-block-scalar", "in-quoted", "in-plain", "over-limit", "at-limit", "unclosed", "syntax-error"],
)
def test_the_nesting_screen_equals_the_exact_count(text: str) -> None:
    """Texts of over 1,000 openers that are not JSON take the exact count; it finds what yaml.parse() finds."""
    from fieldwarden.linter.loader import MAX_DEPTH, _event_depth_exceeds, _nesting_depth_exceeds

    expected = _reference_depth(text, MAX_DEPTH)
    assert _event_depth_exceeds(text, MAX_DEPTH) == expected
    assert _nesting_depth_exceeds(text, MAX_DEPTH) == expected
    problems = load(text).problems
    if expected is not None:
        assert problems == [("FW005", *expected, "document nests deeper than 256 levels")]
    else:
        assert all(p.code != "FW005" for p in problems)
