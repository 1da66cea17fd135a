"""`fieldwarden lint examples/` reports every rule where the examples say, and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

from fieldwarden.policies.registry import RULES
from fieldwarden.policies.rule import ADMISSION, LIVE
from tests.helpers import lint

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
MARKER = re.compile(rb"# .*?<- (FW\d{3})")


def expected() -> set[tuple[str, int, str]]:
    found = set()
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix in (".yaml", ".yml", ".json"):
            for number, line in enumerate(path.read_bytes().splitlines(), start=1):
                for match in MARKER.finditer(line):
                    found.add((path.relative_to(REPO).as_posix(), number, match.group(1).decode()))
    return found


def test_examples_report_exactly_the_marked_lines() -> None:
    run = lint(["examples"], cwd=REPO)
    got = {(f["file"], f["line"], f["code"]) for f in run.findings if not f["suppressed"]}
    assert got == expected()
    assert run.code == 1


def test_every_rule_has_a_broken_example() -> None:
    marked = {code for _, _, code in expected()}
    # admission rules act on requests, live rules on a cluster: no manifest alone shows them
    assert marked == {code for code, rule in RULES.items() if rule.SCOPE not in (ADMISSION, LIVE)}


def test_clean_examples_are_clean() -> None:
    run = lint(["examples/clean"], cwd=REPO)
    assert (run.code, run.findings) == (0, [])
