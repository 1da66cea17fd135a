"""The patterns a lint's modules compile while they load, kept per interpreter (linter/regex_cache.py).

A pre-commit run on one file imported PyYAML, which compiled ten patterns (~5 ms, the reader's
class of non-printable characters ~4 ms alone). These tests run fresh interpreters, as pre-commit
does: the first compiles and saves, the next compiles none of them and lints alike; a file that is
damaged, not this user's, or holds code `_sre` refuses changes nothing but the time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fieldwarden.linter import regex_cache

pytestmark = pytest.mark.skipif(not regex_cache.usable(), reason="this interpreter's re is not laid out as the cache needs")

# A fresh interpreter: warm, import PyYAML, keep; prints which of yaml's patterns re compiled, and
# how the reader's pattern judges characters
_PROBE = """
import json, re, sys
compiled = []
real = re._compiler.compile
re._compiler.compile = lambda pattern, flags=0: compiled.append(pattern) or real(pattern, flags)
from fieldwarden.linter import regex_cache
warmed = regex_cache.warm()
import yaml
regex_cache.keep(warmed)
judged = [bool(yaml.reader.Reader.NON_PRINTABLE.search(c)) for c in ("a", "\\x00", "\\t", "\\u2028", "\\ufffe", "\\U0001F600")]
loaded = yaml.safe_load("a: 0755\\nb: yes\\nc: 1_000\\nd: 2001-12-14\\ne: ~\\nf: .inf\\n")
print(json.dumps({"compiled": [p for p in compiled if isinstance(p, str)], "judged": judged, "loaded": repr(loaded)}))
"""


def _probe(home: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(home)})
    return dict(json.loads(done.stdout))


def _saved(home: Path) -> Path:
    files = list((home / "fieldwarden").glob("regex-*.marshal"))
    assert len(files) == 1
    return files[0]


def test_the_next_run_compiles_none_of_yamls_patterns_and_they_judge_alike(tmp_path: Path) -> None:
    first = _probe(tmp_path)
    assert len(first["compiled"]) >= 5  # type: ignore[arg-type]  # PyYAML's reader, resolver...
    saved = _saved(tmp_path)
    assert saved.stat().st_mode & 0o777 == 0o600
    again = _probe(tmp_path)
    assert again["compiled"] == []
    assert again["judged"] == first["judged"] == [False, True, False, False, True, False]
    assert again["loaded"] == first["loaded"]


def test_each_saved_pattern_is_what_re_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _probe(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    saved = regex_cache._read(str(_saved(tmp_path)))
    assert saved
    import _sre

    for (pattern, flags), made in saved.items():
        fresh = re._compiler.compile(pattern, flags)  # type: ignore[attr-defined]
        cached = _sre.compile(pattern, *made)
        assert (cached.pattern, cached.flags, cached.groups, cached.groupindex) == (
            fresh.pattern, fresh.flags, fresh.groups, fresh.groupindex)
        assert made == regex_cache.code_of(pattern, flags)


def test_a_damaged_or_foreign_file_is_not_read_and_the_patterns_compile_as_ever(tmp_path: Path) -> None:
    expected = _probe(tmp_path)
    saved = _saved(tmp_path)
    data = bytearray(saved.read_bytes())
    data[-5] ^= 0x01  # one bit of the body
    saved.write_bytes(bytes(data))
    damaged = _probe(tmp_path)
    assert damaged["compiled"] and damaged["judged"] == expected["judged"] and damaged["loaded"] == expected["loaded"]
    assert _probe(tmp_path)["compiled"] == []  # (rewritten by that run)
    (tmp_path / "fieldwarden" / "cache-key").write_bytes(os.urandom(32))  # another user's key: the file is not theirs
    assert _probe(tmp_path)["compiled"]


def test_code_sre_refuses_is_compiled_as_usual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file this user's key authenticates, holding code `_sre` rejects (a bug, another build): that
    pattern compiles as usual; a pattern it does hold is used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = regex_cache.cache_path()
    assert path is not None
    bad, good = "fieldwarden-test-(a|b)+c", "fieldwarden-test-x+"
    made = regex_cache.code_of(good, 0)
    assert made is not None
    regex_cache._write(path, {(bad, 0): (32, [1, 2, 3], 0, {}, ()), (good, 0): made})
    monkeypatch.setattr(re, "_cache", {})
    warmed = regex_cache.warm()
    assert warmed is not None
    assert (str, bad, 0) not in re._cache and (str, good, 0) in re._cache  # type: ignore[attr-defined]
    assert re.fullmatch(bad, "fieldwarden-test-abac") and re.fullmatch(good, "fieldwarden-test-xxx")


def test_a_lint_from_the_command_line_is_the_same_with_the_saved_patterns(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  strategy:\n    rollingUpdate:\n"
        "      maxSurge: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n"
        "    spec:\n      containers: [{name: web, image: nginx, imagePullPolicy: Allways}]\n", encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "home")}
    runs = [subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "deploy.yaml"], cwd=tmp_path, env=env,
                           capture_output=True, text=True) for _ in range(2)]
    assert runs[0].returncode == runs[1].returncode == 1
    assert runs[0].stdout == runs[1].stdout and "deploy.yaml:15:46: FW602" in runs[0].stdout
    assert not runs[0].stderr and not runs[1].stderr
    assert _saved(tmp_path / "home").is_file()
