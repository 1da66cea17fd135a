"""CI (.ci/release-check): the controller and export faces of a clean install, against a real kube-apiserver.

    python .ci/faces-on-a-cluster.py BIN EXPORTED_POLICIES_YAML

BIN is the bin folder of a virtualenv holding only the wheel and its [webhook] extra; the
cluster (etcd + kube-apiserver, tests/e2e/cluster.py) is run by this interpreter, which needs
`cryptography` (the [webhook] extra has it) and the repository on sys.path for `tests.e2e`.
- without an API server: `fieldwarden controller` starts, warns that it cannot reach it (retrying, as
  in a pod), is not ready, and stops cleanly;
- with one: it takes the leader-election Lease, answers /readyz, and stops cleanly on SIGTERM;
- what `fieldwarden export --k8s-version 1.32` wrote is accepted by the API server (a dry-run create
  of each object: the schemas and CEL expressions are valid for that version).
Exit status 0 when all hold; otherwise a message saying which did not, and the logs.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.assets import AssetsMissing, find_assets  # noqa: E402
from tests.e2e.cluster import Cluster, ClusterError, ClusterOptions  # noqa: E402

IDENTITY = "release-check"
START_TIMEOUT = 60.0
PLURALS = {  # kind -> the resource's path under /apis/admissionregistration.k8s.io/<version>/
    "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    "MutatingAdmissionPolicy": "mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
}


def fail(message: str) -> None:
    print(f"release-check: FAILED: {message}", file=sys.stderr)
    raise SystemExit(1)


def clean_env(home: Path) -> dict[str, str]:
    """No kubeconfig, not in a pod, nothing of this interpreter's environment but PATH."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def controller_without_a_cluster(bin_dir: Path, work: Path) -> str:
    """It starts, says it cannot reach the API server (and keeps trying, as in a pod), is not ready."""
    kubeconfig = work / "closed.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: closed, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: nobody, user: {token: not-a-real-token}}]\n"
        "contexts: [{name: closed, context: {cluster: closed, user: nobody, namespace: default}}]\n"
        "current-context: closed\n")
    refused = re.compile(r'"level":"warning".*leader election: .*port=1\b')
    with Controller(bin_dir, work, "closed", kubeconfig) as controller:
        while controller.waiting() and not (controller.url and refused.search(controller.log())):
            time.sleep(0.3)
        if not controller.url or not refused.search(controller.log()):
            controller.failed("with no API server, no banner or no warning naming 127.0.0.1:1")
        if get_status(f"{controller.url}/readyz") == 200:
            controller.failed("with no API server, /readyz answers 200")
        controller.stop()
        said = refused.search(controller.log())
        assert said is not None
        return f"banner, /readyz not ready, warns: ...{said.group(0)[-90:]}"


def controller_on(cluster: Cluster, bin_dir: Path, work: Path) -> str:
    """It takes the Lease, answers /readyz, stops cleanly."""
    holder, ready = "", False
    with Controller(bin_dir, work, "cluster", cluster.kubeconfig) as controller:
        while controller.waiting() and not (ready and holder == IDENTITY):
            time.sleep(0.3)
            if controller.url and not ready:
                ready = get_status(f"{controller.url}/readyz") == 200
            lease = cluster.api.request("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/"
                                        "fieldwarden-controller")
            holder = str(lease.body["spec"].get("holderIdentity") or "") if lease.ok else ""
        if not (ready and holder == IDENTITY):
            controller.failed(f"/readyz {'answered' if ready else 'did not answer'} 200 and the Lease holder is {holder!r}")
        controller.stop()
        return f"took the Lease as {IDENTITY!r}, /readyz 200 at {controller.url}, stopped cleanly on SIGTERM"


class Controller:
    """`fieldwarden controller` from BIN on `kubeconfig`, its log in `work`; killed on the way out."""

    def __init__(self, bin_dir: Path, work: Path, name: str, kubeconfig: Path) -> None:
        self.path = work / f"controller-{name}.log"
        with self.path.open("w") as out:
            self.process = subprocess.Popen(
                [str(bin_dir / "fieldwarden"), "controller", f"--kubeconfig={kubeconfig}", "--bind=127.0.0.1:0",
                 f"--identity={IDENTITY}", "--lease-namespace=default"],
                stdout=out, stderr=subprocess.STDOUT, env=clean_env(work), stdin=subprocess.DEVNULL)
        self.deadline = time.monotonic() + START_TIMEOUT

    def __enter__(self) -> Controller:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.path.read_text(errors="replace")

    @property
    def url(self) -> str | None:
        found = re.search(r"probes and metrics on (http://127\.0\.0\.1:\d+)", self.log())
        return found.group(1) if found else None

    def waiting(self) -> bool:
        return time.monotonic() < self.deadline and self.process.poll() is None

    def failed(self, what: str) -> None:
        fail(f"controller: within {START_TIMEOUT:.0f} s, {what} (exit status {self.process.poll()}):\n"
             f"{self.log()[-3000:]}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(timeout=30)
        if status != 0 or "Traceback" in self.log():
            fail(f"controller: exited {status} after SIGTERM:\n{self.log()[-3000:]}")


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except (OSError, http.client.HTTPException) as error:
        return int(getattr(error, "code", 0) or 0)


def exported_objects_are_accepted(cluster: Cluster, exported: Path) -> str:
    import yaml  # the [webhook] extra's PyYAML (the base requirement)

    objects = [o for o in yaml.safe_load_all(exported.read_text(encoding="utf-8")) if o]
    if not objects:
        fail(f"export: {exported} holds no objects")
    for obj in objects:
        kind, api_version = obj.get("kind"), obj.get("apiVersion", "")
        if kind not in PLURALS or not api_version.startswith("admissionregistration.k8s.io/"):
            fail(f"export: an object of kind {kind} ({api_version}) in {exported}")
        answer = cluster.api.request("POST", f"/apis/{api_version}/{PLURALS[kind]}", obj, query={"dryRun": "All"})
        if not answer.ok:
            fail(f"export: the API server refused {kind}/{obj['metadata']['name']}: {answer.status} {answer.body}")
    return f"the API server accepts all {len(objects)} exported objects (dry run)"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, exported = Path(argv[0]), Path(argv[1])
    with tempfile.TemporaryDirectory(prefix="fieldwarden-faces-") as scratch:
        work = Path(scratch)
        print(f"release-check: controller without an API server: {controller_without_a_cluster(bin_dir, work)}")
        try:
            assets = find_assets(controller_manager=False)
        except AssetsMissing as missing:
            fail(f"no kube-apiserver for the controller face: {missing}")
        started = time.monotonic()
        cluster = Cluster(work / "cluster", assets, ClusterOptions(mutating_admission_policy=True))
        try:
            cluster.start()
        except ClusterError as error:
            fail(f"the kube-apiserver did not start:\n{error}")
        try:
            print(f"release-check: kube-apiserver up in {time.monotonic() - started:.1f} s")
            print(f"release-check: controller: {controller_on(cluster, bin_dir, work)}")
            print(f"release-check: export: {exported_objects_are_accepted(cluster, exported)}")
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
