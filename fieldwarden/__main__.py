"""`python -m fieldwarden`."""

from .cli import main

raise SystemExit(main())
