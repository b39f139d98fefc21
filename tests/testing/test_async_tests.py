"""The guide's ``async def`` tests on a fresh project that installed only ``wopdsl[testing]``.

Each test lays out a new project in a temporary folder (a council file and the shipped
example test, no pytest config at all) and runs pytest on it in a subprocess of this venv.
``-p no:asyncio -p no:anyio`` turns off the async plugins this venv has and a user with only
the extra (pytest, syrupy, wopdsl) would not, so what runs the coroutines is the plugin.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "test_release_team.py"
COMMITTED = ROOT / "examples" / "__snapshots__" / "test_release_team"
ONLY_THE_EXTRA = ("-p", "no:asyncio", "-p", "no:anyio")
"""The async plugins of this venv, off: a fresh ``pip install 'wopdsl[testing]'`` has none."""
QUIET = ("-p", "no:cacheprovider", "-p", "no:textual-snapshot", "-p", "no:hypothesispytest",
         "-W", "error")


@pytest.fixture
def fresh_project(tmp_path: Path) -> Path:
    """The shipped example test and its council in an otherwise empty folder (no ini)."""
    (tmp_path / "councils").mkdir()
    shutil.copy(ROOT / "councils" / "release-team.toml", tmp_path / "councils")
    shutil.copy(EXAMPLE, tmp_path)
    return tmp_path


def pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", *QUIET, *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_guides_async_test_runs_with_only_the_testing_extra(fresh_project: Path) -> None:
    created = pytest_in(fresh_project, *ONLY_THE_EXTRA, "--snapshot-update", "-v")
    assert created.returncode == 0, created.stdout + created.stderr
    assert "test_a_person_joins_the_review PASSED" in created.stdout
    written = fresh_project / "__snapshots__" / "test_release_team"
    for name in ("test_a_person_joins_the_review[waiting].txt",
                 "test_a_person_joins_the_review[completed].txt"):
        assert (written / name).read_bytes() == (COMMITTED / name).read_bytes()

    again = pytest_in(fresh_project, *ONLY_THE_EXTRA)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "3 passed" in again.stdout
    assert "5 snapshots passed." in again.stdout


def test_pytest_asyncio_keeps_the_tests_it_claims_and_strict_mode_leaves_ours(
    fresh_project: Path,
) -> None:
    (fresh_project / "__snapshots__").mkdir()
    shutil.copytree(COMMITTED, fresh_project / "__snapshots__" / "test_release_team")
    # pytest-asyncio installed, strict mode (its default): the unmarked test is the plugin's.
    # (The loop scope is set only because pytest-asyncio warns when it is not, and -W error.)
    (fresh_project / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n", encoding="utf-8")
    strict = pytest_in(fresh_project)
    assert strict.returncode == 0, strict.stdout + strict.stderr
    # Auto mode: pytest-asyncio runs every coroutine test itself, ours included.
    (fresh_project / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n",
        encoding="utf-8")
    auto = pytest_in(fresh_project)
    assert auto.returncode == 0, auto.stdout + auto.stderr
    assert "3 passed" in auto.stdout


def test_an_async_test_without_the_council_fixtures_is_not_taken_over(tmp_path: Path) -> None:
    (tmp_path / "test_other.py").write_text(
        "async def test_other():\n    pass\n", encoding="utf-8")

    result = pytest_in(tmp_path, *ONLY_THE_EXTRA)

    assert result.returncode == 1
    assert "async def functions are not natively supported" in result.stdout
