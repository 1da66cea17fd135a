"""The context cache (.fieldwarden_cache/) never gives a stale answer, and never a planted one.

pre-commit passes only the changed files; the rest of the repository is context, and a
large context is cached per file, keyed by the file's content. These runs go through the
CLI in a temporary git repository, as pre-commit does: lint `deploy.yaml`, change the
context around it, lint again, and the second run must see the change.

The cache folder is inside the repository, so a pull request can commit files there: a
crafted pickle, a cache forged to hide findings, garbage, or symlinks pointing elsewhere.
None of them may run code, change the findings or be written through.
"""

from __future__ import annotations

import marshal
import math
import os
import pickle
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

from fieldwarden.linter import cache, engine, user_key
from fieldwarden.linter.cache import CACHE_DIR, CACHE_FILE
from tests.helpers import lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy: {type: RollingUpdate}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-scaler
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 2
  maxReplicas: 5
"""

CONFIGMAP = """\
%sapiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
"""

REPLICAS = [("deploy.yaml", 6, 3, "FW301")]


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's cache home (where the cache key lives), outside the repository."""
    home = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with a Deployment, the HPA that scales it, and some other files."""
    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)  # cache even this small a context
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    write(tmp_path, "hpa.yaml", HPA % "web")
    for n in range(3):
        write(tmp_path, f"other/config-{n}.yaml", CONFIGMAP.replace("settings", f"settings-{n}") % "")
    return tmp_path


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the engine parses (cache hits are not parsed)."""
    seen: list[str] = []
    analyse = engine.analyse

    def counting(display: str, *args: Any) -> Any:
        seen.append(display)
        return analyse(display, *args)

    monkeypatch.setattr(engine, "analyse", counting)
    return seen


def run(repo: Path, *args: str) -> list[tuple[str, int, int, str]]:
    result = lint(["--select", "FW3", *args, "deploy.yaml"], cwd=repo)
    assert result.code in (0, 1), result.stderr
    return result.hits()


def test_warm_run_reads_the_cache_instead_of_parsing(repo: Path, parsed: list[str]) -> None:
    assert run(repo) == REPLICAS
    assert (repo / CACHE_DIR / CACHE_FILE).is_file()
    assert sorted(parsed) == ["deploy.yaml", "hpa.yaml", "other/config-0.yaml", "other/config-1.yaml", "other/config-2.yaml"]
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]  # the target only: every context file came from the cache


def test_changed_context_file_is_seen(repo: Path, parsed: list[str]) -> None:
    assert run(repo) == REPLICAS
    write(repo, "hpa.yaml", HPA % "api")  # the HPA now scales another workload
    parsed.clear()
    assert run(repo) == []
    assert parsed == ["deploy.yaml", "hpa.yaml"]
    write(repo, "hpa.yaml", HPA % "web")  # and back
    assert run(repo) == REPLICAS


def test_change_keeping_size_and_modification_time_is_seen(repo: Path) -> None:
    assert run(repo) == REPLICAS
    path = repo / "hpa.yaml"
    before = path.stat()
    path.write_text(HPA % "wex", encoding="utf-8")  # same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert run(repo) == []


def test_deleted_context_file_is_seen(repo: Path) -> None:
    assert run(repo) == REPLICAS
    (repo / "hpa.yaml").unlink()
    assert run(repo) == []
    assert run(repo, "--ignore", "FW303") == []


def test_new_context_file_is_seen(repo: Path) -> None:
    (repo / "hpa.yaml").unlink()
    assert run(repo) == []
    write(repo, "hpa-again.yaml", HPA % "web")  # in the Deployment's folder: the same apply unit
    assert run(repo) == REPLICAS


def test_ignored_context_file_drops_out(repo: Path) -> None:
    assert run(repo) == REPLICAS
    write(repo, ".gitignore", "hpa.yaml\n")
    assert run(repo) == []


def test_target_entry_serves_when_the_target_becomes_context(repo: Path, parsed: list[str]) -> None:
    """pre-commit passes another file next time: the previous target is context, still cached."""
    assert run(repo) == REPLICAS
    assert lint(["--select", "FW3", "hpa.yaml"], cwd=repo).hits() == REPLICAS  # the HPA causes it: reported there
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]


def test_cached_and_fresh_results_keep_the_project_order(repo: Path) -> None:
    """Messages that list other objects read the same whether they came from the cache or not."""
    write(repo, "deploy.yaml", CONFIGMAP % "")
    write(repo, "b.yaml", CONFIGMAP % "")
    write(repo, "c.yaml", CONFIGMAP % "")
    first = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert "also at b.yaml:4, c.yaml:4" in first.findings[0]["message"]
    write(repo, "b.yaml", CONFIGMAP % "# moved down a line\n")  # b parsed again, c from the cache
    warm = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert "also at b.yaml:5, c.yaml:4" in warm.findings[0]["message"]
    for name in os.listdir(repo / CACHE_DIR):
        (repo / CACHE_DIR / name).unlink()
    cold = lint(["--select", "FW305", "deploy.yaml"], cwd=repo)
    assert cold.findings == warm.findings


class RunsCode:
    """Unpickling this creates `marker`: what a crafted pickle in a pull request would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("name", ["context.pickle", CACHE_FILE])
def test_planted_pickle_never_runs(repo: Path, tmp_path_factory: pytest.TempPathFactory, parsed: list[str], name: str) -> None:
    marker = tmp_path_factory.mktemp("outside") / "pwned"
    planted = pickle.dumps(((object(), "signature"), RunsCode(marker)))
    write(repo, f"{CACHE_DIR}/{name}", "")
    (repo / CACHE_DIR / name).write_bytes(planted)
    assert run(repo) == REPLICAS
    assert run(repo) == REPLICAS
    write(repo, "hpa.yaml", HPA % "api")
    assert run(repo) == []
    assert not marker.exists()
    if name == "context.pickle":  # tracked in the scenario: left alone, so the checkout stays clean
        assert (repo / CACHE_DIR / name).read_bytes() == planted
    parsed.clear()
    assert run(repo) == []
    assert parsed == ["deploy.yaml"]  # a cache of our own replaced the planted one


def rewrite(path: Path, edit: Callable[[Any], Any]) -> None:
    """Edit a cache file's data and sign it with the current user's key, as fieldwarden itself would."""
    edited = edit(marshal.loads(path.read_bytes().partition(b"\n")[2]))
    body = edited if isinstance(edited, bytes) else marshal.dumps(edited)
    mac = cache.keyed_digest(body, b"context-cache")
    assert mac is not None
    path.write_bytes(mac.hex().encode() + b"\n" + body)


def test_cache_forged_elsewhere_is_not_believed(repo: Path, tmp_path_factory: pytest.TempPathFactory,
                                                monkeypatch: pytest.MonkeyPatch, user_cache: Path) -> None:
    """A cache that claims hpa.yaml holds nothing, signed with someone else's key, hides no finding."""
    file = repo / CACHE_DIR / CACHE_FILE
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("attacker-cache")))
    assert run(repo) == REPLICAS

    def hide_the_hpa(body: Any) -> Any:
        body["entries"]["hpa.yaml"][1] = []
        return body

    rewrite(file, hide_the_hpa)
    assert run(repo) == []  # the attacker's own key: believed (the forgery is well-formed)
    rewrite(file, hide_the_hpa)
    forged = file.read_bytes()
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))  # the CI job: another user, another key
    assert run(repo) == REPLICAS
    file.write_bytes(forged.replace(b"hpa.yaml", b"hpa.yamm", 1))  # tampered: not even signed
    assert run(repo) == REPLICAS


def _set(body: Any, *steps: Any) -> Any:
    """`body` with a field of hpa.yaml's object record set: _set(body, 2, "kind", 7) makes the kind 7."""
    *path, value = steps
    target = body["entries"]["hpa.yaml"][1][0]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return body


ILL_TYPED: dict[str, Callable[[Any], Any]] = {
    "entries a list": lambda b: {**b, "entries": list(b["entries"].items())},
    "another format": lambda b: {**b, "signature": (b["signature"][0] + 1, *b["signature"][1:])},
    "no signature": lambda b: {"entries": b["entries"]},
    "not an object": lambda b: [b],
    "digest a string": lambda b: {**b, "entries": {**b["entries"], "hpa.yaml": ["zz", b["entries"]["hpa.yaml"][1]]}},
    "digest too short": lambda b: {**b, "entries": {**b["entries"], "hpa.yaml": [b"z", b["entries"]["hpa.yaml"][1]]}},
    "name not a string": lambda b: {**b, "entries": {**b["entries"], b"hpa.yaml": b["entries"]["hpa.yaml"]}},
    "a code object": lambda b: _set(b, 2, "kind", compile("1", "x", "eval")),
    "positions a tuple": lambda b: _set(b, 3, ()),
    "record too short": lambda b: _set(b, slice(3, None), []),  # cut after its third field
    "key of numbers": lambda b: _set(b, 0, [1, 2, 3, 4]),
    "projection a list": lambda b: _set(b, 2, []),
    "kind not a string": lambda b: _set(b, 2, "kind", 7),
    "document a string": lambda b: _set(b, 5, "0"),
    "prefix of floats": lambda b: _set(b, 6, [1.5]),
    "ignore of numbers": lambda b: _set(b, 7, [1]),
    "position of strings": lambda b: _set(b, 8, ["1", "1"]),
    "deep nesting": lambda b: b"[\x01\x00\x00\x00" * 100_000 + b"N",  # lists in lists, marshal's format
}


@pytest.mark.parametrize("mangle", sorted(ILL_TYPED))
def test_ill_typed_cache_is_ignored_and_rebuilt(repo: Path, parsed: list[str], mangle: str) -> None:
    """Even a cache that passes the signature (written by an older or broken build) is checked field by field."""
    assert run(repo) == REPLICAS
    file = repo / CACHE_DIR / CACHE_FILE
    original = file.read_bytes()
    rewrite(file, ILL_TYPED[mangle])
    assert file.read_bytes() != original
    parsed.clear()
    assert run(repo) == REPLICAS
    assert "hpa.yaml" in parsed
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "huge", "bit flip", "folder", "fifo"])
def test_unreadable_cache_is_rebuilt(repo: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    assert run(repo) == REPLICAS
    file = repo / CACHE_DIR / CACHE_FILE
    good = file.read_bytes()
    file.unlink()
    if damage == "folder":
        file.mkdir()
    elif damage == "fifo":
        os.mkfifo(file)
    else:
        monkeypatch.setattr(user_key, "MAX_CACHE_BYTES", 4 * len(good))  # (where the cache files are read)
        file.write_bytes({
            "empty": b"",
            "garbage": b"not a cache \x00\xff" * 10,
            "truncated": good[: len(good) // 2],
            "huge": good + b" " * 4 * len(good),
            "bit flip": good[:-5] + bytes([good[-5] ^ 1]) + good[-4:],
        }[damage])
    assert run(repo) == REPLICAS
    write(repo, "hpa.yaml", HPA % "api")
    assert run(repo) == []
    if damage != "folder":  # a folder in its place cannot be replaced: that run goes without a cache
        parsed.clear()
        assert run(repo) == []
        assert parsed == ["deploy.yaml"]


def test_symlinked_cache_folder_is_neither_read_nor_written(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (repo / CACHE_DIR).symlink_to(outside, target_is_directory=True)
    write(repo, ".fieldwarden.yaml", "fail-on: warning\n")  # validated configurations leave a marker too
    assert run(repo) == REPLICAS
    assert run(repo) == REPLICAS
    assert list(outside.iterdir()) == []
    write(repo, "hpa.yaml", HPA % "api")
    assert run(repo) == []


def test_symlinked_cache_files_are_not_written_through(repo: Path, tmp_path_factory: pytest.TempPathFactory,
                                                       parsed: list[str]) -> None:
    outside = tmp_path_factory.mktemp("outside")
    precious = outside / "precious.txt"
    precious.write_text("keep me\n")
    folder = repo / CACHE_DIR
    folder.mkdir()
    (folder / CACHE_FILE).symlink_to(precious)
    (folder / ".gitignore").symlink_to(outside / "created.txt")  # dangling: writing would create it
    assert run(repo) == REPLICAS
    assert precious.read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]  # the link was replaced by a real cache file


def test_odd_numbers_come_back_from_the_cache_as_they_were(repo: Path, parsed: list[str]) -> None:
    """NaN, infinities and huge integers are plain data too: cached, and read back unchanged."""
    odd = "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: odd-%d}\nspec: {replicas: %s}\n"
    write(repo, "other/odd.yaml", "\n---\n".join(odd % (n, v) for n, v in enumerate([".nan", "-.inf", "9" * 30])))
    assert run(repo) == REPLICAS
    parsed.clear()
    assert run(repo) == REPLICAS
    assert parsed == ["deploy.yaml"]
    body = (repo / CACHE_DIR / CACHE_FILE).read_bytes().partition(b"\n")[2]
    data = marshal.loads(body)
    _, result = cache._decode(data, data["signature"])["other/odd.yaml"]
    replicas = [record.projection["spec"]["replicas"] for record in result.objects]
    assert math.isnan(replicas[0]) and replicas[1:] == [-math.inf, int("9" * 30)]


def test_planted_configuration_marker_does_not_skip_validation(repo: Path) -> None:
    """A marker named as an unkeyed digest of the configuration (anyone can compute it) changes nothing."""
    from fieldwarden import __version__

    text = "fail-on: warning\nno-such-option: 1\n"
    write(repo, ".fieldwarden.yaml", text)
    for stamp in (cache.digest(f"{__version__}\0{text}".encode()).hex(), "0" * 64):
        write(repo, f"{CACHE_DIR}/config-{stamp}.ok", "")
    result = lint(["deploy.yaml"], cwd=repo)
    assert result.code == 2 and "no-such-option" in result.stderr
    write(repo, ".fieldwarden.yaml", "fail-on: warning\n")
    assert lint(["deploy.yaml"], cwd=repo).code in (0, 1)


def test_a_cache_made_under_other_context_paths_is_not_believed(repo: Path, parsed: list[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache holds the digest of what its projections were made under (the context paths' tree, the
    record fields), not the tree itself: read back and compared, that was ~0.6 M instructions of a one-file lint."""
    assert run(repo) == REPLICAS
    body = marshal.loads((repo / CACHE_DIR / CACHE_FILE).read_bytes().partition(b"\n")[2])
    assert isinstance(body["signature"][-1], bytes) and len(body["signature"][-1]) == 16
    parsed.clear()
    assert run(repo) == REPLICAS and parsed == ["deploy.yaml"]  # the same paths: believed
    tree = engine.context_tree()
    monkeypatch.setattr(engine, "context_tree", lambda: {**tree, "extra": (True, {})})  # a rule reads one more field
    parsed.clear()
    assert run(repo) == REPLICAS
    assert "hpa.yaml" in parsed  # parsed again, not taken from the cache
