"""FW305 duplicate-object."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import lint, write

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
    assert run.hits("FW305") == [("cm.yaml", 4, 3, "FW305")]
    assert "overlay/flags.yaml:4" in run.findings[0]["message"]
    assert {f["file"] for f in run.findings} == {"overlay/cm.yaml"}
    assert lint(["--no-context", str(changed)]).hits("FW305") == []


def test_kind_list_items_count(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: flags}\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: flags}\n"
    )
    path = write(tmp_path, "list.yaml", text)
    assert [h[1] for h in lint(["--select", "FW305", "--no-context", str(path)]).hits()] == [6, 9]
