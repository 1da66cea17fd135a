"""Which HPAs and VPAs exist: a static file, or a live cluster listed and watched."""
