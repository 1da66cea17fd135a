"""The bounded reads of the small files units are found from: a larger or unreadable file is nothing."""

from __future__ import annotations

from pathlib import Path

from fieldwarden.linter.units.reading import small_bytes, small_text


def test_a_file_up_to_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "page.md"
    path.write_bytes(b"abcd")
    assert small_bytes(path, 4) == b"abcd"
    assert small_bytes(path, 3) is None
    assert small_text(path, 3) == ""


def test_undecodable_bytes_are_replaced_and_a_missing_file_is_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x_test.go"
    path.write_bytes(b'"./testdata"\xff')
    assert small_text(path, 100) == '"./testdata"\ufffd'
    assert small_bytes(tmp_path / "missing.go", 100) is None
    assert small_bytes(tmp_path, 100) is None  # a folder
