"""`--json` prints one JSON document for an invalid council file too, and exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Wop

BAD_VALUE = '[council]\nid = "x"\ntask = 3\n'
BAD_SYNTAX = "[council\n"


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize(("text", "message", "location"), [
    (BAD_VALUE, "must be a string, got integer 3", "bad.toml:3:1"),
    (BAD_SYNTAX, "TOML syntax error", "bad.toml:1:9"),
])
def test_an_invalid_file_prints_status_invalid(wop: Wop, tmp_path: Path, command: str,
                                               text: str, message: str,
                                               location: str) -> None:
    (tmp_path / "bad.toml").write_text(text, encoding="utf-8")

    done = wop(command, "bad.toml", "--json", "--store", "memory:")

    assert done.returncode == 2, done
    doc = json.loads(done.stdout)  # One document, nothing else on stdout.
    assert doc["status"] == "invalid"
    error = doc["error"]
    assert set(error) == {"code", "message", "location", "hint", "problems"}
    assert error["code"] == "DECLARATION_INVALID"
    assert error["message"].startswith(message)
    assert error["location"] == location and error["hint"]
    assert error["problems"][0]["location"] == location
    assert done.stderr.startswith("error[DECLARATION_INVALID]")  # People still read stderr.


def test_validate_json_on_a_valid_file(wop: Wop, release_team: Path) -> None:
    done = wop("validate", str(release_team), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "status": "ok", "council": "release-team", "version": 1,
        "rooms": {"review": ["writer", "reviewer"]}, "members": ["writer", "reviewer"]}
