"""Recorded answers as users meet them: record with --wop-record, replay offline, re-record.

Each test runs inner pytest sessions (pytester) on a small project whose test is marked
``wop_cassette``. While recording, the "real model" is the scripted OpenAI-wire server on
loopback, reached through ``$OPENAI_BASE_URL`` with a sentinel API key; while replaying,
``$OPENAI_BASE_URL`` names a closed port, so a call that left the cassette would fail.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.testing.helpers import INI, run
from wopdsl.testing.model_server import Answer, Failure, ScriptedModelServer
from wopdsl.testing.review_answers import review_answer

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "sk-cassette-SENTINEL-4f2a9b7c1d"
CASSETTE = Path("__cassettes__") / "test_review" / "test_review.yaml"
REVIEW_TEST = '''
import pytest

@pytest.mark.wop_cassette
def test_review(run_council, snapshot):
    run = run_council("councils/llm-review.toml")
    assert run.status == "completed"
    assert run.transcript == snapshot
    assert run.events == snapshot
'''


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """The 'real' model while recording, with the key the profile reads."""
    with ScriptedModelServer() as server:
        server.default = review_answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
        monkeypatch.delenv("WOP_RECORD", raising=False)
        yield server


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".ini", pytest=INI)
    pytester.mkdir("councils")
    council = (ROOT / "councils" / "llm-review.toml").read_text(encoding="utf-8")
    (pytester.path / "councils" / "llm-review.toml").write_text(council, encoding="utf-8")
    pytester.makepyfile(test_review=REVIEW_TEST)
    return pytester


def offline(monkeypatch: pytest.MonkeyPatch, server: ScriptedModelServer) -> None:
    server.stop()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")


def test_a_recording_replays_offline_with_the_same_events_every_time(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = run(project, "--wop-record", "--snapshot-update")

    recorded.assert_outcomes(passed=1)
    assert len(model.requests) == 3
    assert {r.headers["authorization"] for r in model.requests} == {f"Bearer {SENTINEL}"}
    assert not any(name.startswith("wop-") for r in model.requests for name in r.headers)
    text = (project.path / CASSETTE).read_text(encoding="utf-8")
    assert SENTINEL not in text
    assert "authorization" not in text.lower() and "bearer" not in text.lower()
    cassette = yaml.safe_load(text)
    assert cassette["format"] == "wopdsl-cassette/1"
    exchanges = cassette["exchanges"]
    assert [(e["run"], e["member"], e["turn"], e["attempt"], e["call"], e["position"])
            for e in exchanges] == [(1, "proposer", 1, 0, 1, 1), (1, "critic", 1, 0, 1, 2),
                                    (1, "proposer", 2, 0, 1, 3)]
    first = exchanges[0]
    assert first["profile"] == "default"
    assert first["request"]["path"] == "/chat/completions"
    assert first["request"]["body"] == model.requests[0].body
    assert first["request"]["body"]["response_format"]["type"] == "json_schema"
    assert first["request"]["body"]["temperature"] == 0.7
    assert first["response"]["status"] == 200 and first["response"]["streamed"] is True
    answer = first["response"]["body"]
    assert answer["object"] == "chat.completion"
    assert answer["usage"] == {"prompt_tokens": 220, "completion_tokens": 60,
                               "total_tokens": 280}
    assert "Move to trunk-based development" in answer["choices"][0]["message"]["content"]
    # Text with line breaks reads as it was sent.
    assert "        content: |-\n          You are proposer, the proposer" in text

    offline(monkeypatch, model)
    for _ in range(2):  # the event log snapshot taken while recording matches each replay
        replayed = run(project)
        replayed.assert_outcomes(passed=1)
        replayed.stdout.fnmatch_lines(["*2 snapshots passed.*"])
    assert len(model.requests) == 3


def test_a_changed_request_fails_naming_member_and_turn_and_re_recording_fixes_it(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)
    council = project.path / "councils" / "llm-review.toml"
    council.write_text(council.read_text(encoding="utf-8").replace(
        "Mention the proposer.", "Mention the proposer kindly."), encoding="utf-8")
    offline(monkeypatch, model)

    changed = run(project)

    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        "E *CassetteMismatch: the request of member 'critic', turn 1 (run 1, attempt 0, "
        "call 1) no longer matches the recording in __cassettes__/test_review/test_review.yaml;"
        " if the change is intended, re-record with `pytest --wop-record` (or WOP_RECORD=1).",
        "E *--- recorded",
        "E *+++ now",
        "E *-      Your brief: Find the weakest claim in the proposal and say why, in at most "
        "three sentences. Mention the proposer.",
        "E *+      Your brief: Find the weakest claim in the proposal and say why, in at most "
        "three sentences. Mention the proposer kindly.",
    ])
    # The failure points at the test's own line, not into the plugin.
    assert "test_review.py:5: CassetteMismatch" in changed.stdout.str()

    # Re-record, this time with the environment variable instead of the flag.
    with ScriptedModelServer() as again:
        again.default = review_answer
        monkeypatch.setenv("OPENAI_BASE_URL", again.url)
        monkeypatch.setenv("WOP_RECORD", "1")
        run(project, "--snapshot-update").assert_outcomes(passed=1)
        assert len(again.requests) == 3
    monkeypatch.delenv("WOP_RECORD")
    offline(monkeypatch, again)
    run(project).assert_outcomes(passed=1)
    assert "kindly" in (project.path / CASSETTE).read_text(encoding="utf-8")


def test_a_call_with_no_cassette_fails_offline_naming_member_turn_and_file(
    project: pytest.Pytester, model: ScriptedModelServer,
) -> None:
    result = run(project)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E *CassetteMismatch: member 'proposer', turn 1 (run 1, attempt 0, call 1) made a "
        "model call, but there is no cassette __cassettes__/test_review/test_review.yaml; "
        "record it with `pytest --wop-record` (or WOP_RECORD=1)"])
    assert model.requests == []  # the real server was running, and nothing reached it
    assert not (project.path / "__cassettes__").exists()


def test_retries_repairs_and_error_answers_replay_and_keys_are_scrubbed(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    project.makepyfile(test_review=REVIEW_TEST + '''
    types = [e["type"] for e in run.events]
    assert "node.retried" in types and "envelope.retry.attempted" in types
''')
    model.add(Failure(429, f"slow down, {SENTINEL}", retry_after="0"),
              Answer("not a turn result"), member="proposer")

    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)

    text = (project.path / CASSETTE).read_text(encoding="utf-8")
    assert SENTINEL not in text
    exchanges = yaml.safe_load(text)["exchanges"]
    proposer = [e for e in exchanges if e["member"] == "proposer" and e["turn"] == 1]
    assert [(e["attempt"], e["call"], e["response"]["status"]) for e in proposer] == [
        (0, 1, 429), (1, 1, 200), (1, 2, 200)]
    assert proposer[0]["response"]["headers"] == {"retry-after": "0"}
    assert proposer[0]["response"]["body"]["error"]["message"] == "slow down, [REDACTED]"
    assert proposer[2]["request"]["body"]["messages"][-1]["role"] == "user"  # the repair ask

    offline(monkeypatch, model)
    replayed = run(project)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*2 snapshots passed.*"])


def test_exchanges_a_passing_test_no_longer_makes_fail_it(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    project.makepyfile(test_review='''
import pytest

@pytest.mark.wop_cassette
def test_review(run_council):
    first = run_council("councils/llm-review.toml")
    second = run_council("councils/llm-review.toml")
    assert first.transcript == second.transcript
''')
    run(project, "--wop-record").assert_outcomes(passed=1)
    assert {e["run"] for e in yaml.safe_load(
        (project.path / CASSETTE).read_text(encoding="utf-8"))["exchanges"]} == {1, 2}
    project.makepyfile(test_review='''
import pytest

@pytest.mark.wop_cassette
def test_review(run_council):
    assert run_council("councils/llm-review.toml").status == "completed"
''')
    offline(monkeypatch, model)

    result = run(project)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*__cassettes__/test_review/test_review.yaml holds 3 exchange(s) the test no longer "
        "makes:",
        "*member 'proposer', turn 1 (run 2, attempt 0, call 1)",
    ])


def test_an_unreachable_model_while_recording_keeps_the_old_cassette(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)
    before = (project.path / CASSETTE).read_bytes()
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    offline(monkeypatch, model)
    monkeypatch.setenv("OPENAI_BASE_URL", dead)

    result = run(project, "--wop-record")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*recording member 'proposer', turn 1 (run 1, attempt 0, "
                                 f"call 1): no answer from the model server at "
                                 f"{dead}/chat/completions*"])
    assert (project.path / CASSETTE).read_bytes() == before


ECHOES = [SENTINEL.upper(), SENTINEL[::-1], base64.b64encode(SENTINEL.encode()).decode(),
          base64.urlsafe_b64encode(SENTINEL.encode()).decode().rstrip("=")]
"""The key as a server may echo it: upper case, reversed, base64 (the event log's forms)."""


def test_a_key_echoed_in_any_form_is_scrubbed_from_the_cassette(
    project: pytest.Pytester, model: ScriptedModelServer,
) -> None:
    model.add(Failure(429, f"slow down, {' '.join(ECHOES)}", retry_after="0"),
              member="proposer")

    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)

    text = (project.path / CASSETTE).read_text(encoding="utf-8")
    for form in [SENTINEL, *ECHOES]:
        assert form not in text
    answer = yaml.safe_load(text)["exchanges"][0]["response"]["body"]
    assert answer["error"]["message"] == "slow down, " + " ".join(["[REDACTED]"] * 4)


PASSWORD = "pw-cassette-7Hq2Lx9"


def test_recording_through_a_base_url_with_user_and_password_never_shows_the_password(
    project: pytest.Pytester, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with_password = model.url.replace("http://", f"http://rec:{PASSWORD}@")
    monkeypatch.setenv("OPENAI_BASE_URL", with_password)
    model.add(Failure(429, f"who is rec:{PASSWORD}?", retry_after="0"), member="proposer")

    recorded = run(project, "--wop-record", "--snapshot-update")

    recorded.assert_outcomes(passed=1)
    basic = base64.b64encode(f"rec:{PASSWORD}".encode()).decode()
    assert {r.headers["authorization"] for r in model.requests} == {f"Basic {basic}"}
    text = (project.path / CASSETTE).read_text(encoding="utf-8")
    assert PASSWORD not in text and basic not in text
    assert "who is [REDACTED]?" in text
    # An API root that does not answer: the message names it without its user info.
    dead = f"http://rec:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", dead)
    failed = run(project, "--wop-record")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines([f"*no answer from the model server at "
                                 f"{dead.replace(f'rec:{PASSWORD}@', '')}/chat/completions*"])
    for output in (recorded, failed):
        assert PASSWORD not in output.stdout.str() + output.stderr.str()
        assert basic not in output.stdout.str() + output.stderr.str()
