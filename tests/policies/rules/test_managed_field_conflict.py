"""FW307 managed-field-conflict, on real exported objects and hand-made managedFields."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import FIXTURES, Run, lint, write

REAL = FIXTURES / "managed_fields"


def real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / name).read_text(encoding="utf-8"))
    return data


def dump(folder: Path, name: str, obj: Any) -> Path:
    return write(folder, name, yaml.safe_dump(obj))


def fw307(path: Path, config: Path | None = None) -> Run:
    args = ["--select", "FW307", "--no-context", str(path)]
    return lint(args if config is None else ["--config", str(config), *args])


def messages(run: Run) -> list[tuple[int, str]]:
    return sorted((f["line"], f["message"]) for f in run.findings if f["code"] == "FW307")


# --- real objects -------------------------------------------------------------------


def test_real_server_side_apply_export_with_default_managers(tmp_path: Path) -> None:
    """The fields the `test` field manager applied belong to someone else than kubectl."""
    path = dump(tmp_path, "web.yaml", real("deployment-update-server-side-apply.object.json"))
    run = fw307(path)
    assert run.code == 1  # warnings fail by default (fail-on: warning)
    assert run.hits() == [
        ("web.yaml", 76, 3, "FW307"),  # spec.replicas
        ("web.yaml", 78, 3, "FW307"),  # spec.selector, co-owned with kubectl-client-side-apply
        ("web.yaml", 90, 9, "FW307"),  # template labels.app
        ("web.yaml", 93, 9, "FW307"),  # containers[name=web].image
        ("web.yaml", 95, 9, "FW307"),  # containers[name=web].name
    ]
    # an Apply manager is printed without `using`, as the API server does
    assert messages(run)[:2] == [
        (76, 'conflict with "test": .spec.replicas'),
        (78, 'conflict with "test": .spec.selector'),
    ]
    assert messages(run)[3] == (93, 'conflict with "test": .spec.template.spec.containers[name="web"].image')
    assert run.findings[3]["field"] == "spec.template.spec.containers[name=web].image"
    assert all(f["hint"] and f["severity"] == "warning" for f in run.findings)


def test_real_export_from_the_other_side(tmp_path: Path) -> None:
    """As `test`: every client-side-apply field but the last-applied annotation (FW306's)."""
    path = dump(tmp_path, "web.yaml", real("deployment-update-server-side-apply.object.json"))
    config = write(tmp_path, "fw.yaml", "rules:\n  FW307:\n    field-managers: [test]\n")
    run = fw307(path, config)
    assert [(line, col) for _, line, col, _ in run.hits()] == [
        (75, 3), (77, 3), (78, 3), (83, 7), (84, 7), (85, 5), (90, 9),
        (94, 9), (95, 9), (96, 9), (97, 9), (98, 9), (99, 7), (100, 7), (101, 7), (102, 7), (103, 7),
    ]
    assert messages(run)[0] == (
        75, 'conflict with "kubectl-client-side-apply" using apps/v1: .spec.progressDeadlineSeconds'
    )
    assert not any("last-applied" in f["message"] for f in run.findings)


def test_real_scale_subresource_entry(tmp_path: Path) -> None:
    """`kubectl scale` writes replicas as manager `kubectl` through the scale subresource."""
    path = dump(tmp_path, "web.yaml", real("deployment-update-apply.oldObject.json"))
    assert fw307(path).hits() == []  # kubectl is "us" by default
    config = write(tmp_path, "fw.yaml", "rules:\n  managed-field-conflict:\n    field-managers: [kubectl-client-side-apply]\n")
    run = fw307(path, config)
    replicas_line = yaml.safe_dump(real("deployment-update-apply.oldObject.json")).splitlines().index("  replicas: 3") + 1
    assert run.hits() == [("web.yaml", replicas_line, 3, "FW307")]
    assert messages(run) == [
        (replicas_line, 'conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas')
    ]


# --- hand-made ----------------------------------------------------------------------

HPA_SCALED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  managedFields:
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
    manager: kube-controller-manager
    operation: Update
    subresource: scale
    time: "2026-11-22T02:20:00Z"
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:labels:
          f:app: {}
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:image: {}
                f:name: {}
      f:status:
        f:replicas: {}
    manager: kubectl-client-side-apply
    operation: Update
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                f:image: {}
    manager: argocd-controller
    operation: Apply
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: status
    fieldsType: FieldsV1
    fieldsV1:
      f:status:
        f:replicas: {}
  labels:
    app: web
spec:
  replicas: 7
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
status:
  replicas: 7
"""


def test_hpa_owned_replicas_via_scale_subresource(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", HPA_SCALED)
    run = fw307(path)
    assert run.hits() == [("web.yaml", 55, 3, "FW307"), ("web.yaml", 60, 9, "FW307")]
    assert messages(run) == [
        # `time` is not part of the manager identity, so not printed (as the server does)
        (55, 'conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas'),
        (60, 'conflict with "argocd-controller": .spec.template.spec.containers[name="web"].image'),
    ]
    assert [f["field"] for f in run.findings] == ["spec.replicas", "spec.template.spec.containers[name=web].image"]


def test_co_owned_field_is_reported_once_per_other_manager(tmp_path: Path) -> None:
    """image is co-owned by kubectl-client-side-apply ("us") and argocd-controller: a change
    conflicts with argocd-controller only; the status entries are never reported."""
    path = write(tmp_path, "web.yaml", HPA_SCALED)
    found = [f for f in fw307(path).findings if f["line"] == 60]
    assert len(found) == 1 and '"argocd-controller"' in found[0]["message"]


def test_field_managers_option_overrides_the_default(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", HPA_SCALED)
    config = write(tmp_path, "fw.yaml", "rules:\n  FW307:\n    field-managers: [argocd-controller, kube-controller-manager]\n")
    run = fw307(path, config)
    # now the client-side-apply fields belong to someone else; argocd's image is ours
    assert run.hits() == [
        ("web.yaml", 53, 5, "FW307"),  # metadata.labels.app
        ("web.yaml", 59, 9, "FW307"),  # containers[name=web].name
        ("web.yaml", 60, 9, "FW307"),  # image, co-owned: still a conflict
    ]
    assert messages(run)[0] == (53, 'conflict with "kubectl-client-side-apply" using apps/v1: .metadata.labels.app')
    # the option replaces the default list: an empty list means "everyone is someone else"
    config = write(tmp_path, "fw.yaml", "rules:\n  FW307:\n    field-managers: []\n")
    assert len(fw307(path, config).hits()) == 5


def test_field_managers_option_is_validated(tmp_path: Path) -> None:
    path = write(tmp_path, "web.yaml", HPA_SCALED)
    config = write(tmp_path, "fw.yaml", "rules:\n  FW307:\n    field-managers: helm\n")
    run = fw307(path, config)
    assert run.code == 2
    assert "field-managers" in run.stderr


def test_manager_names_are_go_quoted(tmp_path: Path) -> None:
    text = HPA_SCALED.replace("manager: argocd-controller", 'manager: "my \\"tool\\"\\tv2"')
    run = fw307(write(tmp_path, "web.yaml", text))
    assert messages(run)[1] == (60, 'conflict with "my \\"tool\\"\\tv2": .spec.template.spec.containers[name="web"].image')


def test_without_managed_fields_nothing_is_reported(tmp_path: Path) -> None:
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: a}
spec: {replicas: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: b, managedFields: []}
spec: {replicas: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: c, managedFields: null}
spec: {replicas: 3}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  managedFields:
  - {manager: other, operation: Update, fieldsType: FieldsV2, fieldsV1: {"f:spec": {"f:replicas": {}}}}
  - {manager: other, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:paused": {}}}}
spec: {replicas: 3}
"""
    run = fw307(write(tmp_path, "plain.yaml", text))
    assert (run.code, run.hits()) == (0, [])


MALFORMED = {
    "not a list": "managedFields: {manager: other}",
    "entry not a mapping": "managedFields: [other]",
    "unknown key": 'managedFields: [{manager: other, fieldsType: FieldsV1, fieldsV1: {"x:spec": {}}}]',
    "value not a mapping": 'managedFields: [{manager: other, fieldsType: FieldsV1, fieldsV1: {"f:spec": true}}]',
    "trie not a mapping": "managedFields: [{manager: other, fieldsType: FieldsV1, fieldsV1: [f:spec]}]",
    "manager not a string": 'managedFields: [{manager: 7, fieldsType: FieldsV1, fieldsV1: {"f:spec": {}}}]',
    "bad k: JSON": 'managedFields: [{manager: other, fieldsType: FieldsV1, fieldsV1: {"f:c": {"k:{\\"name\\":": {}}}}]',
    # a YAML simple key is at most 1024 characters: use an explicit key (`? `)
    "absurd nesting in k:": (
        "managedFields:\n  - manager: other\n    fieldsType: FieldsV1\n    fieldsV1:\n"
        '      f:c:\n        ? "k:' + "[" * 50_000 + '"\n        : {}'
    ),
    "huge unknown key": (
        "managedFields:\n  - manager: other\n    fieldsType: FieldsV1\n    fieldsV1:\n"
        '      ? "x:' + "a" * 5_000 + '"\n      : {}'
    ),
}


@pytest.mark.parametrize("what", list(MALFORMED))
def test_malformed_managed_fields_are_reported_once(tmp_path: Path, what: str) -> None:
    text = f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  {MALFORMED[what]}\nspec: {{replicas: 3}}\n"
    run = fw307(write(tmp_path, "bad.yaml", text))
    assert run.hits() == [("bad.yaml", 5, 3, "FW307")]
    assert run.findings[0]["field"] == "metadata.managedFields"
    assert run.findings[0]["message"].startswith("metadata.managedFields is malformed")
    assert len(run.findings[0]["message"]) < 300  # huge keys are cut short


def test_items_of_a_list_export(tmp_path: Path) -> None:
    obj = real("deployment-update-apply.oldObject.json")
    scaled = copy.deepcopy(obj)
    scaled["metadata"]["managedFields"][0]["manager"] = "kube-controller-manager"
    path = dump(tmp_path, "list.yaml", {"apiVersion": "v1", "kind": "List", "items": [obj, scaled]})
    run = fw307(path)
    assert len(run.hits()) == 1
    assert messages(run)[0][1] == 'conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas'
    assert run.findings[0]["field"] == "spec.replicas"
