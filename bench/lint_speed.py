"""The linter's speed targets, measured against baselines taken in the same run.

    python bench/lint_speed.py [--corpus DIR] [--runs N] [--only abc]

a. one small file linted as pre-commit does (`fieldwarden lint FILE` in a small git repo):
   median wall time vs `python -c "import yaml"`; target ratio <= 1.3. Beside it,
   `fieldwarden --version` against the same baseline; target ratio <= 1.1 (a run that
   needs nothing must import nothing). Then, shown without a goal, the same lint and
   baseline on a bare interpreter (`python -S`), whose baseline imports nothing else.
b. the whole corpus, `fieldwarden lint --no-context CORPUS` end to end in a subprocess:
   objects/s vs merely reading + `yaml.compose_all(CSafeLoader)` the same files in one
   process; target ratio >= 0.5.
c. one changed file linted as pre-commit does in a git repository holding the corpus (the
   cross-file context is every other object): warm run (context cache filled) <= 1 s;
   the cold run and a warm run after another file was linted are shown too.

Machines are noisy: the runs interleave measurement and baseline, report medians, and
compare ratios, never absolute times (except c, whose target is absolute).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_module  # noqa: E402

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]


class Row(NamedTuple):
    target: str
    baseline: str
    measured: str
    ratio: str
    goal: str
    met: bool | None


def fieldwarden_command() -> list[str]:
    """The installed console script (what pre-commit runs), else `python -m fieldwarden`."""
    script = Path(sysconfig.get_path("scripts")) / ("fieldwarden.exe" if os.name == "nt" else "fieldwarden")
    if script.is_file() and Path(sys.executable).parent == script.parent:
        return [str(script)]
    return [sys.executable, "-m", "fieldwarden"]


# Installed packages have byte-compiled modules; an editable checkout gets them on the first
# run, unless PYTHONDONTWRITEBYTECODE forbids it (then every run would compile fieldwarden
# from source while `import yaml` loads .pyc files: not the comparison we want).
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(
    command: Sequence[str], cwd: Path | None = None, expect: Sequence[int] = (0, 1), env: dict[str, str] | None = None
) -> float:
    """Wall time of one subprocess run, in seconds; fails loudly on an unexpected exit code."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=ENV if env is None else env)
    elapsed = time.perf_counter() - start
    if done.returncode not in expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return elapsed


def interleaved(runs: int, *commands: Callable[[], float], warmup: int = 2) -> list[list[float]]:
    """Alternate the commands run after run, so drift in machine load hits all alike."""
    for _ in range(warmup):
        for command in commands:
            command()
    samples: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for index, command in enumerate(commands):
            samples[index].append(command())
    return samples


def git_repo(folder: Path) -> None:
    subprocess.run([*_GIT, "init", "-q", str(folder)], check=True)
    subprocess.run([*_GIT, "-C", str(folder), "add", "-A"], check=True)
    subprocess.run([*_GIT, "-C", str(folder), "commit", "-q", "--no-verify", "-m", "corpus"], check=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


# -- a ----------------------------------------------------------------------------------------

def bench_startup(corpus: Path, work: Path, runs: int, fw: list[str]) -> tuple[list[Row], float]:
    """One small file in a small git repo, and `--version`, vs `python -c "import yaml"`; then the
    same lint and baseline with a bare interpreter."""
    repo = work / "small"
    sources = sorted(p for p in corpus.iterdir() if p.is_dir())[0]
    files = sorted(sources.glob("*.yaml"))[:6]
    target = min(files, key=lambda p: p.stat().st_size)
    repo.mkdir()
    for path in files:
        shutil.copy(path, repo / path.name)
    git_repo(repo)
    lint = [*fw, "lint", target.name]
    version = [*fw, "--version"]
    baseline = [sys.executable, "-c", "import yaml"]
    base, measured, versions = interleaved(
        runs, lambda: timed(baseline), lambda: timed(lint, cwd=repo), lambda: timed(version, cwd=repo, expect=(0,))
    )
    b, m, v = statistics.median(base), statistics.median(measured), statistics.median(versions)
    size = target.stat().st_size
    rows = [
        Row(f"a  one file ({size / 1000:.1f} kB), repo of {len(files)} files", f"import yaml {ms(b)}",
            f"lint {ms(m)}", f"{m / b:.2f}", "<= 1.3", m / b <= 1.3),
        Row("   fieldwarden --version", f"import yaml {ms(b)}", f"--version {ms(v)}", f"{v / b:.2f}", "<= 1.1",
            v / b <= 1.1),
    ]
    bare, env = bare_interpreter(work)
    bare_base, bare_lint = interleaved(
        runs, lambda: timed([*bare, "-c", "import yaml"], env=env),
        lambda: timed([*bare, "-c", _MAIN, "lint", target.name], cwd=repo, env=env),
    )
    bb, bm = statistics.median(bare_base), statistics.median(bare_lint)
    rows.append(Row("   the same lint, bare interpreter (see bare_interpreter)", f"import yaml {ms(bb)}",
                    f"lint {ms(bm)}", f"{bm / bb:.2f}", "(shown)", None))
    return rows, m


_MAIN = "import sys; from fieldwarden.cli import main; sys.exit(main())"


def bare_interpreter(work: Path) -> tuple[list[str], dict[str, str]]:
    """`python -S` with a copy of fieldwarden laid out as installed, and the environment's PyYAML.

    The development environment's `site` imports much (pathlib, importlib.resources, ...)
    through .pth files before any command runs, in the baseline too: that flatters the
    ratio. A fresh virtualenv (what pre-commit builds) imports little; -S imports nothing,
    so this row shows the least flattering ratio.
    """
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    target = work / "bare-site"
    layout = tomllib.loads((HERE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, source in layout.items():
        folder = target.joinpath(*package.split("."))
        folder.mkdir(parents=True, exist_ok=True)
        for module in (HERE.parent / source).iterdir():
            if module.suffix in (".py", ".json"):
                shutil.copy(module, folder / module.name)
    yaml_home = str(Path(yaml.__file__).resolve().parent.parent)
    return [sys.executable, "-S"], {**ENV, "PYTHONPATH": os.pathsep.join([str(target), yaml_home])}


# -- b ----------------------------------------------------------------------------------------

def parse_only(files: Sequence[Path]) -> float:
    """Read every file and compose every document with libyaml: the floor of any YAML tool."""
    start = time.perf_counter()
    for path in files:
        text = path.read_bytes().decode("utf-8-sig")
        for _ in yaml.compose_all(text, Loader=_LOADER):
            pass
    return time.perf_counter() - start


def bench_throughput(corpus: Path, work: Path, objects: int, runs: int, fw: list[str]) -> Row:
    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    empty = work / "empty.fieldwarden.yaml"  # each file gets its nearest configuration: the corpus may
    empty.write_text("{}\n", encoding="utf-8")  # sit in a project that excludes it (this repository does)
    lint = [*fw, "lint", "--no-context", "--config", str(empty), "--format", "json", str(corpus.resolve())]
    # from a folder outside any project, with an empty configuration: no exclusions
    base, measured = interleaved(runs, lambda: parse_only(files), lambda: timed(lint, cwd=work), warmup=1)
    b, m = statistics.median(base), statistics.median(measured)
    ratio = (objects / m) / (objects / b)
    return Row(
        f"b  corpus, {len(files)} files, {objects} objects",
        f"compose {objects / b:,.0f} obj/s",
        f"lint {objects / m:,.0f} obj/s ({m:.2f} s)",
        f"{ratio:.2f}",
        ">= 0.5",
        ratio >= 0.5,
    )


# -- c ----------------------------------------------------------------------------------------

def bench_context(corpus: Path, work: Path, objects: int, runs: int, fw: list[str], single: float | None) -> list[Row]:
    repo = work / "repo"
    shutil.copytree(corpus, repo, ignore=shutil.ignore_patterns(corpus_module.STAMP))
    git_repo(repo)
    names = sorted(p.relative_to(repo) for p in repo.rglob("*.yaml"))
    first, second = names[len(names) // 3], names[2 * len(names) // 3]
    for name in (first, second):  # the change being committed
        path = repo / name
        path.write_text(path.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    cache = repo / ".fieldwarden_cache"

    def cold() -> float:
        shutil.rmtree(cache, ignore_errors=True)
        return timed([*fw, "lint", str(first)], cwd=repo)

    def warm() -> float:
        return timed([*fw, "lint", str(first)], cwd=repo)

    def alternate() -> list[float]:
        # pre-commit on another file: the previous target joins the context (parsed, cache saved)
        times = []
        for index in range(runs):
            times.append(timed([*fw, "lint", str(second if index % 2 == 0 else first)], cwd=repo))
        return times

    cold_times = [cold() for _ in range(max(2, runs // 3))]
    warm()
    warm_times = [warm() for _ in range(runs)]
    other_times = alternate()
    c, w, o = statistics.median(cold_times), statistics.median(warm_times), statistics.median(other_times)
    against = f"a: {ms(single)}" if single else "-"
    rows = [
        Row(f"c  one file, context {objects} objects, warm", against, f"lint {ms(w)}",
            f"{w / single:.1f}x a" if single else "-", "<= 1 s", w <= 1.0),
        Row("   same, warm, after another file was linted", against, f"lint {ms(o)}",
            f"{o / single:.1f}x a" if single else "-", "(<= 1 s)", o <= 1.0),
        Row("   same, cold (no .fieldwarden_cache)", against, f"lint {ms(c)}",
            f"{c / single:.1f}x a" if single else "-", "-", None),
    ]
    return rows


def table(rows: Sequence[Row]) -> str:
    head = Row("target", "baseline", "measured", "ratio", "goal", None)
    widths = [max(len(str(getattr(r, f))) for r in (head, *rows)) for f in Row._fields[:5]]
    lines = []
    for row in (head, *rows):
        cells = [str(getattr(row, f)).ljust(w) for f, w in zip(Row._fields[:5], widths)]
        met = "met" if row.met is True else "MISSED" if row.met is False else ""
        lines.append("  ".join(cells) + ("  " + met if row is not head else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE / ".corpus", help="where the corpus is (generated if absent)")
    parser.add_argument("--runs", type=int, default=15, help="runs per measurement for a and c (b uses a third)")
    parser.add_argument("--only", default="abc", help="which targets to measure, e.g. `ac`")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    info = corpus_module.write(args.corpus, seed=args.seed)
    objects = int(info["object_count"])
    fw = fieldwarden_command()
    print(f"corpus: {info['files']} files, {objects} objects, {info['bytes'] / 1e6:.1f} MB ({args.corpus})")
    print(f"command: {' '.join(fw)}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs; "
          f"libyaml {'yes' if _LOADER is not yaml.SafeLoader else 'NO'}")
    rows: list[Row] = []
    single = None
    with tempfile.TemporaryDirectory(prefix="fieldwarden-bench-") as temporary:
        work = Path(temporary)
        if "a" in args.only:
            startup, single = bench_startup(args.corpus, work, args.runs, fw)
            rows.extend(startup)
        if "b" in args.only:
            rows.append(bench_throughput(args.corpus, work, objects, max(3, args.runs // 5), fw))
        if "c" in args.only:
            rows.extend(bench_context(args.corpus, work, objects, max(5, args.runs // 2), fw, single))
    print()
    print(table(rows))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0 if all(r.met is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
