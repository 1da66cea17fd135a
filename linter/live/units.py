"""What `lint --cluster` checks: the objects each apply unit applies, placed where they are written.

A plain unit applies its files' objects as they are written; a rendered unit (a kustomize
overlay, a chart with a value set) applies its render, and never the files the render reads
(patches, components, bases, templates: fragments of objects, linted through their units).
Each object goes to the namespace its unit deploys it to (Argo CD's destination namespace,
Flux's targetNamespace, the Helm release's namespace, else its file's default-namespace), and
an object several units apply alike is checked once, its findings naming every one of them.

A field of a rendered object is placed as the lint places the others (UnitRun.place): on the
line that writes it, approximate where the renderer cannot tell, in whichever file that is
(the unit holds a file being linted: what it applies is that file's doing, engine.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Sequence

from ...policies.config import Settings
from ...policies.kube import is_kubernetes_object, object_key
from .checks import Located, LiveObject
from ..loader import Document, locate
from ..units.plan import HELM, RenderJob, Unit

if TYPE_CHECKING:  # the renderers' types: only when a unit has renders
    from ..units.rendered import RenderedObject
    from ..unitrun import UnitRun

FieldPath = tuple[str | int, ...]


class Written(NamedTuple):
    """A file being linted, as read for the live checks."""

    display: str  # as findings show it
    key: str  # among the run's files (engine._Names), to find its units
    documents: list[Document]  # none for a template


def live_objects(run: UnitRun | None, files: Sequence[Written], settings_for: Callable[[str], Settings]) -> list[LiveObject]:
    """The objects to check: each unit's, once each (`run` None: every file's objects as written, unit-less)."""
    found: list[LiveObject] = []
    units = run.chosen if run is not None else []
    holding: dict[str, list[Unit | None]] = {}
    for unit in units:
        for key in unit.files:
            holding.setdefault(key, []).append(unit)
    for written in files:
        settings = settings_for(written.display)
        for document in written.documents:
            for prefix, node, obj in _document_objects(document.node, document.data):
                place = _locator(written.display, node)
                for applier in holding.get(written.key, []) if run is not None else [None]:
                    found.append(_placed(obj, written.display, document.index, prefix, place, settings, applier, ""))
    if run is not None:
        for job in dict.fromkeys(job for unit in units for job in unit.renders):
            found.extend(_rendered(run, job, settings_for))
    return _once(found)


def _rendered(run: UnitRun, job: RenderJob, settings_for: Callable[[str], Settings]) -> Iterable[LiveObject]:
    render = run.renders.get(job)
    for obj in render.objects if render is not None else ():
        data = run.data(obj)
        if not is_kubernetes_object(data):
            continue
        anchor = run.names.display(obj.anchor[0])
        place = _render_locator(run, obj)
        release = job.namespace if job.tool == HELM else ""
        for unit in run.using.get(job, ()):
            yield _placed(data, anchor, -1, (), place, settings_for(anchor), unit, release)


def _placed(obj: dict[str, Any], file: str, document: int, prefix: FieldPath, place: Callable[[FieldPath], Located],
            settings: Settings, unit: Unit | None, release: str) -> LiveObject:
    """The object as `unit` applies it: in the namespace the unit (or the Helm release) puts it."""
    namespace = release or (unit.namespace if unit is not None else "") or settings.default_namespace
    key = object_key(obj, namespace)
    if unit is not None and unit.force_namespace and unit.namespace and key is not None and key.namespace:
        obj = {**obj, "metadata": {**obj["metadata"], "namespace": unit.namespace}}  # Flux's targetNamespace
        key = key._replace(namespace=unit.namespace)
    label = key.label() if key is not None else f"{obj['kind']}/(unnamed)"
    units = (unit.name,) if unit is not None else ()
    return LiveObject(obj, file, document, prefix, label, place, namespace, units)


def _once(objects: list[LiveObject]) -> list[LiveObject]:
    """One object per distinct object applied (identity, namespace and content), naming all its units."""
    merged: dict[str, LiveObject] = {}
    for live in objects:
        meta = live.obj.get("metadata")
        # the label holds the namespace it goes to (none for a cluster-scoped kind), written or not
        rest = {k: v for k, v in meta.items() if k != "namespace"} if isinstance(meta, dict) else meta
        identity = json.dumps([live.label, {**live.obj, "metadata": rest}], sort_keys=True, default=str)
        known = merged.get(identity)
        if known is None:
            merged[identity] = live
            continue
        merged[identity] = known._replace(
            units=tuple(dict.fromkeys((*known.units, *live.units))), locate=_first(known.locate, live.locate))
    return list(merged.values())


def _first(*locators: Callable[[FieldPath], Located]) -> Callable[[FieldPath], Located]:
    """The first place any of the locators finds (an object read through several units, or files)."""
    def place(path: FieldPath) -> Located:
        for locator in locators:
            where = locator(path)
            if where is not None:
                return where
        return None

    return place


def _locator(file: str, node: Any) -> Callable[[FieldPath], Located]:
    def place(path: FieldPath) -> Located:
        line, column = locate(node, path)
        return file, line, column

    return place


def _render_locator(run: UnitRun, obj: RenderedObject) -> Callable[[FieldPath], Located]:
    def place(path: FieldPath) -> Located:
        where = run.place(obj, path)
        if where is None:
            return None
        file, line, column, exact = where
        return file, line, column, not exact

    return place


def _document_objects(node: Any, data: Any) -> Iterable[tuple[FieldPath, Any, dict[str, Any]]]:
    """The Kubernetes objects of a document; each item of a `kind: List` counts."""
    if not is_kubernetes_object(data):
        return
    if data["kind"].endswith("List") and isinstance(data.get("items"), list):
        values = dict((k.value, v) for k, v in node.value if hasattr(k, "value")) if hasattr(node, "value") else {}
        items_node = values.get("items")
        item_nodes = items_node.value if items_node is not None and isinstance(items_node.value, list) else []
        for index, item in enumerate(data["items"]):
            if is_kubernetes_object(item) and index < len(item_nodes):
                yield ("items", index), item_nodes[index], item
        return
    yield (), node, data
