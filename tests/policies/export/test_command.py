"""`fieldwarden export` (fieldwarden/export.py): the files it writes, its options, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fieldwarden.cli import main
from fieldwarden.policies.config import Settings
from fieldwarden.policies.export.assemble import export, target
from tests.policies.export.test_assemble import TUNED


def test_export_writes_the_policies_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / ".fieldwarden.yaml"
    config.write_text(yaml.safe_dump(TUNED), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["export", "--k8s-version", "1.32", "--config", str(config), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    report = (out / "exactness.txt").read_text(encoding="utf-8")
    assert report in printed and "FW401 pod-update-not-image-only: exact" in report
    written = list(yaml.safe_load_all((out / "policies.yaml").read_text(encoding="utf-8")))
    assert written == export(Settings(TUNED), target("1.32")).objects


def test_export_to_stdout_with_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--k8s-version", "1.31", "--select", "FW401", "--failure-policy", "Fail",
                 "--exclude-namespace", "ops", "--opt-out-label", "", "--name-prefix", "fw"]) == 0
    out, err = capsys.readouterr()
    policy, binding = yaml.safe_load_all(out)
    assert policy["metadata"]["name"] == "fw-fw401-pod-update-not-image-only"
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert binding["spec"]["matchResources"] == {"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["ops"]}]}}
    assert "FW402 pod-without-readiness-gate: disabled" in err


@pytest.mark.parametrize("argv, says", [
    (["--k8s-version", "1.31"], "has no MutatingAdmissionPolicy"),
    (["--k8s-version", "1.27"], "has no ValidatingAdmissionPolicy"),
    (["--k8s-version", "1.32", "--opt-out-label", "novalue"], "expected KEY=VALUE"),
    (["--k8s-version", "1.32", "--config", "/nonexistent/.fieldwarden.yaml"], "cannot read the configuration"),
])
def test_export_refuses_naming_the_problem(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and says in err


def test_a_bad_configuration_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / ".fieldwarden.yaml"
    config.write_text("rules:\n  FW401: {enforcement: maybe}\n", encoding="utf-8")
    assert main(["export", "--k8s-version", "1.32", "--config", str(config)]) == 2
    assert "enforcement" in capsys.readouterr().err
