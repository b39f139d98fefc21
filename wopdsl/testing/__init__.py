"""Testing helpers for wopdsl users: the pytest plugin and the store conformance suite."""
