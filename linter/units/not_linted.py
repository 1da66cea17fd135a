"""A unit that was not linted, and why: what a renderer (or the planner) hands back instead of objects.

fieldwarden never reads as "All checks passed!" for what it did not check. A render that cannot
be made for a reason that is not the repository's fault (no renderer installed, a remote base
not fetched, Helm dependencies not built, a values file that cannot be read) returns
`Render([], inputs, problems, not_linted=NotLinted(...))`; the
run reports it as one FW007 (unit-not-linted) finding on the unit's defining file
(kustomization.yaml, Chart.yaml, the GitOps object), with the reason and what to do. What the
repository must fix stays an FW006 problem instead.

Plain data, like rendered.py: it survives the render cache (render_cache.py keeps such renders too).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from ...policies.records import NamedTuple

EXTRA = "pip install 'fieldwarden[render]'"


class NotLinted(NamedTuple):
    """Why a unit was not linted and what would let it be."""

    reason: str  # what stopped it, the same words every run ("Helm's engine is not installed")
    hint: str  # what to do ("pip install 'fieldwarden[render]'", "fix the path", "run `helm dependency build`")
    file: str  # project-relative defining file: kustomization.yaml, Chart.yaml, the GitOps object's file
    line: int = 1
    column: int = 1

    def message(self) -> str:
        """The finding's message: why, and what to do (the finding names its units)."""
        tail = f"; {self.hint}" if self.hint else ""
        return f"not linted: {self.reason}{tail}"


def defining_file(folder: str, name: str) -> str:
    """`name` in the project-relative `folder` (`.` is the project root)."""
    return name if folder == "." else f"{folder}/{name}"
