"""RFC 0109 over HTTP: a host serving llm members advertises model provenance and stamps it.

A real ``wop serve`` subprocess runs an llm council against the scripted OpenAI-compatible
server on loopback; the official ``openwop-client`` reads the discovery document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
openwop_client = pytest.importorskip("openwop_client", reason="needs openwop-client (dev)")
from openwop_client import CreateRunRequest, ForkRunRequest, OpenwopClient  # noqa: E402

from tests.llm.conftest import KEY, KEY_ENV, llm_council  # noqa: E402
from tests.openwop_schemas import load_schemas  # noqa: E402
from tests.server.conftest import COUNCILS  # noqa: E402
from wopdsl.testing.model_server import Answer, ScriptedModelServer  # noqa: E402


def _post(summary: str, text: str, *mentions: str) -> dict[str, Any]:
    return {"summary": summary,
            "posts": [{"roomId": "desk", "text": text, "mentions": list(mentions)}]}


def test_llm_host_advertises_and_stamps_provenance(serve: Any, tmp_path: Path) -> None:
    council = llm_council(profile={"provider": "acme"})
    path = tmp_path / "llm-team.toml"
    path.write_text(council.to_toml())
    with ScriptedModelServer() as model:
        model.add(Answer(_post("Draft.", "Please check, @critic.", "critic")), member="writer")
        model.add(Answer(_post("Checked.", "Fine by me.")), member="critic")
        served = serve(path, env={"OPENAI_BASE_URL": model.url, KEY_ENV: KEY})
        client = OpenwopClient(base_url=served.url, api_key="unused", timeout=20)
        caps = client.discovery_capabilities()
        assert caps.conversationTurnModelProvenance is not None
        assert caps.conversationTurnModelProvenance.supported is True
        status, doc, _ = served.request("GET", "/.well-known/openwop")
        assert status == 200 and doc["conversationTurnModelProvenance"] == {"supported": True}

        created = client.runs_create(CreateRunRequest(workflowId="llm-team"))
        served.wait_status(created.runId, "completed")
        status, page, _ = served.request("GET", f"/v1/runs/{created.runId}/events")
        assert status == 200, page
        # A fork reads the provenance verbatim: the copied turn keeps it, nothing re-resolves.
        model.default = Answer({"summary": "Nothing more.", "posts": []})
        calls = len(model.requests)
        cut = next(e["sequence"] for e in page["events"]
                   if e["type"] == "conversation.exchanged") + 1
        forked = client.runs_fork(created.runId, ForkRunRequest(fromSeq=cut, mode="branch"))
        served.wait_status(forked.runId, "completed")
        assert [r.member for r in model.requests[calls:]] == ["critic"]  # Only the new turn.
        status, fork_page, _ = served.request("GET", f"/v1/runs/{forked.runId}/events")
    events = page["events"]
    load_schemas().check_events(events)
    turns = [e["payload"]["turn"] for e in events if e["type"] == "conversation.exchanged"]
    assert [t["content"]["text"] for t in turns] == ["Please check, @critic.", "Fine by me."]
    assert all(t["role"] == "agent" for t in turns)
    assert [t["agent"] for t in turns] == [{"model": {"provider": "acme",
                                                      "model": "test-model"}}] * 2
    assert KEY not in served.logs() and KEY not in str(page)
    assert status == 200, fork_page
    load_schemas().check_events(fork_page["events"])
    copied = [e["payload"]["turn"] for e in fork_page["events"]
              if e["type"] == "conversation.exchanged"]
    assert copied[0] == turns[0]  # The writer's turn, copied as it was.


def test_a_host_without_llm_members_does_not_advertise_it(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml")
    caps = OpenwopClient(base_url=served.url, api_key="unused", timeout=20).discovery_capabilities()
    assert caps.conversationTurnModelProvenance is None
    status, doc, _ = served.request("GET", "/.well-known/openwop")
    assert status == 200 and "conversationTurnModelProvenance" not in doc
