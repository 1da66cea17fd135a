"""The shipped enum table (policies/schemas/enums-1.32.json) is what the real API server serves.

The maintainer's command (`python3 -m fieldwarden.policies.schemas.enums_refresh`) runs against a
kube-apiserver v1.32 serving every API version (`--runtime-config=api/all=true`, as the table is
made) and must write the shipped file byte for byte: an edited table, or a server that says
otherwise, fails here; a CRD's group in that server is left out. The cluster every other test uses
(default API versions) serves no built-in enum the table lacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from fieldwarden.policies.schemas import enums
from fieldwarden.policies.schemas.enums_refresh import built_in_paths, not_built_in
from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.kubectl import Kubectl

ALL_APIS = ClusterOptions(apiserver_flags=("--runtime-config=api/all=true",))
CRD = Path(__file__).parents[1] / "fixtures" / "schema_agreement" / "widget-crd.yaml"  # (its spec.mode has an enum)


def refresh(kubectl: Kubectl, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fieldwarden.policies.schemas.enums_refresh", "--kubeconfig",
                           str(kubectl.kubeconfig), "--kubectl", str(kubectl.binary), "--output", str(output)],
                          capture_output=True, text=True, env=kubectl.environment(), timeout=300, check=False)


@pytest.fixture(scope="module")
def all_apis(start_cluster: Callable[[ClusterOptions], Cluster], kubectl: Kubectl) -> Kubectl:
    return kubectl.as_user(start_cluster(ALL_APIS).kubeconfig)


def test_the_shipped_table_is_what_the_server_serves(all_apis: Kubectl, tmp_path: Path) -> None:
    written = tmp_path / "enums.json"
    done = refresh(all_apis, written)
    assert done.returncode == 0, done.stderr
    assert written.read_bytes() == Path(enums.TABLE).read_bytes()
    version = json.loads(all_apis("get", "--raw", "/version").stdout)
    assert json.loads(written.read_text())["kubernetes"] == version["gitVersion"]
    assert f"{version['major']}.{version['minor']}" == enums.VERSION
    again = tmp_path / "again.json"
    assert refresh(all_apis, again).returncode == 0
    assert again.read_bytes() == written.read_bytes()  # sorted and stable


def test_the_default_api_versions_serve_no_enum_beyond_the_table(kubectl: Kubectl) -> None:
    def get(path: str) -> Any:
        return json.loads(kubectl("get", "--raw", path).stdout)

    others = not_built_in(get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
                          get("/apis/apiregistration.k8s.io/v1/apiservices"))
    served = enums.extract(get(f"/openapi/v3/{path}") for path in built_in_paths(get("/openapi/v3")["paths"], others))
    shipped = enums.load()
    assert served and {name: shipped.get(name) for name in served} == served


def test_a_crds_group_is_no_built_in_one(all_apis: Kubectl, tmp_path: Path) -> None:
    # a CRD with an enum installed in the server the table is made from: the table stays the same
    all_apis("apply", "-f", str(CRD))
    all_apis("wait", "--for=condition=Established", "crd/widgets.agreement.fieldwarden.io", "--timeout=60s")
    try:
        deadline = time.monotonic() + 60  # (the OpenAPI controller publishes a new CRD's document a little later)
        while "apis/agreement.fieldwarden.io/v1" not in json.loads(all_apis("get", "--raw", "/openapi/v3").stdout)["paths"]:
            assert time.monotonic() < deadline, "the CRD's group never appeared in /openapi/v3"
            time.sleep(0.5)
        written = tmp_path / "enums.json"
        assert refresh(all_apis, written).returncode == 0
        assert written.read_bytes() == Path(enums.TABLE).read_bytes()
    finally:
        all_apis("delete", "-f", str(CRD), "--wait=true")


def test_the_command_says_why_it_cannot_read_a_server(kubectl: Kubectl, tmp_path: Path) -> None:
    missing = tmp_path / "absent-kubeconfig"
    done = subprocess.run([sys.executable, "-m", "fieldwarden.policies.schemas.enums_refresh", "--kubeconfig",
                           str(missing), "--kubectl", str(kubectl.binary), "--output", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and done.stderr.startswith("enums_refresh: kubectl get --raw /version")
    assert "Traceback" not in done.stderr and not (tmp_path / "out.json").exists()
