"""kustomize's output is read once (issue 23): cut into objects at its `---` lines with kustomize's
annotations cut out as text, each object's text read by the loader once, and that reading
handed to the linter (RenderedObject.loaded) instead of read again; an output not laid out as
kustomize writes it is read whole, as before. Either way the objects are the same.

tests/fixtures/kustomize/output/build.txt is real kustomize output (see its README).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.linter import analyse as analyse_module
from fieldwarden.linter.loader import load
from fieldwarden.linter.units import kustomize
from fieldwarden.linter.units.kustomize import _cut_output, _read_output, render_kustomization
from tests.helpers import FIXTURES, git_repo, lint

from .test_kustomize import SHOP, needs_kustomize

BUILD = (FIXTURES / "kustomize" / "output" / "build.txt").read_text(encoding="utf-8")


def read_whole(output: str) -> list[tuple[str, dict[str, Any], tuple[str, str]]]:
    """The output read whole and each object's annotations cut from its node (the reading before)."""
    lines = output.splitlines(keepends=True)
    found = []
    for document in load(output).documents:
        if isinstance(document.data, dict):
            texts = kustomize._annotation_texts(document.data)
            text, _, _ = kustomize._strip_bookkeeping(document, lines, lambda _: None)
            found.append((text, document.data, texts))
    return found


def test_real_output_is_cut_into_objects_as_reading_it_whole_does_and_each_is_read_once() -> None:
    read = list(_read_output(BUILD))
    assert [(text, data, texts) for text, data, texts, _ in read] == read_whole(BUILD)
    assert [data["metadata"]["name"] for _, data, _, _ in read] == ["production", "backup-script", "demo-mysql-pass",
                                                                    "demo-mysql"]
    for text, data, (origin, transformations), loaded in read:
        assert loaded is not None and loaded.documents[0].data is data  # the linter is handed this reading
        assert "config.kubernetes.io" not in text and "annotations" not in data["metadata"]
        assert origin.startswith(("path: src/", "configuredIn: src/")) and transformations.startswith("- configuredIn: src/")
    assert read[0][2] == ("path: src/deploy/overlays/production/namespace.yaml\n", (
        "- configuredIn: src/deploy/overlays/production/kustomization.yaml\n  configuredBy:\n    apiVersion: builtin\n"
        "    kind: NamespaceTransformer\n- configuredIn: src/deploy/overlays/production/labels.yaml\n  configuredBy:\n"
        "    apiVersion: builtin\n    kind: LabelTransformer\n    name: labels\n"))
    assert "\n    # This is a simulation of a backup process.\n\n" in read[1][0]  # a script's `#` and blank lines kept


NAMESPACE = BUILD.split("\n---\n")[0] + "\n"


@pytest.mark.parametrize("output", [
    NAMESPACE.replace("  annotations:\n", "  annotations:\n    # kept by kustomize\n"),  # a comment among them
    NAMESPACE.replace("origin: |\n", "origin: |-\n"),  # another chomping
    NAMESPACE.replace("    config.kubernetes.io/origin: |\n      path: src/deploy/overlays/production/namespace.yaml\n",
                      '    config.kubernetes.io/origin: "path: src/deploy/overlays/production/namespace.yaml\\n"\n'),
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {config.kubernetes.io/origin: 'path: a.yaml'}}\n",
    NAMESPACE + "...\n---\n" + NAMESPACE,  # a document end marker
    NAMESPACE.replace("kind: Namespace\n", "kind: Namespace\r\n"),  # a line break str.splitlines counts apart
], ids=["comment", "chomping", "quoted", "flow", "end-marker", "carriage-return"])
def test_output_not_laid_out_as_kustomize_writes_it_is_read_whole(output: str) -> None:
    assert _cut_output(output) is None
    read = list(_read_output(output))
    assert [(text, data, texts) for text, data, texts, _ in read] == read_whole(output)
    assert read and all(loaded is None for *_, loaded in read)
    assert all(texts[0].startswith("path: ") for _, _, texts, _ in read)


def test_an_annotation_of_the_object_stays_and_a_comment_before_it_is_not_its_text() -> None:
    output = "# a head comment\n" + NAMESPACE.replace("  annotations:\n", "  annotations:\n    team: web\n")
    read = list(_read_output(output))
    assert [(text, data, texts) for text, data, texts, _ in read] == read_whole(output)
    text, data, _, loaded = read[0]
    assert loaded is not None and text.startswith("apiVersion: v1\n")
    assert data["metadata"]["annotations"] == {"team": "web"} and "  annotations:\n    team: web\n  labels:" in text


@needs_kustomize
def test_rendered_objects_are_not_read_again_by_the_linter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shop fixture's overlays lint with the same findings, and the linter reads none of their objects' texts."""
    first, second = git_repo(tmp_path / "first"), git_repo(tmp_path / "second")
    for root in (first, second):
        shutil.copytree(SHOP, root, dirs_exist_ok=True)
    rendered = {obj.text for overlay in ("overlays/production", "overlays/staging")
                for obj in render_kustomization(first, overlay).objects}
    assert len(rendered) > 4
    before = lint(["overlays"], cwd=first)
    read: list[str] = []
    original, original_plain = analyse_module.load, analyse_module.load_plain
    monkeypatch.setattr(analyse_module, "load", lambda text, *rest: read.append(text) or original(text, *rest))
    monkeypatch.setattr(analyse_module, "load_plain", lambda text: read.append(text) or original_plain(text))
    after = lint(["overlays"], cwd=second)
    assert (after.code, after.findings) == (before.code, before.findings) and before.findings
    assert read and rendered.isdisjoint(read)  # the kustomizations and patches are read; no rendered object is
