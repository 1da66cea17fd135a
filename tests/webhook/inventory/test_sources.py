"""webhook/inventory/sources.py: autoscalers from a file, and the fixed inventory for tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fieldwarden.policies.model import ObjectKey
from fieldwarden.webhook.inventory.sources import FileInventory, Inventory, InventoryError, StaticInventory
from tests.helpers import write

WEB = ObjectKey("apps", "Deployment", "default", "web")

AUTOSCALERS = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: legacy, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: extensions/v1beta1, kind: Deployment, name: cart}
  maxReplicas: 4
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: worker, namespace: jobs}
spec:
  scaleTargetRef: {name: worker}
---
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata: {name: web-vpa}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updatePolicy: {updateMode: Recreate}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 3}
"""


def test_reads_every_autoscaler_kind_and_skips_the_rest(tmp_path: Path) -> None:
    inventory = FileInventory(write(tmp_path, "autoscalers.yaml", AUTOSCALERS))
    index = inventory.index()
    assert len(index) == 4
    assert [h["metadata"]["name"] for h in index.horizontal(WEB)] == ["web"]
    assert [v["metadata"]["name"] for v in index.vertical(WEB)] == ["web-vpa"]
    assert index.horizontal(ObjectKey("apps", "Deployment", "shop", "cart"))  # extensions means apps
    assert index.horizontal(ObjectKey("apps", "Deployment", "jobs", "worker"))  # KEDA's defaults
    assert inventory.ready() and not inventory.stale()
    described = inventory.describe()
    assert described["size"] == 4 and described["source"].startswith("file:")


def test_default_namespace_applies_to_autoscalers_without_one(tmp_path: Path) -> None:
    inventory = FileInventory(write(tmp_path, "a.yaml", AUTOSCALERS), default_namespace="team")
    assert inventory.index().horizontal(WEB._replace(namespace="team"))
    assert not inventory.index().horizontal(WEB)


def test_json_and_kind_list_as_kubectl_get_prints_them(tmp_path: Path) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5},
    }
    path = write(tmp_path, "hpas.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [hpa]}))
    assert FileInventory(path).index().horizontal(WEB)


def test_an_empty_file_is_an_empty_inventory(tmp_path: Path) -> None:
    inventory = FileInventory(write(tmp_path, "none.yaml", "# no autoscalers yet\n"))
    assert len(inventory.index()) == 0 and inventory.ready()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: [unclosed\n", "none.yaml:2:1: not valid YAML or JSON"),
        ("- just\n- a list\n", "document 1 is a list"),
        ("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {}\nspec: {}\n",
         "metadata.name is missing"),
        ("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\n"
         "spec: {scaleTargetRef: {kind: Deployment}}\n",
         "document 1: HorizontalPodAutoscaler 'web': spec.scaleTargetRef needs an apiVersion, a kind and a name"),
        ("---\napiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\nmetadata: {name: v}\nspec: {}\n",
         "VerticalPodAutoscaler 'v': spec.targetRef needs a kind and a name"),
    ],
)
def test_unusable_files_are_errors_that_say_where(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "none.yaml", text)
    with pytest.raises(InventoryError) as caught:
        FileInventory(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_missing_file_and_folder_are_errors(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="no such file"):
        FileInventory(tmp_path / "absent.yaml")
    with pytest.raises(InventoryError, match="is a folder"):
        FileInventory(tmp_path)


def test_static_inventory_is_what_it_is_told() -> None:
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
    }
    inventory: Inventory = StaticInventory([hpa])
    inventory.start()
    assert inventory.index().horizontal(WEB) and inventory.ready() and not inventory.stale()
    assert inventory.describe() == {"source": "static", "size": 1, "age_seconds": None}
    inventory.stop()
    unsynced = StaticInventory([], ready=False, stale=True)
    assert not unsynced.ready() and unsynced.stale()
