"""Fixtures for llm members: a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from wopdsl import Council
from wopdsl.testing.model_server import ScriptedModelServer

KEY_ENV = "WOPDSL_TEST_MODEL_KEY"
KEY = "sk-test-0000"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """A started scripted server; ``OPENAI_BASE_URL`` and the key variable point at it."""
    with ScriptedModelServer() as model_server:
        monkeypatch.setenv("OPENAI_BASE_URL", model_server.url)
        monkeypatch.setenv(KEY_ENV, KEY)
        yield model_server


def llm_council(*, members: dict[str, dict[str, Any]] | None = None,
                rooms: dict[str, list[str]] | None = None, profile: dict[str, Any] | None = None,
                council_id: str = "llm-team", task: str = "Review the plan.",
                **settings: Any) -> Council:
    """A council of llm members on one profile ``m`` (base_url from ``OPENAI_BASE_URL``)."""
    council = Council(council_id, task=task, **settings)
    council.model("m", model="test-model", api_key_env=KEY_ENV,
                  **{"retry_backoff_ms": 1, **(profile or {})})
    members = members if members is not None else {"writer": {}, "critic": {
        "initial_turn": False}}
    for room, who in (rooms if rooms is not None else {"desk": list(members)}).items():
        council.room(room, members=who)
    for member, options in members.items():
        council.add_member(member, role=options.pop("role", member), engine="llm", model="m",
                           **options)
    return council
