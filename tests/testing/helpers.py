"""Shared text and helpers for the testing-plugin tests."""

from __future__ import annotations

import pytest

from tests.published import RELEASE_TEAM_TOML

__all__ = ["INI", "RELEASE_TEAM_TOML", "UNRELATED_PLUGINS_OFF", "run", "snapshot_files"]


INI = '''\
[pytest]
addopts = -p no:cacheprovider
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
'''
"""The inner sessions' config: as strict as the project's own."""


UNRELATED_PLUGINS_OFF = ("-p", "no:textual-snapshot", "-p", "no:hypothesispytest",
                         "-p", "no:benchmark", "-p", "no:xdist")
"""Plugins of this environment that the inner sessions do not need.

pytest-textual-snapshot deletes a process-wide temp dir when any session ends, and the others
would be imported (and assertion-rewritten) afresh by every inner session.
"""

XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")
"""What pytest-xdist sets in its workers: an inner session is a whole session of its own.

syrupy reads them to tell a worker (which leaves unused snapshots to the controller) from a
lone session, so an inner session run inside a worker would never report unused snapshots.
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run an inner session in this process (fast), keeping the outer syrupy session intact."""
    import syrupy

    # syrupy keeps its session in a module global; the inner session would replace ours.
    saved = syrupy._syrupy
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name in XDIST_VARIABLES:
                patch.delenv(name, raising=False)
            return pytester.runpytest(*UNRELATED_PLUGINS_OFF, *args)
    finally:
        syrupy._syrupy = saved


def snapshot_files(pytester: pytest.Pytester) -> dict[str, str]:
    folder = pytester.path / "__snapshots__"
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}
