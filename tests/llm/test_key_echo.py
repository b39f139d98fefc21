"""A model server that echoes the key — verbatim, base64-encoded, reversed, upper case; in an
answer streamed in small pieces, in the model name it reports, in an error body — never gets
it stored or printed: searched in the CLI's output, the events and the database file."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from tests.llm.test_cli import REPO, SENTINEL, wop
from wopdsl.testing.model_server import Answer, CapturedRequest, Failure, ScriptedModelServer

B64 = base64.b64encode(SENTINEL.encode()).decode()
FORMS = [SENTINEL, SENTINEL[::-1], SENTINEL.upper(), B64, B64.rstrip("="),
         base64.urlsafe_b64encode(SENTINEL.encode()).decode().rstrip("="),
         # inside a longer base64 text (the key after "Bearer ")
         base64.b64encode(f"Bearer {SENTINEL}".encode()).decode()[12:-8]]


def echo(request: CapturedRequest) -> Answer | Failure:
    if request.member == "critic":
        return Failure(400, f"bad key {SENTINEL} ({B64}, {SENTINEL[::-1]}, {SENTINEL.upper()})")
    wrapped = base64.b64encode(f"Bearer {SENTINEL}".encode()).decode()
    escaped = json.dumps(SENTINEL).replace("S", "\\u0053")  # a JSON escape spells it too
    text = (f'{{"summary": "my key is {SENTINEL}", "posts": [{{"roomId": "desk", '
            f'"text": "{B64} {SENTINEL[::-1]} {SENTINEL.upper()} {wrapped} " , '
            f'"mentions": ["critic"]}}], '
            f'"data": {{"k": {escaped}}}}}')
    return Answer(text, chunks=len(text) // 3)


@pytest.fixture
def echoing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedModelServer:
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path / "councils")
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    server = ScriptedModelServer(model_name=f"served-{SENTINEL}").start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.default = echo
    return server


@pytest.mark.slow
def test_an_echoed_key_is_never_stored_or_printed(echoing: ScriptedModelServer,
                                                  tmp_path: Path) -> None:
    try:
        done = wop(tmp_path, "run", "councils/llm-review.toml", "--run-id", "echo")
    finally:
        echoing.stop()
    assert done.returncode == 1, done.stderr
    assert [r.member for r in echoing.requests] == ["proposer", "critic"]
    outputs = [done.stdout, done.stderr]
    for args in (("events", "echo"), ("transcript", "echo"), ("replay", "echo", "--json"),
                 ("--debug", "replay", "echo")):
        shown = wop(tmp_path, *args)
        outputs += [shown.stdout, shown.stderr]
    events = [json.loads(line) for line in outputs[2].splitlines()]
    redacted = json.dumps(events)
    assert "my key is [REDACTED]" in redacted
    assert "bad key [REDACTED] ([REDACTED], [REDACTED], [REDACTED])" in redacted
    assert "served-[REDACTED]" in redacted  # usage and provenance
    completed = next(e for e in events if e["type"] == "node.completed")
    assert completed["payload"]["outputs"]["data"] == {"k": "[REDACTED]"}
    for text in outputs:
        for form in FORMS:
            assert form not in text
    data = b"".join(p.read_bytes() for p in (tmp_path / ".wop").iterdir() if p.is_file())
    for form in FORMS:
        assert form.encode() not in data


def echoed_votes(request: CapturedRequest) -> Answer:
    """The llm council's scripted answers, with the key in every vote's reason."""
    from wopdsl.testing.answers import turn_of
    from wopdsl.testing.deliberation_answers import llm_council_answer

    content = dict(llm_council_answer(request, turn_of(request.body) or 1).content)
    for vote in (content.get("votes") or {}).values():
        vote["reason"] = f"{vote['reason']}, key {SENTINEL} {B64} {SENTINEL[::-1]}"
    return Answer(content, chunks=4)


@pytest.mark.slow
def test_a_key_echoed_in_vote_reasons_is_never_stored_or_printed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Votes are a new place a model's text reaches the log: the turn result, the decision's
    closing turn (tally, dissent), the chair's input and every view."""
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-council.toml", tmp_path / "councils")
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    with ScriptedModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        server.default = echoed_votes
        done = wop(tmp_path, "run", "councils/llm-council.toml", "--run-id", "votes-echo")
        chair = next(r for r in server.requests if r.member == "chair")
    assert done.returncode == 0, done.stderr
    outputs = [done.stdout, done.stderr]
    for args in (("events", "votes-echo"), ("transcript", "votes-echo"),
                 ("metrics", "votes-echo", "--json")):
        shown = wop(tmp_path, *args)
        outputs += [shown.stdout, shown.stderr]
    assert "key [REDACTED] [REDACTED] [REDACTED]" in outputs[2]  # the events: votes kept
    assert "dissent: skeptic (tune): measure before a migration, key [REDACTED]" in \
        outputs[4]
    assert "key [REDACTED]" in chair.body["messages"][1]["content"]
    for text in [*outputs, json.dumps(chair.body)]:
        for form in FORMS:
            assert form not in text
    data = b"".join(p.read_bytes() for p in (tmp_path / ".wop").iterdir() if p.is_file())
    for form in FORMS:
        assert form.encode() not in data
