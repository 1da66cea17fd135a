"""The chart installed as a Helm release into a real kube-apiserver, with Helm's own engine (helm-python-sdk).

    helm = Helm(cluster.kubeconfig, namespace)      # a connection to the cluster and its release storage
    helm.install("fieldwarden", {"webhook": {"replicas": 3}})
    helm.upgrade("fieldwarden", {...})              # `lookup` reads the installed Secrets back, as `helm upgrade` does
    helm.uninstall("fieldwarden")

and `main(argv)`: the subset of the `helm` command line the quick start uses (`install`, `uninstall`;
`--namespace/-n`, `--create-namespace`, `--set`), for
tests/e2e/test_quickstart.py, which puts a `helm` that runs it first on PATH: no helm binary is
needed, and the chart is rendered and applied by the same Go code the helm binary runs.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any, Sequence

import helm_python as helm

from tests.e2e.cluster import ClusterOptions
from tests.helm.chart import CHART, chart

# One cluster for the Helm releases of the e2e suite: a release owns cluster-wide objects (its webhook
# configurations, ClusterRoles) that the `fieldwarden` fixture's installation also makes, so releases
# live apart from it. Its Services get ClusterIPs on loopback (Linux routes all of 127/8 to `lo`), and
# the API server calls a webhook's Service at `https://<ClusterIP>:<port>`: a process of the test
# listening there answers for the chart's Service (tests/e2e/host_pods.py), and no traffic leaves loopback.
# (The flag follows the harness's own --service-cluster-ip-range, so it is the one that counts.)
SERVICE_RANGE = ipaddress.IPv4Network("127.100.0.0/16")
RELEASES_CLUSTER = ClusterOptions(controller_manager=True, name="helm-releases",
                                  apiserver_flags=(f"--service-cluster-ip-range={SERVICE_RANGE}",))
Obj = dict[str, Any]


class Helm:
    """Helm's install/upgrade/uninstall actions on one cluster, releases stored in their namespace (Secrets)."""

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace

    def _config(self) -> helm.Config:
        return helm.Config(kubeconfig_path=self.kubeconfig, namespace=self.namespace)

    def install(self, release: str, values: Obj | None = None, *, create_namespace: bool = True) -> Obj:
        with self._config() as config:
            done: Obj = dict(config.install(chart(), release, values, namespace=self.namespace,
                                            create_namespace=create_namespace))
        return done

    def upgrade(self, release: str, values: Obj | None = None) -> Obj:
        with self._config() as config:
            done: Obj = dict(config.upgrade(chart(), release, values, namespace=self.namespace))
        return done

    def uninstall(self, release: str) -> None:
        with self._config() as config:
            config.uninstall(release, ignore_not_found=True)


# --- `helm` on the command line -------------------------------------------------------------------


def set_value(values: Obj, assignment: str) -> None:
    """`--set a.b=c` into `values` (Helm's own parser: types, lists and escapes as the helm binary reads them)."""
    merge(values, helm.parse_set_string(assignment))


def merge(into: Obj, more: Obj) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(prog="helm")
    actions = cli.add_subparsers(dest="action", required=True)
    install = actions.add_parser("install")
    install.add_argument("release")
    install.add_argument("chart")
    install.add_argument("--create-namespace", action="store_true")
    install.add_argument("--set", action="append", default=[])
    actions.add_parser("uninstall").add_argument("release")
    for sub in actions.choices.values():
        sub.add_argument("--namespace", "-n", default="default")
        sub.add_argument("--kubeconfig")
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    kubeconfig = Path(args.kubeconfig or os.environ["KUBECONFIG"])
    client = Helm(kubeconfig, args.namespace)
    try:
        if args.action == "install":
            if Path(args.chart).resolve() != CHART:
                print(f"Error: this stand-in installs {CHART} only, not {args.chart}", file=sys.stderr)
                return 1
            values: Obj = {}
            for assignment in args.set:
                set_value(values, assignment)
            done = client.install(args.release, values, create_namespace=args.create_namespace)
            print(f"NAME: {done['name']}\nNAMESPACE: {done['namespace']}\nSTATUS: {done['status']}\n"
                  f"REVISION: {done['revision']}")
        else:
            client.uninstall(args.release)
            print(f'release "{args.release}" uninstalled')
    except helm.HelmError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
