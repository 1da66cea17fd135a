"""FW306 live-object-export, and `fieldwarden lint --fix` on real exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.helpers import FIXTURES, lint, write

HERE = FIXTURES / "rules" / "live_object_export"


def copy(name: str, folder: Path) -> Path:
    """A fixture copied into `folder` (--fix edits it in place)."""
    target = folder / name
    shutil.copyfile(HERE / name, target)
    return target


def expected(name: str) -> str:
    with open(HERE / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def fw306(*args: str) -> list[str]:
    return ["--select", "FW306", "--no-context", *args]


# --- what is reported, and where ----------------------------------------------------


def test_yaml_export_reports_each_field_at_its_key(tmp_path: Path) -> None:
    path = copy("export.yaml", tmp_path)
    run = lint(fw306(str(path)))
    assert run.code == 1
    assert run.hits() == [
        ("export.yaml", 6, 5, "FW306"),  # annotations.deployment.kubernetes.io/revision
        ("export.yaml", 7, 5, "FW306"),  # annotations.kubectl.kubernetes.io/last-applied-configuration
        ("export.yaml", 9, 3, "FW306"),  # creationTimestamp
        ("export.yaml", 10, 3, "FW306"),  # generation
        ("export.yaml", 13, 3, "FW306"),  # managedFields
        ("export.yaml", 51, 3, "FW306"),  # resourceVersion
        ("export.yaml", 52, 3, "FW306"),  # uid
        ("export.yaml", 63, 7, "FW306"),  # spec.template.metadata.creationTimestamp: null (info)
        ("export.yaml", 70, 1, "FW306"),  # status
        # the Service, second document
        ("export.yaml", 87, 3, "FW306"),  # creationTimestamp
        ("export.yaml", 90, 3, "FW306"),  # resourceVersion
        ("export.yaml", 91, 3, "FW306"),  # uid
        ("export.yaml", 101, 1, "FW306"),  # status: {loadBalancer: {}} (info)
    ]
    fields = [f["field"] for f in run.findings if f["line"] < 80]
    assert fields == [
        'metadata.annotations["deployment.kubernetes.io/revision"]',
        'metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]',
        "metadata.creationTimestamp", "metadata.generation", "metadata.managedFields",
        "metadata.resourceVersion", "metadata.uid", "spec.template.metadata.creationTimestamp", "status",
    ]
    assert all(f["hint"] for f in run.findings)
    assert [f["line"] for f in run.findings if f["severity"] == "info"] == [63, 101]


def test_json_export_reports_each_field_at_its_key(tmp_path: Path) -> None:
    path = copy("export.json", tmp_path)
    run = lint(fw306(str(path)))
    assert run.code == 1
    assert run.hits() == [
        ("export.json", 6, 13, "FW306"),  # last-applied-configuration
        ("export.json", 8, 9, "FW306"),  # creationTimestamp
        ("export.json", 9, 9, "FW306"),  # generation
        ("export.json", 10, 9, "FW306"),  # managedFields
        ("export.json", 36, 9, "FW306"),  # resourceVersion
        ("export.json", 37, 9, "FW306"),  # selfLink
        ("export.json", 38, 9, "FW306"),  # uid
        ("export.json", 52, 17, "FW306"),  # spec.template.metadata.creationTimestamp: null
        ("export.json", 67, 5, "FW306"),  # status
    ]


def test_dry_run_output_is_info_and_fixed(tmp_path: Path) -> None:
    """`kubectl create --dry-run=client -o yaml` prints `creationTimestamp: null` and an empty
    `status`: reported as info (the run passes), and --fix still removes them."""
    path = copy("dry-run.yaml", tmp_path)
    run = lint(fw306(str(path)))
    assert run.code == 0
    assert run.hits() == [
        ("dry-run.yaml", 6, 3, "FW306"),  # metadata.creationTimestamp: null
        ("dry-run.yaml", 18, 7, "FW306"),  # spec.template.metadata.creationTimestamp: null
        ("dry-run.yaml", 26, 1, "FW306"),  # status: {}
        ("dry-run.yaml", 31, 3, "FW306"),  # the Service's creationTimestamp: null
        ("dry-run.yaml", 44, 1, "FW306"),  # status: {loadBalancer: {}}
    ]
    assert {f["severity"] for f in run.findings} == {"info"}
    assert lint(fw306("--fail-on", "info", str(path))).code == 1
    run = lint(fw306("--fix", str(path)))
    assert (run.code, run.hits()) == (0, [])
    assert read(path) == expected("dry-run.fixed.yaml")


def test_controller_and_binder_fields_of_a_list_export(tmp_path: Path) -> None:
    """A DaemonSet, a StatefulSet and a bound PVC as `kubectl get -o yaml` lists them."""
    path = copy("stateful.yaml", tmp_path)
    run = lint(fw306(str(path)))
    assert run.code == 1
    found = [(f["line"], f["severity"], f["field"]) for f in run.findings]
    assert found == [
        (8, "error", 'metadata.annotations["deprecated.daemonset.template.generation"]'),
        (9, "error", "metadata.creationTimestamp"),
        (10, "error", "metadata.generation"),
        (13, "error", "metadata.resourceVersion"),
        (14, "error", "metadata.uid"),
        (21, "info", "spec.template.metadata.creationTimestamp"),
        (30, "error", "status"),
        (35, "error", "metadata.creationTimestamp"),
        (36, "error", "metadata.generation"),
        (39, "error", "metadata.resourceVersion"),
        (40, "error", "metadata.uid"),
        (49, "info", "spec.template.metadata.creationTimestamp"),
        (60, "info", "spec.volumeClaimTemplates[0].metadata.creationTimestamp"),
        (68, "error", "status"),
        (74, "error", 'metadata.annotations["pv.kubernetes.io/bind-completed"]'),
        (75, "error", 'metadata.annotations["pv.kubernetes.io/bound-by-controller"]'),
        (77, "error", 'metadata.annotations["volume.beta.kubernetes.io/storage-provisioner"]'),
        (78, "error", 'metadata.annotations["volume.kubernetes.io/selected-node"]'),
        (79, "error", 'metadata.annotations["volume.kubernetes.io/storage-provisioner"]'),
        (80, "error", "metadata.creationTimestamp"),
        (85, "error", "metadata.resourceVersion"),
        (86, "error", "metadata.uid"),
        (96, "error", "status"),
    ]
    run = lint(fw306("--fix", str(path)))
    assert (run.code, run.hits()) == (0, [])
    assert read(path) == expected("stateful.fixed.yaml")
    claim = list(yaml.safe_load_all(read(path)))[0]["items"][2]
    # what a person may have set on purpose stays: finalizers, volumeName, other annotations
    assert claim["metadata"]["annotations"] == {"team": "storage"}
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert claim["spec"]["volumeName"].startswith("pvc-")


def test_binder_annotations_count_on_claims_only(tmp_path: Path) -> None:
    """A PersistentVolume's pv.kubernetes.io/* annotations steer its reclaim: left alone."""
    text = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
  annotations:
    pv.kubernetes.io/provisioned-by: ebs.csi.aws.com
    pv.kubernetes.io/bound-by-controller: "yes"
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
"""
    path = write(tmp_path, "pv.yaml", text)
    assert lint(fw306(str(path))).hits() == []


def test_a_manifest_without_live_fields_passes(tmp_path: Path) -> None:
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {status: ready, uid: "7"}
  annotations:
    example.com/last-applied-configuration: "{}"
spec:
  status: whatever
  template:
    metadata:
      generation: 1
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  status: ok
  resourceVersion: "1"
"""
    path = write(tmp_path, "clean.yaml", text)
    run = lint(fw306(str(path)))
    assert (run.code, run.hits()) == (0, [])


def test_any_value_counts_and_malformed_metadata_does_not_crash(tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  uid: null
  generation: [1]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: null}
status:
---
apiVersion: v1
kind: ConfigMap
metadata: [uid, resourceVersion]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, annotations: [kubectl.kubernetes.io/last-applied-configuration]}
---
status: {replicas: 1}
"""
    path = write(tmp_path, "odd.yaml", text)
    run = lint(fw306(str(path)))
    assert run.hits() == [
        ("odd.yaml", 5, 3, "FW306"),
        ("odd.yaml", 6, 3, "FW306"),
        ("odd.yaml", 7, 17, "FW306"),
        ("odd.yaml", 8, 1, "FW306"),
    ]


def test_items_of_a_list_export_are_reported(tmp_path: Path) -> None:
    text = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    resourceVersion: "5"
  data: {k: v}
metadata:
  resourceVersion: ""
"""
    path = write(tmp_path, "list.yaml", text)
    assert lint(fw306(str(path))).hits() == [("list.yaml", 8, 5, "FW306")]
    run = lint(fw306("--fix", str(path)))
    assert (run.code, run.hits()) == (0, [])
    # the List's own metadata is not an object's: left alone
    assert read(path) == text.replace('    resourceVersion: "5"\n', "")


# --- --fix end to end ---------------------------------------------------------------


def test_fix_yaml_export_keeps_comments_and_formatting(tmp_path: Path) -> None:
    path = copy("export.yaml", tmp_path)
    run = lint(fw306("--fix", str(path)))
    assert "fixed 13 findings" in run.stderr
    assert (run.code, run.hits()) == (0, [])
    assert read(path) == expected("export.fixed.yaml")
    docs = list(yaml.safe_load_all(read(path)))
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    assert docs[0]["metadata"] == {"labels": {"app": "web"}, "name": "web", "namespace": "shop"}
    assert docs[0]["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}
    # a second --fix finds nothing to do and leaves the bytes alone
    again = lint(fw306("--fix", str(path)))
    assert (again.code, again.hits(), "fixed" in again.stderr) == (0, [], False)
    assert read(path) == expected("export.fixed.yaml")


def test_fix_json_export_keeps_formatting_and_stays_json(tmp_path: Path) -> None:
    path = copy("export.json", tmp_path)
    run = lint(fw306("--fix", str(path)))
    assert "fixed 9 findings" in run.stderr
    assert (run.code, run.hits()) == (0, [])
    assert read(path) == expected("export.fixed.json")
    data = json.loads(read(path))
    assert data["metadata"] == {"name": "web", "namespace": "shop"}
    assert "status" not in data
    again = lint(fw306("--fix", str(path)))
    assert (again.code, again.hits(), "fixed" in again.stderr) == (0, [], False)
    assert read(path) == expected("export.fixed.json")


def test_fix_leaves_other_rules_findings_and_runs_with_all_rules(tmp_path: Path) -> None:
    """Without --select, only FW306 (the fixable rule) edits the file."""
    path = copy("export.yaml", tmp_path)
    run = lint(["--no-context", "--fix", str(path)])
    assert read(path) == expected("export.fixed.yaml")
    assert run.hits("FW306") == []
    # FW307 needed managedFields, which --fix removed
    assert run.hits("FW307") == []


def test_suppressed_document_is_not_fixed(tmp_path: Path) -> None:
    path = copy("suppressed.yaml", tmp_path)
    before = path.read_bytes()
    run = lint(fw306("--fix", str(path)))
    assert (run.code, run.hits(), "fixed" in run.stderr) == (0, [], False)
    assert sorted((f["line"], f["suppressed"]) for f in run.findings) == [
        (7, "comment at line 2"), (8, "comment at line 2"),
    ]
    assert path.read_bytes() == before


def test_line_suppression_keeps_only_that_field(tmp_path: Path) -> None:
    text = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: gadget
  uid: 0b5c5f0e-3f7e-4a4e-9d61-6f3c2f4b8a10
  generation: 4
status: # fieldwarden: ignore[live-object-export]
  phase: Ready
"""
    path = write(tmp_path, "widget.yaml", text)
    assert lint(fw306(str(path))).hits() == [("widget.yaml", 5, 3, "FW306"), ("widget.yaml", 6, 3, "FW306")]
    run = lint(fw306("--fix", str(path)))
    assert (run.code, run.hits()) == (0, [])
    assert read(path) == text.replace("  uid: 0b5c5f0e-3f7e-4a4e-9d61-6f3c2f4b8a10\n  generation: 4\n", "")


def test_configured_severity_applies_to_real_exports_and_caps_the_noise(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  live-object-export: {severity: warning}\n")
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: x\n  creationTimestamp: null\nstatus: {}\n"
    write(tmp_path, "a.yaml", text)
    run = lint(["--select", "FW306", "--no-context", "a.yaml"], cwd=tmp_path)
    assert [(f["line"], f["severity"]) for f in run.findings] == [(5, "warning"), (6, "info"), (7, "info")]
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW306: {severity: info}\n")
    run = lint(["--select", "FW306", "--no-context", "a.yaml"], cwd=tmp_path)
    assert {f["severity"] for f in run.findings} == {"info"} and run.code == 0


def test_controller_gen_status_stub_is_info(tmp_path: Path) -> None:
    """controller-gen's CRDs end with a `status:` of empty strings and lists (issue 22): noise, as
    `creationTimestamp: null` is, so the run passes; a status with a value is still an error."""
    path = copy("controller-gen-crd.yaml", tmp_path)
    run = lint(fw306(str(path)))
    assert (run.code, run.hits()) == (0, [("controller-gen-crd.yaml", 10, 3, "FW306"), ("controller-gen-crd.yaml", 30, 1, "FW306")])
    assert [f["severity"] for f in run.findings] == ["info", "info"]
    assert "controller-gen" in run.findings[1]["message"]
    stored = read(path).replace("storedVersions: []", "storedVersions: [v1beta1]")
    run = lint(fw306(str(write(tmp_path, "applied.yaml", stored))))
    assert (run.code, [f["severity"] for f in run.findings]) == (1, ["info", "error"])
