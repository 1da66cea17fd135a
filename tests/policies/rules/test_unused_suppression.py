"""FW003 unused-suppression: the words of its findings (where they land is in tests/linter)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lint, write

CLEAN = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings # fieldwarden: ignore
data:
  mode: fast # fieldwarden: ignore[FW306, no-such-rule]
"""


def test_bare_comment_is_for_all_rules_and_codes_are_named(tmp_path: Path) -> None:
    path = write(tmp_path, "settings.yaml", CLEAN)
    run = lint(["--no-context", str(path)])
    found = [(f["line"], f["code"], f["message"]) for f in run.findings]
    assert found == [
        (4, "FW003", "ignore comment for all rules suppresses nothing here"),
        (6, "FW003", "ignore comment for FW306 suppresses nothing here"),
        (6, "FW003", 'ignore comment names "no-such-rule", which is not a fieldwarden rule'),
    ]
    assert all("`" not in message for _, _, message in found)
