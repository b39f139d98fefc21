"""Fixtures for the testing-plugin tests: the release-team council of DESIGN.md §4."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.testing.helpers import RELEASE_TEAM_TOML


@pytest.fixture
def release_team_path(tmp_path: Path) -> Path:
    """DESIGN.md §4's council file, written fresh (the repo's councils/ may evolve)."""
    path = tmp_path / "councils" / "release-team.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RELEASE_TEAM_TOML, encoding="utf-8")
    return path


def pytest_configure(config: pytest.Config) -> None:
    # Registered here too (the llm tests register it in pyproject.toml): the recording test
    # against the real small model carries it.
    config.addinivalue_line("markers", "real_model: runs against the real small model "
                            "($WOPDSL_TEST_LLAMA_URL); fails in CI when missing, skips otherwise")
