"""`wop check --v2 RUN`: a stored run as OpenWOP v2 serves it, against the bundled v2 envelope.

Real `python -m wopdsl` subprocesses on a real SQLite file.
"""

from __future__ import annotations

import json

from tests.cli.conftest import REPO, Wop

COUNCIL = REPO / "councils" / "release-team.toml"


def test_a_run_passes_the_v2_check(wop: Wop) -> None:
    assert wop("run", str(COUNCIL), "--run-id", "release-team-0001").returncode == 0
    done = wop("check", "--v2", "release-team-0001")
    assert done.returncode == 0, done.stdout
    assert "valid (OpenWOP v2 schemas" in done.stdout
    doc = json.loads(wop("check", "--v2", "release-team-0001", "--json").stdout)
    assert doc["valid"] is True and doc["violations"] == []


def test_the_v2_check_finds_what_v2_refuses(wop: Wop) -> None:
    # A run id too short for v2's tenant-bound grammar (<tenant>/<16+ characters>).
    assert wop("run", str(COUNCIL), "--run-id", "short-1").returncode == 0
    assert wop("check", "short-1").returncode == 0  # Valid v1.
    done = wop("check", "--v2", "short-1", "--json")
    assert done.returncode == 1
    found = json.loads(done.stdout)["violations"]
    assert {v["check"] for v in found} == {"envelope-v2"}
    assert all(v["message"].startswith("runId:") for v in found)
