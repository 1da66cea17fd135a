"""FW602 schema-mismatch: each problem on its field's line and column, in the API server's spelling."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import FIXTURES, WEB_DEPLOYMENT, git_repo, lint, write

SCHEMAS = FIXTURES / "rules" / "schemas"


def copy(tmp_path: Path, name: str) -> Path:
    shutil.copytree(SCHEMAS / name, tmp_path / name)
    git_repo(tmp_path)
    return tmp_path / name


def found(tmp_path: Path, *args: str) -> list[tuple[str, int, int, str, str]]:
    run = lint(["--select", "FW602", *args], cwd=tmp_path)
    assert run.code in (0, 1), run.stderr
    return sorted((f["file"], f["line"], f["column"], f["message"], f["hint"]) for f in run.findings)


def test_the_issues_string_port_and_unknown_field(tmp_path: Path) -> None:
    copy(tmp_path, "plain")
    assert found(tmp_path, "--k8s-version", "1.32", "plain") == [
        ("plain/issue.yaml", 35, 11,
         "spec.template.spec.containers[0].ports[0].containerPort: expected integer, got string",
         "write a value of type integer"),
        ("plain/issue.yaml", 38, 7, 'unknown field "spec.template.spec.terminationGracePeriod"',
         "did you mean terminationGracePeriodSeconds?"),
    ]


def test_common_kinds_are_clean_in_every_version_from_1_25(tmp_path: Path) -> None:
    copy(tmp_path, "plain")
    for version in ("1.25", "1.28", "1.32", "1.36"):
        assert found(tmp_path, "--k8s-version", version, "plain/clean.yaml") == [], version


def test_missing_required_on_the_parent_and_map_keys_in_brackets(tmp_path: Path) -> None:
    # (the missing selector is FW101's finding alone; the missing template is this rule's)
    text = WEB_DEPLOYMENT.replace("  selector:\n    matchLabels: {app: web}\n", "").replace(
        "labels: {app: web}", "labels: {app: web, tier: 3}").replace("  template:\n", "  templates:\n")
    write(tmp_path, "web.yaml", text)
    lines = text.splitlines()
    spec, labels = lines.index("spec:") + 1, next(i for i, l in enumerate(lines) if "tier: 3" in l) + 1
    assert lint(["--select", "FW101", "web.yaml"], cwd=tmp_path).hits() == [("web.yaml", spec, 1, "FW101")]
    assert found(tmp_path, "web.yaml") == [
        ("web.yaml", spec, 1, "spec.template: Required value", "set template"),
        ("web.yaml", spec + 1, 3, 'unknown field "spec.templates"', "did you mean template?"),
    ]
    write(tmp_path, "labels.yaml", WEB_DEPLOYMENT.replace("labels: {app: web}", "labels: {app: web, tier: 3}"))
    lines = (tmp_path / "labels.yaml").read_text().splitlines()
    labels = next(i for i, l in enumerate(lines) if "tier: 3" in l) + 1
    assert found(tmp_path, "labels.yaml") == [
        ("labels.yaml", labels, lines[labels - 1].index("tier") + 1,
         "spec.template.metadata.labels[tier]: expected string, got integer", "write a value of type string"),
    ]


def test_a_secrets_values_are_never_printed(tmp_path: Path) -> None:
    write(tmp_path, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n"
                                   "  password: [hunter2]\n  token: 12345\n")
    run = lint(["--select", "FW602", "secret.yaml"], cwd=tmp_path)
    assert [(f["line"], f["column"], f["message"]) for f in run.findings] == [
        (6, 3, "stringData[password]: expected string, got array"),
        (7, 3, "stringData[token]: expected string, got integer"),
    ]
    assert "hunter2" not in str(run.findings) and "12345" not in str(run.findings)


def test_status_may_lack_what_the_server_fills_in(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", WEB_DEPLOYMENT + "status:\n  conditions:\n  - type: Available\n    status: 'True'\n")
    assert found(tmp_path, "web.yaml") == []


def test_through_helm_and_kustomize_renders_on_the_source_lines(tmp_path: Path) -> None:
    copy(tmp_path, "chart")
    copy_kustomize = shutil.copytree(SCHEMAS / "kustomize", tmp_path / "kustomize")
    assert copy_kustomize.is_dir()
    assert found(tmp_path, "--k8s-version", "1.32", "chart", "kustomize") == [
        ("chart/templates/deployment.yaml", 19, 11,
         "spec.template.spec.containers[0].ports[0].containerPort: expected integer, got string",
         "write a value of type integer"),
        ("chart/templates/deployment.yaml", 20, 9, 'unknown field "spec.template.spec.containers[0].imagePullPolicyy"',
         "did you mean imagePullPolicy?"),
        ("kustomize/overlay/resources.yaml", 10, 9, 'unknown field "spec.template.spec.containers[0].resource"',
         "did you mean resources?"),
    ]


def test_the_target_version_decides_what_is_known(tmp_path: Path) -> None:
    # a pod's resize policy came with 1.27 (InPlacePodVerticalScaling): unknown to 1.26
    text = WEB_DEPLOYMENT.replace("image: nginx}", "image: nginx, resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]}")
    write(tmp_path, "web.yaml", text)
    assert [m for _, _, _, m, _ in found(tmp_path, "--k8s-version", "1.26", "web.yaml")] == [
        'unknown field "spec.template.spec.containers[0].resizePolicy"']
    assert found(tmp_path, "--k8s-version", "1.27", "web.yaml") == []
