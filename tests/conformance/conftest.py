"""Fixtures of the conformance tests: the CLI tests' real `wop` subprocess runner."""

from tests.cli.conftest import wop

__all__ = ["wop"]
