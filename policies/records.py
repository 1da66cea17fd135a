"""`typing.NamedTuple`'s class syntax without importing typing at run time.

Importing `typing` and building ~35 NamedTuple classes through it (each field annotation made a
ForwardRef, compiled) is ~5 ms of a one-file lint that takes ~45 ms. Modules on that path write

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from ..policies.records import NamedTuple

so that mypy checks them as typing.NamedTuple classes, while at run time the class statement
builds the same thing typing builds: a `collections.namedtuple` of the annotated fields, with the
defaults given in the body, and the body's methods, docstring and other attributes set on it.
The annotations stay as written (strings, with `from __future__ import annotations`).
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What a NamedTuple body may not define (as typing says), and what is not copied onto the class.
_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                         "_make", "_replace", "_asdict", "_source"})
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _Builder(type):
    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if not bases:  # the NamedTuple base below
            return super().__new__(cls, name, bases, namespace)
        if bases != (NamedTuple,):
            raise TypeError("a NamedTuple class can only inherit from NamedTuple")
        annotations: dict[str, Any] = namespace.get("__annotations__", {})
        fields = list(annotations)
        defaults = []
        for field in fields:
            if field in namespace:
                defaults.append(namespace[field])
            elif defaults:
                raise TypeError(f"non-default NamedTuple field {field} cannot follow default field(s)")
        built = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])  # type: ignore[misc]
        built.__annotations__ = dict(annotations)
        for key, value in namespace.items():
            if key in _PROHIBITED:
                raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
            if key not in _SPECIAL and key not in fields:
                setattr(built, key, value)
        return built


class NamedTuple(metaclass=_Builder):
    """Base of a class statement that makes a named tuple (see the module's docstring)."""
