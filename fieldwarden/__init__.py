"""fieldwarden: one policy set for the admission webhook and the manifest linter."""

__version__ = "0.1.0"
