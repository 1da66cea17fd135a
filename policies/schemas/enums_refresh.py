"""A maintainer's command: write the enum table (enums.py) from a live API server's /openapi/v3.

    python3 -m fieldwarden.policies.schemas.enums_refresh --kubeconfig K [--kubectl kubectl] [--output FILE]

Reads the server's version and every document its /openapi/v3 lists, through kubectl (which takes the
kubeconfig as given: this command holds no credentials), but those of the groups that CRDs or
aggregated API servers serve (not built in), and writes enums.render's text to FILE
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
    others = not_built_in(fetch(kubectl, kubeconfig, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
                          fetch(kubectl, kubeconfig, "/apis/apiregistration.k8s.io/v1/apiservices"))
    paths = built_in_paths(fetch(kubectl, kubeconfig, "/openapi/v3").get("paths", {}), others)
    return render(extract(fetch(kubectl, kubeconfig, f"/openapi/v3/{path}") for path in paths), version)


def not_built_in(crds: Any, apiservices: Any) -> set[str]:
    """The API groups a server serves through CRDs or aggregated API servers (an APIService with a
    service), from the two lists' JSON."""
    groups = {item.get("spec", {}).get("group") for item in crds.get("items", [])}
    groups.update(item.get("spec", {}).get("group") for item in apiservices.get("items", [])
                  if item.get("spec", {}).get("service"))
    return {group for group in groups if isinstance(group, str)}


def built_in_paths(paths: Any, others: set[str]) -> list[str]:
    """The /openapi/v3 document paths (`api/v1`, `apis/apps/v1`...) of the built-in groups, sorted."""
    return sorted(path for path in paths if not (path.startswith("apis/") and path.split("/")[1] in others))


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
