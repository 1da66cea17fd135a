"""kustomize.py places an object's fields when a finding asks for them: its name's place at once
(every object's is shown in messages), the rest on first use, from the run's parse results or, for
a render read back from the cache, from the unit's files (issue 23: most objects have no finding).

The shop fixture's overlays exercise what moves a name or its parents: namePrefix, strategic-merge
and JSON 6902 patches, a component, commonLabels and labels with selectors, a configMapGenerator.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fieldwarden.linter.units import render_cache
from fieldwarden.linter.units.kustomize import bind, render_kustomization
from fieldwarden.linter.units.plan import KUSTOMIZE, RenderJob
from fieldwarden.linter.units.rendered import NAME_PATHS, locate

from .test_kustomize import SHOP, needs_kustomize

OVERLAYS = ("overlays/production", "overlays/staging")
NAME = ("metadata", "name")


@needs_kustomize
def test_a_name_is_placed_as_the_whole_placement_places_it_and_nothing_else_is_placed() -> None:
    for overlay in OVERLAYS:
        lazy, whole = render_kustomization(SHOP, overlay), render_kustomization(SHOP, overlay)
        assert lazy.objects and all(obj.recipe is not None for obj in lazy.objects)
        names = [locate(obj, path) for obj in lazy.objects for path in (NAME, ("kind",), ("apiVersion",))]
        placed = [obj.positions for obj in whole.objects]  # placed at once
        assert all(obj.recipe is not None for obj in lazy.objects)  # the names' places did not place the rest:
        # the source's fields are not walked (what transformers set on deeper paths is, cheaply)
        assert all(set(obj.table) <= set(positions) for obj, positions in zip(lazy.objects, placed))
        assert any(set(obj.table) < set(positions) for obj, positions in zip(lazy.objects, placed))
        assert names == [locate(obj, path) for obj in whole.objects for path in (NAME, ("kind",), ("apiVersion",))]
        assert [obj.positions for obj in lazy.objects] == placed
        assert all(obj.recipe is None for obj in lazy.objects)


@needs_kustomize
def test_objects_never_placed_are_placed_from_their_files_after_the_cache(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(SHOP, root)
    for overlay in OVERLAYS:
        made, whole = render_kustomization(root, overlay), render_kustomization(root, overlay)
        made.objects[0].positions  # one placed before it is saved: kept whole
        job = RenderJob(KUSTOMIZE, overlay)
        render_cache.save(root, job, "tool", [], made, {})
        loaded = render_cache.load(root, job, "tool", [])
        assert loaded is not None
        assert [obj.recipe is None for obj in loaded.objects] == [True] + [False] * (len(made.objects) - 1)
        bind(root, overlay, None, loaded)
        assert [locate(obj, NAME) for obj in loaded.objects] == [locate(obj, NAME) for obj in whole.objects]
        assert [obj.positions for obj in loaded.objects] == [obj.positions for obj in whole.objects]
        assert all(obj.recipe is None for obj in loaded.objects)
