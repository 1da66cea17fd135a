"""Folders of alternatives (units/alternatives.py): which files are alternatives, and the units cut from them."""

from __future__ import annotations

from fieldwarden.linter.units.alternatives import alternative_pairs, choices, split_unit
from fieldwarden.linter.units.plan import Unit
from fieldwarden.policies.model import ObjectKey


def cm(name: str) -> ObjectKey:
    return ObjectKey("", "ConfigMap", "default", name)


KEYS = {
    "m/install.yaml": [cm("a"), cm("b"), cm("c"), cm("crd")],
    "m/namespace-install.yaml": [cm("a"), cm("b"), cm("c")],
    "m/core-install.yaml": [cm("a"), cm("crd")],
    "m/extra.yaml": [cm("x"), cm("y"), cm("a")],  # one object shared with the installs: a duplicate
    "m/single.yaml": [cm("b")],  # one object, shared: a duplicate
}


def test_files_sharing_half_of_the_smaller_files_objects_and_at_least_two_are_alternatives() -> None:
    pairs = alternative_pairs(sorted(KEYS), lambda path: KEYS[path])
    assert pairs == {
        frozenset({"m/install.yaml", "m/namespace-install.yaml"}),
        frozenset({"m/install.yaml", "m/core-install.yaml"}),
    }


def test_maximal_sets_without_two_alternatives() -> None:
    apart = {frozenset({"a", "b"}), frozenset({"a", "c"})}
    assert choices(["a", "b", "c"], apart) == [("a",), ("b", "c")]


def test_a_plain_folder_is_cut_and_a_declared_one_is_not() -> None:
    files = tuple(sorted(KEYS))
    units, notice = split_unit(Unit("m", files, plain=True), lambda path: KEYS[path])
    assert [u.name for u in units] == [
        "m (alternative core-install.yaml, namespace-install.yaml)", "m (alternative install.yaml)"]
    assert units[1].files == ("m/extra.yaml", "m/install.yaml", "m/single.yaml")
    assert notice.startswith("m: core-install.yaml, install.yaml, namespace-install.yaml define mostly the same objects")
    assert split_unit(Unit("m (units: m)", files), lambda path: KEYS[path]) == ([Unit("m (units: m)", files)], "")


def pool(name: str) -> ObjectKey:
    return ObjectKey("metallb.io", "IPAddressPool", "metallb-system", name)


SAMPLES = {  # MetalLB's configsamples/: single-object samples
    "c/bgppeer_simple.yaml": [cm("peer")],
    "c/bgppeer_with_vrf.yaml": [cm("peer")],
    "c/bgppeer_with_bfdprofile.yaml": [cm("bfd"), cm("peer")],
    "c/ipaddresspool_simple.yaml": [pool("example")],
    "c/simple_pool_adv_l2.yaml": [pool("example"), cm("l2")],
    "c/other.yaml": [cm("other")],
}


def test_two_files_of_the_same_objects_make_a_folder_of_samples() -> None:
    pairs = alternative_pairs(sorted(SAMPLES), lambda path: SAMPLES[path])
    assert len(pairs) == 15  # every two of the 6 files: each sample is a unit alone
    units, _ = split_unit(Unit("c", tuple(sorted(SAMPLES)), plain=True), lambda path: SAMPLES[path])
    assert [u.files for u in units] == [(path,) for path in sorted(SAMPLES)]
    # the same documents in two files are a copy left behind: no sample, the one-object rule holds
    same = lambda a, b: {a, b} == {"c/bgppeer_simple.yaml", "c/bgppeer_with_vrf.yaml"}  # noqa: E731
    assert alternative_pairs(sorted(SAMPLES), lambda path: SAMPLES[path], same) == set()


def test_a_folder_is_cut_only_where_two_files_share_an_object() -> None:
    """engine._shares_objects leaves units/alternatives.py out when no two files of a plain unit share an object:
    every cut, on every assignment of three objects to three files, is where it says some are shared."""
    from itertools import product

    from fieldwarden.linter.engine import _shares_objects

    pools = [[cm(name) for name in names] for names in ("", "a", "b", "ab", "abc", "bc")]
    files = ("f/one.yaml", "f/two.yaml", "f/three.yaml")
    cuts = 0
    for chosen in product(pools, repeat=len(files)):
        keys = dict(zip(files, chosen))
        unit = Unit("f", files, plain=True)
        units, notice = split_unit(unit, lambda path: keys[path])
        if (units, notice) != ([unit], ""):
            cuts += 1
            assert _shares_objects([unit], lambda path: keys[path]), keys
    assert cuts > 20  # (folders of samples and of installs among them)
    assert _shares_objects([Unit("m", tuple(sorted(KEYS)), plain=True)], lambda path: KEYS[path])
    assert not _shares_objects([Unit("m", tuple(sorted(KEYS)))], lambda path: KEYS[path])  # declared: never cut
