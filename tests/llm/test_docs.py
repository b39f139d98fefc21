"""docs/guides/llm.md shows the real defaults and the exact request a member sends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wopdsl import load
from wopdsl.agents.llm import DEFAULT_SYSTEM_PROMPT, DEFAULT_TURN_PROMPT, REPAIR_PROMPT
from wopdsl.testing.model_server import ScriptedModelServer
from wopdsl.testing.review_answers import review_answer

REPO = Path(__file__).resolve().parents[2]
GUIDE = (REPO / "docs" / "guides" / "llm.md").read_text(encoding="utf-8")


def block(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n```\w+\n(.*?)```", GUIDE, re.S)
    assert found, f"no code block after <!-- {marker} --> in docs/guides/llm.md"
    return found.group(1)


def test_the_guide_shows_the_default_prompts() -> None:
    assert block("default-system-prompt") == DEFAULT_SYSTEM_PROMPT
    assert block("default-turn-prompt") == DEFAULT_TURN_PROMPT + "\n"
    assert block("repair-prompt") == REPAIR_PROMPT + "\n"


def test_the_guide_shows_the_exact_request(server: ScriptedModelServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    server.default = review_answer
    run = load(REPO / "councils" / "llm-review.toml").run(store="memory:")
    assert run.status == "completed"
    captured = server.requests[0].body
    assert json.loads(block("captured-request")) == captured
    assert block("captured-request") == json.dumps(captured, indent=2, ensure_ascii=False) + "\n"


def test_the_guide_shows_the_answer_fields() -> None:
    from wopdsl.agents.llm.prompts import answer_fields

    table = GUIDE.split("<!-- answer-fields -->\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    assert [(r[0].strip("| `"), r[1], r[2].rstrip(" |")) for r in rows] == [
        (f["name"], f["kind"], f["description"]) for f in answer_fields(True, votes=True)]
