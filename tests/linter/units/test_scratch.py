"""Where renders make their short-lived folders (linter/units/scratch.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fieldwarden.linter.units import scratch
from fieldwarden.linter.units.kustomize import render_kustomization
from tests.helpers import write

ROOMY = scratch.PER_SLOT
CRAMPED = scratch.PER_SLOT - 1


def test_a_tmpdir_the_user_set_is_kept(tmp_path: Path) -> None:
    environ = {"TMPDIR": str(tmp_path / "mine"), "XDG_RUNTIME_DIR": str(tmp_path)}
    assert scratch.choose(environ, free=lambda path: ROOMY) is None  # None: Python's default, which reads TMPDIR


def test_the_users_runtime_folder_comes_first_when_it_has_room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shm"
    shared.mkdir()
    monkeypatch.setattr(scratch, "IN_MEMORY", ("XDG_RUNTIME_DIR", str(shared)))
    runtime = tmp_path / "run-user"
    runtime.mkdir()
    assert scratch.choose({"XDG_RUNTIME_DIR": str(runtime)}, free=lambda path: ROOMY) == str(runtime)
    room = {str(runtime): CRAMPED, str(shared): ROOMY}
    assert scratch.choose({"XDG_RUNTIME_DIR": str(runtime)}, free=room.__getitem__) == str(shared)
    for unusable in ("relative/folder", str(tmp_path / "absent"), ""):
        assert scratch.choose({"XDG_RUNTIME_DIR": unusable}, free=lambda path: ROOMY) == str(shared)
    assert scratch.choose({}, free=lambda path: CRAMPED) is None  # a container's 64 MB /dev/shm: not used


def test_each_render_slot_needs_its_room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch, "IN_MEMORY", (str(tmp_path),))
    assert scratch.choose({}, free=lambda path: 2 * ROOMY, slots=2) == str(tmp_path)
    assert scratch.choose({}, free=lambda path: 2 * ROOMY, slots=3) is None


def test_a_slot_has_room_for_the_most_a_render_may_write() -> None:
    from fieldwarden.linter.units import helm, kustomize

    assert scratch.PER_SLOT >= 2 * kustomize.MAX_OUTPUT + helm.MAX_CHART


def test_the_machines_own_free_space_is_read(tmp_path: Path) -> None:
    assert scratch._free(str(tmp_path)) > 0
    assert scratch._free(str(tmp_path / "absent")) == 0


def test_kustomize_builds_in_the_chosen_folder_and_its_messages_do_not_name_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no sh")
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setattr(scratch, "_CHOSEN", [str(memory)])
    project = tmp_path / "project"
    write(project, "app/kustomization.yaml", "resources: [cm.yaml]\n")
    write(project, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")
    # a kustomize that fails naming the folder it was run in, once as a path, once with its slashes
    # turned to colons (which the messages keep: where the build ran shows)
    said = render_kustomization(project, "app", tool=[
        sh, "-c", "echo \"Error: nothing in $(pwd) ($(pwd | tr / :))\" >&2; exit 1", "sh"])
    [message] = [p.message for p in said.problems]
    assert message.startswith("kustomize: nothing in <temporary folder> (" + str(memory).replace("/", ":") + ":")
    assert list(memory.iterdir()) == []  # removed once the build ended
    elsewhere = render_kustomization(project, "app", tool=[sh, "-c", "echo \"Error: nothing in /var/x\" >&2; exit 1", "sh"])
    assert [p.message for p in elsewhere.problems] == ["kustomize: nothing in /var/x"]


def test_a_chosen_folder_that_cannot_take_one_any_more_falls_back_to_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(scratch, "_CHOSEN", [str(tmp_path / "removed")])
    with scratch.folder("fieldwarden-test-") as made:
        assert Path(made).parent == Path(tempfile.gettempdir()) and Path(made).is_dir()
    assert not Path(made).exists()
    assert scratch.roots() == (str(tmp_path / "removed"), tempfile.gettempdir())


def test_kustomize_messages_name_neither_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from fieldwarden.linter.units import kustomize

    monkeypatch.setattr(scratch, "_CHOSEN", [str(tmp_path)])
    for folder in (str(tmp_path), tempfile.gettempdir()):
        assert kustomize._steady(f"Error: in {folder}/fieldwarden-kustomize-x1/build: not found") == (
            "Error: in <temporary folder>: not found")
