"""Suppressions: line comments, document-heading comments, the object annotation, FW003."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
{annotations}spec:{comment}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
"""


def deployment(name: str, annotations: str = "", comment: str = "") -> str:
    notes = f"  annotations:\n    fieldwarden.io/ignore: \"{annotations}\"\n" if annotations else ""
    return DEPLOYMENT.format(name=name, annotations=notes, comment=comment)


def run(tmp_path: Path, text: str, *extra: str):  # type: ignore[no-untyped-def]
    path = write(tmp_path, "web.yaml", text)
    return lint(["--select", "FW201,FW003", "--no-context", *extra, str(path)])


def test_trailing_comment_on_the_offending_line(tmp_path: Path) -> None:
    result = run(tmp_path, deployment("web", comment="  # fieldwarden: ignore[FW201]"))
    assert (result.code, result.hits()) == (0, [])
    [finding] = result.findings
    assert finding["suppressed"] == "comment at line 5"


def test_rule_name_works_like_the_code(tmp_path: Path) -> None:
    result = run(tmp_path, deployment("web", comment="  # fieldwarden: ignore[strategy-type-missing]"))
    assert result.hits() == []


def test_comment_alone_on_the_line_above(tmp_path: Path) -> None:
    text = deployment("web").replace("spec:\n", "# fieldwarden: ignore[FW201]\nspec:\n")
    assert run(tmp_path, text).hits() == []


def test_comment_heading_a_document_covers_only_that_document(tmp_path: Path) -> None:
    text = "# fieldwarden: ignore[FW201]\n" + deployment("a") + "---\n# a note\n" + deployment("b")
    assert run(tmp_path, text).hits() == [("web.yaml", 18, 1, "FW201")]
    text = deployment("a") + "--- # fieldwarden: ignore\n" + deployment("b")
    assert run(tmp_path, text).hits() == [("web.yaml", 5, 1, "FW201")]


def test_annotation_names_codes(tmp_path: Path) -> None:
    result = run(tmp_path, deployment("web", annotations="FW201, selector-overlap"))
    assert result.code == 0
    assert [f["suppressed"] for f in result.findings] == ["annotation fieldwarden.io/ignore"]


def test_suppressed_findings_only_shown_on_request(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", deployment("web", comment="  # fieldwarden: ignore[FW201]"))
    from tests.helpers import main  # the real CLI, text format
    import io
    from contextlib import redirect_stdout

    for flag, expected in ((), ""), (("--show-suppressed",), "(suppressed by comment at line 5)"):
        out = io.StringIO()
        with redirect_stdout(out):
            main(["lint", "--no-context", "--quiet", "--select", "FW201", "--format", "text", *flag, str(path)])
        assert expected in out.getvalue()
        assert bool(out.getvalue()) == bool(flag)


def test_unused_comment_and_unknown_code_are_fw003(tmp_path: Path) -> None:
    text = deployment("web", comment="  # fieldwarden: ignore[FW201, FW305, no-such-rule]")
    result = run(tmp_path, text, "--select", "FW201,FW003,FW305")
    assert result.hits() == [("web.yaml", 5, 8, "FW003"), ("web.yaml", 5, 8, "FW003")]
    assert sorted("no-such-rule" in f["message"] for f in result.findings if f["code"] == "FW003") == [False, True]


def test_unused_annotation_entry_is_fw003_at_the_annotation(tmp_path: Path) -> None:
    text = deployment("web", annotations="FW201, FW305")
    result = run(tmp_path, text, "--select", "FW201,FW003,FW305")
    assert result.hits() == [("web.yaml", 6, 5, "FW003")]


def test_disabled_rules_do_not_make_suppressions_unused(tmp_path: Path) -> None:
    text = deployment("web", comment="  # fieldwarden: ignore[FW201, FW305]")
    assert run(tmp_path, text).hits() == []
