"""Where the webhook learns which HPAs and VPAs exist: the Inventory protocol and two sources.

- `FileInventory`: HPA (any autoscaling version), KEDA ScaledObject and VPA manifests
  from one YAML or JSON file, read once at startup. The embedded default that runs
  anywhere: no cluster, no API calls.
- `StaticInventory`: a fixed list of objects, for tests and the empty default.

The cluster source (list + watch through the API server) is webhook/inventory/cluster.py.
An inventory is built in the gunicorn master (so that a bad file stops the server before
it starts) and started in each worker after the fork (threads do not survive a fork).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol

from ...policies.admission import AutoscalerIndex
from ...policies.autoscalers import is_horizontal_autoscaler, is_vpa, scale_target, vpa_target
from ...policies.kube import group_kind


class Inventory(Protocol):
    """A source of autoscalers, as the webhook's request handlers see it."""

    def index(self) -> AutoscalerIndex:
        """The autoscalers known now (the handlers read it; never mutate it)."""

    def ready(self) -> bool:
        """Whether the first full sync is done (/readyz)."""

    def stale(self) -> bool:
        """Whether the view may be out of date (watch broken, API unreachable)."""

    def describe(self) -> dict[str, Any]:
        """`{"source": str, "size": int, "age_seconds": float | None}` for logs and metrics."""

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call `callback` (from the inventory's own threads) whenever what ready(), stale()
        or describe() say may have changed; an inventory that never changes never calls it."""

    def start(self) -> None:
        """Begin syncing (in the worker process, after the fork); idempotent."""

    def stop(self) -> None:
        """Stop syncing and release connections; idempotent."""


class InventoryError(Exception):
    """An inventory file that cannot be used, worded for the person who wrote it."""


class StaticInventory:
    """A fixed set of autoscaler objects: always ready; never stale unless told so."""

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        default_namespace: str = "default",
        *,
        source: str = "static",
        ready: bool = True,
        stale: bool = False,
    ) -> None:
        self._index = AutoscalerIndex(objects, default_namespace)
        self._source = source
        self._ready = ready
        self._stale = stale

    def index(self) -> AutoscalerIndex:
        return self._index

    def ready(self) -> bool:
        return self._ready

    def stale(self) -> bool:
        return self._stale

    def describe(self) -> dict[str, Any]:
        return {"source": self._source, "size": len(self._index), "age_seconds": None}

    def on_change(self, callback: Callable[[], None]) -> None:
        pass  # it never changes

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class FileInventory(StaticInventory):
    """The autoscalers in a YAML (multi-document) or JSON file; `kind: List` items count.

    Other kinds in the file are skipped, so a rendered chart can serve as is. An
    autoscaler whose target cannot be read is an error, not a silent gap in the
    protection. The file is read once, here: a change needs a restart.
    """

    def __init__(self, path: str | Path, default_namespace: str = "default") -> None:
        self.path = Path(path)
        objects = load_autoscalers(self.path, default_namespace)
        super().__init__(objects, default_namespace, source=f"file:{self.path}")
        self.loaded_at = time.time()


def load_autoscalers(path: Path, default_namespace: str = "default") -> list[dict[str, Any]]:
    """The autoscaler objects in a manifest file; InventoryError says what is wrong and where."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InventoryError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InventoryError(f"{path}: is a folder; give one YAML or JSON file") from None
    except UnicodeDecodeError:
        raise InventoryError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    autoscalers = []
    for number, obj in _objects(_documents(text, path), path):
        if not (is_horizontal_autoscaler(obj) or is_vpa(obj)):
            continue
        where = f"{path}: document {number}: {obj.get('kind')}"
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            raise InventoryError(f"{where}: metadata.name is missing")
        where = f"{where} {name!r}"
        if is_vpa(obj):
            if vpa_target(obj, default_namespace) is None:
                raise InventoryError(f"{where}: spec.targetRef needs a kind and a name")
        elif scale_target(obj, default_namespace) is None:
            group = group_kind(obj)[0]
            needs = "a name" if group == "keda.sh" else "an apiVersion, a kind and a name"
            raise InventoryError(f"{where}: spec.scaleTargetRef needs {needs}")
        autoscalers.append(obj)
    return autoscalers


def _documents(text: str, path: Path) -> list[Any]:
    import yaml  # JSON is YAML; the safe loader builds plain data only

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise InventoryError(f"{path}{at}: not valid YAML or JSON: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise InventoryError(f"{path}: not valid YAML or JSON: {exc}") from None


def _objects(documents: list[Any], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(document number from 1, object), with the items of `kind: List` documents unpacked."""
    for number, doc in enumerate(documents, 1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InventoryError(f"{path}: document {number} is a {type(doc).__name__}, not a Kubernetes object")
        if isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
            for item in doc["items"]:
                if not isinstance(item, dict):
                    raise InventoryError(f"{path}: document {number}: a list item is not an object")
                yield number, item
        else:
            yield number, doc
