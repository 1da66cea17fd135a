"""The compiled schema form, and the compiler from OpenAPI v3 / JSON Schema nodes.

A compiled schema is a list of nodes, node 0 its root; a node is a list (plain data, so that it
is cached with marshal or JSON and read back without running anything):

    [TYPES, PROPERTIES, REQUIRED, ITEMS, MORE, ENUM, FLAGS]

- TYPES: a bit set of OBJECT, ARRAY, STRING, INTEGER, NUMBER, BOOLEAN, NULL; 0 accepts any value;
- PROPERTIES: {field name: node index} (empty: none declared);
- REQUIRED: field names that must be present;
- ITEMS: an array's item node, or ANY;
- MORE: what a field not in PROPERTIES may be: a node index (a map's values), ANY (any value:
  `x-kubernetes-preserve-unknown-fields`, or a built-in object with nothing declared, such as
  RawExtension), or DENY (an unknown field: strict field validation rejects it);
- ENUM: the allowed values, or None;
- FLAGS: EMBEDDED (`x-kubernetes-embedded-resource`: apiVersion, kind and metadata allowed).

`$ref`s become node indices (a definition met twice is compiled once; recursion is a cycle of
indices), so the validator never resolves anything. Descriptions, formats and list-type
annotations are left out: the API server's decoding does not check them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Mapping

    Node = list[Any]
    Compiled = list[Node]

# The node layout lives with the validator (validate.py), which a lint imports on every run; this
# compiler only when a version's kinds are compiled (the first run) or a CRD is met.
from .validate import (ANY, ARRAY, BOOLEAN, DENY, EMBEDDED, EMBEDDED_FIELDS, ENUM, FLAGS, INTEGER, ITEMS, MORE,  # noqa: F401
                       NULL, NUMBER, OBJECT, PROPERTIES, REQUIRED, STRING, TYPES)

TYPE_BITS = {"object": OBJECT, "array": ARRAY, "string": STRING, "integer": INTEGER, "number": NUMBER,
             "boolean": BOOLEAN, "null": NULL}


def compile_schema(root: Mapping[str, Any], definitions: Mapping[str, Any] | None = None, *,
                   go_nulls: bool = True, structural: bool = False) -> Compiled:
    """Compile `root` (its `$ref`s pointing into `definitions`, by their last path step).

    `go_nulls`: null is accepted wherever a type is (the built-in kinds: Go decodes null as the
    zero value). `structural`: a CRD's schema, where null needs `nullable: true` (pass
    go_nulls=False) and an object with no properties keeps no unknown field unless
    `x-kubernetes-preserve-unknown-fields` says so; a `metadata` the schema leaves open at the
    root or in an embedded resource is not checked here (the API server checks it as ObjectMeta).
    """
    nodes: Compiled = []
    by_ref: dict[str, int] = {}
    leaves: dict[tuple[Any, ...], int] = {}
    defs = definitions or {}

    def node(schema: Any) -> int:
        if not isinstance(schema, dict):
            return ANY
        ref = _ref_of(schema)
        if ref is not None:
            if ref in by_ref:
                return by_ref[ref]
            target = defs.get(ref)
            if not isinstance(target, dict):
                return ANY
            index = by_ref[ref] = len(nodes)
            nodes.append([0, {}, [], ANY, ANY, None, 0])
            nodes[index] = build(target)
            return index
        index = len(nodes)
        nodes.append([0, {}, [], ANY, ANY, None, 0])
        built = nodes[index] = build(schema)
        if not built[PROPERTIES] and not built[REQUIRED] and built[ITEMS] == ANY and built[MORE] < 0 and index == len(nodes) - 1:
            # a leaf (a string, an integer...: most nodes) is kept once, however many fields have its shape
            key = (built[TYPES], built[MORE], repr(built[ENUM]), built[FLAGS])
            if key in leaves:
                nodes.pop()
                return leaves[key]
            leaves[key] = index
        return index

    def build(schema: Mapping[str, Any]) -> Node:
        types = _types(schema)
        if types and (go_nulls or schema.get("nullable") is True):
            types |= NULL
        if schema.get("x-kubernetes-int-or-string") is True:
            types = INTEGER | STRING | (types & NULL)
        properties = {str(name): node(sub) for name, sub in (schema.get("properties") or {}).items()}
        required = [str(name) for name in schema.get("required") or () if isinstance(name, str)]
        items = node(schema["items"]) if isinstance(schema.get("items"), dict) else ANY
        more: int
        additional = schema.get("additionalProperties")
        if schema.get("x-kubernetes-preserve-unknown-fields") is True or additional is True:
            more = ANY
        elif isinstance(additional, dict):
            more = node(additional)
        elif additional is False or properties or (structural and types & OBJECT):
            more = DENY
        else:
            more = ANY
        enum = schema.get("enum")
        flags = EMBEDDED if schema.get("x-kubernetes-embedded-resource") is True else 0
        if flags and not types:
            types = OBJECT
        return [types, properties, required, items, more, list(enum) if isinstance(enum, list) else None, flags]

    node(root)
    if structural:  # ObjectMeta is the API server's to check: a CRD's root (or embedded) `metadata: {type: object}` keeps its fields
        for owner in [nodes[0]] + [n for n in nodes if n[FLAGS] & EMBEDDED]:
            meta = owner[PROPERTIES].get("metadata")
            if meta is not None and meta >= 0 and not nodes[meta][PROPERTIES] and nodes[meta][MORE] == DENY:
                owner[PROPERTIES]["metadata"] = len(nodes)  # (a node of its own: leaves are shared)
                nodes.append([nodes[meta][TYPES], {}, [], ANY, ANY, None, 0])
    return nodes


def _ref_of(schema: Mapping[str, Any]) -> str | None:
    """The definition a node stands for: its `$ref`, or an `allOf` of one `$ref` (OpenAPI v3's way
    of giving a referenced type a default)."""
    ref = schema.get("$ref")
    if ref is None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            ref = all_of[0].get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _types(schema: Mapping[str, Any]) -> int:
    """The type bits of a node: `type` (a name or a list), or the union of a oneOf/anyOf of types
    (IntOrString, Quantity); 0 for any."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return TYPE_BITS.get(declared, 0)
    if isinstance(declared, list):
        bits = 0
        for name in declared:
            bits |= TYPE_BITS.get(name, 0) if isinstance(name, str) else 0
        return bits
    for key in ("oneOf", "anyOf"):
        choices = schema.get(key)
        if isinstance(choices, list) and choices:
            bits = 0
            for choice in choices:
                sub = _types(choice) if isinstance(choice, dict) else 0
                if not sub:
                    return 0
                bits |= sub
            return bits
    return 0

