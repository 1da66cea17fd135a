"""A maintainer's command: write the enum table (enums.py) from a live API server's /openapi/v3.

    python3 -m fieldwarden.policies.schemas.enums_refresh --kubeconfig K [--kubectl kubectl] [--output FILE]

Reads the server's version and every document its /openapi/v3 lists, through kubectl (which takes the
kubeconfig as given: this command holds no credentials), and writes enums.render's text to FILE
(default: the shipped table, enums.TABLE). Run it against the kube-apiserver in ../shared/kube
started with every API version served (`start-apiserver -- --runtime-config=api/all=true`), as
tests/e2e/test_enum_table.py does; the output is sorted, so a second run writes the same bytes.
Never imported by a lint: the policy core itself has no network.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any, Sequence

from .enums import TABLE, extract, render


def fetch(kubectl: str, kubeconfig: str, path: str) -> Any:
    """One `kubectl get --raw` answer, decoded."""
    answer = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "--raw", path],
                            capture_output=True, text=True, timeout=120, check=False)
    if answer.returncode != 0:
        raise RuntimeError(f"kubectl get --raw {path}: {answer.stderr.strip()}")
    return json.loads(answer.stdout)


def table_text(kubectl: str, kubeconfig: str) -> str:
    """The table's file text for the server the kubeconfig points at."""
    version = fetch(kubectl, kubeconfig, "/version").get("gitVersion", "")
    paths = sorted(fetch(kubectl, kubeconfig, "/openapi/v3").get("paths", {}))
    return render(extract(fetch(kubectl, kubeconfig, f"/openapi/v3/{path}") for path in paths), version)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="enums_refresh", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kubeconfig", required=True, help="the API server to read (its kubeconfig)")
    parser.add_argument("--kubectl", default="kubectl", help="the kubectl to run (default: kubectl on PATH)")
    parser.add_argument("--output", default=TABLE, help="where to write the table (default: the shipped one)")
    args = parser.parse_args(argv)
    try:
        text = table_text(args.kubectl, args.kubeconfig)
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"enums_refresh: {error}", file=sys.stderr)
        return 1
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
