"""Recorded answers for members that call tools: the model's `tool_calls` answers (plain and
streamed) are recorded once and replayed offline; the tools themselves run again in every
replay (a python function and a real MCP server built with the official SDK), and a tool that
now gives another result, or is declared differently, fails the replay naming the member,
the turn, the call and the tool.

As in test_cassette.py, inner pytest sessions run a small project; while recording the "real
model" is the scripted OpenAI-wire server answering with `tool_calls`; while replaying it is
stopped and `$OPENAI_BASE_URL` names a closed port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.testing.helpers import INI, run
from tests.testing.test_cassette import SENTINEL, offline
from tests.tools.conftest import APPROVED_BY_ONCALL, EFFECTS_ENV, MCP_SERVER, effects_in
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow  # each inner run starts a real MCP server process

pytest_plugins = ["pytester"]

CASSETTE = Path("__cassettes__") / "test_ops" / "test_ops.yaml"

COUNCIL = '''\
[council]
id = "ops-desk"
task = "Fix the outage."

[mcp.meter]
command = "python"
args = [{server}]
env = ["{effects}"]

[models.default]
model = "gpt-4o-mini"
stream = {stream}

[[rooms]]
id = "ops"
members = ["sre"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "default"
tools = ["ops_tools:restart_service", "mcp:meter/count"]
'''

OPS_TOOLS = '''\
import json, os


def restart_service(name: str) -> str:
    """Restart a service.

    Args:
        name: The service to restart.
    """
    with open(os.environ["{effects}"], "a", encoding="utf-8") as out:
        out.write(json.dumps({{"tool": "restart_service", "name": name}}) + "\\n")
    return f"restarted {{name}}"
'''

OPS_TEST = '''
import pytest

@pytest.mark.wop_cassette
def test_ops(run_council, snapshot):
    run = run_council("councils/ops.toml")
    assert run.status == "completed", run.error
    assert run.transcript == snapshot
    assert run.events == snapshot
'''

ROUNDS = (ToolCalls(("restart_service", {"name": "api"})),
          ToolCalls(("count", {"label": "restarts"})),
          Answer({"summary": "api restarted", "posts": [
              {"roomId": "ops", "text": "api is back after one restart", "mentions": []}]}))


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """The 'real' model while recording: it asks for two rounds of tool calls, then answers."""
    with ScriptedModelServer() as server:
        server.add(*ROUNDS)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
        monkeypatch.delenv("WOP_RECORD", raising=False)
        yield server


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.jsonl"
    monkeypatch.setenv(EFFECTS_ENV, str(path))
    return path


def _project(pytester: pytest.Pytester, *, stream: bool, more: str = "") -> pytest.Pytester:
    pytester.makefile(".ini", pytest=INI)
    pytester.mkdir("councils")
    (pytester.path / "councils" / "ops.toml").write_text(COUNCIL.format(
        server=json.dumps(MCP_SERVER), effects=EFFECTS_ENV, stream=str(stream).lower()) + more,
        encoding="utf-8")
    (pytester.path / "councils" / "ops_tools.py").write_text(
        OPS_TOOLS.format(effects=EFFECTS_ENV), encoding="utf-8")
    pytester.makepyfile(test_ops=OPS_TEST)
    return pytester


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "plain"])
def test_tool_calls_are_recorded_and_replayed_offline_and_the_tools_run_again(
    pytester: pytest.Pytester, model: ScriptedModelServer, effects: Path,
    monkeypatch: pytest.MonkeyPatch, stream: bool,
) -> None:
    project = _project(pytester, stream=stream)

    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)

    assert len(model.requests) == 3
    assert [e["tool"] for e in effects_in(effects)] == ["restart_service", "count"]
    text = (project.path / CASSETTE).read_text(encoding="utf-8")
    assert SENTINEL not in text
    exchanges = yaml.safe_load(text)["exchanges"]
    assert [(e["member"], e["turn"], e["attempt"], e["call"]) for e in exchanges] == [
        ("sre", 1, 0, 1), ("sre", 1, 0, 2), ("sre", 1, 0, 3)]
    assert [e["response"]["streamed"] for e in exchanges] == [stream] * 3
    assert [e["request"]["body"].get("stream", False) for e in exchanges] == [stream] * 3
    offered = [t["function"]["name"] for t in exchanges[0]["request"]["body"]["tools"]]
    assert sorted(offered) == ["count", "restart_service"]
    asked = [e["response"]["body"]["choices"][0] for e in exchanges[:2]]
    assert [a["finish_reason"] for a in asked] == ["tool_calls", "tool_calls"]
    calls = [c for a in asked for c in a["message"]["tool_calls"]]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] \
        == [("restart_service", {"name": "api"}), ("count", {"label": "restarts"})]
    results = [[(m["tool_call_id"], m["content"]) for m in e["request"]["body"]["messages"]
                if m["role"] == "tool"] for e in exchanges[1:]]
    assert results[0] == [(calls[0]["id"], "restarted api")]
    assert results[1] == [(calls[0]["id"], "restarted api"),
                          (calls[1]["id"], "counted restarts")]

    offline(monkeypatch, model)
    for replay in (1, 2):  # the snapshots taken while recording match every replay
        replayed = run(project)
        replayed.assert_outcomes(passed=1)
        replayed.stdout.fnmatch_lines(["*2 snapshots passed.*"])
        # The tools are part of the test: they ran again, once per call, in each replay.
        assert [e["tool"] for e in effects_in(effects)] == \
            ["restart_service", "count"] * (1 + replay)
    assert len(model.requests) == 3


def test_a_tool_that_returns_something_else_fails_the_replay_naming_the_call(
    pytester: pytest.Pytester, model: ScriptedModelServer, effects: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _project(pytester, stream=True)
    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)
    exchanges = yaml.safe_load((project.path / CASSETTE).read_text(encoding="utf-8"))[
        "exchanges"]
    [asked] = exchanges[0]["response"]["body"]["choices"][0]["message"]["tool_calls"]
    ident = asked["id"]
    _edit(project.path / "councils" / "ops_tools.py", 'f"restarted {name}"',
          'f"restarted {name} (after 3 tries)"')
    offline(monkeypatch, model)

    changed = run(project)

    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        "E *CassetteMismatch: the request of member 'sre', turn 1 (run 1, attempt 0, call 2) "
        "no longer matches the recording in __cassettes__/test_ops/test_ops.yaml; if the "
        "change is intended, re-record with `pytest --wop-record` (or WOP_RECORD=1).",
        f"E *  - the result of tool call {ident} (restart_service) is not the recorded one: "
        "now 'restarted api (after 3 tries)', recorded 'restarted api'",
        "E *--- recorded",
        "E *+++ now",
        "E *-    content: restarted api",
        "E *+    content: restarted api (after 3 tries)",
    ])
    assert "test_ops.py:5: CassetteMismatch" in changed.stdout.str()


def test_a_tool_declared_differently_fails_the_replay_naming_the_tool(
    pytester: pytest.Pytester, model: ScriptedModelServer, effects: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _project(pytester, stream=False)
    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)
    _edit(project.path / "councils" / "ops_tools.py", "def restart_service(name: str)",
          "def restart_service(name: str, force: bool = False)")
    offline(monkeypatch, model)
    before = len(effects_in(effects))

    changed = run(project)

    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        "E *CassetteMismatch: the request of member 'sre', turn 1 (run 1, attempt 0, call 1) "
        "no longer matches the recording*",
        "E *  - the definition of the tool 'restart_service' (its description or parameters) "
        "changed",
        "E *+ *force:*",
    ])
    assert len(effects_in(effects)) == before  # the model's first answer never came: no call


APPROVED_TEST = """
import pytest

@pytest.mark.wop_cassette
async def test_ops(arun_council, snapshot):
    run = await arun_council("councils/ops.toml")
    assert run.status == "waiting-input"
    assert await run.approve(as_="oncall") == "call/sre/1/0"
    assert await run.wait() == "completed", run.error
    assert run.transcript == snapshot
"""


def test_a_call_approved_in_the_test_replays(
    pytester: pytest.Pytester, model: ScriptedModelServer, effects: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _project(pytester, stream=True, more=APPROVED_BY_ONCALL)
    _edit(project.path / "councils" / "ops.toml", 'members = ["sre"]',
          'members = ["sre", "oncall"]')
    project.makepyfile(test_ops=APPROVED_TEST)

    run(project, "--wop-record", "--snapshot-update").assert_outcomes(passed=1)
    assert [e["tool"] for e in effects_in(effects)] == ["restart_service", "count"]
    assert len(model.requests) == 3

    offline(monkeypatch, model)
    replayed = run(project)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*1 snapshot passed.*"])
    assert [e["tool"] for e in effects_in(effects)] == ["restart_service", "count"] * 2
