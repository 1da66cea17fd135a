"""The linter's speed targets, measured against baselines taken in the same run.

    python bench/lint_speed.py [--corpus DIR] [--runs N] [--only abcd]

a. one small file linted as pre-commit does (`fieldwarden lint FILE` in a small git repo), in a
   regular (non-editable) install as pre-commit and `pip install` build it (see regular_install:
   a venv with a wheel of this checkout and the environment's PyYAML, kept for the next run):
   median wall time vs `python -c "import yaml"` in that venv; target ratio <= 1.3. Beside it,
   `fieldwarden --version` against the same baseline; target ratio <= 1.1 (a run that
   needs nothing must import nothing), and both ratios in CPU time. Then, shown without a goal,
   the same lint and baseline on a bare interpreter (`python -S`), whose baseline imports nothing else.
   With valgrind installed, the instructions of one lint and one baseline run too (callgrind, the
   lint's own process): the same count on a quiet or a busy machine, but without the git child and
   the kernel's work of starting processes, so its ratio reads lower than the wall ratio.
b. the whole corpus, `fieldwarden lint --no-context CORPUS` end to end in a subprocess:
   CPU time of its process tree (its worker processes included) vs merely reading +
   `yaml.compose_all(CSafeLoader)` the same files in this process, paired runs; target: the
   median ratio <= 1.2 (CPU time, so that a busy machine does not hide work the lint adds). The
   lint runs as installed here: with the C extensions where they were built (the header says).
   Objects/s of both are shown beside, and in how many runs the lint's worker pool ran (sampled:
   it starts only where cores are idle, engine.workers_for). In the same interleaved runs, the lint
   without schema validation (`--ignore FW601,FW602`): with it, CPU time <= 1.3x (issue 24).
c. one changed file linted as pre-commit does in a git repository holding the corpus (the
   cross-file context is every other object): warm run (context cache filled) <= 1 s;
   the cold run and a warm run after another file was linted are shown too.
d. a generated repository of rendered units (bench/units_corpus.py: 40 Helm charts, rendered
   once per value set, and 40 kustomize overlays): `fieldwarden lint` from its root, no cache,
   vs only rendering the same units with the same engines (`kubectl kustomize DIR`, Helm's
   Go SDK in one child process per chart rendering its value sets in turn, as the lint does),
   both on every core; target: the median of each cycle's lint/render ratio <= 1.3, peak memory
   (max RSS of the lint and of each process it starts) < 300 MB. Beside it, shown, the same
   renders with a process per chart and value set (what running `helm template` per unit costs). Then pre-commit on one changed file inside rendered
   units, its renders made again and the rest from the caches: <= 1 s.
e. (--repos DIR) kyverno's and prometheus-community's `charts/` folders (bench/real_inputs.py), each
   copied into a git repository: `fieldwarden lint charts` cold vs only rendering the same value
   sets with Helm's engine (as in d: a process per chart rendering its sets in turn; sets that fail
   to render are left out of the floor); target: the median ratio <= 1.3, and the lint's process
   tree < 300 MB at its peak (sampled); CPU-time ratio shown.
f. (--repos DIR) the mixed tree of real charts, kustomize roots and plain folders (bench/real_trees.py
   MIXED), `fieldwarden lint` cold vs rendering the same units without origin annotations (`kubectl
   kustomize DIR`, Helm as in d; units that fail to render are left out of the floor): <= 1.15.
g. (--repos DIR) kubeflow/manifests warm (render cache filled, nothing changed) vs a warm lint of the
   same tree with its units turned off (kustomization files and Chart.yaml removed: every YAML file
   linted as a plain file): <= 2; CPU time shown.

Machines are noisy: the runs interleave measurement and baseline, report medians, and
compare ratios, never absolute times (except c, whose target is absolute).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, Sequence

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_module  # noqa: E402
import units_corpus  # noqa: E402

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

def bench_startup(corpus: Path, work: Path, runs: int, fw: list[str]) -> tuple[list[Row], float | None]:
    """One small file in a small git repo, and `--version`, vs `python -c "import yaml"`, all three in a
    regular install (regular_install); then the same lint and baseline with a bare interpreter."""
    repo = work / "small"
    sources = sorted(p for p in corpus.iterdir() if p.is_dir())[0]
    files = sorted(sources.glob("*.yaml"))[:6]
    target = min(files, key=lambda p: p.stat().st_size)
    repo.mkdir()
    for path in files:
        shutil.copy(path, repo / path.name)
    git_repo(repo)
    try:
        python, script, env = regular_install()
    except (OSError, subprocess.CalledProcessError) as exc:  # e.g. no build backend and no package index
        return [Row("a  one file, regular install", "-", f"could not build the install: {exc}", "-", "<= 1.3", None)], None
    built = _extensions(str(python), env)
    lint = [str(script), "lint", target.name]
    version = [str(script), "--version"]
    baseline = [str(python), "-c", "import yaml"]
    cpu: dict[str, list[float]] = {"base": [], "lint": [], "version": []}

    def run(name: str, command: list[str], expect: Sequence[int] = (0, 1)) -> float:
        wall, used = timed_cpu(command, repo, env, expect)
        cpu[name].append(used)
        return wall

    base, measured, versions = interleaved(
        runs, lambda: run("base", baseline), lambda: run("lint", lint), lambda: run("version", version, (0,))
    )
    b, m, v = statistics.median(base), statistics.median(measured), statistics.median(versions)
    cb, cm, cv = (statistics.median(cpu[name][-runs:]) for name in ("base", "lint", "version"))
    size = target.stat().st_size
    rows = [
        Row(f"a  one file ({size / 1000:.1f} kB), repo of {len(files)} files, regular install (C extensions {built})",
            f"import yaml {ms(b)}", f"lint {ms(m)}", f"{m / b:.2f}", "<= 1.3", m / b <= 1.3),
        Row("   fieldwarden --version", f"import yaml {ms(b)}", f"--version {ms(v)}", f"{v / b:.2f}", "<= 1.1",
            v / b <= 1.1),
        Row("   the same in CPU time: lint (git included), --version", f"import yaml {ms(cb)}",
            f"lint {ms(cm)}, --version {ms(cv)}", f"{cm / cb:.2f}, {cv / cb:.2f}", "(shown)", None),
    ]
    counted = instructions(baseline, repo, env), instructions(lint, repo, env)
    if None not in counted:
        ib, il = counted
        rows.append(Row("   the same in instructions (valgrind; the lint's git child not counted)",
                        f"import yaml {ib / 1e6:.0f} M", f"lint {il / 1e6:.0f} M", f"{il / ib:.2f}", "(shown)", None))
    bare, bare_env = bare_interpreter(work)
    bare_base, bare_lint = interleaved(
        runs, lambda: timed([*bare, "-c", "import yaml"], env=bare_env),
        lambda: timed([*bare, "-c", _MAIN, "lint", target.name], cwd=repo, env=bare_env),
    )
    bb, bm = statistics.median(bare_base), statistics.median(bare_lint)
    rows.append(Row("   the same lint, bare interpreter (see bare_interpreter)", f"import yaml {ms(bb)}",
                    f"lint {ms(bm)}", f"{bm / bb:.2f}", "(shown)", None))
    return rows, m


def instructions(command: Sequence[str], cwd: Path, env: dict[str, str]) -> int | None:
    """Instructions one run of the command executes (valgrind's callgrind, the process itself), or None
    without valgrind. Unlike wall and CPU time, the count does not change with the machine's load."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], cwd=cwd,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = [line.rsplit(":", 1)[1].strip() for line in done.stderr.splitlines() if "Collected :" in line]
    return int(found[-1]) if found and found[-1].isdigit() else None


def timed_cpu(command: Sequence[str], cwd: Path, env: dict[str, str], expect: Sequence[int]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, its children too) of one subprocess run."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode not in expect:
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n{errors.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


_VENVS = HERE / ".startup-venv"


def _source_digest() -> str:
    """What the installed package is made of: pyproject.toml and every file of its package folders,
    with the Python and PyYAML versions the venv is built with."""
    import hashlib

    root = HERE.parent
    digest = hashlib.sha256(f"{sys.version} {yaml.__version__}".encode())
    for path in _package_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _package_files(root: Path) -> list[Path]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    layout = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    files = [root / "pyproject.toml", root / "README.md", root / "setup.py", root / "MANIFEST.in"]
    for source in layout.values():  # (.c: the C extensions, built as pre-commit's install builds them)
        files.extend(p for p in sorted((root / source).iterdir()) if p.suffix in (".py", ".json", ".c") and p.is_file())
    return files


def regular_install() -> tuple[Path, Path, dict[str, str]]:
    """A venv (`python -m venv`) with fieldwarden installed from a wheel of this checkout
    (`pip install --no-deps`, as pre-commit and `pip install .` do: byte-compiled, no .pth
    finder) and this environment's PyYAML copied in (libyaml and all; its files as installed,
    so no network is needed). Kept in bench/.startup-venv/<digest of the sources>, rebuilt when
    they change: (python, the fieldwarden script, the environment to run them with).

    The development install is editable: its .pth finder runs at every start, `import yaml`
    included, which flatters the ratio (37 ms there vs 26 ms in a regular venv).
    """
    import importlib.metadata

    bin_dir = "Scripts" if os.name == "nt" else "bin"
    suffix = ".exe" if os.name == "nt" else ""
    env = {k: v for k, v in ENV.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}
    home = _VENVS / _source_digest()
    python, script = home / bin_dir / f"python{suffix}", home / bin_dir / f"fieldwarden{suffix}"
    if (home / "complete").is_file():
        return python, script, env
    shutil.rmtree(_VENVS, ignore_errors=True)  # other digests: older sources
    with tempfile.TemporaryDirectory(prefix="fieldwarden-wheel-") as temporary:
        build = Path(temporary)
        root = HERE.parent
        for path in _package_files(root):  # a clean copy: no build/ or egg-info left in the checkout
            copy = build / "src" / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, copy)
        wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(build / "dist"), str(build / "src")]
        try:  # with the setuptools installed here when it can build wheels (offline) ...
            import wheel as _  # noqa: F401  (setuptools < 70 needs it for bdist_wheel)
            isolated = False
        except ImportError:
            isolated = True  # ... else pip fetches the build backend (its cache or the package index)
        subprocess.run(wheel if isolated else [*wheel, "--no-build-isolation"], check=True, env=env)
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, env=env)
        built = next((build / "dist").glob("fieldwarden-*.whl"))
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(built)],
                       check=True, env=env)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True, env=env).stdout.strip())
    pyyaml = importlib.metadata.distribution("PyYAML")
    for name in pyyaml.files or []:
        source = Path(str(pyyaml.locate_file(name)))
        if "__pycache__" not in name.parts and source.is_file() and ".." not in name.parts:
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, site / name)
    subprocess.run([str(python), "-m", "compileall", "-q", str(site / "yaml"), str(site / "_yaml")], check=True, env=env)
    _link_schemas(site)
    (home / "complete").write_text("", encoding="utf-8")
    return python, script, env


def _link_schemas(site: Path) -> None:
    """fieldwarden[schemas] as installed here (kubernetes-validate's ~110 MB of schemas: linked, not
    copied), so that row a lints with schema validation on, as a user with the extra does."""
    import importlib.util

    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return
    (site / "kubernetes_validate").symlink_to(next(iter(spec.submodule_search_locations)), target_is_directory=True)


_MAIN = "import sys; from fieldwarden.cli import main; sys.exit(main())"


def _extensions(python: str = sys.executable, env: dict[str, str] = ENV) -> str:
    """Whether an interpreter's fieldwarden has the C extensions (setup.py): row a's regular install, and this
    interpreter's, whose command (fieldwarden_command) rows b-g run."""
    found = subprocess.run([python, "-c", "from fieldwarden.linter import plainload; from fieldwarden.policies."
                            "schemas import validate; print(plainload.available(), validate.compiled_fit())"],
                           capture_output=True, text=True, env=env, cwd=tempfile.gettempdir()).stdout.strip()
    return {"True True": "yes", "False False": "NO"}.get(found, found or "?")


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

def parse_only(files: Sequence[Path], cpu: list[float] | None = None) -> float:
    """Read every file and compose every document with libyaml: the floor of any YAML tool.

    Wall seconds; the CPU seconds it took are appended to `cpu`."""
    start, started = time.perf_counter(), time.process_time()
    for path in files:
        text = path.read_bytes().decode("utf-8-sig")
        for _ in yaml.compose_all(text, Loader=_LOADER):
            pass
    if cpu is not None:
        cpu.append(time.process_time() - started)
    return time.perf_counter() - start


def bench_throughput(corpus: Path, work: Path, objects: int, runs: int, fw: list[str]) -> list[Row]:
    """The corpus linted whole: CPU time of the lint's process tree (its worker processes included)
    vs the parse floor's, each pair measured back to back; objects/s shown beside."""
    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    empty = work / "empty.fieldwarden.yaml"  # each file gets its nearest configuration: the corpus may
    empty.write_text("{}\n", encoding="utf-8")  # sit in a project that excludes it (this repository does)
    lint = [*fw, "lint", "--no-context", "--config", str(empty), "--format", "json", str(corpus.resolve())]
    # from a folder outside any project, with an empty configuration: no exclusions
    floor_cpu: list[float] = []
    lints: list[Measured] = []
    unvalidated: list[Measured] = []  # the same lint without schema validation (FW601, FW602)

    def lint_once() -> float:
        lints.append(measured(lint, work, work / "throughput.log"))  # (wait4: CPU of the lint and its workers)
        return lints[-1].wall

    def lint_unvalidated() -> float:
        unvalidated.append(measured([*lint[:-1], "--ignore", "FW601,FW602", lint[-1]], work, work / "throughput.log"))
        return unvalidated[-1].wall

    base, walls, _ = interleaved(runs, lambda: parse_only(files, floor_cpu), lint_once, lint_unvalidated, warmup=1)
    floor_cpu, lint_cpu = floor_cpu[-runs:], [r.cpu for r in lints[-runs:]]  # no warm-up
    off_cpu = [r.cpu for r in unvalidated[-runs:]]
    with_schemas = [on / off for on, off in zip(lint_cpu, off_cpu)]
    ratios = [lint / floor for lint, floor in zip(lint_cpu, floor_cpu)]  # each pair ran under the same load
    ratio = statistics.median(ratios)
    b, m = statistics.median(base), statistics.median(walls)
    speed = (objects / m) / (objects / b)
    pooled = sum(r.processes > 1 for r in lints[-runs:])  # (engine.workers_for: only where cores are idle)
    return [
        Row(
            f"b  corpus, {len(files)} files, {objects} objects: CPU time (worker pool ran in {pooled}/{runs} runs)",
            f"compose {statistics.median(floor_cpu):.2f} s",
            f"lint {statistics.median(lint_cpu):.2f} s",
            f"{ratio:.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
            "<= 1.2",
            ratio <= 1.2,
        ),
        Row("   same, objects/s (wall)", f"compose {objects / b:,.0f} obj/s",
            f"lint {objects / m:,.0f} obj/s ({m:.2f} s)", f"{speed:.2f}", "(shown)", None),
        Row("   schema validation (FW601, FW602) on vs off, same run: CPU time",
            f"without {statistics.median(off_cpu):.2f} s", f"with {statistics.median(lint_cpu):.2f} s",
            f"{statistics.median(with_schemas):.2f} ({min(with_schemas):.2f}-{max(with_schemas):.2f})", "<= 1.3",
            statistics.median(with_schemas) <= 1.3),
    ]


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


# -- d ----------------------------------------------------------------------------------------

# Only rendering, with the linter's own engine for charts: load the chart, layer the values
# files as `helm -f` does, render (what `helm template` does). argv: the chart folder, then a
# JSON list of value sets (each a list of values files); one process renders them in turn.
_HELM_RENDER = """\
import json, sys
import helm_python as helm

def merge(base, over):
    merged = dict(base)
    for key, value in over.items():
        merged[key] = merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged

for files in json.loads(sys.argv[2]):
    values = {}
    for name in files:
        with open(name, encoding="utf-8") as handle:
            values = merge(values, helm.values_from_yaml(handle.read()) or {})
    with helm.Chart.load(sys.argv[1]) as chart:
        manifests = chart.render(values, name="release-name", namespace="default", is_install=True)
    sys.stdout.write("".join(manifests.values()))
"""


class Measured(NamedTuple):
    wall: float
    cpu: float  # user + system seconds of the process and every process it waited for
    max_rss: int  # bytes: the largest of the process and each process it waited for (wait4)
    tree_peak: int | None  # bytes: the largest sum of the process tree's RSS seen (sampled), None off Linux
    processes: int = 1  # the most processes of the tree seen at once (sampled; row b: did the worker pool run)


def _tree_rss(pid: int, count: list[int] | None = None) -> int:
    """The resident memory of a process and all its descendants, in bytes (Linux /proc); their
    number is appended to `count`."""
    total, pending, page, seen = 0, [pid], os.sysconf("SC_PAGE_SIZE"), 0
    while pending:
        current = pending.pop()
        seen += 1
        try:
            with open(f"/proc/{current}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * page
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    pending.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue  # it ended meanwhile
    if count is not None:
        count.append(seen)
    return total


def measured(command: Sequence[str], cwd: Path, log: Path) -> Measured:
    """Run a command to its end: wall time, CPU time and memory of it and what it starts."""
    sampling = sys.platform.startswith("linux")
    with open(log, "wb") as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, env=ENV)
        peak, counts = [0], [1]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], _tree_rss(process.pid, counts))

        sampler = threading.Thread(target=sample, daemon=True)
        if sampling:
            sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        process.returncode = os.waitstatus_to_exitcode(status)
    if sampling:
        sampler.join()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, peak[0] if sampling else None,
                    max(counts))


def render_only(repo: Path, kustomize: Sequence[str], info: dict[str, Any], workers: int,
                per_chart: bool) -> tuple[float, float]:
    """Render every unit once, `workers` at a time: (wall, CPU seconds of the renderers).

    Charts: one process per chart for all its value sets (`per_chart`), else one per value set."""
    commands = [[*kustomize, str(repo / unit)] for unit in info["kustomize_units"]]
    sets: dict[str, list[list[str]]] = {}
    for chart, values in info["helm_units"]:
        sets.setdefault(chart, []).append([str(repo / v) for v in values])
    batches = [(chart, [each]) for chart, every in sets.items() for each in every] if not per_chart else list(sets.items())
    commands.extend([sys.executable, "-I", "-c", _HELM_RENDER, str(repo / chart), json.dumps(batch)] for chart, batch in batches)

    def run(command: list[str]) -> None:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[:4])} ... exited {done.returncode}: {done.stderr.decode(errors='replace')}")

    before = os.times()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, commands))
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def bench_units(work: Path, runs: int, fw: list[str], seed: int) -> list[Row]:
    """The whole lint of a repository of rendered units vs rendering them; then pre-commit inside one."""
    from fieldwarden.linter.units.tools import find_kustomize  # the command the linter runs

    kustomize = find_kustomize()
    if kustomize is None:
        return [Row("d  rendered units", "-", "kustomize not found: pip install 'fieldwarden[render]'", "-", "-", None)]
    info = units_corpus.write(HERE / ".units-corpus", seed=seed)
    repo = work / "units"
    shutil.copytree(HERE / ".units-corpus", repo, ignore=shutil.ignore_patterns(units_corpus.STAMP))
    git_repo(repo)
    cache = repo / ".fieldwarden_cache"
    workers = _cpus()
    lints: list[Measured] = []
    render_cpu: list[float] = []  # CPU seconds of each render-only run, a process per chart
    apart_cpu: list[float] = []  # the same, a process per chart and value set

    def render() -> float:
        wall, cpu = render_only(repo, kustomize, info, workers, per_chart=True)
        render_cpu.append(cpu)
        return wall

    def render_apart() -> float:
        wall, cpu = render_only(repo, kustomize, info, workers, per_chart=False)
        apart_cpu.append(cpu)
        return wall

    def lint_cold() -> float:
        shutil.rmtree(cache, ignore_errors=True)  # no render cache, no context cache
        result = measured([*fw, "lint"], repo, work / "units-lint.log")
        lints.append(result)
        return result.wall

    base, apart, whole = interleaved(runs, render, render_apart, lint_cold, warmup=1)
    timed_lints, timed_renders, timed_apart = lints[-runs:], render_cpu[-runs:], apart_cpu[-runs:]  # no warm-up
    b, a, m = statistics.median(base), statistics.median(apart), statistics.median(whole)
    ratios = [lint / floor for lint, floor in zip(whole, base)]  # each cycle's pair ran under the same load
    ratio = statistics.median(ratios)
    apart_ratios = [lint / floor for lint, floor in zip(whole, apart)]
    renders = len(info["kustomize_units"]) + len(info["helm_units"])
    rss = max(r.max_rss for r in timed_lints)
    peaks = [r.tree_peak for r in timed_lints if r.tree_peak is not None]
    busy = statistics.median(r.cpu / r.wall for r in timed_lints)
    rc, ac, lc = statistics.median(timed_renders), statistics.median(timed_apart), statistics.median(r.cpu for r in timed_lints)
    rows = [
        Row(f"d  {info['charts']} charts + {len(info['kustomize_units'])} kustomize units ({renders} renders), no cache",
            f"render only {ms(b)}", f"lint {ms(m)}", f"{ratio:.2f} ({min(ratios):.2f}-{max(ratios):.2f})", "<= 1.3",
            ratio <= 1.3),
        Row("   same lint vs rendering with a process per chart and value set", f"render only {ms(a)}", f"lint {ms(m)}",
            f"{statistics.median(apart_ratios):.2f} ({min(apart_ratios):.2f}-{max(apart_ratios):.2f})", "(shown)", None),
        Row("   peak memory: max RSS of the lint or any process it starts", "-", f"{rss / 1e6:.0f} MB", "-",
            "< 300 MB", rss < 300e6),
        Row("   the lint's process tree at once (sampled every 20 ms)", "-",
            f"{max(peaks) / 1e6:.0f} MB" if peaks else "-", "-", "(shown)", None),
        Row("   CPU time of all processes (a busy machine stretches wall times)", f"render only {rc:.1f} s",
            f"lint {lc:.1f} s", f"{lc / rc:.2f}", "(shown)", None),
        Row("   same, rendering with a process per chart and value set", f"render only {ac:.1f} s",
            f"lint {lc:.1f} s", f"{lc / ac:.2f}", "(shown)", None),
        Row(f"   cores busy ({workers} CPUs): CPU time / wall time",
            f"render only {statistics.median(c / w for c, w in zip(timed_renders, base)):.2f}", f"lint {busy:.2f}", "-",
            "(shown)", None),
    ]
    rows.extend(bench_precommit(repo, work, info, max(5, runs), fw))
    return rows


def bench_precommit(repo: Path, work: Path, info: dict[str, Any], runs: int, fw: list[str]) -> list[Row]:
    """One changed file inside rendered units, linted as pre-commit does, the caches warm."""
    overlay = str(info["kustomize_units"][0])
    app = overlay.rsplit("/overlays/", 1)[0]
    helm_units: list[tuple[str, list[str]]] = info["helm_units"]
    chart = max((chart for chart, _ in helm_units), key=lambda c: sum(1 for other, _ in helm_units if other == c))
    sets = sum(1 for other, _ in helm_units if other == chart)
    cases = [
        (f"{app}/base/deployment.yaml", "a base under 2 overlays"),
        (f"{chart}/templates/deployment.yaml", f"a chart template, {sets} value sets"),
    ]
    timed([*fw, "lint"], cwd=repo)  # every render and the context in the caches
    log = work / "units-precommit.log"
    rows: list[Row] = []
    for name, what in cases:
        path = repo / name
        original = path.read_text(encoding="utf-8")
        changed: list[Measured] = []
        unchanged: list[Measured] = []
        for index in range(runs):
            path.write_text(original + f"# revision {index}\n", encoding="utf-8")  # new content: its renders again
            changed.append(measured([*fw, "lint", name], repo, log))
            unchanged.append(measured([*fw, "lint", name], repo, log))  # the same content: all from the caches
        path.write_text(original, encoding="utf-8")
        wall, cpu = statistics.median(r.wall for r in changed), statistics.median(r.cpu for r in changed)
        rows.append(Row(f"   pre-commit, {what} changed", "-", f"lint {ms(wall)} (CPU {ms(cpu)})", "-", "<= 1 s",
                        wall <= 1.0))
        wall, cpu = statistics.median(r.wall for r in unchanged), statistics.median(r.cpu for r in unchanged)
        rows.append(Row("   same file, unchanged since the last run", "-", f"lint {ms(wall)} (CPU {ms(cpu)})", "-",
                        "(shown)", None))
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


# -- f, g: real repositories (bench/real_trees.py builds the trees from the pinned checkouts) -----


def _units_plan(repo: Path, fw: list[str]) -> dict[str, Any]:
    """What the lint renders: `fieldwarden units --format json` as {"kustomize_units", "helm_units"}."""
    done = subprocess.run([*fw, "units", "--format", "json"], cwd=repo, capture_output=True, text=True, env=ENV)
    units = json.loads(done.stdout)["units"]
    renders = [r for unit in units for r in unit["renders"]]
    return {"kustomize_units": [r["folder"] for r in renders if r["tool"] == "kustomize"],
            "helm_units": [(r["folder"], r["values"]) for r in renders if r["tool"] == "helm"],
            "plain": sum(1 for unit in units if unit["kind"] == "plain folder")}


def _buildable(repo: Path, kustomize: Sequence[str], info: dict[str, Any]) -> dict[str, Any]:
    """The floor renders what renders: units that fail (cheaply, in the lint too) are left out of it."""
    kept = [unit for unit in info["kustomize_units"]
            if subprocess.run([*kustomize, str(repo / unit)], capture_output=True).returncode == 0]
    charts: dict[str, list[Any]] = {}
    for chart, values in info["helm_units"]:
        charts.setdefault(chart, []).append(values)
    helm = []
    for chart, sets in charts.items():
        for values in sets:
            batch = json.dumps([[str(repo / v) for v in values]])
            if subprocess.run([sys.executable, "-I", "-c", _HELM_RENDER, str(repo / chart), batch],
                              capture_output=True, env=ENV).returncode == 0:
                helm.append((chart, values))
    return {**info, "kustomize_units": kept, "helm_units": helm}


def bench_charts(repos: Path | None, work: Path, runs: int, fw: list[str]) -> list[Row]:
    """e. kyverno's and prometheus-community's charts/ linted cold vs rendering their value sets with Helm alone."""
    from real_inputs import checkout

    rows: list[Row] = []
    for folder in ("kyverno", "helm-charts"):
        name = f"e  {folder}/charts, cold"
        path, why = checkout(repos, folder)
        if path is None:
            rows.append(Row(name, "-", f"skipped: {why}", "-", "<= 1.3", None))
            continue
        repo = work / f"charts-{folder}"
        shutil.rmtree(repo, ignore_errors=True)
        shutil.copytree(path / "charts", repo / "charts", symlinks=True)
        git_repo(repo)
        plan = _units_plan(repo, fw)
        info = _buildable(repo, [], {**plan, "kustomize_units": []})
        lints: list[Measured] = []
        floors: list[float] = []

        def floor() -> float:
            wall, cpu = render_only(repo, [], info, _cpus(), per_chart=True)
            floors.append(cpu)
            return wall

        def lint_cold() -> float:
            shutil.rmtree(repo / ".fieldwarden_cache", ignore_errors=True)
            lints.append(measured([*fw, "lint", "charts"], repo, work / f"charts-{folder}.log"))
            return lints[-1].wall

        base, whole = interleaved(runs, floor, lint_cold, warmup=1)
        timed_lints, timed_floors = lints[-runs:], floors[-runs:]
        ratios = [lint / render for lint, render in zip(whole, base)]
        cpu_ratios = [lint.cpu / render for lint, render in zip(timed_lints, timed_floors)]
        peaks = [r.tree_peak for r in timed_lints if r.tree_peak is not None]
        peak = max(peaks) if peaks else max(r.max_rss for r in timed_lints)
        charts = len({chart for chart, _ in plan["helm_units"]})
        rows += [
            Row(f"{name} ({charts} charts, {len(plan['helm_units'])} value sets; {len(info['helm_units'])} render)",
                f"Helm alone {ms(statistics.median(base))}", f"lint {ms(statistics.median(whole))}",
                f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})", "<= 1.3",
                statistics.median(ratios) <= 1.3),
            Row("   CPU time of all processes", f"Helm alone {statistics.median(timed_floors):.1f} s",
                f"lint {statistics.median(r.cpu for r in timed_lints):.1f} s", f"{statistics.median(cpu_ratios):.2f}",
                "(shown)", None),
            Row("   peak memory of the lint's process tree" + (" (sampled every 20 ms)" if peaks else " (largest process)"),
                "-", f"{peak / 1e6:.0f} MB (largest process {max(r.max_rss for r in timed_lints) / 1e6:.0f} MB)", "-",
                "< 300 MB", peak < 300e6),
        ]
    return rows


def bench_mixed(repos: Path | None, work: Path, runs: int, fw: list[str]) -> list[Row]:
    """f. the mixed tree of real charts, kustomize roots and plain folders, cold, vs rendering it without origin annotations."""
    import real_trees
    from fieldwarden.linter.units.tools import find_kustomize

    name = "f  mixed real charts + kustomize roots, cold"
    kustomize = find_kustomize()
    repo = work / "mixed"
    why = "kustomize not found" if kustomize is None else real_trees.mixed_tree(repos, repo)
    if why:
        return [Row(name, "-", f"skipped: {why}", "-", "<= 1.15", None)]
    assert kustomize is not None
    plan = _units_plan(repo, fw)
    info = _buildable(repo, kustomize, plan)
    lints: list[Measured] = []
    floors: list[float] = []

    def floor() -> float:
        wall, cpu = render_only(repo, kustomize, info, _cpus(), per_chart=True)
        floors.append(cpu)
        return wall

    def lint_cold() -> float:
        shutil.rmtree(repo / ".fieldwarden_cache", ignore_errors=True)
        result = measured([*fw, "lint"], repo, work / "mixed-lint.log")
        lints.append(result)
        return result.wall

    base, whole = interleaved(runs, floor, lint_cold, warmup=1)
    ratios = [lint / render for lint, render in zip(whole, base)]
    cpu_l, cpu_f = statistics.median(r.cpu for r in lints[-runs:]), statistics.median(floors[-runs:])
    charts = len({chart for chart, _ in plan["helm_units"]})
    label = (f"{name} ({charts} charts, {len(plan['helm_units'])} value sets, {len(plan['kustomize_units'])} kustomize "
             f"roots, {plan['plain']} plain folders)")
    return [
        Row(label, f"render, no origin annotations {ms(statistics.median(base))}", f"lint {ms(statistics.median(whole))}",
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})", "<= 1.15",
            statistics.median(ratios) <= 1.15),
        Row("   CPU time of all processes", f"render {cpu_f:.1f} s", f"lint {cpu_l:.1f} s", f"{cpu_l / cpu_f:.2f}",
            "(shown)", None),
        Row(f"   floor renders {len(info['kustomize_units'])} roots, {len(info['helm_units'])} sets (the rest fail)",
            "-", "-", "-", "(shown)", None),
    ]


def bench_kubeflow(repos: Path | None, work: Path, runs: int, fw: list[str]) -> list[Row]:
    """g. kubeflow/manifests warm (nothing changed) vs a warm lint of the same tree with its units turned off."""
    import real_trees

    name = "g  kubeflow/manifests warm, nothing changed"
    repo, plain = work / "kubeflow", work / "kubeflow-plain"
    why = real_trees.kubeflow_tree(repos, repo) or real_trees.kubeflow_tree(repos, plain)
    if why:
        return [Row(name, "-", f"skipped: {why}", "-", "<= 2", None)]
    real_trees.without_units(plain)
    measured([*fw, "lint"], repo, work / "kubeflow-lint.log")  # fills the render and context caches
    cpus: dict[str, list[float]] = {"units": [], "plain": []}

    def run(tree: Path, key: str) -> float:
        result = measured([*fw, "lint"], tree, work / f"kubeflow-{key}.log")
        cpus[key].append(result.cpu)
        return result.wall

    base, whole = interleaved(runs, lambda: run(plain, "plain"), lambda: run(repo, "units"), warmup=1)
    ratios = [w / b for w, b in zip(whole, base)]
    cpu_u, cpu_p = statistics.median(cpus["units"][-runs:]), statistics.median(cpus["plain"][-runs:])
    return [
        Row(f"{name} (render cache filled)", f"plain lint, units off {ms(statistics.median(base))}",
            f"lint {ms(statistics.median(whole))}", f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
            "<= 2", statistics.median(ratios) <= 2),
        Row("   CPU time", f"plain lint {cpu_p:.1f} s", f"lint {cpu_u:.1f} s", f"{cpu_u / cpu_p:.2f}", "(shown)", None),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=HERE / ".corpus", help="where the corpus is (generated if absent)")
    parser.add_argument("--runs", type=int, default=15, help="runs per measurement for a and c (b uses a fifth, d a third)")
    parser.add_argument("--only", default="abcd", help="which targets to measure, e.g. `ac`")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repos", type=Path, default=None,
                        help="the pinned checkouts (bench/real_inputs.py) for the rows on real inputs; skipped without")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    info = corpus_module.write(args.corpus, seed=args.seed)
    objects = int(info["object_count"])
    fw = fieldwarden_command()
    print(f"corpus: {info['files']} files, {objects} objects, {info['bytes'] / 1e6:.1f} MB ({args.corpus})")
    print(f"command: {' '.join(fw)}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs; "
          f"libyaml {'yes' if _LOADER is not yaml.SafeLoader else 'NO'}; C extensions {_extensions()}")
    rows: list[Row] = []
    single = None
    with tempfile.TemporaryDirectory(prefix="fieldwarden-bench-") as temporary:
        work = Path(temporary)
        if "a" in args.only:
            startup, single = bench_startup(args.corpus, work, args.runs, fw)
            rows.extend(startup)
        if "b" in args.only:
            rows.extend(bench_throughput(args.corpus, work, objects, max(3, args.runs // 5), fw))
        if "c" in args.only:
            rows.extend(bench_context(args.corpus, work, objects, max(5, args.runs // 2), fw, single))
        if "d" in args.only:
            rows.extend(bench_units(work, max(3, args.runs // 3), fw, args.seed))
        if "e" in args.only:
            rows.extend(bench_charts(args.repos, work, max(3, args.runs // 3), fw))
        if "f" in args.only:
            rows.extend(bench_mixed(args.repos, work, max(3, args.runs // 3), fw))
        if "g" in args.only:
            rows.extend(bench_kubeflow(args.repos, work, max(3, args.runs // 3), fw))
    print()
    print(table(rows))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0 if all(r.met is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
