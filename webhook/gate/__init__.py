"""The readiness-gate controller and the in-place image update protocol that rely on the gate."""
