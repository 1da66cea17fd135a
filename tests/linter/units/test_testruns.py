"""Test runners' own manifests decide what is a fixture and what is applied alone (linter/units/testruns.py).

The shapes are kyverno's (tests/fixtures/repos/kyverno-tests, copied from kyverno/kyverno at
111e07bbecc66abfde36ab99969af22d7a961003): chainsaw tests that apply one object's versions one
operation after another, assert files without `assert` in their name, step templates with
bindings, scripts running `kubectl apply -f`, and kyverno CLI tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from fieldwarden.linter.units.plan import plan
from fieldwarden.linter.units.testruns import chainsaw_operations, classify, kyverno_test_files, read
from tests.helpers import FIXTURES, git_repo, lint

KYVERNO = FIXTURES / "repos" / "kyverno-tests"
CHAINSAW = "test/conformance/chainsaw"
OLD_OBJECT = f"{CHAINSAW}/validate/e2e/old-object-exists"
PSA = f"{CHAINSAW}/exceptions/psa-run-as-non-root"
TEMPLATES = f"{CHAINSAW}/_step-templates"


def files_of(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml"))


def documents(path: Path) -> list[object]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def test_operations_come_from_steps_and_from_step_templates_with_their_bindings() -> None:
    operations = chainsaw_operations(documents(KYVERNO / OLD_OBJECT / "chainsaw-test.yaml"), OLD_OBJECT,
                                     lambda path: documents(KYVERNO / path))
    assert operations == [
        ("template", f"{TEMPLATES}/create-policy.yaml"),
        ("create", f"{OLD_OBJECT}/policy.yaml"),  # `file: ($file)`, bound to policy.yaml by the step
        ("template", f"{TEMPLATES}/cluster-policy-ready.yaml"),  # an inline resource: no file
        ("apply", f"{OLD_OBJECT}/ns.yaml"),
        ("assert", f"{OLD_OBJECT}/ns-ready.yaml"),
        ("apply", f"{OLD_OBJECT}/ns-update.yaml"),
    ]


def test_scripts_that_kubectl_apply_a_file_apply_it() -> None:
    operations = chainsaw_operations(documents(KYVERNO / PSA / "chainsaw-test.yaml"), PSA)
    assert [op for op in operations if op[0] == "apply"] == [
        ("apply", f"{PSA}/exception.yaml"), ("apply", f"{PSA}/bad-pod-01.yaml"), ("apply", f"{PSA}/bad-pod-02.yaml"),
        ("apply", f"{PSA}/good-pod.yaml"),
    ]


def test_checked_only_files_are_fixtures_and_each_applied_file_is_alone() -> None:
    listed = files_of(KYVERNO)
    found = read(KYVERNO, listed)
    assert f"{OLD_OBJECT}/ns-ready.yaml" in found.fixtures  # asserted only, no `assert` in its name
    assert {f"{TEMPLATES}/create-policy.yaml", f"{TEMPLATES}/cluster-policy-ready.yaml",
            f"{OLD_OBJECT}/chainsaw-test.yaml", f"{PSA}/chainsaw-test.yaml"} <= found.fixtures
    assert {path: label for path, label in found.alone.items() if path.startswith(OLD_OBJECT)} == {
        f"{OLD_OBJECT}/ns.yaml": "chainsaw apply ns.yaml",
        f"{OLD_OBJECT}/ns-update.yaml": "chainsaw apply ns-update.yaml",
        f"{OLD_OBJECT}/policy.yaml": "chainsaw create policy.yaml",
    }
    # the units: one per applied file, never the folder
    units = plan([f for f in listed if f not in found.fixtures], [], [], {}, (), frozenset(), found.alone).units
    assert [u.name for u in units if u.name.startswith(OLD_OBJECT)] == [
        f"{OLD_OBJECT} (chainsaw apply ns-update.yaml)", f"{OLD_OBJECT} (chainsaw apply ns.yaml)",
        f"{OLD_OBJECT} (chainsaw create policy.yaml)",
    ]


def test_a_file_applied_by_one_operation_and_asserted_by_another_is_applied() -> None:
    found = classify([("apply", "t/pod.yaml"), ("assert", "t/pod.yaml"), ("error", "t/gone.yaml"),
                      ("patch", "t/scale.yaml"), ("apply", "t/res/*.yaml")],
                     ["t/pod.yaml", "t/gone.yaml", "t/scale.yaml", "t/res/a.yaml", "t/res/b.yaml", "t/other.yaml"], "t")
    assert found.fixtures == {"t/gone.yaml", "t/scale.yaml"}  # error and patch files: partial objects
    assert found.alone == {"t/pod.yaml": "chainsaw apply pod.yaml", "t/res/a.yaml": "chainsaw apply *.yaml",
                           "t/res/b.yaml": "chainsaw apply *.yaml",  # one operation, one unit
                           "t/other.yaml": "chainsaw other.yaml"}  # named by none: alone as well


def test_a_kyverno_cli_test_names_its_fixtures() -> None:
    folder = "test/cli/test/owner_references"
    named = kyverno_test_files(documents(KYVERNO / folder / "kyverno-test.yaml"), folder, files_of(KYVERNO))
    # (its metadata.name is its own file name: named too, and a fixture anyway)
    assert named == {f"{folder}/policy.yaml", f"{folder}/resource.yaml", f"{folder}/kyverno-test.yaml"}


def test_the_other_files_of_a_kyverno_cli_tests_folder_are_its_left_over_test_data(tmp_path: Path) -> None:
    folder = "test/cli/test-mutate"  # patchedResource5.yaml: an expected result no result names (FW103 before)
    found = read(KYVERNO, files_of(KYVERNO))
    assert {f"{folder}/patchedResource4.yaml", f"{folder}/patchedResource5.yaml", f"{folder}/kyverno-test.yaml"} <= found.fixtures
    root = tmp_path / "kyverno"
    shutil.copytree(KYVERNO, root)
    (root / folder / "kustomization.yaml").write_text("resources: [patchedResource4.yaml]\n")
    found = read(root, files_of(root))  # a kustomization beside the test is applied through kustomize
    assert f"{folder}/kustomization.yaml" not in found.fixtures and f"{folder}/patchedResource5.yaml" in found.fixtures


GLOBALREF = "test/conformance/chainsaw/validating-policies/context/globalreference"


def test_kyvernos_tests_give_no_finding_and_their_fixtures_are_left_out(tmp_path: Path) -> None:
    root = tmp_path / "kyverno"
    shutil.copytree(KYVERNO, root)
    git_repo(root)
    run = lint([], cwd=root)
    # was 3 FW305 on ns*.yaml, 3 on the pods, 2 on _testdata, a FW101 (and one on a file no test step names)
    assert (run.code, [(f["file"], f["code"]) for f in run.findings if f["code"] != "FW603"]) == (  # (FW603: Kyverno's kinds)
        0, [(f"{GLOBALREF}/new-deployment.yaml", "FW201")])
    assert "left out 15 test fixture files" in run.stderr
    # pre-commit passes one applied file: linted in its own unit, the manifest read from the project
    one = lint([f"{OLD_OBJECT}/ns-update.yaml", "--select", "FW305"], cwd=root)
    assert (one.code, one.findings) == (0, [])
    # the fixtures are there with --include-fixtures: the CLI test's Deployment without a selector
    included = lint(["--include-fixtures", "--select", "FW101,FW305"], cwd=root)
    assert sorted((f["file"], f["line"], f["code"]) for f in included.findings) == [
        ("cmd/cli/kubectl-kyverno/_testdata/resources/with-duplicate.yaml", 4, "FW305"),
        ("cmd/cli/kubectl-kyverno/_testdata/resources/with-duplicate.yaml", 12, "FW305"),
        ("test/cli/test/owner_references/resource.yaml", 21, "FW101"),
        (f"{GLOBALREF}/new-deployment-exists.yaml", 1, "FW101"),  # the test never mentions it
    ]


def test_the_same_object_twice_in_one_applied_file_is_still_a_duplicate(tmp_path: Path) -> None:
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: nginx:1.27}]}\n"
    test = ("apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: t}\nspec:\n  steps:\n"
            "  - try:\n    - apply: {file: pods.yaml}\n")
    root = git_repo(tmp_path, {"e2e/t/chainsaw-test.yaml": test, "e2e/t/pods.yaml": pod + "---\n" + pod})
    run = lint(["--select", "FW305"], cwd=root)
    assert sorted((f["file"], f["line"], f["unit"]) for f in run.findings) == [
        ("e2e/t/pods.yaml", 3, "e2e/t (chainsaw apply pods.yaml)"), ("e2e/t/pods.yaml", 8, "e2e/t (chainsaw apply pods.yaml)"),
    ]


def test_a_file_the_chainsaw_test_never_mentions_is_a_fixture() -> None:
    operations = [("apply", "t/new-deployment.yaml")]
    files = ["t/chainsaw-test.yaml", "t/new-deployment.yaml", "t/new-deployment-exists.yaml", "t/pod.yaml"]
    texts = ["new-deployment.yaml", "envsubst < pod.yaml | kubectl apply -f -"]
    found = classify(operations, files, "t", texts)
    assert found.fixtures == {"t/new-deployment-exists.yaml"}
    assert set(found.alone) == {"t/new-deployment.yaml", "t/pod.yaml"}  # pod.yaml: a script uses it
