"""FW304 resources-owned-by-vpa."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git_repo, lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
              ephemeral-storage: 1Gi
            limits:
              cpu: "1"
              memory: 1Gi
        - name: sidecar
          image: envoy
          resources:
            requests: {cpu: 10m, memory: 32Mi}
      initContainers:
        - name: init
          resources:
            requests: {cpu: 1, memory: 1Gi}
"""

WEB_REQUESTS = [("all.yaml", 13, 15, "FW304"), ("all.yaml", 14, 15, "FW304")]
WEB_LIMITS = [("all.yaml", 17, 15, "FW304"), ("all.yaml", 18, 15, "FW304")]
SIDECAR = [("all.yaml", 22, 24, "FW304"), ("all.yaml", 22, 34, "FW304")]


def vpa(extra: str = "", target: str = "{apiVersion: apps/v1, kind: Deployment, name: web}", namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"""\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: web-vpa{ns}
spec:
  targetRef: {target}
{extra}"""


def run_one(tmp_path: Path, workload: str, autoscaler: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "all.yaml", workload + "---\n" + autoscaler)
    return lint(["--select", "FW304", "--no-context", str(path)]).hits()


def test_default_vpa_controls_cpu_and_memory_requests_and_limits(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", DEPLOYMENT + "---\n" + vpa())
    run = lint(["--select", "FW304", "--no-context", str(path)])
    assert run.code == 1
    assert run.hits() == sorted(WEB_REQUESTS + WEB_LIMITS + SIDECAR)
    first = min(run.findings, key=lambda f: (f["line"], f["column"]))
    assert first["field"] == "spec.template.spec.containers[name=web].resources.requests.cpu"
    assert first["severity"] == "warning"


def test_vpa_in_another_file_of_the_repository(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    write(root, "all.yaml", DEPLOYMENT)
    write(root, "vpa-web.yaml", vpa())  # another file of the same apply unit (folder)
    assert lint(["--select", "FW304", "all.yaml"], cwd=root).hits() == sorted(WEB_REQUESTS + WEB_LIMITS + SIDECAR)
    # the VPA alone: what it causes, on the Deployment's lines (issue 22, item 8)
    assert lint(["--select", "FW304", "vpa-web.yaml"], cwd=root).hits() == sorted(WEB_REQUESTS + WEB_LIMITS + SIDECAR)


@pytest.mark.parametrize("mode", ["Auto", "Recreate", "InPlaceOrRecreate", "Initial"])
def test_update_modes_that_control(tmp_path: Path, mode: str) -> None:
    hits = run_one(tmp_path, DEPLOYMENT, vpa(f"  updatePolicy: {{updateMode: {mode}}}\n"))
    assert hits == sorted(WEB_REQUESTS + WEB_LIMITS + SIDECAR)


def test_update_mode_off_controls_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", DEPLOYMENT + "---\n" + vpa("  updatePolicy: {updateMode: \"Off\"}\n"))
    run = lint(["--select", "FW304", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])


def test_star_policy_mode_off_controls_nothing(tmp_path: Path) -> None:
    extra = "  resourcePolicy:\n    containerPolicies:\n      - {containerName: '*', mode: \"Off\"}\n"
    assert run_one(tmp_path, DEPLOYMENT, vpa(extra)) == []


def test_exact_container_policy_wins_over_star(tmp_path: Path) -> None:
    extra = (
        "  resourcePolicy:\n    containerPolicies:\n"
        "      - {containerName: web, mode: Auto}\n"
        "      - {containerName: '*', mode: \"Off\"}\n"
    )
    assert run_one(tmp_path, DEPLOYMENT, vpa(extra)) == sorted(WEB_REQUESTS + WEB_LIMITS)
    extra = (
        "  resourcePolicy:\n    containerPolicies:\n"
        "      - {containerName: '*'}\n"
        "      - {containerName: sidecar, mode: \"Off\"}\n"
    )
    assert run_one(tmp_path, DEPLOYMENT, vpa(extra)) == sorted(WEB_REQUESTS + WEB_LIMITS)


def test_controlled_resources_cpu_only(tmp_path: Path) -> None:
    extra = "  resourcePolicy:\n    containerPolicies:\n      - {containerName: '*', controlledResources: [cpu]}\n"
    assert run_one(tmp_path, DEPLOYMENT, vpa(extra)) == [
        ("all.yaml", 13, 15, "FW304"), ("all.yaml", 17, 15, "FW304"), ("all.yaml", 22, 24, "FW304"),
    ]


def test_requests_only_leaves_limits_alone(tmp_path: Path) -> None:
    extra = "  resourcePolicy:\n    containerPolicies:\n      - {containerName: web, controlledValues: RequestsOnly}\n"
    assert run_one(tmp_path, DEPLOYMENT, vpa(extra)) == sorted(WEB_REQUESTS + SIDECAR)


def test_werf_annotation_sets_resources_only_on_creation(tmp_path: Path) -> None:
    annotated = DEPLOYMENT.replace(
        "  name: web\n", '  name: web\n  annotations: {werf.io/set-resources-only-on-creation: "true"}\n', 1
    )
    assert run_one(tmp_path, annotated, vpa()) == []
    # the HPA's annotation is not the VPA's
    other = annotated.replace("set-resources-only", "set-replicas-only")
    assert len(run_one(tmp_path, other, vpa())) == 6


def test_other_namespace_and_other_workload_pass(tmp_path: Path) -> None:
    assert run_one(tmp_path, DEPLOYMENT, vpa(namespace="prod")) == []
    assert run_one(tmp_path, DEPLOYMENT, vpa(target="{apiVersion: apps/v1, kind: Deployment, name: api}")) == []
    assert run_one(tmp_path, DEPLOYMENT, vpa(target="{apiVersion: apps/v1, kind: StatefulSet, name: web}")) == []


def test_unset_namespace_is_default(tmp_path: Path) -> None:
    assert len(run_one(tmp_path, DEPLOYMENT, vpa(namespace="default"))) == 6


def test_vpa_ignores_the_target_api_version_of_well_known_kinds(tmp_path: Path) -> None:
    assert len(run_one(tmp_path, DEPLOYMENT, vpa(target="{kind: Deployment, name: web}"))) == 6


CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: report
              resources:
                limits: {memory: 1Gi}
"""


def test_cronjob_template_path(tmp_path: Path) -> None:
    target = "{apiVersion: batch/v1, kind: CronJob, name: report}"
    path = write(tmp_path, "all.yaml", CRONJOB + "---\n" + vpa(target=target))
    run = lint(["--select", "FW304", "--no-context", str(path)])
    assert run.hits() == [("all.yaml", 14, 26, "FW304")]
    assert run.findings[0]["field"] == "spec.jobTemplate.spec.template.spec.containers[name=report].resources.limits.memory"


def test_malformed_containers_do_not_crash(tmp_path: Path) -> None:
    junk = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - null
        - {name: 3, resources: {requests: {cpu: 1}}}
        - {name: a, resources: [cpu]}
        - {name: b, resources: {requests: [cpu], limits: null}}
"""
    path = write(tmp_path, "all.yaml", junk + "---\n" + vpa("  resourcePolicy: {containerPolicies: [null, {containerName: a}]}\n"))
    run = lint(["--select", "FW304", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])
