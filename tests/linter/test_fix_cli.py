"""`fieldwarden lint --fix` through the real CLI: files are fixed in place, stdin never touches the disk.

With stdin (`-`), as with ruff, the fixed document goes to stdout and the report of what
remains to stderr (or to --output); the file --stdin-filename names stays as it is.
These run `python -m fieldwarden` in a subprocess, to see stdout's bytes as a pipe gets them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import FIXTURES, write

EXPORT = FIXTURES / "fix" / "deployment.yaml"  # `kubectl get deployment web -o yaml`, with comments
FIXED = FIXTURES / "fix" / "deployment.fixed.yaml"
LIVE_FIELDS = ("managedFields", "uid", "resourceVersion", "creationTimestamp", "generation", "selfLink")

# A different object, with live fields of its own, at the path --stdin-filename names.
ON_DISK = """\
# k8s/web.yaml as committed
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  uid: 11111111-2222-3333-4444-555555555555
  resourceVersion: "42"
spec:
  selector:
    matchLabels: {app: web}
  strategy: {type: RollingUpdate}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx:1.25}]
status:
  replicas: 1
"""


def run(cwd: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "fieldwarden", "lint", *args], cwd=cwd, input=stdin,
                          capture_output=True, env=env, timeout=120)


def project(tmp_path: Path) -> Path:
    """A git repository holding k8s/web.yaml."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True,
                   env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
    write(tmp_path, "k8s/web.yaml", ON_DISK)
    return tmp_path


def report(path: Path) -> list[tuple[int, int, str]]:
    findings: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return sorted((f["line"], f["column"], f["code"]) for f in findings if not f["suppressed"])


def test_stdin_fix_prints_the_fixed_document_and_leaves_the_named_file_alone(tmp_path: Path) -> None:
    repo = project(tmp_path)
    before = (repo / "k8s" / "web.yaml").read_bytes()
    done = run(repo, "--fix", "--stdin-filename", "k8s/web.yaml", "--select", "FW306", "-", stdin=EXPORT.read_bytes())
    assert (repo / "k8s" / "web.yaml").read_bytes() == before
    assert done.returncode == 0, done.stderr
    assert done.stdout == FIXED.read_bytes()
    fixed = yaml.safe_load(done.stdout)
    original = yaml.safe_load(EXPORT.read_bytes())
    assert "status" not in fixed and not set(LIVE_FIELDS) & set(fixed["metadata"])
    assert "annotations" not in fixed["metadata"]  # last-applied and the controller's revision
    del original["spec"]["template"]["metadata"]["creationTimestamp"]  # null: noise, removed too
    assert fixed["spec"] == original["spec"] and fixed["metadata"]["labels"] == original["metadata"]["labels"]
    assert done.stdout.startswith(b"# Exported with: kubectl get deployment web")  # comments are kept
    assert b"k8s/web.yaml:" not in done.stdout + done.stderr  # nothing remains to report


def test_stdin_fix_reports_what_remains_and_exits_by_it(tmp_path: Path) -> None:
    repo = project(tmp_path)
    before = (repo / "k8s" / "web.yaml").read_bytes()
    unfixable = EXPORT.read_text(encoding="utf-8").replace("    type: RollingUpdate\n", "    type: Recreate\n")
    assert unfixable != EXPORT.read_text(encoding="utf-8")
    out = tmp_path / "report.json"
    done = run(repo, "--fix", "--stdin-filename", "k8s/web.yaml", "--format", "json", "-o", str(out), "-",
               stdin=unfixable.encode())
    assert (repo / "k8s" / "web.yaml").read_bytes() == before
    assert done.returncode == 1, done.stderr
    fixed = yaml.safe_load(done.stdout)
    assert "status" not in fixed and "managedFields" not in fixed["metadata"]
    remaining = report(out)
    assert remaining and all(code != "FW306" for _, _, code in remaining)
    assert "FW202" in {code for _, _, code in remaining}  # rollingUpdate with Recreate: not fixable
    again = run(repo, "--format", "json", "-o", str(out), "--stdin-filename", "k8s/web.yaml", "-", stdin=done.stdout)
    assert report(out) == remaining and again.returncode == 1  # the fixed text, linted as it is


def test_stdin_fix_writes_the_report_to_stderr(tmp_path: Path) -> None:
    repo = project(tmp_path)
    suppressed = EXPORT.read_bytes().replace(b"# assigned by the API server", b"# fieldwarden: ignore[FW306]")
    done = run(repo, "--fix", "--stdin-filename", "k8s/web.yaml", "--format", "json", "--show-suppressed", "-",
               stdin=suppressed)
    assert done.returncode == 0, done.stderr
    fixed = yaml.safe_load(done.stdout)
    assert fixed["metadata"]["uid"] == "37a6b191-c00c-4cb1-a928-9eeeac91f984"  # suppressed: kept
    assert "status" not in fixed and "managedFields" not in fixed["metadata"]
    lines = done.stderr.decode().splitlines()
    assert lines[0] == "fieldwarden: fixed 9 findings"
    findings = json.loads("\n".join(lines[1:]))
    assert [(f["file"], f["line"], f["code"], bool(f["suppressed"])) for f in findings] == [
        ("k8s/web.yaml", 9, "FW306", True)  # the annotations above it are gone
    ]


def test_stdin_fix_with_nothing_to_fix_echoes_the_input(tmp_path: Path) -> None:
    repo = project(tmp_path)
    text = "\ufeffapiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: settings  # kept\r\ndata: {a: b}\r\n"
    done = run(repo, "--fix", "-", stdin=text.encode("utf-8"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == text.encode("utf-8")


def test_stdin_fix_of_unparseable_input_echoes_it(tmp_path: Path) -> None:
    repo = project(tmp_path)
    done = run(repo, "--fix", "--stdin-filename", "k8s/web.yaml", "-", stdin=b"kind: [unclosed\nstatus: {}\n")
    assert done.returncode == 1
    assert done.stdout == b"kind: [unclosed\nstatus: {}\n"
    assert b"FW001" in done.stderr
    assert (repo / "k8s" / "web.yaml").read_text(encoding="utf-8") == ON_DISK


def test_stdin_and_its_named_file_both_given_with_fix_is_a_usage_error(tmp_path: Path) -> None:
    repo = project(tmp_path)
    done = run(repo, "--fix", "--stdin-filename", "k8s/web.yaml", "-", "k8s/", stdin=EXPORT.read_bytes())
    assert done.returncode == 2
    assert done.stdout == b""
    assert (repo / "k8s" / "web.yaml").read_text(encoding="utf-8") == ON_DISK


def test_file_fix_edits_the_file_in_place(tmp_path: Path) -> None:
    repo = project(tmp_path)
    path = repo / "k8s" / "live.yaml"
    path.write_bytes(EXPORT.read_bytes())
    done = run(repo, "--fix", "--select", "FW306", "k8s/live.yaml")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == FIXED.read_bytes()
    assert b"fixed 10 findings" in done.stderr
    assert (repo / "k8s" / "web.yaml").read_text(encoding="utf-8") == ON_DISK  # not named: not touched
