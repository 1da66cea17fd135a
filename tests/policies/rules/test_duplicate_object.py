"""FW305 duplicate-object."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import FIXTURES, git_repo, lint, write

CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
{namespace}data: {{a: b}}
"""


def config_map(name: str, namespace: str | None = None) -> str:
    return CM.format(name=name, namespace=f"  namespace: {namespace}\n" if namespace else "")


def test_both_places_are_reported_with_each_other(tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", config_map("flags") + "---\n" + config_map("flags"))
    run = lint(["--select", "FW305", "--no-context", str(path)])
    assert run.code == 1
    assert run.hits() == [("cm.yaml", 4, 3, "FW305"), ("cm.yaml", 10, 3, "FW305")]
    messages = sorted(f["message"] for f in run.findings)
    assert f"{path}:10" in messages[0] and f"{path}:4" in messages[1]


def test_unset_namespace_is_the_default_namespace(tmp_path: Path) -> None:
    path = write(tmp_path, "cm.yaml", config_map("flags") + "---\n" + config_map("flags", "default"))
    assert len(lint(["--select", "FW305", "--no-context", str(path)]).hits()) == 2
    other = write(tmp_path, "other.yaml", config_map("flags") + "---\n" + config_map("flags", "prod"))
    assert lint(["--select", "FW305", "--no-context", str(other)]).hits() == []


def test_configured_default_namespace(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "default-namespace: prod\n")
    write(tmp_path, "cm.yaml", config_map("flags") + "---\n" + config_map("flags", "prod"))
    assert len(lint(["--select", "FW305", "--no-context", "cm.yaml"], cwd=tmp_path).hits()) == 2


def test_group_not_version_and_legacy_extensions(tmp_path: Path) -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n"
        "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: web}\n---\n"
        "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n---\n"
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n---\n"
        "apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: web}\n"
    )
    path = write(tmp_path, "objs.yaml", text)
    hits = lint(["--select", "FW305", "--no-context", str(path)]).hits()
    assert [line for _, line, _, _ in hits] == [3, 7, 11, 15]


def test_cluster_scoped_kinds_ignore_namespace_and_unnamed_objects_are_skipped(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, namespace: other}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: job-}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: job-}\n"
    )
    path = write(tmp_path, "ns.yaml", text)
    hits = lint(["--select", "FW305", "--no-context", str(path)]).hits()
    assert [line for _, line, _, _ in hits] == [3, 7]


def test_duplicate_in_an_unchanged_context_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "overlay/flags.yaml", config_map("flags", "shop"))  # the same apply unit (folder)
    changed = write(tmp_path, "overlay/cm.yaml", config_map("flags", "shop"))
    run = lint(["overlay/cm.yaml"], cwd=tmp_path)
    # the unchanged file's copy is a duplicate because of the changed one: reported too (issue 22, item 8)
    assert run.hits("FW305") == [("cm.yaml", 4, 3, "FW305"), ("flags.yaml", 4, 3, "FW305")]
    assert "overlay/flags.yaml:4" in run.findings[0]["message"]
    assert {f["file"] for f in run.findings} == {"overlay/cm.yaml", "overlay/flags.yaml"}
    assert lint(["--no-context", str(changed)]).hits("FW305") == []


def test_kind_list_items_count(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: flags}\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: flags}\n"
    )
    path = write(tmp_path, "list.yaml", text)
    assert [h[1] for h in lint(["--select", "FW305", "--no-context", str(path)]).hits()] == [6, 9]


# -- folders of alternatives (issue 22) ------------------------------------------------------------

VARIANTS = FIXTURES / "repos" / "install-variants"  # Argo CD's manifests/: install, namespace and core installs


def variants_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(VARIANTS, root)
    return git_repo(root)


def test_install_variants_are_alternatives_not_duplicates(tmp_path: Path) -> None:
    root = variants_repo(tmp_path)
    run = lint([], cwd=root)
    assert run.code == 1
    # only the ConfigMap that two otherwise different files of hack/ both define
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [
        ("hack/monitoring.yaml", 9, "FW305"), ("hack/redis.yaml", 9, "FW305")]
    notices = [line for line in run.stderr.splitlines() if "alternatives" in line]
    assert notices == [
        "fieldwarden: manifests: core-install.yaml, install.yaml, namespace-install.yaml define mostly the same "
        "objects: linted as alternatives (one unit each, duplicates between them not reported); if they are "
        "applied together, list the folder under `units:` in .fieldwarden.yaml",
        "fieldwarden: manifests/ha: install.yaml, namespace-install.yaml define mostly the same objects: linted as "
        "alternatives (one unit each, duplicates between them not reported); if they are applied together, list "
        "the folder under `units:` in .fieldwarden.yaml",
    ]


def test_declared_folder_of_variants_is_one_apply(tmp_path: Path) -> None:
    root = variants_repo(tmp_path)
    write(root, ".fieldwarden.yaml", "units: [manifests/ha]\n")
    run = lint(["--select", "FW305", "manifests/ha"], cwd=root)
    # 5 objects both files define, each reported in both files; no notice
    assert len(run.hits()) == 10 and {f["file"] for f in run.findings} == {
        "manifests/ha/install.yaml", "manifests/ha/namespace-install.yaml"}
    assert "manifests/ha:" not in run.stderr


def test_the_same_object_twice_in_one_alternative_stays(tmp_path: Path) -> None:
    root = variants_repo(tmp_path)
    path = root / "manifests" / "core-install.yaml"
    path.write_text(path.read_text() + "---\n" + config_map("argocd-cm"))
    run = lint(["--select", "FW305", "manifests"], cwd=root)
    assert run.code == 1
    assert [(f["file"], f["line"]) for f in run.findings] == [
        ("manifests/core-install.yaml", 20), ("manifests/core-install.yaml", 41)]
    assert [f["message"] for f in run.findings] == [
        "defined more than once (also at manifests/core-install.yaml:41)",
        "defined more than once (also at manifests/core-install.yaml:20)",
    ]


def test_one_object_in_two_alternatives_and_a_third_file_is_one_finding_per_place(tmp_path: Path) -> None:
    root = variants_repo(tmp_path)
    write(root, "manifests/extra.yaml", config_map("argocd-cm"))
    run = lint(["--select", "FW305", "manifests/extra.yaml"], cwd=root)
    (message,) = [f["message"] for f in run.findings if f["file"] == "manifests/extra.yaml"]
    for other in ("core-install.yaml:", "/install.yaml:", "namespace-install.yaml:"):
        assert other in message


SAMPLES = FIXTURES / "repos" / "sample-folders"  # Argo CD's applicationset/examples/cluster, MetalLB's configsamples


def test_folders_of_single_object_samples_are_alternatives(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLES, root)
    run = lint([], cwd=git_repo(root))
    assert run.code == 1
    # only the Namespace repeated in two otherwise different files and the file copied (a comment apart);
    # kyverno's test/output: no FW105 between two samples' Deployments selecting app=nginx (each file alone)
    errors = [f for f in run.findings if f["severity"] == "error"]
    assert [(f["file"], f["line"], f["code"]) for f in errors if f["code"] != "FW306"] == [
        ("copies/flags-copy.yaml", 4, "FW305"), ("copies/flags.yaml", 4, "FW305"),
        ("deploy/app.yaml", 4, "FW305"), ("deploy/namespace.yaml", 4, "FW305")]
    notices = [line for line in run.stderr.splitlines() if "alternatives" in line]
    assert notices == [
        "fieldwarden: applicationset/examples/cluster: cluster-example-fasttemplate.yaml, cluster-example.yaml are "
        "samples (cluster-example-fasttemplate.yaml and cluster-example.yaml define the same objects): linted as "
        "alternatives (one unit each, duplicates between them not reported); if they are applied together, list the "
        "folder under `units:` in .fieldwarden.yaml",
        "fieldwarden: configsamples: bgppeer_simple.yaml, bgppeer_with_bfdprofile.yaml, bgppeer_with_vrf.yaml, "
        "ipaddresspool_simple.yaml, simple_pool_adv_bgp.yaml, simple_pool_adv_l2.yaml are samples (bgppeer_simple.yaml "
        "and bgppeer_with_vrf.yaml define the same objects): linted as alternatives (one unit each, duplicates between "
        "them not reported); if they are applied together, list the folder under `units:` in .fieldwarden.yaml",
        "fieldwarden: test/output: nginx.yaml, op_overlay_nginx.yaml, output_mutate_validate_qos.yaml are samples "
        "(nginx.yaml and op_overlay_nginx.yaml define the same objects): linted as alternatives (one unit each, "
        "duplicates between them not reported); if they are applied together, list the folder under `units:` in "
        ".fieldwarden.yaml",
    ]
    assert "FW105" not in {f["code"] for f in run.findings}
    write(root, ".fieldwarden.yaml", "units: [configsamples, test/output]\n")
    together = lint(["--select", "FW105", "test/output"], cwd=root)
    assert {f["file"] for f in together.findings} == {  # one apply: qos-demo and nginx-deployment overlap
        "test/output/nginx.yaml", "test/output/op_overlay_nginx.yaml", "test/output/output_mutate_validate_qos.yaml"}
    declared = lint(["--select", "FW305", "configsamples"], cwd=root)
    # declared one apply: BGPPeer peer and IPAddressPool example, three files each, are duplicates
    assert declared.code == 1 and len(declared.findings) == 6
