"""Hostile and broken input: every case ends fast, without a traceback, with a finding or an error."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from fieldwarden.linter.loader import MAX_DOCUMENTS
from tests.helpers import Run, lint, write

MB = 1024 * 1024
DEFAULT_MAX = 10 * MB

BILLION_LAUGHS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: lol
data:
  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


@pytest.fixture
def timed() -> Iterator[None]:
    """Fail a test that takes longer than a few seconds (a hang shows up as a slow test)."""
    start = time.monotonic()
    yield
    assert time.monotonic() - start < 10, "took too long"


def run(folder: Path, *args: str) -> Run:
    result = lint(["--no-context", *args], cwd=folder)
    assert "Traceback" not in result.stderr
    return result


def cli(folder: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python -m fieldwarden lint ARGS` in a real process: a crash shows as a negative return code."""
    return subprocess.run(
        [sys.executable, "-m", "fieldwarden", "lint", "--no-context", *args],
        cwd=folder, capture_output=True, text=True, timeout=timeout,
    )


def big_configmap(path: Path, size: int) -> None:
    """A ConfigMap of `size` bytes, almost all of it one block scalar; it carries a `uid`."""
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  uid: abc\ndata:\n  blob: |\n"
    line = "    " + "x" * 95 + "\n"
    count = (size - len(head)) // len(line) + 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(head)
        for _ in range(count // 1000):
            handle.write(line * 1000)
        handle.write(line * (count % 1000))


# --- complexity ----------------------------------------------------------------------


def test_billion_laughs_is_fw005(tmp_path: Path, timed: None) -> None:
    write(tmp_path, "bomb.yaml", BILLION_LAUGHS)
    result = run(tmp_path, "bomb.yaml")
    assert result.code == 1
    assert [h[3] for h in result.hits()] == ["FW005"]
    line = result.hits()[0][1]
    assert 6 <= line <= 14  # at one of the anchors, not at line 1


def test_moderate_aliases_are_fine(tmp_path: Path, timed: None) -> None:
    text = BILLION_LAUGHS.split("  d:")[0]  # 9 * 9 * 9 nodes at most
    write(tmp_path, "aliases.yaml", text)
    # (no FW005; a ConfigMap's data holds strings: FW602 on each list, whose aliases it does not walk)
    assert run(tmp_path, "aliases.yaml").hits() == [("aliases.yaml", line, 3, "FW602") for line in (6, 7, 8)]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 100_000 + "]" * 100_000 + "\n", id="flow-100000"),
        pytest.param("[" * 100_000 + "\n", id="flow-unclosed"),
        pytest.param("{a: [" * 50_000 + "]}" * 50_000 + "\n", id="flow-mixed"),
        # closers inside a string or a comment must not hide the nesting that follows
        pytest.param('a: "' + "]" * 100_000 + '"\nb: ' + "[" * 100_000 + "]" * 100_000 + "\n", id="flow-after-string"),
        pytest.param("# " + "]" * 100_000 + "\nb: " + "[" * 100_000 + "]" * 100_000 + "\n", id="flow-after-comment"),
        pytest.param("b: " + '["]", ' * 50_000 + "]" * 50_000 + "\n", id="flow-interleaved-strings"),
        pytest.param('{"a": "' + "]" * 50_000 + '", "b": ' + "[" * 50_000 + "]" * 50_000 + "}\n", id="json-deep"),
        pytest.param("- " * 100_000 + "x\n", id="block-sequence-one-line"),
        pytest.param("".join("  " * i + f"k{i}:\n" for i in range(1_000)) + "  " * 1_000 + "v\n", id="block-mapping"),
        pytest.param("".join("  " * i + "- k:\n" for i in range(1_000)), id="block-mixed"),
        pytest.param("a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 3_000)), id="alias-chain"),
    ],
)
def test_deep_nesting_is_fw005_without_a_crash(tmp_path: Path, text: str) -> None:
    write(tmp_path, "deep.yaml", text)
    start = time.monotonic()
    process = cli(tmp_path, "deep.yaml")
    assert process.returncode == 1, (process.returncode, process.stderr[-2000:])  # negative = killed by a signal
    assert "Traceback" not in process.stderr
    assert ": FW005 " in process.stdout
    assert time.monotonic() - start < 20


def test_reasonable_nesting_is_linted(tmp_path: Path) -> None:
    flow = "[" * 200 + "]" * 200
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: abc\ndata:\n  x: {flow}\n"
    write(tmp_path, "ok.yaml", text)
    # (FW602: a ConfigMap's data values are strings)
    assert run(tmp_path, "ok.yaml").hits() == [("ok.yaml", 5, 3, "FW306"), ("ok.yaml", 7, 3, "FW602")]


def test_large_flat_json_with_many_brackets_is_linted(tmp_path: Path, timed: None) -> None:
    items = ", ".join('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c%d"}, "data": {"k": "[v]"}}' % i for i in range(2_000))
    text = '{"apiVersion": "v1", "kind": "List", "items": [%s]}' % items
    write(tmp_path, "list.json", text)
    result = run(tmp_path, "list.json")
    assert (result.code, result.findings) == (0, [])


# --- size ----------------------------------------------------------------------------


def test_file_over_max_size_is_fw004_naming_its_size(tmp_path: Path, timed: None) -> None:
    path = tmp_path / "big.yaml"
    big_configmap(path, 50 * MB)
    size = path.stat().st_size
    assert size > DEFAULT_MAX
    result = run(tmp_path, "big.yaml")
    assert (result.code, result.hits()) == (1, [("big.yaml", 1, 1, "FW004")])
    assert f"{size:,}" in result.findings[0]["message"]


def test_raised_max_file_size_lints_the_big_file(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    big_configmap(path, 50 * MB)
    write(tmp_path, ".fieldwarden.yaml", f"max-file-size: {60 * MB}\n")
    start = time.monotonic()
    result = run(tmp_path, "big.yaml")
    elapsed = time.monotonic() - start
    assert (result.code, result.hits()) == (1, [("big.yaml", 5, 3, "FW306")])
    assert elapsed < 20, f"linting 50 MB took {elapsed:.1f} s"


# --- bytes that are not text ---------------------------------------------------------


def test_binary_file_is_fw004(tmp_path: Path, timed: None) -> None:
    (tmp_path / "image.yaml").write_bytes(b"apiVersion: v1\nkind: \x00\x01\x02\xff\n" + os.urandom(4096))
    result = run(tmp_path, "image.yaml")
    assert (result.code, result.hits()) == (1, [("image.yaml", 2, 1, "FW004")])
    assert "binary" in result.findings[0]["message"]


def test_latin1_file_is_fw004_at_the_bad_byte(tmp_path: Path, timed: None) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  greeting: na\u00efve caf\u00e9\n"
    (tmp_path / "latin.yaml").write_bytes(text.encode("latin-1"))
    result = run(tmp_path, "latin.yaml")
    assert (result.code, result.hits()) == (1, [("latin.yaml", 6, 15, "FW004")])
    assert "0xef" in result.findings[0]["message"]


def test_latin1_with_crlf_and_bad_first_byte(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(b"a: 1\r\nb: 2\r\n\xe9: 3\r\n")
    assert run(tmp_path, "a.yaml").hits() == [("a.yaml", 3, 1, "FW004")]


# --- files that are not regular files ------------------------------------------------


def test_symlink_loop_is_fw004(tmp_path: Path, timed: None) -> None:
    (tmp_path / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "b.yaml").symlink_to("a.yaml")
    result = run(tmp_path, "a.yaml")
    assert (result.code, result.hits()) == (1, [("a.yaml", 1, 1, "FW004")])
    assert "symlink loop" in result.findings[0]["message"]


def test_dangling_symlink_is_fw004(tmp_path: Path, timed: None) -> None:
    (tmp_path / "gone.yaml").symlink_to("nowhere.yaml")
    result = run(tmp_path, "gone.yaml")
    assert (result.code, result.hits()) == (1, [("gone.yaml", 1, 1, "FW004")])
    assert "dangling symlink" in result.findings[0]["message"]


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.yaml")
    start = time.monotonic()
    process = cli(tmp_path, "x.yaml", timeout=20)  # a hang would raise TimeoutExpired
    assert time.monotonic() - start < 20
    assert process.returncode == 1
    assert "x.yaml:1:1: FW004" in process.stdout


def test_symlinked_folder_loop_is_not_followed(tmp_path: Path, timed: None) -> None:
    write(tmp_path, "k8s/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: x\n")
    (tmp_path / "k8s" / "again").symlink_to("..")
    result = run(tmp_path, "k8s")
    assert result.hits() == [("cm.yaml", 5, 3, "FW306")]


def test_unreadable_file_is_fw004(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: root reads a chmod 000 file anyway")
    path = write(tmp_path, "secret.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    path.chmod(0)
    try:
        result = run(tmp_path, "secret.yaml")
    finally:
        path.chmod(0o644)
    assert (result.code, result.hits()) == (1, [("secret.yaml", 1, 1, "FW004")])
    assert "ermission denied" in result.findings[0]["message"]


def test_duplicate_keys_are_fw002(tmp_path: Path) -> None:
    write(tmp_path, "dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: '1'\n  k: '2'\n")
    assert run(tmp_path, "dup.yaml").hits() == [("dup.yaml", 7, 3, "FW002")]


# --- many documents ------------------------------------------------------------------


def test_empty_document_flood_stops_at_the_limit_in_flat_memory(tmp_path: Path) -> None:
    """10 MB of `---` lines, 2.6 million empty documents: one FW005 where the one too many starts."""
    (tmp_path / "flood.yaml").write_bytes(b"---\n" * (DEFAULT_MAX // 4))
    # a process of its own measures its child's peak memory (this one's other children would count too)
    measure = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.stdout, end='')")
    start = time.monotonic()
    measured = subprocess.run(
        [sys.executable, "-c", measure, sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--format", "concise",
         "flood.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    elapsed = time.monotonic() - start
    head, _, out = measured.stdout.partition("\n")
    code, peak_kib = (int(word) for word in head.split())
    findings = [line for line in out.splitlines() if line.startswith("flood.yaml:")]
    assert code == 1
    assert len(findings) == 1 and findings[0].startswith(f"flood.yaml:{MAX_DOCUMENTS + 1}:1: FW005 "), findings
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"  # (it took 1.47 GB unbounded)
    assert elapsed < 30


@pytest.mark.parametrize(("count", "found"), [(MAX_DOCUMENTS, []), (MAX_DOCUMENTS + 1, [("many.yaml", MAX_DOCUMENTS + 1, 1, "FW005")])])
def test_documents_per_file_are_bounded_empty_ones_too(tmp_path: Path, count: int, found: list[object]) -> None:
    write(tmp_path, "many.yaml", "---\n" * count)
    assert run(tmp_path, "many.yaml").hits() == found


def test_documents_before_the_limit_are_still_linted(tmp_path: Path) -> None:
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: abc\n"  # FW306 on line 5
    write(tmp_path, "many.yaml", head + "---\n" * MAX_DOCUMENTS + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, uid: x}\n")
    # document 1 is the ConfigMap (lines 1-5), document k + 1 starts on line 5 + k: the limit is crossed on 5 + 10,000
    assert run(tmp_path, "many.yaml").hits() == [("many.yaml", 5, 3, "FW306"), ("many.yaml", MAX_DOCUMENTS + 5, 1, "FW005")]


# --- everything at once --------------------------------------------------------------


def test_folder_with_every_kind_of_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    write(bad, "bomb.yaml", BILLION_LAUGHS)
    write(bad, "deep.yaml", "[" * 100_000 + "]" * 100_000 + "\n")
    write(bad, "dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n")
    write(bad, "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n")
    write(bad, "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n  uid: abc\n")
    (bad / "binary.yaml").write_bytes(b"\x00\x01\x02")
    (bad / "latin.yaml").write_bytes("name: caf\u00e9\n".encode("latin-1"))
    (bad / "loop-a.yaml").symlink_to("loop-b.yaml")
    (bad / "loop-b.yaml").symlink_to("loop-a.yaml")
    (bad / "dangling.yaml").symlink_to("missing.yaml")
    os.mkfifo(bad / "fifo.yaml")
    big_configmap(bad / "big.yaml", 11 * MB)
    start = time.monotonic()
    process = cli(tmp_path, "bad", "--format", "text", timeout=60)
    assert time.monotonic() - start < 20
    assert process.returncode == 1
    assert "Traceback" not in process.stderr
    reported = {line.split(":", 1)[0]: line.split(": ", 1)[1].split()[0] for line in process.stdout.splitlines() if line.startswith("bad/")}
    assert reported == {
        "bad/big.yaml": "FW004",
        "bad/binary.yaml": "FW004",
        "bad/bomb.yaml": "FW005",
        "bad/broken.yaml": "FW001",
        "bad/dangling.yaml": "FW004",
        "bad/deep.yaml": "FW005",
        "bad/dup.yaml": "FW002",
        "bad/fifo.yaml": "FW004",
        "bad/good.yaml": "FW306",
        "bad/latin.yaml": "FW004",
        "bad/loop-a.yaml": "FW004",
        "bad/loop-b.yaml": "FW004",
    }


def test_nonexistent_path_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    result = run(tmp_path, "good.yaml", "missing.yaml")
    assert result.code == 2
    assert "missing.yaml" in result.stderr
    process = cli(tmp_path, "no/such/dir")
    assert process.returncode == 2
    assert "no/such/dir" in process.stderr and "Traceback" not in process.stderr
