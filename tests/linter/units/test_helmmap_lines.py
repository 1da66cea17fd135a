"""A template's lines without actions read at once (helmmap._lines, `whole`) make the same skeletons as
read piece by piece: over every template of tests/fixtures, and of kyverno's and prometheus-community's
charts when their checkouts are in /tmp/repos (bench/real_inputs.py's pins).

tests/fixtures/templates/kyverno-crd-chart is kyverno/kyverno 111e07bbec
charts/kyverno/charts/crds (Chart.yaml, values.yaml and the first 260 lines of
templates/kyverno.io/kyverno.io_clusterpolicies.yaml, its `if` closed): a CRD template, ~20,000
literal lines in the original, block scalars and multi-line plain scalars among deep mappings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter.units import helmmap

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CRD = FIXTURES / "templates" / "kyverno-crd-chart" / "templates" / "kyverno.io_clusterpolicies.yaml"
REAL = [Path("/tmp/repos/kyverno/charts"), Path("/tmp/repos/helm-charts/charts")]


def _templates(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob("*") if p.is_file() and "templates" in p.relative_to(base).parts[:-1]
                  and p.suffix in (".yaml", ".yml", ".tpl", ".txt", ".json"))


def _blocks(blocks: Any) -> list[Any]:
    return [(b.kind, b.expr, b.conditions) for b in blocks]


def _container(container: helmmap.Container | None) -> Any:
    if container is None:
        return None
    return (container.kind, container.column, _blocks(container.blocks), container.file,
            [_member(m) for m in container.members])


def _member(member: helmmap.Entry | helmmap.Splice) -> Any:
    variables = {name: (expr, _blocks(blocks)) for name, (expr, blocks) in member.variables.items()}
    if isinstance(member, helmmap.Splice):
        return ("splice", member.line, member.column, member.expr, _blocks(member.blocks), variables)
    return (member.key, member.dynamic, member.line, member.column, _blocks(member.blocks), variables, member.literal,
            member.templated, member.flow, repr(member.flow_text), _container(member.value))


def _skeleton(text: str, whole: bool) -> Any:
    """parse_template's documents, its lines read with `whole` (the helpers' lines are read alike either way)."""
    text = text.replace("\r\n", "\n")
    actions = [helmmap._action(m) for m in helmmap._ACTION.finditer(text)]
    skip = [(a.start, b.end) for a, b in zip(actions, actions[1:]) if a.kind == "define" and b.kind == "end"]
    documents = helmmap._Builder("t.yaml", split=True).run(helmmap._lines(text, actions, 0, len(text), skip, whole))
    return [(d.line, d.column, _container(d.root)) for d in documents]


def _same(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert _skeleton(text, True) == _skeleton(text, False), path


def test_a_crd_template_is_read_whole_line_by_line_to_the_same_skeleton() -> None:
    text = CRD.read_text(encoding="utf-8")
    whole = _skeleton(text, True)
    assert whole == _skeleton(text, False)
    (line, column, root), = whole
    assert (line, column) == (3, 1) and [m[0] for m in root[4]] == ["apiVersion", "kind", "metadata", "spec"]
    labels = root[4][2][-1][4][0]  # metadata -> labels: the include's splice, at nindent 4
    assert labels[-1][1] == 4 and labels[-1][4][0][:4] == ("splice", 7, 5, 'include "kyverno.crds.labels" . | nindent 4')
    assert helmmap.parse_template(text, "t.yaml").documents[0].root.members[2].line == 5


@pytest.mark.parametrize("base", [FIXTURES], ids=["fixtures"])
def test_every_fixture_template_reads_alike(base: Path) -> None:
    found = _templates(base)
    assert len(found) > 40
    for path in found:
        _same(path)


@pytest.mark.parametrize("base", REAL, ids=["kyverno", "prometheus-community"])
def test_every_real_chart_template_reads_alike(base: Path) -> None:
    if not base.is_dir():
        pytest.skip(f"{base} is not checked out (bench/real_inputs.py)")
    found = _templates(base)
    assert found
    for path in found:
        _same(path)
