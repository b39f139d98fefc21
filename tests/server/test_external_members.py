"""External members: an outside agent's turns through the interrupts endpoint, with the
``interrupt.requested`` / ``interrupt.resolved`` events of each wait."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import ALICE, BOB

PANEL = """\
[council]
id = "panel"
task = "Decide."
max_turns_per_member = 3

[[rooms]]
id = "hall"
members = ["chair", "expert"]

[[members]]
id = "chair"
role = "user"
engine = "human"
principal = "alice"

[[members]]
id = "expert"
role = "outside expert"
engine = "external"
initial_turn = false
principal = "bob"
"""


def test_an_external_agent_speaks_through_the_interrupts_endpoint(
        serve: Any, tmp_path: Path, tokens_file: Path) -> None:
    openwop_client = pytest.importorskip("openwop_client")
    council = tmp_path / "panel.toml"
    council.write_text(PANEL)
    served = serve(council, args=("--tokens", str(tokens_file)))
    alice = openwop_client.OpenwopClient(base_url=served.url, api_key=ALICE, timeout=20)
    bob = openwop_client.OpenwopClient(base_url=served.url, api_key=BOB, timeout=20)
    run_id = alice.runs_create(openwop_client.CreateRunRequest(workflowId="panel")).runId
    streamed: list[Any] = []
    reader = threading.Thread(target=lambda: streamed.extend(
        alice.runs_events(run_id, timeout_seconds=30)), daemon=True)
    reader.start()
    served.token = ALICE
    served.wait_status(run_id, "waiting-input")
    ask = openwop_client.ResolveInterruptRequest(resumeValue={
        "role": "user", "content": {"text": "Your view, @expert?", "mentions": ["expert"]}})
    alice.interrupts_resolve_by_run(run_id, "room:hall", ask)
    served.wait_status(run_id, "waiting-input")
    answer = {"operation": "exchange", "turn": {
        "role": "agent", "speakerId": "host:expert",
        "content": {"text": "Ship it, @chair.", "mentions": ["chair"]}}}
    with pytest.raises(openwop_client.WopError) as wrong:  # alice may not speak as expert
        alice.interrupts_resolve_by_run(run_id, "room:hall",
                                        openwop_client.ResolveInterruptRequest(answer))
    assert wrong.value.status == 403
    bob.interrupts_resolve_by_run(run_id, "room:hall",
                                  openwop_client.ResolveInterruptRequest(answer))
    close = {"operation": "close", "turn": {"role": "user", "speakerId": "host:chair",
                                            "content": {"text": "Thanks."}}}
    alice.interrupts_resolve_by_run(run_id, "room:hall",
                                    openwop_client.ResolveInterruptRequest(close))
    reader.join(20)
    assert not reader.is_alive()
    types = [e.type for e in streamed]
    assert types[-1] == "run.completed"
    requested = [e for e in streamed if e.type == "interrupt.requested"
                 and e.payload["kind"] == "conversation.exchange"]
    assert requested and "interrupt.resolved" in types
    turns = [e.payload["turn"] for e in streamed if e.type == "conversation.exchanged"]
    expert = next(t for t in turns if t["content"]["text"] == "Ship it, @chair.")
    assert (expert["role"], expert["speakerId"]) == ("agent", "host:expert")
