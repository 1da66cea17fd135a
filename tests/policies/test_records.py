"""policies.records.NamedTuple builds what typing.NamedTuple builds, from the same class statement."""

from __future__ import annotations

import pickle
import typing

import pytest

from fieldwarden.policies import records
from fieldwarden.policies.model import ObjectKey, Violation


class Point(records.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "origin"

    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


class TypedPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "origin"

    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


def test_the_same_tuple_as_typing_builds() -> None:
    ours, theirs = Point(3, -4), TypedPoint(3, -4)
    assert ours == theirs == (3, -4, "origin") and hash(ours) == hash(theirs)
    assert repr(ours) == repr(theirs).replace("TypedPoint", "Point") == "Point(x=3, y=-4, label='origin')"
    assert Point._fields == TypedPoint._fields == ("x", "y", "label")
    assert Point._field_defaults == TypedPoint._field_defaults == {"y": 0, "label": "origin"}
    assert ours._replace(y=1) == (3, 1, "origin") and ours._asdict() == theirs._asdict()
    assert ours.norm() == theirs.norm() == 7
    assert Point.__doc__ == TypedPoint.__doc__ == "A point."
    assert Point.__module__ == __name__ and Point.__qualname__ == "Point"
    assert list(Point.__annotations__) == ["x", "y", "label"]
    assert isinstance(ours, tuple) and sorted([Point(2), Point(1, 5)]) == [(1, 5, "origin"), (2, 0, "origin")]


def test_instances_pickle_by_their_module_and_name() -> None:
    # the worker processes and the context cache pass records between processes
    for value in (Point(1, 2, "a"), Violation(("spec", 0), "message"), ObjectKey("apps", "Deployment", "ns", "web")):
        assert pickle.loads(pickle.dumps(value)) == value


def test_a_field_without_default_after_one_with_is_an_error() -> None:
    with pytest.raises(TypeError, match="non-default NamedTuple field y cannot follow default field"):
        class _Bad(records.NamedTuple):
            x: int = 0
            y: int


def test_reserved_names_cannot_be_redefined() -> None:
    with pytest.raises(AttributeError, match="cannot overwrite NamedTuple attribute _replace"):
        class _Bad(records.NamedTuple):
            x: int

            def _replace(self) -> None: ...


def test_every_attribute_as_collections_namedtuple_makes_it() -> None:
    # records builds the class itself (no per-class eval of __new__'s source): the same behaviour
    import collections
    import inspect

    class Wide(records.NamedTuple):
        a: int
        b: int
        c: int = 3

    reference = collections.namedtuple("Wide", ["a", "b", "c"], defaults=[3])
    for name in ("_fields", "_field_defaults", "__match_args__", "__slots__", "__doc__"):
        assert getattr(Wide, name) == getattr(reference, name), name
    assert str(inspect.signature(Wide)) == str(inspect.signature(reference)) == "(a, b, c=3)"
    assert Wide.__new__.__doc__ == reference.__new__.__doc__ == "Create new instance of Wide(a, b, c)"
    assert Wide.b.__doc__ == reference.b.__doc__ == "Alias for field number 1"
    assert Wide(1, c=5, b=2) == reference(1, c=5, b=2) == (1, 2, 5)
    assert repr(Wide._make([1, 2, 3])) == repr(reference._make([1, 2, 3])) == "Wide(a=1, b=2, c=3)"
    assert Wide(1, 2).b == 2 and Wide(1, 2)._asdict() == {"a": 1, "b": 2, "c": 3}
    for build in (Wide, reference):
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
            build(1)
        with pytest.raises(TypeError, match="unexpected keyword argument 'd'"):
            build(1, 2, d=4)
        with pytest.raises(TypeError, match="Expected 3 arguments, got 2"):
            build._make([1, 2])
        with pytest.raises(ValueError, match="Got unexpected field names: \\['d'\\]"):
            build(1, 2)._replace(d=4)
        with pytest.raises(AttributeError):
            setattr(build(1, 2), "x", 1)  # no __dict__: __slots__ = ()


def test_more_fields_than_precompiled_and_underscored_names() -> None:
    fields = [f"f{index}" for index in range(20)]
    namespace = {"__module__": __name__, "__annotations__": dict.fromkeys(fields, "int")}
    many = type(records.NamedTuple)("Many", (records.NamedTuple,), namespace)
    assert many(*range(20)).f19 == 19 and many._fields == tuple(fields)
    with pytest.raises(ValueError, match="Field names cannot start with an underscore: '_x'"):
        class _Bad(records.NamedTuple):
            _x: int
