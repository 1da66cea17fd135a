"""How a command-line lint ends: at once once its output is flushed, else as Python always ends.

fieldwarden/cli.py's _exit_now skips the interpreter's teardown (issue 23 row a) only when
nothing is left to run at exit; what the process prints and its exit code stay the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import WEB_DEPLOYMENT, write
from tests.linter.test_imports import _installed_layout

FINDING = WEB_DEPLOYMENT + "status: {replicas: 1}\n"  # findings: exit 1


def _run(code: str, cwd: Path, **options: object) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` as the console script runs, fieldwarden laid out as installed (buffered stdout).

    -S: no site, so that no .pth file of the development environment registers an atexit
    callback of its own (which keeps the usual ending).
    """
    import yaml

    site = cwd.parent / f"{cwd.name}-site"
    if not site.exists():
        _installed_layout(site)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(Path(yaml.__file__).parent.parent)])
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env, text=True, timeout=120, **options)  # type: ignore[call-overload,no-any-return]


LINT = "import sys\nfrom fieldwarden.cli import main\nsys.argv = ['fieldwarden', 'lint', 'deploy.yaml']\n"


def test_a_lint_ends_at_once_with_its_output_flushed(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", FINDING)
    out = tmp_path / "out.txt"
    with open(out, "w") as stdout:  # a file: block-buffered, so only the flush writes it
        done = _run(LINT + "main()\nprint('main returned')\n", tmp_path, stdout=stdout, stderr=subprocess.PIPE)
    assert done.returncode == 1, done.stderr
    text = out.read_text()
    assert "deploy.yaml:13:1: FW306 [*] error: Deployment/default/web: status is written by the cluster" in text
    assert text.endswith("[*] 1 fixable with the `--fix` option (`--diff` shows the change).\n")
    assert "main returned" not in text  # nothing ran after the lint


def test_an_atexit_callback_makes_the_lint_end_as_usual(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", FINDING)
    code = ("import atexit\natexit.register(lambda: print('at exit'))\n" + LINT
            + "code = main()\nprint('main returned', code)\nsys.exit(code)\n")
    done = _run(code, tmp_path, capture_output=True)
    assert done.returncode == 1, done.stderr
    assert done.stdout.endswith("main returned 1\nat exit\n")


def test_a_running_thread_makes_the_lint_end_as_usual(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    # the thread runs until the lint has returned (were the process ended at once, it never would)
    code = ("import threading\nreturned = threading.Event()\n"
            "threading.Thread(target=lambda: (returned.wait(60), print('thread done'))).start()\n"
            + LINT + "code = main()\nprint('main returned', code, flush=True)\nreturned.set()\nsys.exit(code)\n")
    done = _run(code, tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "All checks passed!\nmain returned 0\nthread done\n"


def test_a_closed_stdout_ends_as_python_does(tmp_path: Path) -> None:
    # `fieldwarden lint x | head -0`: the flush fails, and the teardown reports it as it always did
    write(tmp_path, "deploy.yaml", FINDING)
    read, written = os.pipe()
    os.close(read)
    try:
        done = _run(LINT + "sys.exit(main())\n", tmp_path, stdout=written, stderr=subprocess.PIPE)
    finally:
        os.close(written)
    assert done.returncode == 120
    assert done.stderr == ("Exception ignored in: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>\n"
                           "BrokenPipeError: [Errno 32] Broken pipe\n")


def test_called_in_process_main_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldwarden.cli import main

    write(tmp_path, "deploy.yaml", FINDING)
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "-q", "deploy.yaml"]) == 1  # (argv given: an embedding caller, never os._exit)


def test_the_collector_stays_off_through_a_command_line_lint(tmp_path: Path) -> None:
    """The lint runs without it (engine.lint); a collection after it would walk every object the run
    still holds (~0.2 s after a lint of 44 charts and 41 kustomize roots) for a process about to end."""
    write(tmp_path, "deploy.yaml", FINDING)
    code = (LINT + "import gc\ngc.callbacks.append(lambda phase, info: phase == 'start' and print('collected', flush=True))\n"
            + "main()\n")
    done = _run(code, tmp_path, capture_output=True)
    assert done.returncode == 1, done.stderr
    assert "deploy.yaml:13:1: FW306" in done.stdout
    assert "collected" not in done.stdout
