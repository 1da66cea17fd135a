"""File names on the one-file path are strings (no pathlib, issue 23 row a): shown exactly as pathlib showed them."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from fieldwarden.linter import cache, cli, discover
from fieldwarden.linter.resolve import Resolver, project_root
from tests.helpers import write

PARTS = ["a", ".", "..", "", "b.yaml", "templates", ".x"]


def _names() -> list[str]:
    names = {"/", "//", "///", "//a", "///a", ".", "./", ""}
    for length in (1, 2, 3):
        for parts in itertools.product(PARTS, repeat=length):
            names.add("/".join(parts))
            names.add("/" + "/".join(parts))
    return sorted(names)


@pytest.mark.parametrize("raw", _names())
def test_a_name_taken_as_given_is_the_name_pathlib_shows(raw: str) -> None:
    if cli._as_pathlib_shows(raw):
        assert str(Path(raw)) == raw
    if raw not in ("", ".", "/") and raw == str(Path(raw)) and not raw.startswith("//"):
        assert cli._as_pathlib_shows(raw)  # (pre-commit's names: no pathlib; `.` and `/` are folders, walked with it)


def test_files_given_in_any_spelling_are_shown_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "sub/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    write(tmp_path, "b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    (tmp_path / "link.yaml").symlink_to("sub/a.yaml")
    (tmp_path / "dangling.yaml").symlink_to("nowhere.yaml")
    monkeypatch.chdir(tmp_path)
    resolver = Resolver(None, lambda settings: settings)
    given = ["sub/a.yaml", "./sub/a.yaml", "sub//a.yaml", "sub/./a.yaml", "sub/../b.yaml", "b.yaml/", str(tmp_path / "b.yaml"),
             f"/{tmp_path}/sub/a.yaml", "link.yaml", "dangling.yaml", "sub", "./sub/", "."]
    shown = [(source.display, source.path) for source in cli._targets(given, resolver, "-", False)]
    expected = [(str(Path(raw)), str(Path(raw))) for raw in given[:10]]
    expected += [("sub/a.yaml", "sub/a.yaml")] * 2 + [(name, name) for name in ("b.yaml", "dangling.yaml", "link.yaml",
                                                                                 "sub/a.yaml")]
    assert shown == expected
    assert shown[1] == ("sub/a.yaml", "sub/a.yaml") and shown[4] == ("sub/../b.yaml", "sub/../b.yaml")
    with pytest.raises(cli.UsageError, match=r"^\./nope//x\.yaml: no such file or folder$"):  # named as given
        cli._targets(["./nope//x.yaml"], resolver, "-", False)


def _old_is_helm_template(path: Path) -> bool:
    """discover.is_helm_template as it was, on Path (the oracle)."""
    parent = path.parent
    while parent.name and parent != parent.parent:
        if parent.name == "templates" and (parent.parent / "Chart.yaml").is_file():
            return True
        parent = parent.parent
    return False


def test_helm_templates_are_recognised_by_their_string_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "chart/Chart.yaml", "name: c\n")
    write(tmp_path, "chart/templates/sub/d.yaml", "{{ x }}\n")
    write(tmp_path, "Chart.yaml", "name: top\n")
    write(tmp_path, "templates/d.yaml", "{{ x }}\n")
    write(tmp_path, "other/templates/d.yaml", "{{ x }}\n")
    monkeypatch.chdir(tmp_path / "chart")
    names = ["templates/sub/d.yaml", "../templates/d.yaml", "../other/templates/d.yaml", "../chart/templates/sub/d.yaml",
             "sub/d.yaml", "d.yaml", "templates", str(tmp_path / "chart/templates/sub/d.yaml"),
             str(tmp_path / "templates/d.yaml"), str(tmp_path / "other/templates/d.yaml"), "/d.yaml", ".."]
    seen = [(name, discover.is_helm_template(name), discover.is_helm_template(Path(name))) for name in names]
    assert seen == [(name, _old_is_helm_template(Path(name)), _old_is_helm_template(Path(name))) for name in names]
    assert [name for name, found, _ in seen if found] == [
        "templates/sub/d.yaml", "../templates/d.yaml", "../chart/templates/sub/d.yaml", names[7], names[8]]


def test_the_project_root_and_git_root_as_strings(tmp_path: Path) -> None:
    write(tmp_path, "repo/.git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "repo/app/.fieldwarden.yaml", "select: [FW101]\n")
    write(tmp_path, "repo/app/deep/x.yaml", "a: 1\n")
    deep = str(tmp_path / "repo/app/deep")
    assert discover.git_root(deep) == str(tmp_path / "repo") == str(discover.find_git_root(Path(deep)))
    assert project_root(deep) == str(tmp_path / "repo/app")
    assert project_root(str(tmp_path / "repo")) == str(tmp_path / "repo")
    assert discover.git_root("/") is None or os.path.exists("/.git")


def test_the_cache_folder_is_made_from_a_string_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cache.make_cache_folder(cache.CACHE_DIR) and cache.make_cache_folder(cache.CACHE_DIR)  # again: it exists
    assert (tmp_path / cache.CACHE_DIR / ".gitignore").read_text() == "# created by fieldwarden\n*\n"
    (tmp_path / "planted").symlink_to(tmp_path / cache.CACHE_DIR)
    assert not cache.make_cache_folder("planted")
    assert not cache.make_cache_folder("missing/parent")
