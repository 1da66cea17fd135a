"""Reading Prometheus text as Prometheus does (prometheus-client's parser): samples by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]


def samples(text: bytes | str) -> dict[tuple[str, Labels], float]:
    """Every sample, by (name, labels sorted by name)."""
    if isinstance(text, bytes):
        text = text.decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(text: bytes | str, name: str, **labels: str) -> float:
    """One sample's value; KeyError naming it when the text has no such sample."""
    found = samples(text).get((name, tuple(sorted(labels.items()))))
    if found is None:
        raise KeyError(f"no sample {name}{labels}")
    return found


def series(text: bytes | str, name: str) -> list[dict[str, str]]:
    """The label sets of the samples called `name`."""
    return [dict(labels) for (found, labels) in samples(text) if found == name]
