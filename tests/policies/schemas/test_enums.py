"""The built-in enum table (policies/schemas/enums.py): made from OpenAPI v3 documents, written into
the compiled built-in forms, and part of the compiled cache's key.

The documents are an excerpt of what kube-apiserver v1.32 serves (data/openapi-v3-excerpt.json);
tests/e2e/test_enum_table.py checks the shipped table against the whole of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fieldwarden.policies.schemas import builtin, enums
from fieldwarden.policies.schemas.validate import ENUM_VALUE, validate

EXCERPT = json.loads((Path(__file__).parent / "data" / "openapi-v3-excerpt.json").read_text())
DOCUMENTS = [EXCERPT[key] for key in sorted(EXCERPT) if not key.startswith("_")]


def test_every_enum_of_the_documents_by_definition_and_field_path() -> None:
    assert enums.extract(DOCUMENTS) == {
        "io.k8s.api.apps.v1.DeploymentStrategy": {"type": ["Recreate", "RollingUpdate"]},
        "io.k8s.api.core.v1.Container": {"imagePullPolicy": ["Always", "IfNotPresent", "Never"],
                                         "terminationMessagePolicy": ["FallbackToLogsOnError", "File"]},
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec": {
            "accessModes/items": ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"],
            "volumeMode": ["Block", "Filesystem"]},
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus": {
            "accessModes/items": ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"],
            "allocatedResourceStatuses/additionalProperties": [
                "ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress",
                "NodeResizeInfeasible", "NodeResizePending"],
            "phase": ["Bound", "Lost", "Pending"]},
        # (JSONSchemaProps has a *field* named enum: not an enum; ObjectReference has none)
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ValidationRule": {
            "reason": ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]},
    }


def test_documents_that_disagree_on_a_definition_are_refused() -> None:
    other: Any = json.loads(json.dumps(EXCERPT["apis/apps/v1"]))
    other["components"]["schemas"]["io.k8s.api.core.v1.Container"]["properties"]["imagePullPolicy"]["enum"] = ["Always"]
    with pytest.raises(ValueError, match="io.k8s.api.core.v1.Container"):
        enums.extract([EXCERPT["api/v1"], other])


def test_the_rendered_table_is_sorted_stable_and_read_back(tmp_path: Path) -> None:
    table = enums.extract(DOCUMENTS)
    text = enums.render(table, "v1.32.0-rc.0")
    assert text == enums.render(enums.extract(reversed(DOCUMENTS)), "v1.32.0-rc.0")
    lines = text.splitlines()
    names = [line.split('"')[1] for line in lines[2:-1]]
    assert names == sorted(table) and len(lines) == len(table) + 3
    (tmp_path / "t.json").write_text(text)
    assert enums.load(str(tmp_path / "t.json")) == table
    assert json.loads(text)["kubernetes"] == "v1.32.0-rc.0"


def test_a_missing_or_malformed_table_checks_nothing(tmp_path: Path) -> None:
    assert enums.load(str(tmp_path / "absent.json")) == {}
    (tmp_path / "bad.json").write_text('{"enums": [1, 2]}')
    assert enums.load(str(tmp_path / "bad.json")) == {}


def test_the_shipped_table_is_1_32s_and_every_entry_fits_the_1_32_definitions() -> None:
    shipped = json.loads(Path(enums.TABLE).read_text())
    assert shipped["kubernetes"].startswith(f"v{enums.VERSION}.")
    assert os.path.basename(enums.TABLE) == f"enums-{enums.VERSION}.json"
    table = enums.load()
    total = sum(len(fields) for fields in table.values())
    assert total >= 90
    dropped = sum(len(fields) for fields in enums.DROPPED.values())
    assert enums.apply(_definitions("1.32"), table, leave_out={}) == total
    assert enums.apply(_definitions("1.32"), table) == total - dropped
    assert all(path in table[name] for name, paths in enums.DROPPED.items() for path in paths)
    # an older version lacks fields added since (JobSpec.podReplacementPolicy: 1.28): left out, not an error
    assert enums.apply(_definitions("1.25"), table) < total - dropped


def test_the_compiled_built_in_forms_carry_the_enums() -> None:
    deployment = builtin.compiled("1.32", "apps/v1", "Deployment")
    assert deployment is not None
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"selector": {}, "strategy": {"type": "Rolling"},
                    "template": {"spec": {"containers": [{"name": "web", "imagePullPolicy": "Allways"}]}}}}
    assert [(p.path, p.kind, p.expected, p.got) for p in validate(deployment, obj)] == [
        (("spec", "strategy", "type"), ENUM_VALUE, '"Recreate", "RollingUpdate"', '"Rolling"'),
        (("spec", "template", "spec", "containers", 0, "imagePullPolicy"), ENUM_VALUE,
         '"Always", "IfNotPresent", "Never"', '"Allways"'),
    ]


def test_the_cache_is_keyed_by_the_table_too(tmp_path: Path) -> None:
    definitions, table = tmp_path / "v1.32.0-local-strict" / "_definitions.json", tmp_path / "enums-1.32.json"
    definitions.parent.mkdir()
    definitions.write_text("{}")
    table.write_text('{"enums": {}}')
    first = builtin.cache_name(str(definitions), str(table))
    assert first.startswith("v1.32.0-local-strict-2-") and first.endswith(f"-{builtin.FORMAT}")
    assert builtin.cache_name(str(definitions), str(table)) == first
    table.write_text('{"enums": {"x": {}}}')  # the table edited: another folder, compiled again
    second = builtin.cache_name(str(definitions), str(table))
    assert second != first
    stamp = table.stat()
    table.write_text('{"enums": {"y": {}}}')  # the same size: the time tells
    os.utime(table, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000))
    assert builtin.cache_name(str(definitions), str(table)) not in (first, second)
    table.unlink()
    assert builtin.cache_name(str(definitions), str(table)) not in (first, second)


def _definitions(version: str) -> dict[str, Any]:
    root = builtin.schema_root()
    assert root is not None
    with open(os.path.join(root, f"v{version}.0-local-strict", "_definitions.json"), "rb") as handle:
        found: dict[str, Any] = json.load(handle)["$defs"]
    return found
