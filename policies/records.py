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
The annotations stay as written (strings, with `from __future__ import annotations`). The class
is built here (_record) rather than by `collections.namedtuple`, which compiles each class's
`__new__` from source: the same class, at a sixth of the cost (~10 M of a one-file lint's
~240 M instructions).
"""

from __future__ import annotations

from collections import namedtuple
from types import FunctionType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    def _tuplegetter(index: int, doc: str) -> Any: ...
else:
    try:  # namedtuple's field accessor (C); the fallback reads the same
        from _collections import _tuplegetter
    except ImportError:  # pragma: no cover - other implementations
        from operator import itemgetter

        def _tuplegetter(index, doc):
            return property(itemgetter(index), doc=doc)


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
        built = _record(name, fields, defaults, namespace["__module__"])
        built.__annotations__ = dict(annotations)
        for key, value in namespace.items():
            if key in _PROHIBITED:
                raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
            if key not in _SPECIAL and key not in fields:
                setattr(built, key, value)
        return built


class NamedTuple(metaclass=_Builder):
    """Base of a class statement that makes a named tuple (see the module's docstring)."""


# -- the class a NamedTuple statement makes ---------------------------------------------------------
# What collections.namedtuple makes (the same attributes, methods and behaviour), without its cost
# at import: namedtuple compiles each class's __new__ from source (eval), ~60% of building a class,
# and makes its other methods anew per class. Here __new__ is one of the precompiled functions below,
# of the class's number of fields, renamed to the field names (its code object's variables: keyword
# arguments and signatures as namedtuple's); _make, _replace, _asdict and __getnewargs__ are shared.

_new = tuple.__new__


def _a1(_cls: Any, a: Any) -> Any: return _new(_cls, (a,))
def _a2(_cls: Any, a: Any, b: Any) -> Any: return _new(_cls, (a, b))
def _a3(_cls: Any, a: Any, b: Any, c: Any) -> Any: return _new(_cls, (a, b, c))
def _a4(_cls: Any, a: Any, b: Any, c: Any, d: Any) -> Any: return _new(_cls, (a, b, c, d))
def _a5(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any) -> Any: return _new(_cls, (a, b, c, d, e))
def _a6(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any) -> Any: return _new(_cls, (a, b, c, d, e, f))
def _a7(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g))
def _a8(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h))
def _a9(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i))
def _a10(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i, j))
def _a11(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i, j, k))
def _a12(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any,
         l: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l))
def _a13(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any,
         l: Any, m: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m))
def _a14(_cls: Any, a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any, h: Any, i: Any, j: Any, k: Any,
         l: Any, m: Any, n: Any) -> Any:
    return _new(_cls, (a, b, c, d, e, f, g, h, i, j, k, l, m, n))


_NEW = (None, _a1, _a2, _a3, _a4, _a5, _a6, _a7, _a8, _a9, _a10, _a11, _a12, _a13, _a14)


@classmethod  # type: ignore[misc]
def _make(cls: Any, iterable: Any) -> Any:
    result = _new(cls, iterable)
    if len(result) != len(cls._fields):
        raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(result)}")
    return result


def _replace(self: Any, /, **kwds: Any) -> Any:
    result = self._make(map(kwds.pop, self._fields, self))
    if kwds:
        raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
    return result


def _asdict(self: Any) -> dict[str, Any]:
    """Return a new dict which maps field names to their values."""
    return dict(zip(self._fields, self))


def __getnewargs__(self: Any) -> tuple[Any, ...]:
    """Return self as a plain tuple.  Used by copy and pickle."""
    return tuple(self)


def _repr(form: str) -> Any:
    def __repr__(self: tuple[Any, ...]) -> str:
        """Return a nicely formatted representation string"""
        return self.__class__.__name__ + form % self
    return __repr__


def _record(name: str, fields: list[str], defaults: list[Any], module: str) -> Any:
    """The named tuple class `collections.namedtuple(name, fields, defaults=defaults, module=module)` makes."""
    if len(fields) >= len(_NEW) or not fields:  # no precompiled __new__ of that many fields
        return namedtuple(name, fields, defaults=defaults, module=module)
    for field in fields:
        if field.startswith("_"):
            raise ValueError(f"Field names cannot start with an underscore: {field!r}")
    names = tuple(fields)
    arguments = ", ".join(names)
    template = _NEW[len(names)]
    assert template is not None
    new = FunctionType(template.__code__.replace(co_varnames=("_cls", *names), co_name="__new__"), globals(),
                       "__new__", tuple(defaults) or None)
    new.__qualname__ = f"{name}.__new__"
    new.__doc__ = f"Create new instance of {name}({arguments})"
    namespace = {
        "__doc__": f"{name}({arguments})", "__slots__": (), "_fields": names,
        "_field_defaults": dict(zip(names[len(names) - len(defaults):], defaults)), "__new__": new,
        "_make": _make, "_replace": _replace, "__repr__": _repr(f"({', '.join(f'{n}=%r' for n in names)})"),
        "_asdict": _asdict, "__getnewargs__": __getnewargs__, "__match_args__": names,
    }
    for index, field in enumerate(names):
        namespace[field] = _tuplegetter(index, _DOCS[index] if index < len(_DOCS) else f"Alias for field number {index}")
    built = type(name, (tuple,), namespace)
    built.__module__ = module
    return built


_DOCS = tuple(f"Alias for field number {index}" for index in range(len(_NEW)))
