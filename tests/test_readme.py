"""The README: the two fresh-machine commands (CI runs the test command word for word), and every
link into the docs site names a page the site has."""

from __future__ import annotations

import re
from pathlib import Path

from fieldwarden.policies.links import DOCS
from fieldwarden.policies.registry import RULES

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
INSTALL = "python3 -m pip install -e . && fieldwarden lint examples/"
TEST = "python3 -m pip install -e '.[test]' && python3 -m pytest -q"


def test_the_two_commands_are_there_and_ci_runs_the_test_command() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    assert f"{INSTALL}\n" in blocks and f"{TEST}\n" in blocks
    assert f"\n{TEST}\n" in (REPO / ".ci" / "run").read_text()


def test_links_into_the_site_name_its_pages() -> None:
    generated = {"rules/", "options/"} | {f"rules/{code}/" for code in RULES}
    pages = {str(p.relative_to(REPO / "docs").with_suffix("")) + "/" for p in (REPO / "docs").rglob("*.md")}
    pages = {p.removesuffix("index/") for p in pages} | generated
    linked = re.findall(re.escape(DOCS) + r"([^)>\s#]*)", README)
    assert len(linked) >= 8
    for path in linked:
        assert path == "" or path in pages, path
