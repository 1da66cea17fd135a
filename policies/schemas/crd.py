"""Custom resources' schemas: the served versions of the project's CRDs, in form.py's compiled form.

A `Catalog` holds the CustomResourceDefinitions (apiextensions.k8s.io/v1) found among the linted
files; each served version's `openAPIV3Schema` is compiled when a custom resource of it is first
met, the way the API server reads it:

- structural: an unknown field is refused (strict field validation) unless
  `x-kubernetes-preserve-unknown-fields`; `additionalProperties` makes a map; `items`,
  `required`, `enum`, `x-kubernetes-int-or-string` as declared; an `x-kubernetes-embedded-resource`
  object needs its own `apiVersion` and `kind`;
- `apiVersion` and `kind` are implicit strings, and `metadata` is always the built-in ObjectMeta
  of the target version, whatever the CRD says of it;
- null is a value only where `nullable: true`; elsewhere the server prunes a null field before it
  validates (as if it were absent: a required one is then missing), and so does `pruned_nulls`;
- a required field with a `default` is filled by the server's defaulting first: not required here.

Not checked offline (docs/schema-validation.md, "where the API server differs"): value bounds and formats
(`minimum`, `maxLength`, `pattern`, `format`), CEL rules (`x-kubernetes-validations`), list-type
uniqueness. Pure: CRD dicts in, compiled forms and problems out; the built-in ObjectMeta comes
from builtin.py (the schemas package), or stays open without it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping

    from .form import Compiled
    from .validate import Problem

from .validate import EMBEDDED, FLAGS, ITEMS, MORE, NULL, PROPERTIES, REQUIRED, TYPES
from .validate import REQUIRED_FIELD, validate

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"


def is_crd(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == CRD_KIND and obj.get("apiVersion") == CRD_API_VERSION


class Skeleton:
    """A CRD read without its schemas (`crd`: what names its kind and served versions), and how to read
    the whole CRD when a schema of it is first needed (`full`; None where it cannot be read then)."""

    __slots__ = ("crd", "full", "_later")

    def __init__(self, crd: Mapping[str, Any], full: Callable[[], Mapping[str, Any] | None]) -> None:
        self.crd, self.full = crd, full
        self._later: dict[str, _Later] = {}

    def later(self, version: str) -> _Later:
        """A served version's schema, to be read (one object per version: catalogs sharing the skeleton share it)."""
        found = self._later.get(version)
        if found is None:
            found = self._later[version] = _Later(self.full, version)
        return found


class _Later:
    """A served version's schema, read from its whole CRD on first use (and kept: its id keys the compiled form)."""

    __slots__ = ("full", "version", "read")

    def __init__(self, full: Callable[[], Mapping[str, Any] | None], version: str) -> None:
        self.full, self.version = full, version
        self.read: dict[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        if self.read is None:
            crd = self.full()
            spec = crd.get("spec") if crd is not None else None
            versions = spec.get("versions") if isinstance(spec, dict) else None
            self.read = next((_schema_of(v) for v in versions if isinstance(v, dict) and v.get("name") == self.version),
                             {}) if isinstance(versions, list) else {}
        return self.read


def _schema_of(version: Mapping[str, Any]) -> dict[str, Any]:
    schema = version.get("schema")
    found = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else {}


class Catalog:
    """The CRDs at hand: (apiVersion, kind) of each served version -> its schema, compiled on first use.

    The first CRD of a group and kind wins (a chart and a folder vendoring the same CRD).
    """

    def __init__(self, crds: Iterable[Mapping[str, Any] | Skeleton] = ()) -> None:
        self.schemas: dict[tuple[str, str], Any] = {}  # (apiVersion, kind) -> openAPIV3Schema (or its _Later)
        self.versions: dict[tuple[str, str], list[str]] = {}  # (group, kind) -> served versions
        self.sources: dict[tuple[str, str], str] = {}  # (group, kind) -> the CRD's name
        # id(schema), target version -> (the schema, kept alive while its id is a key; its compiled form):
        # shared with the catalogs made from this one (with_crds)
        self._compiled: dict[tuple[int, str], tuple[Any, Compiled]] = {}
        for crd in crds:
            self.add(crd)

    def __bool__(self) -> bool:
        return bool(self.versions)

    def add(self, crd: Mapping[str, Any] | Skeleton) -> None:
        skeleton = crd if isinstance(crd, Skeleton) else None
        crd = crd.crd if isinstance(crd, Skeleton) else crd
        spec = crd.get("spec")
        if not isinstance(spec, dict):
            return
        group, names, versions = spec.get("group"), spec.get("names"), spec.get("versions")
        kind = names.get("kind") if isinstance(names, dict) else None
        if not isinstance(group, str) or not isinstance(kind, str) or not isinstance(versions, list):
            return
        if (group, kind) in self.versions:
            return
        meta = crd.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        served: list[str] = []
        for version in versions:
            if not isinstance(version, dict) or version.get("served") is not True:
                continue
            number = version.get("name")
            if not isinstance(number, str):
                continue
            served.append(number)
            self.schemas[(f"{group}/{number}", kind)] = _schema_of(version) if skeleton is None else skeleton.later(number)
        self.versions[(group, kind)] = served
        self.sources[(group, kind)] = name if isinstance(name, str) else f"{kind} ({group})"

    def with_crds(self, crds: Iterable[Mapping[str, Any] | Skeleton]) -> Catalog:
        """A catalog of these CRDs (a render's own) first, then this one's."""
        more = Catalog(crds)
        if not more:
            return self
        more._compiled = self._compiled
        for (group, kind), served in self.versions.items():
            if (group, kind) not in more.versions:
                more.versions[group, kind] = served
                more.sources[group, kind] = self.sources[group, kind]
                for version in served:
                    more.schemas[f"{group}/{version}", kind] = self.schemas[f"{group}/{version}", kind]
        return more

    def groups(self) -> set[str]:
        return {group for group, _ in self.versions}

    def compiled(self, api_version: str, kind: str, k8s_version: str) -> Compiled | None:
        """The compiled schema of a served version, or None when no CRD serves it."""
        schema = self.schemas.get((api_version, kind))
        if schema is None:
            return None
        if schema.__class__ is _Later:
            schema = schema.schema()
        key = (id(schema), k8s_version)
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = (schema, compile_version(schema, object_meta(k8s_version)))
        return found[1]

    def unserved(self, api_version: str, kind: str) -> tuple[str, str] | None:
        """(the field at fault, why) when the CRDs of the object's group serve no such kind or version."""
        group = api_version.rpartition("/")[0]
        if not group or group not in self.groups() or (api_version, kind) in self.schemas:
            return None
        served = self.versions.get((group, kind))
        if served is None:
            kinds = sorted(k for g, k in self.versions if g == group)
            return "kind", f'the CRDs of {group} define no kind "{kind}" (they define {", ".join(kinds)})'
        shown = ", ".join(f"{group}/{v}" for v in served) or "none"
        return "apiVersion", f"{kind} {api_version} is not served by its CRD {self.sources[group, kind]} (served: {shown})"


def compile_version(schema: Mapping[str, Any], meta: tuple[Compiled, int] | None = None) -> Compiled:
    """One served version's `openAPIV3Schema` compiled; `meta` is the built-in ObjectMeta (a compiled
    form and its node) grafted in as `metadata`."""
    from .form import compile_schema

    root = _without_defaulted_required(dict(schema))
    properties = dict(root.get("properties") or {})
    properties.update(apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"})
    root["properties"] = properties
    root.setdefault("type", "object")
    compiled = compile_schema(root, go_nulls=False, structural=True)
    for node in compiled:  # an embedded resource needs its own apiVersion and kind (the server: "must not be empty")
        if node[FLAGS] & EMBEDDED:
            node[REQUIRED] = [*node[REQUIRED], *(name for name in ("apiVersion", "kind") if name not in node[REQUIRED])]
    if meta is not None:  # (without the built-in schemas, form.py leaves `metadata` open)
        compiled[0][PROPERTIES]["metadata"] = _graft(compiled, *meta)
    return compiled


def object_meta(k8s_version: str) -> tuple[Compiled, int] | None:
    """The built-in ObjectMeta of `k8s_version`, as a node of a compiled built-in kind; None without the schemas."""
    from . import builtin

    try:
        config_map = builtin.compiled(k8s_version, "v1", "ConfigMap")
    except (builtin.SchemasMissing, KeyError):
        return None
    if config_map is None:
        return None
    index = config_map[0][PROPERTIES].get("metadata")
    return (config_map, index) if isinstance(index, int) and index >= 0 else None


def _graft(target: Compiled, source: Compiled, start: int) -> int:
    """Copy the nodes of `source` reachable from `start` to the end of `target`; the new index of `start`."""
    mapping: dict[int, int] = {}
    pending = [start]
    while pending:
        index = pending.pop()
        if index in mapping or index < 0:
            continue
        mapping[index] = len(target)
        target.append(list(source[index]))
        node = source[index]
        pending.extend(i for i in (*node[PROPERTIES].values(), node[ITEMS], node[MORE]) if i >= 0)
    for old, new in mapping.items():
        node = target[new]
        node[PROPERTIES] = {name: mapping.get(i, i) for name, i in node[PROPERTIES].items()}
        node[ITEMS] = mapping.get(node[ITEMS], node[ITEMS])
        node[MORE] = mapping.get(node[MORE], node[MORE])
    return mapping[start]


def _without_defaulted_required(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each `required` list less the properties that have a `default` (copies where changed)."""
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = {name: _without_defaulted_required(dict(sub)) if isinstance(sub, dict) else sub
                                for name, sub in properties.items()}
        required = schema.get("required")
        if isinstance(required, list):
            schema["required"] = [name for name in required
                                  if not (isinstance(properties.get(name), dict) and "default" in properties[name])]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            schema[key] = _without_defaulted_required(dict(schema[key]))
    return schema


def pruned_nulls(compiled: Compiled, obj: Any, index: int = 0) -> Any:
    """`obj` without the null fields its schema does not make nullable (what the API server prunes)."""
    if index < 0:
        return obj
    node = compiled[index]
    if isinstance(obj, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, value in obj.items():
            child = node[PROPERTIES].get(key, node[MORE])
            if value is None and child >= 0 and compiled[child][TYPES] and not compiled[child][TYPES] & NULL:
                changed = True
                continue
            new = pruned_nulls(compiled, value, child) if isinstance(value, (dict, list)) else value
            changed = changed or new is not value
            out[key] = new
        return out if changed else obj
    if isinstance(obj, list) and node[ITEMS] >= 0:
        items = [pruned_nulls(compiled, item, node[ITEMS]) if isinstance(item, (dict, list)) else item for item in obj]
        return items if any(new is not old for new, old in zip(items, obj)) else obj
    return obj


def custom_resource(crds: Catalog | None, obj: Mapping[str, Any], k8s_version: str) -> tuple[Compiled | None, list[Problem]]:
    """A custom resource's schema and its problems (the server's null pruning first; fields spelt as
    the server spells a custom resource's: a map key after a dot), or (None, []) with no CRD at hand."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    compiled = crds.compiled(api_version, kind, k8s_version) if crds is not None and isinstance(api_version, str) and \
        isinstance(kind, str) else None
    if compiled is None:
        return None, []
    problems = validate(compiled, pruned_nulls(compiled, obj))
    return compiled, [p if p.path[:1] == ("metadata",) else p._replace(field=_dotted(p)) for p in problems]


def _dotted(problem: Problem) -> str:
    """`spec.labels.tier` where validate says `spec.labels[tier]`: the path, a list index in brackets."""
    out = ""
    for part in problem.path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    if problem.kind == REQUIRED_FIELD:  # (the path is the parent's; the field, the missing one's)
        name = problem.field.rsplit(".", 1)[-1]
        return f"{out}.{name}" if out else name
    return out
