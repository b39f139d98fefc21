"""The example test in examples/ runs as users run it, and its snapshots are byte-stable.

Snapshots must not depend on the process, the machine or the hash seed: the example is run
in fresh interpreters with different ``PYTHONHASHSEED`` values and the files they write are
compared byte for byte with each other and with the committed ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.testing.helpers import INI

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "test_release_team.py"
COMMITTED = ROOT / "examples" / "__snapshots__" / "test_release_team"
QUIET = ("-p", "no:textual-snapshot", "-p", "no:hypothesispytest", "-p", "no:benchmark")
"""Unrelated plugins of this environment, switched off to keep the subprocesses quick."""


def pytest_in_subprocess(cwd: Path, hash_seed: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_example_passes_against_its_committed_snapshots() -> None:
    result = pytest_in_subprocess(ROOT, "1", "examples/test_release_team.py")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 snapshots passed." in result.stdout
    assert sorted(files(COMMITTED)) == [
        "test_a_person_joins_the_review[completed].txt",
        "test_a_person_joins_the_review[waiting].txt",
        "test_a_writer_that_skips_review.txt",
        "test_release_team.1.json",
        "test_release_team.txt",
    ]


def test_snapshots_are_byte_identical_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    (tmp_path / "councils").mkdir()
    shutil.copy(ROOT / "councils" / "release-team.toml", tmp_path / "councils")
    shutil.copy(EXAMPLE, tmp_path)
    (tmp_path / "pytest.ini").write_text(INI, encoding="utf-8")
    written = tmp_path / "__snapshots__" / "test_release_team"

    generated = []
    for seed in ("0", "4242"):
        if written.exists():
            shutil.rmtree(written)
        result = pytest_in_subprocess(tmp_path, seed, "test_release_team.py", "--snapshot-update")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "5 snapshots generated." in result.stdout
        generated.append(files(written))

    assert generated[0] == generated[1]
    assert generated[0] == files(COMMITTED)
