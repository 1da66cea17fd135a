"""A chart's value sets rendering the same object: each placed by its own values.

The shape of kyverno's charts/kyverno (kyverno/kyverno 111e07bbec): 17 ci/*-values.yaml over one
values.yaml, most of them rendering most objects byte for byte alike. helm.py loads and maps
such an object once and reuses the mapping for a later set only when that set answers every
question the mapping asked of the values alike (helmmap.answers_alike); these tests fail if a
reused mapping places a field where another set wrote it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fieldwarden.linter.units import helm
from fieldwarden.linter.units.rendered import locate

pytest.importorskip("helm_python")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  {{- if .Values.pinned }}
  replicas: 1
  {{- else }}
  replicas: 1
  {{- end }}
  template:
    spec:
      containers:
        - name: web
          image: nginx
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""

FILES = {
    "demo/Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.0.0\n",
    "demo/values.yaml": "pinned: false\nresources:\n  limits:\n    memory: 1Gi\n",
    "demo/templates/deployment.yaml": DEPLOYMENT,
    "demo/ci/a-values.yaml": "pinned: true\n",  # the other if/else branch writes the same text
    "demo/ci/b-values.yaml": "resources:\n  limits:\n    memory: 1Gi\n",  # the same value, in this file
    "demo/ci/c-values.yaml": "other: 1\n",  # the defaults' objects
}
MEMORY = ("spec", "template", "spec", "containers", 0, "resources", "limits", "memory")
REPLICAS = ("spec", "replicas")


def test_each_value_set_places_alike_objects_by_its_own_values(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    names = ["c", "a", "b", "c", "a"]  # each set after one that renders the same text
    renders = helm.render_chart_sets(tmp_path, "demo", [helm.ValueSet((f"demo/ci/{n}-values.yaml",)) for n in names])
    objects = [render.objects[0] for render in renders]
    assert len({obj.text for obj in objects}) == 1, [render.problems for render in renders]
    expected = {
        "a": {REPLICAS: ("demo/templates/deployment.yaml", 7, 3), MEMORY: ("demo/values.yaml", 4, 5)},
        "b": {REPLICAS: ("demo/templates/deployment.yaml", 9, 3), MEMORY: ("demo/ci/b-values.yaml", 3, 5)},
        "c": {REPLICAS: ("demo/templates/deployment.yaml", 9, 3), MEMORY: ("demo/values.yaml", 4, 5)},
    }
    for name, obj in zip(names, objects):
        for path, place in expected[name].items():
            assert locate(obj, path) == (place, True), (name, path)
