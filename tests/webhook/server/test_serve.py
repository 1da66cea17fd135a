"""`fieldwarden serve`: what it checks before starting, what it chooses, and a run with no options."""

from __future__ import annotations

import argparse
import sys
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Iterator

import pytest

from fieldwarden.cli import main
from fieldwarden.policies.config import Settings
from fieldwarden.webhook.server import serve
from tests.helpers import write
from tests.linter.test_imports import DEPLOYMENT, imported
from tests.webhook.live import Server, clean_environment
from tests.webhook.samples import patched, review

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An environment with no kubeconfig and no pod around it; HOME is the test's folder."""
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "XDG_STATE_HOME", "FIELDWARDEN_BIND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    # In-process runs stop before gunicorn: the test runner's own ssl stays unpatched (the
    # patch itself is exercised by a real server over HTTPS, test_serve_cluster.py).
    monkeypatch.setattr(serve, "patch_ssl_for_the_workers", lambda: None)
    yield tmp_path


def serve_main(args: list[str]) -> tuple[int, str]:
    """`fieldwarden serve ARGS` in-process, for the runs that must stop before gunicorn starts."""
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = main(["serve", *args])
    return code, err.getvalue()


def parse(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    return parser.parse_args(args)


def test_an_invalid_configuration_stops_it_naming_the_key(no_cluster: Path) -> None:
    write(no_cluster, "bad.yaml", "rules:\n  FW401:\n    enforcement: sometimes\n")
    code, err = serve_main(["--config", "bad.yaml"])
    assert code == 2
    assert "bad.yaml: rules.FW401.enforcement" in err


def test_an_unusable_inventory_file_stops_it_saying_where(no_cluster: Path) -> None:
    write(no_cluster, "hpa.yaml", "kind: HorizontalPodAutoscaler\napiVersion: autoscaling/v2\nmetadata: {}\n")
    code, err = serve_main(["--inventory", "hpa.yaml", "--cert-dir", "tls"])
    assert code == 2
    assert "hpa.yaml: document 1: HorizontalPodAutoscaler: metadata.name is missing" in err


def test_half_a_certificate_pair_stops_it(no_cluster: Path) -> None:
    write(no_cluster, "tls/tls.key", "x")
    code, err = serve_main(["--cert-dir", "tls"])
    assert code == 2 and "has tls.key but no tls.crt" in err


def test_an_inventory_file_and_a_cluster_are_exclusive(no_cluster: Path) -> None:
    with pytest.raises(SystemExit) as stopped, redirect_stderr(io.StringIO()):
        main(["serve", "--inventory", "a.yaml", "--kubeconfig", "k"])
    assert stopped.value.code == 2


def test_worker_counts_must_be_positive() -> None:
    with pytest.raises(SystemExit), redirect_stderr(io.StringIO()):
        parse(["--workers", "0"])


def test_no_inventory_and_no_cluster_is_an_empty_inventory_with_a_notice(
    no_cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = serve.choose_inventory(parse([]), Settings())
    assert inventory.describe() == {"source": "empty", "size": 0, "age_seconds": None}
    assert inventory.ready()
    assert "notice: no --inventory file and no cluster" in capsys.readouterr().err


def test_an_inventory_file_is_used_with_the_configured_default_namespace(no_cluster: Path) -> None:
    write(no_cluster, "hpa.yaml", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: w}\n"
          "spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: w}}\n")
    inventory = serve.choose_inventory(parse(["--inventory", "hpa.yaml"]), Settings({"default-namespace": "team"}))
    assert inventory.describe()["size"] == 1
    assert inventory.index().horizontal(("apps", "Deployment", "team", "w"))  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["--kubeconfig", "KUBECONFIG", "~/.kube/config"])
def test_a_kubeconfig_means_the_cluster_inventory(no_cluster: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    path = write(no_cluster, ".kube/config" if how == "~/.kube/config" else "kubeconfig", KUBECONFIG)
    if how == "KUBECONFIG":
        monkeypatch.setenv("KUBECONFIG", str(path))
    inventory = serve.choose_inventory(parse(["--kubeconfig", str(path)] if how == "--kubeconfig" else []), Settings())
    try:
        assert inventory.describe()["source"] == "cluster"
        assert not inventory.ready()  # built, not started: no API call before the fork
    finally:
        inventory.stop()


def test_a_broken_kubeconfig_named_explicitly_stops_it(no_cluster: Path) -> None:
    write(no_cluster, "kubeconfig", "apiVersion: v1\nkind: Config\n")
    code, err = serve_main(["--kubeconfig", "kubeconfig", "--cert-dir", "tls"])
    assert code == 2 and "cannot use the cluster of kubeconfig" in err


def test_default_bind_is_loopback_outside_a_pod_and_every_interface_inside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FIELDWARDEN_BIND", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert serve.default_bind() == "127.0.0.1:8443"
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert serve.default_bind() == "0.0.0.0:8443"
    monkeypatch.setenv("FIELDWARDEN_BIND", "127.0.0.1:9443")
    assert serve.default_bind() == "127.0.0.1:9443"


def test_with_no_options_it_serves_locally_with_a_generated_certificate(tmp_path: Path) -> None:
    server = Server([], tmp_path, clean_environment(tmp_path))
    try:
        ca = tmp_path / ".local" / "state" / "fieldwarden" / "tls" / "ca.crt"
        assert server.ca == ca and ca.is_file()
        out = server.stdout()
        assert f"curl --cacert {ca} https://127.0.0.1:{server.port}/healthz" in out
        assert "notice: no --inventory file and no cluster" in server.stderr()
        client = server.client()
        try:
            assert client.request("GET", "/readyz").status == 200
            data = review("pod-create")
            reply = client.post("/mutate", data)
            assert reply.status == 200
            assert patched(data, reply.json())["spec"]["readinessGates"] == [{"conditionType": "InPlaceUpdateReady"}]
        finally:
            client.close()
    finally:
        assert server.stop() == 0


def test_serve_help_lists_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "--inventory" in capsys.readouterr().out


def test_lint_never_loads_the_serve_command(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert not {m for m in modules if m.startswith("fieldwarden.webhook")}
    assert "cryptography" not in modules


def test_without_the_webhook_extra_it_says_what_to_install(no_cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gunicorn", None)  # what an absent package looks like to import
    code, err = serve_main([])
    assert code == 2 and "pip install 'fieldwarden[webhook]'" in err
