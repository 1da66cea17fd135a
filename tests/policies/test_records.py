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
