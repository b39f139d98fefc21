"""`--store` targets that cannot work get a clear STORE_ERROR; read-only stores stay readable."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import REPO, Wop, _env, json_lines, stored_events


def test_a_folder_is_refused_with_the_file_to_use(wop: Wop, tmp_path: Path,
                                                  release_team: Path) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    for args in (("runs",), ("run", str(release_team)), ("events", "r1")):
        done = wop("--store", str(folder), *args)
        assert done.returncode == 2, done
        assert done.stderr.startswith(f"error[STORE_ERROR]: {folder} is a folder"), done.stderr
        assert f"hint: point --store (or WOP_STORE) at a file, e.g. {folder / 'runs.db'}" \
            in done.stderr
        assert "No runs" not in done.stdout and "no runs" not in done.stdout
    assert list(folder.iterdir()) == []


def test_an_empty_store_is_refused(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    for args in (("runs",), ("run", str(release_team))):
        done = wop("--store", "", *args)
        assert done.returncode == 2, done
        assert done.stderr.startswith("error[STORE_ERROR]: the store target is empty")
        assert "hint: name a store file" in done.stderr
    assert not (tmp_path / ".wop").exists()  # Nothing fell back to the default store.


def _unprivileged() -> list[str]:
    """A command prefix under which chmod really denies writing (root bypasses it)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:  # pragma: no cover - util-linux is on every CI image we use.
        pytest.skip("running as root without setpriv: a read-only file cannot be made")
    # Root without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH obeys file modes like anybody.
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


@pytest.fixture
def read_only_store(wop: Wop, tmp_path: Path, release_team: Path) -> Iterator[Path]:
    """A store with one completed run (`r1`), the file and its folder made read-only."""
    folder = tmp_path / "ro"
    db = folder / "runs.db"
    assert wop("--store", str(db), "run", str(release_team), "--run-id", "r1").returncode == 0
    for name in os.listdir(folder):
        (folder / name).chmod(0o444)
    folder.chmod(0o555)
    try:
        yield db
    finally:
        folder.chmod(0o755)


def _wop_read_only(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = _env()
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([*_unprivileged(), sys.executable, "-m", "wopdsl", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)


def test_a_read_only_store_can_be_read(tmp_path: Path, read_only_store: Path) -> None:
    db = str(read_only_store)
    check = subprocess.run([*_unprivileged(), sys.executable, "-c",
                            f"import os; print(os.access({str(read_only_store.parent)!r}, "
                            f"os.W_OK), os.access({db!r}, os.W_OK))"],
                           capture_output=True, text=True, check=True)
    assert check.stdout.split() == ["False", "False"]  # The condition is real.
    events = stored_events(read_only_store, "r1")

    runs = _wop_read_only(tmp_path, "--store", db, "runs", "--json")
    assert runs.returncode == 0, runs.stderr
    assert [(r["runId"], r["status"]) for r in json.loads(runs.stdout)] == [("r1", "completed")]
    listed = _wop_read_only(tmp_path, "--store", db, "events", "r1")
    assert listed.returncode == 0, listed.stderr
    assert json_lines(listed.stdout) == events
    transcript = _wop_read_only(tmp_path, "--store", db, "transcript", "r1")
    assert transcript.returncode == 0 and "room review" in transcript.stdout
    replay = _wop_read_only(tmp_path, "--store", db, "replay", "r1")
    assert replay.returncode == 0 and f"completed: run r1 ({len(events)} events)" \
        in replay.stdout
    assert sorted(os.listdir(read_only_store.parent)) == ["runs.db", "runs.db-claims"]


def test_writing_a_read_only_store_says_why_and_how(tmp_path: Path, read_only_store: Path,
                                                    release_team: Path) -> None:
    db = str(read_only_store)
    before = stored_events(read_only_store, "r1")
    for args in (("run", str(release_team)), ("resume", "r1"),
                 ("reply", "r1", "--room", "review", "hello")):
        done = _wop_read_only(tmp_path, "--store", db, *args)
        assert done.returncode == 2, done
        assert done.stderr.startswith(f"error[STORE_ERROR]: cannot write the store {db}: "
                                      "the file is read-only"), done.stderr
        assert "hint: make" in done.stderr and "writable" in done.stderr
        assert "Traceback" not in done.stderr
    assert stored_events(read_only_store, "r1") == before


def test_a_store_in_a_read_only_folder_is_refused_to_writers(tmp_path: Path,
                                                             release_team: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        done = _wop_read_only(tmp_path, "--store", str(folder / "runs.db"), "run",
                              str(release_team))
        listed = _wop_read_only(tmp_path, "--store", str(folder / "runs.db"), "runs")
    finally:
        folder.chmod(0o755)
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"error[STORE_ERROR]: cannot write the store "
                                  f"{folder / 'runs.db'}: its folder {folder} is read-only")
    assert listed.returncode == 0 and "no runs in" in listed.stdout


def test_hints_after_a_run_on_the_memory_store_name_no_command_that_needs_it(
        wop: Wop, tmp_path: Path, human_council: Path, failing_council: Path) -> None:
    failed = wop("--store", "memory:", "run", str(failing_council))
    waiting = wop("--store", "memory:", "run", str(human_council))

    assert failed.returncode == 1 and failed.stderr.startswith("error[TEAM_NODE_FAILED]")
    assert waiting.returncode == 3 and "waiting for input: me in room desk" in waiting.stdout
    for done in (failed, waiting):
        text = done.stdout + done.stderr
        assert "wop " not in text and "wop --store" not in text, text
        assert "the memory: store ends with this command" in text
        assert "--store .wop/runs.db" in text
    assert not (tmp_path / ".wop").exists()
