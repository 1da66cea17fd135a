"""Live findings on the line of the value that causes them, and the API server's Go dumps made readable.

Behind a real kube-apiserver: kubectl sets the live object up, then `fieldwarden lint --cluster`
lints a changed manifest, server- and client-side, and the finding must sit on the changed
value's own line (`app: other` under `matchLabels`, a Job's image, a volume claim template's
storage), with the value as JSON where the API server printed a Go dump; kubectl's own
`--dry-run=server` says the apply fails (and, client-side, shows the dump we replace).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.kubectl import Kubectl
from tests.e2e.test_live_lint import apply, deployment_text, dry_run, live_findings, live_lint
from tests.e2e.test_live_lint import folder, no_latest_policy  # noqa: F401  (fixtures)
from tests.helpers import write

MODES = ["server", "client"]


def block_deployment(namespace: str, *, app: str = "web", image: str = "registry.example/web:1.0",
                     replicas: str = "2", extra: str = "") -> str:
    """A Deployment in block style; each field on its own line (see the comments)."""
    return "\n".join([
        "apiVersion: apps/v1",               # 1
        "kind: Deployment",                  # 2
        "metadata:",                         # 3
        "  name: web",                       # 4
        f"  namespace: {namespace}",         # 5
        "spec:",                             # 6
        f"  replicas: {replicas}",           # 7
        "  selector:",                       # 8
        "    matchLabels:",                  # 9
        "      tier: front",                 # 10
        f"      app: {app}",                 # 11
        "  template:",                       # 12
        "    metadata:",                     # 13
        "      labels:",                     # 14
        "        tier: front",               # 15
        f"        app: {app}",               # 16
        "    spec:",                         # 17
        "      containers:",                 # 18
        "        - name: web",               # 19
        f"          image: {image}",         # 20
        *([extra] if extra else []),         # 21
    ]) + "\n"


def mode_args(mode: str) -> tuple[str, ...]:
    return ("--apply-mode", "client") if mode == "client" else ()


def kubectl_args(mode: str) -> tuple[str, ...]:
    return () if mode == "client" else ("--server-side",)


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_selector_lands_on_the_changed_label_block_and_flow_style(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path, mode: str) -> None:
    apply(kubectl, block_deployment(namespace), *kubectl_args(mode))
    write(folder, "web.yaml", block_deployment(namespace, app="other"))
    message = ('the API server refuses the apply: spec.selector: Invalid value: {"matchLabels":{"app":"other","tier":'
               '"front"}}: field is immutable (spec.selector.matchLabels.app: live "web", the manifest "other")')
    assert live_findings(live_lint(cluster, folder, *mode_args(mode))) == [("web.yaml", 11, 7, "FW502", message)]
    assert "field is immutable" in dry_run(kubectl, folder / "web.yaml", *kubectl_args(mode)).stderr
    predicted = live_findings(live_lint(cluster, folder, "--read-only", *mode_args(mode)))
    assert [f[:4] for f in predicted] == [("web.yaml", 11, 7, "FW502")]
    # flow style: `matchLabels: {app: web2}`, the label's key inside the braces
    write(folder, "web.yaml", deployment_text(namespace, app="web2"))
    flow = live_findings(live_lint(cluster, folder, *mode_args(mode)))
    assert [f[:4] for f in flow] == [("web.yaml", 10, 19, "FW502")]  # `    matchLabels: {app: web2}`
    assert 'Invalid value: {"matchLabels":{"app":"web2"}}' in flow[0][4]


SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: {namespace}
spec:
  selector:
    app: api
  clusterIP: {ip}
  ports:
    - port: 80
"""

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: once
  namespace: {namespace}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          args: ["--once"]
          image: registry.example/job:{tag}
"""

STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: {namespace}
spec:
  serviceName: db
  selector:
    matchLabels: {{app: db}}
  template:
    metadata:
      labels: {{app: db}}
    spec:
      containers:
        - name: db
          image: registry.example/db:1.0
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: {size}
"""


@pytest.mark.parametrize("mode", MODES)
def test_immutable_fields_of_other_kinds_land_on_the_changed_value(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path, mode: str) -> None:
    apply(kubectl, SERVICE.format(namespace=namespace, ip="").replace("  clusterIP: \n", ""), *kubectl_args(mode))
    ip = kubectl("get", "service", "api", "-n", namespace, "-o", "jsonpath={.spec.clusterIP}").stdout.strip()
    first, _, last = ip.rpartition(".")
    other = f"{first}.{int(last) % 250 + 1}"  # another address: refused whether free or not
    apply(kubectl, JOB.format(namespace=namespace, tag="1.0"), *kubectl_args(mode))
    apply(kubectl, STATEFULSET.format(namespace=namespace, size="1Gi"), *kubectl_args(mode))
    write(folder, "service.yaml", SERVICE.format(namespace=namespace, ip=other))
    write(folder, "job.yaml", JOB.format(namespace=namespace, tag="2.0"))
    write(folder, "db.yaml", STATEFULSET.format(namespace=namespace, size="2Gi"))
    found = live_findings(live_lint(cluster, folder, *mode_args(mode)))
    assert [f[:4] for f in found] == [
        ("db.yaml", 24, 13, "FW502"), ("job.yaml", 14, 11, "FW502"), ("service.yaml", 9, 3, "FW502")]
    db, job, service = (f[4] for f in found)
    assert db.endswith('(spec.volumeClaimTemplates[0].spec.resources.requests.storage: live "1Gi", the manifest "2Gi")')
    assert job.startswith('the API server refuses the apply: spec.template: Invalid value: {"spec":{"containers":[{'
                          '"args":["--once"],"image":"registry.example/job:2.0","name":"main"}],"restartPolicy":"Never"}}: '
                          'field is immutable')
    assert "core.PodTemplateSpec" not in job and job.endswith(
        '(spec.template.spec.containers[0].image: live "registry.example/job:1.0", the manifest '
        '"registry.example/job:2.0")')
    assert service == (f'the API server refuses the apply: spec.clusterIPs[0]: Invalid value: ["{other}"]: may not change '
                       f'once set (spec.clusterIP: live "{ip}", the manifest "{other}")')
    for name in ("service.yaml", "job.yaml", "db.yaml"):  # kubectl's own apply is refused too
        assert dry_run(kubectl, folder / name, *kubectl_args(mode)).code == 1


def test_client_side_refusals_name_the_field_where_kubectl_prints_the_patch_as_a_go_map(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, block_deployment(namespace))
    write(folder, "web.yaml", block_deployment(namespace, replicas="two", extra="          bogus: 1"))
    said = dry_run(kubectl, folder / "web.yaml")
    assert 'patch: Invalid value: "map[' in said.stderr  # kubectl: the patch dumped, no field named
    found = live_findings(live_lint(cluster, folder, "--apply-mode", "client"))
    assert found == [("web.yaml", 7, 3, "FW501", 'the API server refuses the apply: spec.replicas: Invalid value: "two": '
                      "unrecognized type: int32")]
    write(folder, "web.yaml", block_deployment(namespace, extra="          bogus: 1"))
    assert "strict decoding error" in dry_run(kubectl, folder / "web.yaml").stderr
    unknown = live_findings(live_lint(cluster, folder, "--apply-mode", "client"))
    assert unknown == [("web.yaml", 21, 11, "FW501", 'the API server refuses the apply: '
                        'spec.template.spec.containers[0].bogus: strict decoding error: unknown field '
                        '"spec.template.spec.containers[0].bogus"')]
    # server-side: the same fields, in server-side apply's words
    server = live_findings(live_lint(cluster, folder))
    assert [f[:4] for f in server] == [("web.yaml", 21, 11, "FW501")]
    assert server[0][4].endswith('.bogus: field not declared in schema')
    write(folder, "web.yaml", block_deployment(namespace, extra='          ports: [{containerPort: "http"}]'))
    typed = live_findings(live_lint(cluster, folder))
    assert [f[:4] for f in typed] == [("web.yaml", 21, 20, "FW501")]
    assert typed[0][4].endswith("containerPort: expected numeric (int or float), got string")
    client = live_findings(live_lint(cluster, folder, "--apply-mode", "client"))
    assert client == [("web.yaml", 21, 20, "FW501", 'the API server refuses the apply: spec.template.spec.containers'
                       '[name="web"].ports[containerPort="http"].containerPort: Invalid value: "http": unrecognized '
                       "type: int32")]


def test_a_new_objects_undecodable_field_client_side(cluster: Cluster, namespace: str, folder: Path) -> None:
    write(folder, "web.yaml", block_deployment(namespace, extra='          ports: [{containerPort: "http"}]'))
    found = live_findings(live_lint(cluster, folder, "--apply-mode", "client"))
    assert [f[:4] for f in found] == [("web.yaml", 21, 20, "FW501")]
    assert found[0][4].endswith("json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec."
                                "containers.ports.containerPort of type int32")


def test_an_admission_policy_denial_of_an_existing_object_lands_on_the_field(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path, no_latest_policy: str) -> None:
    apply(kubectl, block_deployment(namespace), "--server-side")
    write(folder, "web.yaml", block_deployment(namespace, replicas="3", image="registry.example/web:latest"))
    found = live_findings(live_lint(cluster, folder))
    assert [f[:4] for f in found] == [("web.yaml", 20, 11, "FW504")]  # the image it quotes, not replicas (changed first)
    assert found[0][4].endswith("denied request: image registry.example/web:latest uses the latest tag")
    assert "uses the latest tag" in dry_run(kubectl, folder / "web.yaml", "--server-side").stderr
    assert [f[:4] for f in live_findings(live_lint(cluster, folder, "--apply-mode", "client"))] == [
        ("web.yaml", 20, 11, "FW504")]

