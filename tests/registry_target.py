"""A module imported only by tests/test_registry.py's lazy-target test."""

VALUE = {"loaded": True}
