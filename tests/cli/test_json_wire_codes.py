"""`--json` error documents carry OpenWOP's wire codes and details (issue 26).

Real `python -m wopdsl` subprocesses on real SQLite files. The human text on stderr keeps
DESIGN.md §10's `error[CODE]`; the JSON document carries the code the HTTP host answers.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import REPO, Wop

COUNCIL = REPO / "councils" / "conformance-multi-party-council.toml"
OVERSIZE = REPO / "councils" / "conformance-multi-party-council-oversize.toml"


def test_cli_json_documents_carry_the_wire_codes(wop: Wop, tmp_path: Path) -> None:
    done = wop("run", str(OVERSIZE), "--json", "--max-participants", "8")
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["status"] == "error"
    assert doc["error"]["code"] == "conversation_roster_exceeded"
    assert doc["error"]["details"]["maxParticipants"] == 8
    assert "error[validation_error]" in done.stderr  # The human text keeps DESIGN's code.
    done = wop("replay", "ghost-run", "--json")
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["error"]["code"] == "run_not_found"
    assert doc["error"]["details"] == {"runId": "ghost-run"}
    assert done.stderr.startswith("error[RUN_NOT_FOUND]: run ghost-run not found")
    # Negative: the same council within the limit runs.
    done = wop("run", str(OVERSIZE), "--json", "--max-participants", "64")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "completed"


def test_cli_reply_json_names_the_refused_speaker(wop: Wop) -> None:
    started = wop("run", str(COUNCIL), "--json", "--run-id", "council-1")
    assert json.loads(started.stdout)["status"] == "waiting-input", started.stderr
    payload = {"role": "agent", "speakerId": "host:conformance-intruder", "content": "hi"}
    done = wop("reply", "council-1", "--room", "convo", "--payload", json.dumps(payload),
               "--json")
    assert done.returncode == 2
    doc = json.loads(done.stdout)
    assert doc["runId"] == "council-1"
    assert doc["error"]["code"] == "conversation_speaker_not_participant"
    assert doc["error"]["details"]["speakerId"] == "host:conformance-intruder"
    payload["speakerId"] = "host:conformance-council-a"
    done = wop("reply", "council-1", "--room", "convo", "--payload", json.dumps(payload),
               "--json")
    assert json.loads(done.stdout)["status"] == "waiting-input", done.stderr
