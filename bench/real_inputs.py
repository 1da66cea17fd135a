"""The real repositories the speed targets are measured on, pinned to the commits measured.

The bench does not download anything (the machines that run it may reach only package
registries). Clone each repository once into one folder, check out the pinned commit, and
point the bench at that folder:

    python bench/real_inputs.py --clone DIR     # prints the git commands that make DIR
    python bench/lint_speed.py --repos DIR ...   # rows on real inputs; skipped when absent

A checkout at another commit is refused (its figures would not compare with the README's).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Sequence


class Pinned(NamedTuple):
    folder: str
    url: str
    commit: str


PINNED: tuple[Pinned, ...] = (
    Pinned("kyverno", "https://github.com/kyverno/kyverno", "111e07bbec"),
    Pinned("helm-charts", "https://github.com/prometheus-community/helm-charts", "cf408a290"),
    Pinned("podinfo", "https://github.com/stefanprodan/podinfo", "eec06d1"),
    Pinned("argo-cd", "https://github.com/argoproj/argo-cd", "37ee0097cf"),
    Pinned("metrics-server", "https://github.com/kubernetes-sigs/metrics-server", "5ed5d3a2cf"),
    Pinned("gatekeeper", "https://github.com/open-policy-agent/gatekeeper", "dd8507eb97"),
    Pinned("ingress-nginx", "https://github.com/kubernetes/ingress-nginx", "dbb11b92dd"),
    Pinned("microservices-demo", "https://github.com/GoogleCloudPlatform/microservices-demo", "34ffea9175"),
    Pinned("kustomize", "https://github.com/kubernetes-sigs/kustomize", "12f9e63914"),
    Pinned("manifests", "https://github.com/kubeflow/manifests", "009c880840"),
)
BY_FOLDER = {pinned.folder: pinned for pinned in PINNED}


def checkout(repos: Path | None, folder: str) -> tuple[Path | None, str]:
    """The pinned checkout of `folder` under `repos`, or None and why it cannot be used."""
    pinned = BY_FOLDER[folder]
    if repos is None:
        return None, "no --repos folder given"
    path = repos / folder
    if not (path / ".git").exists():
        return None, f"{path} is not a git checkout (python bench/real_inputs.py --clone {repos})"
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = done.stdout.strip()
    if done.returncode != 0 or not head.startswith(pinned.commit):
        return None, f"{path} is at {head[:10] or '?'}, the bench measures {pinned.commit}"
    return path, ""


def clone_commands(repos: Path) -> list[str]:
    return [
        f"git clone -q {pinned.url} {repos / pinned.folder} && git -C {repos / pinned.folder} checkout -q {pinned.commit}"
        for pinned in PINNED
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clone", type=Path, metavar="DIR", required=True,
                        help="print the commands that clone every pinned repository into DIR")
    args = parser.parse_args(argv)
    print("\n".join(clone_commands(args.clone)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
