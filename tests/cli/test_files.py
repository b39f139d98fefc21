"""Files wop writes: room files get the user's umask; every store file is git-ignored."""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import REPO, Wop, _env


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_room_files_are_created_with_the_umask(wop: Wop, tmp_path: Path, release_team: Path,
                                               umask: int, mode: int) -> None:
    assert wop("run", str(release_team), "--run-id", "m1").returncode == 0

    def with_umask() -> None:
        os.umask(umask)

    done = subprocess.run([sys.executable, "-m", "wopdsl", "rooms", "m1", "--out", "out"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=120, check=False, preexec_fn=with_umask)
    assert done.returncode == 0, done.stderr
    (room,) = json.loads(done.stdout)["rooms"]
    assert stat.S_IMODE((tmp_path / room["path"]).stat().st_mode) == mode
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["room-001.txt"]  # No temp left.


def test_every_file_of_a_store_is_git_ignored(wop: Wop, tmp_path: Path,
                                              human_council: Path) -> None:
    # A waiting run: claimed, appended to, and left open with its WAL files in place.
    assert wop("--store", "s/runs.db", "run", str(human_council), "--run-id", "g").returncode == 3
    from wopdsl import open_store

    store = open_store(tmp_path / "s" / "runs.db")  # Holds the WAL and -shm open.
    try:
        assert store.read("g")
        made = sorted(p.name for p in (tmp_path / "s").iterdir())
    finally:
        store.close()
    patterns = [line.strip() for line in (REPO / ".gitignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert {"runs.db", "runs.db-claims"} <= set(made)
    for name in made:
        assert any(fnmatch.fnmatch(name, p) for p in patterns), (name, patterns)
