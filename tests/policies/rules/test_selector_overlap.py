"""FW105 selector-overlap."""

import subprocess
from pathlib import Path

from fieldwarden.policies.kube import object_key
from fieldwarden.policies.rule import SetObject
from fieldwarden.policies.rules import selector_overlap
from tests.helpers import Run, lint, write

WORKLOAD = """\
---
apiVersion: {api}
kind: {kind}
metadata:
  name: {name}
{namespace}spec:
{extra}  selector: {selector}
  template:
    metadata:
      labels: {labels}
"""


def workload(
    name: str,
    selector: str,
    labels: str,
    kind: str = "Deployment",
    namespace: str | None = None,
    extra: str = "",
) -> str:
    api = {"Job": "batch/v1", "ReplicationController": "v1"}.get(kind, "apps/v1")
    ns = f"  namespace: {namespace}\n" if namespace else ""
    return WORKLOAD.format(api=api, kind=kind, name=name, namespace=ns, extra=extra, selector=selector, labels=labels)


def run(tmp_path: Path, *docs: str) -> Run:
    path = write(tmp_path, "m.yaml", "".join(docs))
    result = lint(["--select", "FW105", "--no-context", str(path)])
    assert result.code == (1 if result.hits() else 0), result.stderr
    return result


def lines(result: Run) -> list[int]:
    return [line for _, line, _, _ in result.hits()]


WEB = workload("web", "{matchLabels: {app: web}}", "{app: web}")
CANARY = workload("canary", "{matchLabels: {app: web, track: canary}}", "{app: web, track: canary}")


def test_one_selector_covering_the_other_reports_both(tmp_path: Path) -> None:
    result = run(tmp_path, WEB, CANARY)
    assert result.hits() == [("m.yaml", 7, 3, "FW105"), ("m.yaml", 17, 3, "FW105")]
    web, canary = result.findings
    assert "also selects the pods of Deployment/default/canary (" in web["message"]
    assert "m.yaml:15)" in web["message"]  # origin: the other object's metadata.name line
    assert "also selected by Deployment/default/web (" in canary["message"]
    assert "m.yaml:5)" in canary["message"]


def test_either_order_and_both_directions(tmp_path: Path) -> None:
    assert lines(run(tmp_path, CANARY, WEB)) == [7, 17]
    twin = workload("twin", "{matchLabels: {app: web}}", "{app: web}")
    result = run(tmp_path, WEB, twin)
    assert lines(result) == [7, 17]
    assert "also selects" in result.findings[0]["message"] and "also selected by" in result.findings[0]["message"]


def test_disjoint_selectors_pass(tmp_path: Path) -> None:
    stable = workload("web", "{matchLabels: {app: web, track: stable}}", "{app: web, track: stable}")
    assert run(tmp_path, stable, CANARY).hits() == []
    api = workload("api", "{matchLabels: {app: api}}", "{app: api}")
    assert run(tmp_path, WEB, api).hits() == []


def test_match_expressions(tmp_path: Path) -> None:
    not_canary = workload("web", "{matchExpressions: [{key: track, operator: NotIn, values: [canary]}], matchLabels: {app: web}}", "{app: web}")
    assert run(tmp_path, not_canary, CANARY).hits() == []
    no_track = workload("web", "{matchExpressions: [{key: track, operator: DoesNotExist}], matchLabels: {app: web}}", "{app: web}")
    assert run(tmp_path, no_track, CANARY).hits() == []
    any_track = workload("web", "{matchExpressions: [{key: track, operator: Exists}]}", "{app: web, track: stable}")
    assert lines(run(tmp_path, any_track, CANARY)) == [7, 17]
    tracks = workload("web", "{matchExpressions: [{key: track, operator: In, values: [stable, canary]}]}", "{track: stable}")
    assert lines(run(tmp_path, tracks, CANARY)) == [7, 17]


def test_namespaces(tmp_path: Path) -> None:
    elsewhere = workload("canary", "{matchLabels: {app: web, track: canary}}", "{app: web, track: canary}", namespace="shop")
    assert run(tmp_path, WEB, elsewhere).hits() == []
    explicit_default = workload("canary", "{matchLabels: {app: web, track: canary}}", "{app: web, track: canary}", namespace="default")
    assert lines(run(tmp_path, WEB, explicit_default)) == [7, 18]


def test_jobs_need_manual_selector_and_cronjobs_never_count(tmp_path: Path) -> None:
    job = workload("job", "{matchLabels: {app: web}}", "{app: web, track: canary}", kind="Job")
    assert run(tmp_path, WEB, job).hits() == []  # the server replaces this selector (FW101 says so)
    manual = workload("job", "{matchLabels: {app: web}}", "{app: web, track: canary}", kind="Job", extra="  manualSelector: true\n")
    assert lines(run(tmp_path, WEB, manual)) == [7, 18]
    cronjob = (
        "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cron}\nspec:\n  schedule: '@daily'\n"
        "  jobTemplate:\n    spec:\n      manualSelector: true\n      selector: {matchLabels: {app: web}}\n"
        "      template:\n        metadata:\n          labels: {app: web}\n"
    )
    assert run(tmp_path, WEB, cronjob).hits() == []


def test_replication_controller_map_and_defaulted_selectors(tmp_path: Path) -> None:
    rc = workload("legacy", "{app: web}", "{app: web, tier: old}", kind="ReplicationController")
    assert lines(run(tmp_path, WEB, rc)) == [7, 17]
    defaulted = workload("legacy", "null", "{app: web, tier: old}", kind="ReplicationController")
    # the server copies {app: web, tier: old} into the selector: it selects no `web` pod, but web selects its pods
    result = run(tmp_path, WEB, defaulted)
    assert lines(result) == [7, 17]
    assert "also selected by" in result.findings[1]["message"]


def test_missing_empty_invalid_selectors_and_duplicates_are_left_to_other_rules(tmp_path: Path) -> None:
    missing = workload("b", "null", "{app: web}")
    empty = workload("c", "{}", "{app: web}")
    invalid = workload("d", "{matchLabels: {app: web}, matchExpressions: [{key: x, operator: in}]}", "{app: web}")
    assert run(tmp_path, WEB, missing, empty, invalid).hits() == []
    assert run(tmp_path, WEB, WEB).hits() == []  # FW305 duplicate-object


def test_reports_only_the_linted_file_and_names_the_context_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "test@example.com"], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "user.name", "Test"], check=True)
    write(repo, "web.yaml", WEB)
    write(repo, "canary.yaml", CANARY)
    result = lint(["canary.yaml"], cwd=repo)
    # the overlap on web.yaml is the new canary's doing too: reported there as well (issue 22, item 8)
    assert result.hits("FW105") == [("canary.yaml", 7, 3, "FW105"), ("web.yaml", 7, 3, "FW105")]
    [finding] = [f for f in result.findings if f["code"] == "FW105" and f["file"] == "canary.yaml"]
    assert "Deployment/default/web (web.yaml:5)" in finding["message"]
    assert lint(["--no-context", "canary.yaml"], cwd=repo).hits("FW105") == []


def _objects(namespaces: int, per_namespace: int) -> list[SetObject]:
    objects = []
    for n in range(namespaces):
        for w in range(per_namespace):
            app = f"app-{w}" if w else "app-1"  # workload 0 and 1 of every namespace overlap
            data = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"w{w}", "namespace": f"ns{n}"},
                "spec": {
                    "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app, "team": "t", "tier": f"tier-{w % 3}"}}},
                },
            }
            objects.append(SetObject(object_key(data, "default"), data, f"f{n}.yaml:{w}"))
    return objects


def test_twenty_thousand_workloads_are_indexed_not_paired() -> None:
    objects = _objects(namespaces=40, per_namespace=500)
    # Correctness at scale; the speed of it is measured by bench/lint_speed.py, not asserted here.
    found = list(selector_overlap.check_set(objects, range(len(objects)), {"default-namespace": "default"}))
    assert sorted(i % 500 for i, _ in found) == sorted([0, 1] * 40)
    found = list(selector_overlap.check_set(objects, [501], {"default-namespace": "default"}))
    assert [i for i, _ in found] == [501]


TWO_MYSQL = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "selectors" / "two-mysql.yaml"


def test_two_deployments_selecting_app_mysql_are_an_error(tmp_path: Path) -> None:
    # Found in a real repository: each Service balances over both databases.
    write(tmp_path, "mysql.yaml", TWO_MYSQL.read_text(encoding="utf-8"))
    result = lint(["--select", "FW105", "--no-context", "mysql.yaml"], cwd=tmp_path)
    assert result.code == 1
    assert [(f["line"], f["column"], f["severity"], f["message"]) for f in result.findings] == [
        (10, 3, "error", "selector app=mysql also selects the pods of Deployment/shop/mysql-reporting (mysql.yaml:36); "
         "its pods are also selected by Deployment/shop/mysql-reporting (mysql.yaml:36): their controllers fight over "
         "the same pods"),
        (40, 3, "error", "selector app=mysql also selects the pods of Deployment/shop/mysql (mysql.yaml:6); "
         "its pods are also selected by Deployment/shop/mysql (mysql.yaml:6): their controllers fight over the same pods"),
    ]
    # the Services select both, so FW103 has nothing to say
    assert lint(["--select", "FW103", "--no-context", "mysql.yaml"], cwd=tmp_path).findings == []
