"""Fixtures for members with tools: the scripted model server, an effects file, councils."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.llm.conftest import KEY_ENV, server
from wopdsl import Council

__all__ = ["KEY_ENV", "server"]  # the scripted model server fixture, as the llm tests use it

EFFECTS_ENV = "WOPDSL_TEST_EFFECTS"
"""The file the test tools append one line to per effect (they count their own effects)."""


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The effects file (empty); the test tools append to it."""
    path = tmp_path / "effects.jsonl"
    path.write_text("")
    monkeypatch.setenv(EFFECTS_ENV, str(path))
    return path


def effects_in(path: Path) -> list[dict[str, Any]]:
    """The effects the tools recorded, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def record_effect(**fields: Any) -> None:
    """What a test tool does: one line in the effects file, flushed at once."""
    with open(os.environ[EFFECTS_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(fields) + "\n")
        out.flush()
        os.fsync(out.fileno())


def tool_council(*, tools: list[str], policy: dict[str, dict[str, Any]] | None = None,
                 profile: dict[str, Any] | None = None, humans: tuple[str, ...] = (),
                 member: dict[str, Any] | None = None, **settings: Any) -> Council:
    """One llm member ``sre`` with ``tools`` in room ``ops`` (and any human members)."""
    council = Council("ops-team", task="Fix the outage.", **settings)
    council.model("m", model="test-model", api_key_env=KEY_ENV,
                  **{"retry_backoff_ms": 1, **(profile or {})})
    council.room("ops", members=["sre", *humans])
    council.add_member("sre", role="sre", engine="llm", model="m", tools=tools,
                       tool_policy=policy, **(member or {}))
    for human in humans:
        council.human(human)
    return council
