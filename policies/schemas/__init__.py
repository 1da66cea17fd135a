"""Kubernetes API schemas: compiled to one compact form, and the validator that walks it.

The room owns `form` (the compiled form and the compiler from an OpenAPI / JSON Schema node:
the built-in kinds' definitions and a CRD's `openAPIV3Schema` alike), `validate` (pure:
compiled schema + object -> problems with field paths) and `builtin` (the built-in kinds of
one Kubernetes version, from the `kubernetes-validate` package's data, compiled per kind and
kept in the user's cache), with `enums` (the built-in enum values of one release, from the API
server's /openapi/v3, shipped as enums-<version>.json; `enums_refresh` is the maintainer's command
that writes it from a live server, through kubectl, and no lint imports it). It imports the
standard library and the policy core's plain modules only (records, config's defaults); the rules
FW601/FW602 are its users.
"""
