"""Shared text for the testing-plugin tests."""

from __future__ import annotations

from tests.published import RELEASE_TEAM_TOML

__all__ = ["INI", "RELEASE_TEAM_TOML"]



INI = '''\
[pytest]
addopts = -p no:cacheprovider
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
'''
"""The inner sessions' config: as strict as the project's own."""
