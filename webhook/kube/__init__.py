"""The edge to the Kubernetes API shared by the inventory and the gate controller."""
