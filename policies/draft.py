"""Copy-on-write edits of the object under admission, for the mutating rules.

A mutating rule gets a `Draft` of the request's object. It reads `draft.object` as it
likes and changes it only through `draft.writable(path)`, which copies each mapping or
list on the way the first time it is written to. So the request's object is never
changed, and whatever no rule wrote stays *the same Python object* in both: the
webhook's diff skips those parts by identity, and a patch costs what changed, not the
size of the object (a pod's or a Deployment's managedFields are most of it).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

Container = Union[dict[str, Any], list[Any]]
Path = Sequence[Union[str, int]]


class Draft:
    """The object a mutating rule changes: shares all it has not written with the original."""

    def __init__(self, original: Mapping[str, Any]) -> None:
        self.object: dict[str, Any] = dict(original)
        # Containers made (or copied) for this draft. The originals stay alive as long
        # as the draft, so an id here never belongs to one of them.
        self._owned: set[int] = {id(self.object)}

    def writable(self, path: Path) -> Container | None:
        """The mapping or list at `path`, safe to change in place.

        Missing or null mappings on the way are created (string keys only; a list
        index must exist). None when something else is in the way: a scalar, a list
        where a key is asked for, a mapping where an index is.
        """
        node: Container = self.object
        for part in path:
            if type(node) is dict and type(part) is str:
                child = node.get(part)
                if child is None:
                    child = node[part] = {}
                    self._owned.add(id(child))
                    node = child
                    continue
            elif type(node) is list and type(part) is int and -len(node) <= part < len(node):
                child = node[part]
            else:
                return None
            if type(child) is not dict and type(child) is not list:
                return None
            if id(child) not in self._owned:
                child = dict(child) if type(child) is dict else list(child)
                node[part] = child  # type: ignore[index]
                self._owned.add(id(child))
            node = child
        return node

    def mapping(self, path: Path) -> dict[str, Any] | None:
        """`writable(path)` when it is a mapping, else None."""
        node = self.writable(path)
        return node if type(node) is dict else None
