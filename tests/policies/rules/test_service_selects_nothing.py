"""FW103 service-selects-nothing."""

import subprocess
from pathlib import Path

import pytest

from tests.helpers import lint, write

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
{namespace}spec:
  selector:
    app: web
  ports: [{{port: 80}}]
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
{namespace}spec:
  selector:
    matchLabels: {{app: {app}}}
  template:
    metadata:
      labels: {{app: {app}, tier: front}}
    spec:
      containers: [{{name: web, image: nginx}}]
"""


def service(namespace: str | None = None) -> str:
    return SERVICE.format(namespace=f"  namespace: {namespace}\n" if namespace else "")


def deployment(app: str = "web", namespace: str | None = None) -> str:
    return DEPLOYMENT.format(app=app, namespace=f"  namespace: {namespace}\n" if namespace else "")


def run(tmp_path: Path, text: str, *extra: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "m.yaml", text)
    result = lint(["--select", "FW103", "--no-context", *extra, str(path)])
    assert result.code == (1 if result.hits() else 0), result.stderr
    return result.hits()


def test_selected_workload_passes_and_typo_is_flagged(tmp_path: Path) -> None:
    assert run(tmp_path, service() + "---\n" + deployment()) == []
    assert run(tmp_path, service() + "---\n" + deployment(app="webapp")) == [("m.yaml", 6, 3, "FW103")]


def test_cross_file_with_context_from_the_git_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "test@example.com"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "Test"], check=True)
    write(repo, "service.yaml", service())
    write(repo, "deployment.yaml", deployment())
    run = lint(["service.yaml"], cwd=repo)
    assert run.hits("FW103") == []
    write(repo, "deployment.yaml", deployment(app="frontend"))
    run = lint(["service.yaml"], cwd=repo)
    assert run.hits("FW103") == [("service.yaml", 6, 3, "FW103")]
    assert run.code == 1
    # without context the Service's namespace holds no workload: nothing to judge
    assert lint(["--no-context", "service.yaml"], cwd=repo).hits("FW103") == []


@pytest.mark.parametrize(
    ("service_ns", "deployment_ns", "hits"),
    [
        (None, "default", []),  # unset namespace is the default namespace
        ("default", None, []),
        ("shop", "shop", []),
        (None, "shop", []),  # no workload in `default` in the set: pods may come from elsewhere
    ],
)
def test_namespaces(tmp_path: Path, service_ns: str | None, deployment_ns: str | None, hits: list[object]) -> None:
    assert run(tmp_path, service(service_ns) + "---\n" + deployment(namespace=deployment_ns)) == hits


def test_workload_in_another_namespace_does_not_count(tmp_path: Path) -> None:
    text = service("shop") + "---\n" + deployment(namespace="default") + "---\n" + deployment(app="cart", namespace="shop")
    assert run(tmp_path, text) == [("m.yaml", 7, 3, "FW103")]
    # the matching workload moves into the Service's namespace
    text = service("shop") + "---\n" + deployment(namespace="shop") + "---\n" + deployment(app="cart", namespace="default")
    assert run(tmp_path, text) == []


def test_configured_default_namespace(tmp_path: Path) -> None:
    config = write(tmp_path, "fw.yaml", "default-namespace: shop\n")
    text = service() + "---\n" + deployment(namespace="shop") + "---\n" + deployment(app="x", namespace="default")
    assert run(tmp_path, text, "--config", str(config)) == []
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW103")]


def test_services_without_selector_and_external_names_are_skipped(tmp_path: Path) -> None:
    other = deployment(app="cart")
    no_selector = service().replace("  selector:\n    app: web\n", "")
    empty = service().replace("  selector:\n    app: web\n", "  selector: {}\n")
    external = service().replace("spec:\n", "spec:\n  type: ExternalName\n  externalName: example.com\n")
    for text in (no_selector, empty, external):
        assert run(tmp_path, text + "---\n" + other) == []
    assert run(tmp_path, service().replace("spec:\n", "spec:\n  type: ClusterIP\n") + "---\n" + other) == [("m.yaml", 7, 3, "FW103")]


def test_cronjob_job_and_pod_labels_are_selectable(tmp_path: Path) -> None:
    cronjob = (
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: report}\nspec:\n  schedule: '@daily'\n"
        "  jobTemplate:\n    spec:\n      template:\n        metadata:\n          labels: {app: web}\n"
    )
    assert run(tmp_path, service() + "---\n" + cronjob) == []
    assert run(tmp_path, service() + "---\n" + cronjob.replace("app: web", "app: report")) == [("m.yaml", 6, 3, "FW103")]
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    metadata:\n      labels: {app: web}\n"
    assert run(tmp_path, service() + "---\n" + job) == []
    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {app: web}\n"
    assert run(tmp_path, service() + "---\n" + pod) == []
    assert run(tmp_path, service() + "---\n" + pod.replace("app: web", "app: db")) == [("m.yaml", 6, 3, "FW103")]


def test_custom_resource_templates_count_but_do_not_open_the_check(tmp_path: Path) -> None:
    cloneset = (
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web}\nspec:\n"
        "  template:\n    metadata:\n      labels: {app: web}\n"
    )
    assert run(tmp_path, service() + "---\n" + cloneset + "---\n" + deployment(app="cart")) == []
    assert run(tmp_path, service() + "---\n" + cloneset.replace("app: web", "app: api")) == []
    # a CloneSet whose pods say app=api cannot make the pods of app=web: still a warning
    text = service() + "---\n" + cloneset.replace("app: web", "app: api") + "---\n" + deployment(app="cart")
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW103")]


def test_matchexpressions_workloads(tmp_path: Path) -> None:
    statefulset = (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector:\n"
        "    matchExpressions: [{key: app, operator: In, values: [db]}]\n"
        "  template:\n    metadata:\n      labels: {app: db, role: primary}\n"
    )
    text = service().replace("app: web", "app: db\n    role: primary") + "---\n" + statefulset
    assert run(tmp_path, text) == []
    text = service().replace("app: web", "app: db\n    role: replica") + "---\n" + statefulset
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW103")]


def test_controller_added_labels_are_assumed_to_match(tmp_path: Path) -> None:
    statefulset = (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector:\n"
        "    matchLabels: {app: db}\n  template:\n    metadata:\n      labels: {app: db}\n"
    )
    pinned = service().replace("app: web", "app: db\n    statefulset.kubernetes.io/pod-name: db-0")
    assert run(tmp_path, pinned + "---\n" + statefulset) == []
    pinned_wrong = service().replace("app: web", "app: cache\n    statefulset.kubernetes.io/pod-name: db-0")
    assert run(tmp_path, pinned_wrong + "---\n" + statefulset) == [("m.yaml", 6, 3, "FW103")]


def test_invalid_selector_is_reported_without_workloads(tmp_path: Path) -> None:
    text = service().replace("    app: web\n", "    app: web\n    version: 2\n")
    assert run(tmp_path, text) == [("m.yaml", 6, 3, "FW103")]


def test_hostile_shapes_do_not_crash(tmp_path: Path) -> None:
    text = "\n---\n".join(
        [
            "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: [1]",
            "apiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {selector: [app]}",
            "apiVersion: v1\nkind: Service\nmetadata: {generateName: c-}\nspec: {selector: {app: x}}",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: [x]}",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: e, labels: [x]}",
        ]
    )
    assert run(tmp_path, text) == [("m.yaml", 9, 8, "FW103"), ("m.yaml", 14, 8, "FW103")]


# --- pod sources of real projects (tests/fixtures/rules/pod_sources) -----------------------

POD_SOURCES = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "pod_sources"


def fixture_findings(tmp_path: Path, name: str, code: str = "FW103") -> tuple[int, list[tuple[int, str, str]]]:
    """Exit code and (line, severity, message) of `code` for one fixture file, linted alone."""
    write(tmp_path, name, (POD_SOURCES / name).read_text(encoding="utf-8"))
    result = lint(["--select", code, "--no-context", name], cwd=tmp_path)
    found = [(f["line"], f["severity"], f["message"]) for f in result.findings if f["code"] == code]
    return result.code, sorted(found)


def test_leader_worker_set_templates_are_pod_sources(tmp_path: Path) -> None:
    # vllm-leader selects the leader template's labels plus the set's name label;
    # vllm-group-0 selects on group-index, which LWS adds with a value no manifest knows.
    code, found = fixture_findings(tmp_path, "lws-vllm.yaml")
    assert code == 1
    assert found == [
        (70, "warning", "selector leaderworkerset.sigs.k8s.io/name=vlm,role=leader matches no pod template "
         "in namespace inference (2 pod templates checked)"),
    ]


def test_leader_worker_set_without_leader_template_makes_leaders_from_the_worker_template(tmp_path: Path) -> None:
    lws = (
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: llm}\nspec:\n"
        "  leaderWorkerTemplate:\n    size: 4\n    workerTemplate:\n      metadata:\n        labels: {app: llm}\n"
    )
    leaders = service().replace("app: web", "app: llm\n    leaderworkerset.sigs.k8s.io/worker-index: '0'")
    assert run(tmp_path, leaders + "---\n" + lws) == []
    other_set = service().replace("app: web", "leaderworkerset.sigs.k8s.io/name: other")
    assert run(tmp_path, other_set + "---\n" + lws) == [("m.yaml", 6, 3, "FW103")]
    # a LeaderWorkerSet alone is enough to judge the namespace (it is not an operator's secret)
    assert run(tmp_path, service() + "---\n" + lws) == [("m.yaml", 6, 3, "FW103")]


def test_operator_labels_make_a_miss_information_only(tmp_path: Path) -> None:
    # prometheus-k8s selects the labels written in podMetadata; prometheus-shard-0 selects
    # labels the Prometheus operator adds: info, naming the Prometheus. kube-state-metrics
    # has a typo that no operator can explain (the Prometheus' pods say
    # app.kubernetes.io/name=prometheus): a warning.
    code, found = fixture_findings(tmp_path, "kube-prometheus.yaml")
    assert code == 1
    assert found == [
        (37, "info", "selector operator.prometheus.io/shard=0,prometheus=k8s matches no pod template in namespace "
         "monitoring (2 pod templates checked); Prometheus/monitoring/k8s (kube-prometheus.yaml:6) in this namespace "
         "has an operator that may make the pods with labels of its own, which no manifest shows"),
        (73, "warning", "selector app.kubernetes.io/name=kube-state-metric matches no pod template in namespace "
         "monitoring (2 pod templates checked)"),
    ]


def test_operator_without_written_labels_counts_by_its_pod_count(tmp_path: Path) -> None:
    # A CloudNativePG Cluster writes no pod labels, but `instances: 3` says it makes pods.
    code, found = fixture_findings(tmp_path, "cloudnative-pg.yaml")
    assert code == 0  # info does not fail a default run
    assert found == [
        (18, "info", "selector cnpg.io/cluster=pg,cnpg.io/instanceRole=primary matches no pod template in namespace "
         "shop (1 pod template checked); Cluster/shop/pg (cloudnative-pg.yaml:6) in this namespace has an operator "
         "that may make the pods with labels of its own, which no manifest shows"),
    ]
    assert lint(["--select", "FW103", "--fail-on", "info", "--no-context", "cloudnative-pg.yaml"], cwd=tmp_path).code == 1


def test_strimzi_pod_template_labels_are_selectable(tmp_path: Path) -> None:
    assert fixture_findings(tmp_path, "strimzi.yaml") == (0, [])


def test_argo_rollout_template_rules_its_operator_out_of_a_typo(tmp_path: Path) -> None:
    # checkout selects the template plus rollouts-pod-template-hash (added by Argo Rollouts);
    # checkout-preview and order-worker have typos the Rollout's pods (app=checkout) cannot explain.
    code, found = fixture_findings(tmp_path, "argo-rollouts.yaml")
    assert code == 1
    assert found == [
        (39, "warning", "selector app=chekout matches no pod template in namespace store (2 pod templates checked)"),
        (63, "warning", "selector app=order-workers matches no pod template in namespace store (2 pod templates checked)"),
    ]


def test_custom_resources_that_make_no_pods_change_nothing(tmp_path: Path) -> None:
    monitor = (
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\nspec:\n"
        "  selector: {matchLabels: {app: web}}\n  endpoints: [{port: http}]\n"
    )
    certificate = (
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web}\nspec:\n"
        "  secretName: web-tls\n  dnsNames: [web.example.com]\n"
    )
    text = service() + "---\n" + deployment(app="webapp") + "---\n" + monitor + "---\n" + certificate
    path = write(tmp_path, "m.yaml", text)
    result = lint(["--select", "FW103", "--no-context", str(path)])
    assert [(f["line"], f["severity"]) for f in result.findings] == [(6, "warning")]


def test_operator_in_another_namespace_does_not_soften(tmp_path: Path) -> None:
    cluster = "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: pg, namespace: db}\nspec: {instances: 3}\n"
    path = write(tmp_path, "m.yaml", service() + "---\n" + deployment(app="webapp") + "---\n" + cluster)
    result = lint(["--select", "FW103", "--no-context", str(path)])
    assert [(f["line"], f["severity"]) for f in result.findings] == [(6, "warning")]
    path = write(tmp_path, "m.yaml", service() + "---\n" + deployment(app="webapp") + "---\n" + cluster.replace("db", "default"))
    result = lint(["--select", "FW103", "--no-context", str(path)])
    assert [(f["line"], f["severity"]) for f in result.findings] == [(6, "info")]
    assert "Cluster/default/pg (" in result.findings[0]["message"]


@pytest.mark.parametrize(
    ("name", "line", "operator"),
    [
        # Zalando postgres-operator: a count in spec.numberOfInstances, no pod labels written
        ("zalando-postgres.yaml", 29, "postgresql/default/acid-minimal-cluster (zalando-postgres.yaml:7)"),
        # Spotahome RedisFailover: counts only inside spec.redis / spec.sentinel
        ("redis-failover.yaml", 25, "RedisFailover/default/redisfailover (redis-failover.yaml:8)"),
        # a Prometheus without podMetadata or replicas: it still makes one pod
        ("prometheus-plain.yaml", 22, "Prometheus/monitoring/prometheus (prometheus-plain.yaml:7)"),
    ],
)
def test_operators_that_make_pods_from_defaults_soften_a_miss(tmp_path: Path, name: str, line: int, operator: str) -> None:
    code, found = fixture_findings(tmp_path, name)
    assert code == 0
    assert [(f[0], f[1]) for f in found] == [(line, "info")]
    assert f"; {operator} in this namespace has an operator that may make the pods" in found[0][2]


def test_placeholder_selectors_are_not_judged(tmp_path: Path) -> None:
    # `<app-name>` and `${app_name}` would be invalid label values and match nothing; only
    # the real typo beside them is reported.
    code, found = fixture_findings(tmp_path, "placeholders.yaml")
    assert (code, found) == (1, [(37, "warning", "selector app=wbe matches no pod template in namespace default "
                                                 "(1 pod template checked)")])


def test_rules_called_again_on_the_same_list_see_what_it_holds_now() -> None:
    """FW103 and FW104 share the pod index of a unit's object list (made once per list): a caller
    that adds the Deployment to the same list and asks again gets the answer for the new content."""
    import yaml

    from fieldwarden.policies.kube import object_key
    from fieldwarden.policies.rule import SetObject, run_set_rule
    from fieldwarden.policies.rules import service_selects_nothing

    def obj(text: str) -> SetObject:
        data = yaml.safe_load(text)
        return SetObject(object_key(data, "default"), data, "m.yaml:1")

    objects = [obj(service()), obj(deployment(app="other"))]
    assert [index for index, _ in run_set_rule(service_selects_nothing, objects, [0], {})] == [0]
    objects.append(obj(deployment()))
    assert run_set_rule(service_selects_nothing, objects, [0], {}) == []
    objects[2] = obj(deployment(app="third"))  # same length, another object
    assert [index for index, _ in run_set_rule(service_selects_nothing, objects, [0], {})] == [0]
