"""The recording proxy (wopdsl.testing.model_proxy) in front of the scripted model server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.llm.conftest import llm_council
from wopdsl.testing.model_proxy import ModelProxy
from wopdsl.testing.model_server import Answer, ScriptedModelServer


async def test_the_proxy_records_sets_fields_and_passes_streams_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedModelServer() as server, \
            ModelProxy(server.url, set_fields={"seed": 5}) as proxy:
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.url)
        assert proxy.url.endswith("/v1")
        server.add(Answer({"summary": "one", "posts": [
            {"roomId": "desk", "text": "Check?", "mentions": ["critic"]}]}, chunks=8),
            member="writer")
        server.add(Answer({"summary": "two"}), member="critic")
        run = await llm_council().arun(store=str(tmp_path / "runs.db"))
    assert run.status == "completed", run.error
    assert [c.path for c in proxy.calls] == ["/v1/chat/completions"] * 2
    assert [c.status for c in proxy.calls] == [200, 200]
    assert all(c.body["seed"] == 5 and c.seconds is not None for c in proxy.calls)
    assert [r.body["seed"] for r in server.requests] == [5, 5]
    assert any(e["type"] == "output.chunk" for e in run.events)


def test_the_proxy_only_forwards_to_http() -> None:
    with pytest.raises(ValueError, match="http:// servers only"):
        ModelProxy("https://api.example.com/v1")
