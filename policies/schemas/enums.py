"""The built-in kinds' enum values, from the API server's own OpenAPI v3 documents.

kubernetes-validate's schemas come from OpenAPI v2, which carries no `enum` for the built-in
types; the API server's `/openapi/v3` marks its `+enum` fields with one. The table
(`enums-1.32.json` beside this module, package data) holds those values for one Kubernetes release,
keyed by definition name and the field's path inside the definition:

    {"kubernetes": "v1.32.0-rc.0",
     "enums": {"io.k8s.api.core.v1.Container": {"imagePullPolicy": ["Always", "IfNotPresent", "Never"]},
               "io.k8s.api.core.v1.PersistentVolumeClaimSpec": {"accessModes/items": [...]}}}

A path is the property names from the definition down, with `items` (an array's item) and
`additionalProperties` (a map's value) as steps of their own. `extract` and `render` make the
table from the documents (enums_refresh.py runs them against a live server; an e2e test checks the
shipped table against one); `apply` writes it into a version's definitions before they are
compiled (builtin.py), so the validator checks these enums as it checks a CRD's.

Pure functions over plain data, and `load`, which reads the package data only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping

    Table = dict[str, dict[str, list[Any]]]

VERSION = "1.32"  # the release the table was taken from (the API server in ../shared/kube)
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"enums-{VERSION}.json")
_STEPS = ("items", "additionalProperties")  # the schema keywords a path may pass through, besides properties

# Fields of the table the 1.32 API server drops, whatever their value, unless a feature gate that is off by
# default is on: any value passes there, so `apply` leaves them out (a miss where the gate is on, never a
# false error). Checked against the server: tests/e2e/test_schema_agreement.py, pod-feature-gated-values.
DROPPED: dict[str, tuple[str, ...]] = {
    "io.k8s.api.core.v1.PodSecurityContext": ("supplementalGroupsPolicy",),  # SupplementalGroupsPolicy (alpha)
    "io.k8s.api.core.v1.SecurityContext": ("procMount",),  # ProcMountType
    "io.k8s.api.core.v1.ImageVolumeSource": ("pullPolicy",),  # ImageVolume (alpha): the whole volume source
}


def extract(documents: Iterable[Mapping[str, Any]]) -> Table:
    """{definition: {path: values}} of every `enum` in the documents' `components.schemas`.

    A definition that several documents carry (core/v1 types are in every group's document) must
    say the same in each; a ValueError names one that does not."""
    table: Table = {}
    for document in documents:
        schemas = (document.get("components") or {}).get("schemas") or {}
        for name, schema in schemas.items():
            found: dict[str, list[Any]] = {}
            _collect(schema, (), found)
            if not found:
                continue
            if name in table and table[name] != found:
                raise ValueError(f"the documents disagree on the enums of {name}")
            table[name] = found
    return table


def _collect(schema: Any, path: tuple[str, ...], found: dict[str, list[Any]]) -> None:
    if not isinstance(schema, dict):
        return
    values = schema.get("enum")
    if isinstance(values, list) and path:
        found["/".join(path)] = list(values)
    for name, sub in (schema.get("properties") or {}).items():
        _collect(sub, path + (str(name),), found)
    for step in _STEPS:
        _collect(schema.get(step), path + (step,), found)


def render(table: Mapping[str, Mapping[str, list[Any]]], kubernetes: str) -> str:
    """The table as the shipped file holds it: sorted keys, one definition per line, so that two
    runs against the same server write the same bytes and a diff shows what a release changed."""
    import json

    lines = [f'{{"kubernetes": {json.dumps(kubernetes)},', ' "enums": {']
    names = sorted(table)
    for position, name in enumerate(names):
        fields = json.dumps({path: table[name][path] for path in sorted(table[name])}, ensure_ascii=False)
        lines.append(f"  {json.dumps(name)}: {fields}{',' if position < len(names) - 1 else ''}")
    lines.append(" }}")
    return "\n".join(lines) + "\n"


def load(path: str = TABLE) -> Table:
    """The shipped table's enums ({} if the file is missing or not the table's shape: nothing checked)."""
    import json

    try:
        with open(path, "rb") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    enums = data.get("enums") if isinstance(data, dict) else None
    if not isinstance(enums, dict):
        return {}
    return {name: {p: v for p, v in fields.items() if isinstance(p, str) and isinstance(v, list)}
            for name, fields in enums.items() if isinstance(name, str) and isinstance(fields, dict)}


def apply(definitions: dict[str, Any], table: Mapping[str, Mapping[str, list[Any]]],
          leave_out: Mapping[str, tuple[str, ...]] = DROPPED) -> int:
    """Write each enum of `table` into `definitions` (a version's `$defs`, changed in place), but those of
    `leave_out`; a definition or field the version lacks (added after it) is left out too. Returns how
    many were written."""
    written = 0
    for name, fields in table.items():
        definition = definitions.get(name)
        for path, values in fields.items():
            if path in leave_out.get(name, ()):
                continue
            node = definition
            for step in path.split("/"):
                if not isinstance(node, dict):
                    break
                node = node.get(step) if step in _STEPS else (node.get("properties") or {}).get(step)
            if isinstance(node, dict) and "$ref" not in node and "allOf" not in node:
                node["enum"] = list(values)
                written += 1
    return written
