"""Shared test helpers: run the real CLI in-process and read its JSON report."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from fieldwarden.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


class Run(NamedTuple):
    code: int
    findings: list[dict[str, Any]]
    stderr: str

    def hits(self, code_prefix: str = "") -> list[tuple[str, int, int, str]]:
        """(file name, line, column, code) of unsuppressed findings, optionally filtered."""
        return sorted(
            (Path(f["file"]).name, f["line"], f["column"], f["code"])
            for f in self.findings
            if f["code"].startswith(code_prefix) and not f["suppressed"]
        )


def lint(args: Sequence[str], cwd: Path | None = None, stdin: bytes | None = None) -> Run:
    """`fieldwarden lint --format json ARGS` in-process (from `cwd`), returning code and findings."""
    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_stdin = sys.stdin
    try:
        if cwd is not None:
            os.chdir(cwd)
        if stdin is not None:
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["lint", "--format", "json", "--show-suppressed", *args])
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin
    text = out.getvalue()
    return Run(code, json.loads(text) if text.strip() else [], err.getvalue())


def write(folder: Path, name: str, text: str) -> Path:
    """Write a manifest file (creating folders) and return its path."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def git_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """A new git repository at `root` (as pre-commit and CI see one) holding `files` (name: text), uncommitted."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    for name, text in (files or {}).items():
        write(root, name, text)
    return root


# A Deployment `web` with a selector and a pod template, nothing more (no replicas, no strategy):
# line 5 is `spec:` (where FW201 points), line 6 `selector:`. Tests that assert lines count on this.
WEB_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""


def web_deployment(*, replicas: int | None = None, image: str = "nginx") -> str:
    """WEB_DEPLOYMENT running `image`; with `replicas`, that is line 6 (FW301's place) and the rest one line down."""
    text = WEB_DEPLOYMENT.replace("image: nginx", f"image: {image}")
    return text if replicas is None else text.replace("spec:\n", f"spec:\n  replicas: {replicas}\n", 1)


def scaled_deployment(name: str, replicas: int = 2) -> str:
    """A Deployment `name` with replicas (line 6, FW301's place under an HPA) and a strategy type (no FW201)."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  strategy: {{type: RollingUpdate}}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers: [{{name: app, image: nginx}}]
"""


def hpa_for(name: str, min_replicas: int = 2) -> str:
    """An HPA `name` scaling the apps/v1 Deployment `name` (line 6 is its scaleTargetRef)."""
    return f"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: {min_replicas}
  maxReplicas: 5
"""


# A chart template whose strategy type comes from a helper in _helpers.tpl (CHART_HELPERS) and whose
# rollingUpdate from the values: change the helper to Recreate and the chart has an FW202.
CHART_HELPERS = '{{- define "web.strategyType" -}}\nRollingUpdate\n{{- end -}}\n'
CHART_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  strategy:
    type: {{ include "web.strategyType" . }}
    {{- with .Values.strategy.rollingUpdate }}
    rollingUpdate:
      {{- toYaml . | nindent 6 }}
    {{- end }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""
