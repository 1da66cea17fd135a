"""Real AdmissionReview samples (tests/fixtures/admission/) as the rules receive them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from fieldwarden.policies.admission import AdmissionRequest

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "admission"


def review(name: str) -> dict[str, Any]:
    """A fresh copy of a captured AdmissionReview body, to derive variants from."""
    data: dict[str, Any] = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    return data


def request(body: dict[str, Any], **changes: Any) -> AdmissionRequest:
    """The AdmissionRequest of a review body (deep-copied), with fields replaced by `changes`."""
    req = copy.deepcopy(body["request"])
    user = req.get("userInfo") or {}
    built = AdmissionRequest(
        uid=req["uid"],
        operation=req["operation"],
        group=req["kind"]["group"],
        version=req["kind"]["version"],
        kind=req["kind"]["kind"],
        resource=req["resource"]["resource"],
        sub_resource=req.get("subResource", ""),
        namespace=req.get("namespace", ""),
        name=req.get("name", ""),
        object=req.get("object"),
        old_object=req.get("oldObject"),
        dry_run=bool(req.get("dryRun")),
        username=user.get("username", ""),
        groups=tuple(user.get("groups", ())),
    )
    return built._replace(**changes)
