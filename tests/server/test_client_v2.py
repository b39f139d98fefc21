"""The official v2 client (openwop-client 2.7) drives every journey of docs/guides/serve.md.

The 1.8 client (v1 wire) is a dev dependency and drives the host in test_client_v1.py; the
2.x client is the same distribution name, so it is installed from PyPI into a scratch
folder and runs in a subprocess (client27_journeys.py) against a real `wop serve` on
loopback: discovery, create, SSE with a `Last-Event-ID` reconnect, poll, resolve an
interrupt as a person and as an external agent, cancel, fork, error envelopes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.openwop_client27 import client27_env
from tests.server.conftest import ALICE, COUNCILS, Served

SCRIPT = Path(__file__).resolve().parent / "client27_journeys.py"


@pytest.fixture
def served(serve: Any, tokens_file: Path) -> Served:
    host: Served = serve(COUNCILS / "desk.toml", args=("--conformance", "--tokens",
                                                       str(tokens_file)), token=ALICE)
    return host


def journey(client27: Path, served: Served, name: str) -> Any:
    env = client27_env(client27)
    done = subprocess.run([sys.executable, str(SCRIPT), served.url, ALICE, name], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_discovery_of_both_majors(client27: Path, served: Served) -> None:
    got = journey(client27, served, "discovery")
    assert got["versions"] == ["1.0", "2.0"] and got["preferred"] == "1.0"
    assert {"conversationPrimitive", "multiPartyConversation", "limits"} <= set(got["families"])
    assert got["maxParticipants"] == 32
    assert "conformance-multi-party-council" in got["fixtures"]
    assert all(not path.startswith("/v1") for path in got["openapi"])


def test_create_stream_reconnect_poll_and_resolve_as_a_person(client27: Path,
                                                             served: Served) -> None:
    got = journey(client27, served, "human")
    assert got["runId"].startswith("alice/desk-")  # Tenant-bound: <tenant>/<opaque>.
    assert got["eventsUrl"] == "/runs/" + got["runId"].replace("/", "~2F") + "/events"
    assert got["owner"] == "alice" and got["snapStatus"] == "waiting-input"
    assert got["answer"] == [got["runId"], "room:chat"]
    assert got["types"][0] == "run.started" and got["types"][-1] == "run.completed"
    assert got["runIds"] == [got["runId"]]
    assert got["sequences"] == list(range(len(got["sequences"])))
    assert got["texts"] == ["Hello! What do you need, @visitor?", "Where is @bot?",
                            "You asked: Where is @bot?"]
    # Reconnect with Last-Event-ID: exactly the events after it, none twice.
    assert got["resumed"] == list(range(got["half"] + 1, len(got["sequences"])))
    assert got["polled"] and got["pollTerminal"] and got["pollStatus"] == "completed"
    assert got["tail"] == [0, True] and got["final"] == "completed"


def test_resolve_as_an_external_agent(client27: Path, served: Served) -> None:
    got = journey(client27, served, "agent")
    assert got["refused"] == [422, "conversation_speaker_not_participant",
                              "host:conformance-intruder"]
    assert got["opened"] == [f"host:conformance-council-{m}" for m in "abc"]
    assert got["speakers"] == got["opened"]
    assert got["last"] == "run.completed"


def test_cancel_and_fork(client27: Path, served: Served) -> None:
    got = journey(client27, served, "cancel")
    assert got["cancelled"] == [True, "cancelled"]
    assert got["last"] == ["run.cancelled", "enough"] and got["final"] == "cancelled"
    got = journey(client27, served, "fork")
    assert got == {"source": True, "new": True, "mode": "replay", "status": "completed",
                   "sameChannels": True, "tenant": "alice"}


def test_errors_are_v2_envelopes(client27: Path, served: Served) -> None:
    got = journey(client27, served, "errors")
    assert got == {"missing": [404, "not_found"], "foreign": [403, "id_tenant_mismatch"],
                   "workflow": [404, "not_found"]}  # v2 registry codes (v1: run_not_found …).
