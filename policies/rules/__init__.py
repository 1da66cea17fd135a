"""One module per rule: metadata, documentation and a pure check (see policies/rule.py)."""
