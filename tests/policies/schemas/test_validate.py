"""The compiled schema form and its validator: built-in kinds (kubernetes-validate's 1.32 schemas)
and CRD structural schemas (the openAPIV3Schema shape controller-gen writes)."""

from __future__ import annotations

import marshal
from typing import Any

import pytest
import yaml

from fieldwarden.policies.schemas import builtin
from fieldwarden.policies.schemas.form import ANY, DENY, INTEGER, NULL, STRING, compile_schema
from fieldwarden.policies.schemas.validate import ENUM_VALUE, REQUIRED_FIELD, TYPE, UNKNOWN, describe, validate

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  creationTimestamp: null
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080, name: http}]
        resources: {limits: {cpu: 500m, memory: 1Gi}, requests: {cpu: 0.5}}
        env: [{name: A, value: "1"}]
"""


def deployment() -> Any:
    return builtin.compiled("1.32", "apps/v1", "Deployment")


def problems(compiled: Any, text: str) -> list[tuple[tuple[Any, ...], str, str]]:
    return [(p.path, p.kind, describe(p)) for p in validate(compiled, yaml.safe_load(text))]


def test_a_valid_deployment_has_no_problem() -> None:
    assert problems(deployment(), DEPLOYMENT) == []


def test_each_problem_on_its_field_in_the_api_servers_spelling() -> None:
    text = (DEPLOYMENT.replace("replicas: 2", "replicas: two").replace("containerPort: 8080", 'containerPort: "8080"')
            .replace("name: http}", "name: http, hostPorts: 1}").replace("      - name: web\n", "      - imagePullPolicy: Always\n"))
    assert problems(deployment(), text) == [
        (("spec", "replicas"), TYPE, "spec.replicas: expected integer, got string"),
        (("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"), TYPE,
         "spec.template.spec.containers[0].ports[0].containerPort: expected integer, got string"),
        (("spec", "template", "spec", "containers", 0, "ports", 0, "hostPorts"), UNKNOWN,
         'unknown field "spec.template.spec.containers[0].ports[0].hostPorts"'),
        (("spec", "template", "spec", "containers", 0), REQUIRED_FIELD, "spec.template.spec.containers[0].name: Required value"),
    ]


def test_map_keys_are_spelled_in_brackets() -> None:
    text = DEPLOYMENT.replace("labels: {app: web}\n  creation", "labels: {app: [web]}\n  creation")
    assert problems(deployment(), text) == [
        (("metadata", "labels", "app"), TYPE, "metadata.labels[app]: expected string, got array")]


def test_int_or_string_and_quantity_take_both_and_null_is_go_zero() -> None:
    text = DEPLOYMENT.replace("maxSurge: 25%", "maxSurge: 1").replace("cpu: 0.5", "cpu: null")
    assert problems(deployment(), text) == []
    assert problems(deployment(), DEPLOYMENT.replace("maxSurge: 25%", "maxSurge: [1]")) == [
        (("spec", "strategy", "rollingUpdate", "maxSurge"), TYPE,
         "spec.strategy.rollingUpdate.maxSurge: expected string or integer, got array")]


def test_a_yaml_timestamp_is_a_string_and_a_bool_is_not_an_integer() -> None:
    text = DEPLOYMENT.replace("creationTimestamp: null", "creationTimestamp: 2024-01-02T03:04:05Z").replace(
        "replicas: 2", "replicas: true")
    assert problems(deployment(), text) == [(("spec", "replicas"), TYPE, "spec.replicas: expected integer, got boolean")]


def test_raw_extension_takes_anything() -> None:
    compiled = builtin.compiled("1.32", "apps/v1", "ControllerRevision")
    text = "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: r}\nrevision: 1\ndata: {spec: {any: [thing]}}\n"
    assert problems(compiled, text) == []


CRD_SCHEMA = yaml.safe_load("""\
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    required: [size]
    properties:
      size: {type: integer}
      mode: {type: string, enum: [fast, safe]}
      port: {x-kubernetes-int-or-string: true}
      extra: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {known: {type: string}}}
      note: {type: string, nullable: true}
      tags: {type: array, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string}}
      empty: {type: object}
      template: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
      node: {$ref: "#/definitions/Node"}
""")


def test_a_crd_schema_compiles_to_the_same_form() -> None:
    compiled = compile_schema(CRD_SCHEMA, {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
                              go_nulls=False, structural=True)
    spec = compiled[compiled[0][1]["spec"]]
    assert spec[4] == DENY
    port = compiled[spec[1]["port"]]
    assert port[0] == INTEGER | STRING
    assert compiled[spec[1]["note"]][0] & NULL and not compiled[spec[1]["tags"]][0] & NULL
    assert compiled[spec[1]["extra"]][4] == ANY
    node = compiled[spec[1]["node"]]
    assert node[1]["next"] == spec[1]["node"]  # recursion is a cycle of indices
    assert marshal.loads(marshal.dumps(compiled)) == compiled  # plain data


def test_a_custom_resource_against_its_structural_schema() -> None:
    compiled = compile_schema(CRD_SCHEMA, {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
                              go_nulls=False, structural=True)
    good = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  size: 3
  mode: fast
  port: http
  extra: {known: a, whatever: {deep: [1]}}
  note: null
  labels: {a: b}
  template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: []}}
  node: {next: {next: {}}}
"""
    assert problems(compiled, good) == []
    bad = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  mode: slow
  port: 1.5
  extra: {known: 1}
  tags: [a, null]
  empty: {x: 1}
  template: {spec: {}, other: 1}
  node: {next: {nxt: {}}}
"""
    assert problems(compiled, bad) == [
        (("spec", "mode"), ENUM_VALUE, 'spec.mode: Unsupported value: "slow": supported values: "fast", "safe"'),
        (("spec", "port"), TYPE, "spec.port: expected string or integer, got number"),
        (("spec", "extra", "known"), TYPE, "spec.extra.known: expected string, got integer"),
        (("spec", "tags", 1), TYPE, "spec.tags[1]: expected string, got null"),
        (("spec", "empty", "x"), UNKNOWN, 'unknown field "spec.empty.x"'),
        (("spec", "template", "other"), UNKNOWN, 'unknown field "spec.template.other"'),
        (("spec", "node", "next", "nxt"), UNKNOWN, 'unknown field "spec.node.next.nxt"'),
        (("spec",), REQUIRED_FIELD, "spec.size: Required value"),
    ]


def test_problems_stop_at_the_limit() -> None:
    compiled = compile_schema({"type": "object", "properties": {"a": {"type": "string"}}}, structural=True)
    assert len(validate(compiled, {f"k{i}": i for i in range(500)}, limit=10)) == 10


def test_the_cache_is_read_back_and_a_bad_file_is_compiled_again(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    saved = (dict(builtin._INDEXES), dict(builtin._KINDS), dict(builtin._CACHE_FOLDERS))
    try:
        for table in (builtin._INDEXES, builtin._KINDS, builtin._CACHE_FOLDERS):
            table.clear()
        first = builtin.compiled("1.31", "v1", "Service")
        files = list(tmp_path.glob("fieldwarden/schemas/v1.31.0-local-strict-*/io.k8s.api.core.v1.Service.marshal"))
        assert len(files) == 1 and marshal.loads(files[0].read_bytes()[builtin._DIGEST:]) == first
        for damaged in (files[0].read_bytes()[:-5], marshal.dumps([[0, {"x": 99}, [], -1, -1, None, 0]])):
            files[0].write_bytes(damaged)  # cut short; not written by fieldwarden (no checksum)
            for table in (builtin._INDEXES, builtin._KINDS, builtin._CACHE_FOLDERS):
                table.clear()
            assert builtin.compiled("1.31", "v1", "Service") == first
        assert builtin.compiled("1.31", "v1", "Servic") is None
        with pytest.raises(KeyError):
            builtin.index("1.99")
    finally:
        for table, old in zip((builtin._INDEXES, builtin._KINDS, builtin._CACHE_FOLDERS), saved):
            table.clear()
            table.update(old)
