"""The PostgreSQL tests' server fixture: it skips without a server, except in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/store/test_postgres.py::test_the_store_is_picked_from_wop_store"


def _pytest(ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"WOPDSL_TEST_POSTGRES", "CI"}}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rs", TARGET], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_a_missing_server_fails_the_tests(ci: str) -> None:
    result = _pytest(ci)
    assert result.returncode == 1, result.stdout
    assert "CI never skips these tests" in result.stdout
    assert "skipped" not in result.stdout.splitlines()[-1]


def test_elsewhere_a_missing_server_skips_them_and_says_how_to_start_one() -> None:
    result = _pytest(None)
    assert result.returncode == 0, result.stdout
    assert "1 skipped" in result.stdout
    assert 'WOPDSL_TEST_POSTGRES="$(.ci/postgres.sh)"' in result.stdout
