"""Tool calls and approvals in the real TUI (Textual Pilot), against the scripted model server.

The run stops for a person's approval; the Pilot approves (``ctrl+y``) or rejects (the
Reject button, with a reason typed in the panel) and the tool counts its own effects.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("textual")
pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Input, Static
from wopdsl_tui import CouncilApp
from wopdsl_tui.bridge import RunFold
from wopdsl_tui.widgets import Composer
from wopdsl_tui.widgets.tools import ApprovalPanel, ToolCalls

import wopdsl
from tests.tools.conftest import effects, effects_in, server, tool_council
from tests.tui.conftest import REPO, finished, settle
from wopdsl.testing.model_server import Answer, ScriptedModelServer
from wopdsl.testing.model_server import ToolCalls as Calls

__all__ = ["effects", "server"]  # the fixtures of tests/tools, used here too

OPS_DESK = REPO / "councils" / "ops-desk.toml"
DONE = Answer({"summary": "done"})
TOOLS = ["tests.tools.effects_tools:restart_service", "tests.tools.effects_tools:read_log",
         "tests.tui.hostile_tools:shout"]
POLICY = {"restart_service": {"approval": "oncall"}}


def shown(app: CouncilApp, selector: str) -> str:
    """The plain text a Static shows."""
    return content(app, selector).plain


def content(app: CouncilApp, selector: str) -> Content:
    """What a Static shows, with its styles."""
    rendered = app.query_one(selector, Static).render()
    assert isinstance(rendered, Content)
    return rendered


def asking(app: CouncilApp) -> bool:
    """The run waits for an approval and the screen shows the panel."""
    return bool(app.fold.approvals) and app.query_one(ApprovalPanel).display and \
        app.shown_sequence == app.fold.last_sequence


def mcp_stopped() -> bool:
    """No MCP server started by this process is running any more."""
    mine = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] == mine and b"mcp_ops_server" in (stat.parent / "cmdline").read_bytes():
                return False
        except (OSError, IndexError):
            continue  # gone meanwhile
    return True


def restart_asked(server: ScriptedModelServer, db_path: Path) -> CouncilApp:
    """The app on a council whose sre asks to restart api, a call oncall must approve."""
    server.add(Calls(("restart_service", {"name": "api"})), DONE)
    return CouncilApp(tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",)),
                      store=db_path, deterministic=True)


@pytest.mark.slow
async def test_approve_on_the_ops_desk_makes_the_call_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the Python tool records restarts in .wop/restarts.log
    restarts = tmp_path / ".wop" / "restarts.log"
    with ScriptedModelServer() as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.url)
        model.add(Calls(("read_log", {"service": "api", "lines": 3}),
                        ("service_status", {"service": "db"})),
                  Calls(("restart_service", {"service": "db", "reason": "too many connections"})),
                  Answer({"summary": "Restarted db.", "posts": [
                      {"roomId": "ops", "text": "Restarted db with oncall's approval.",
                       "mentions": []}]}))
        app = CouncilApp(wopdsl.load(OPS_DESK), store=tmp_path / "runs.db", deterministic=True)
        async with app.run_test(size=(110, 34)) as pilot:
            await settle(pilot, lambda: asking(app))
            assert app.run_status == "waiting-input" and not restarts.exists()
            lines = shown(app, "#tool-lines").splitlines()
            # Hashed by default: the arguments come from the run's private records.
            assert lines[0].startswith('✓ sre → read_log({"service": "api", "lines": 3})  ok · ')
            assert " ms · " in lines[0] and lines[0].endswith("call/sre/1/0")
            assert lines[1].startswith('✓ sre → service_status({"service": "db"})  ok · ')
            assert lines[2] == ('? sre → restart_service({"service": "db", "reason": "too many '
                                'connections"})  waiting for oncall  call/sre/1/2')
            what = shown(app, "#approval-what")
            assert what == ('oncall to decide: sre asks to call restart_service({"service": '
                            '"db", "reason": "too many connections"})  call/sre/1/2')
            assert "approval: oncall (call/sre/1/2)" in shown(app, "#status")
            assert app.focused is app.query_one("#approval-reason", Input)
            assert app.check_action("decide", (True,)) is True

            await pilot.press("ctrl+y")
            await settle(pilot, finished(app))
            assert restarts.read_text().count("restarted db: too many connections") == 1
            assert not app.query_one(ApprovalPanel).display
            last = shown(app, "#tool-lines").splitlines()[2]
            assert last.startswith('✓ sre → restart_service({"service": "db", "reason": "too '
                                   'many connections"})  approved by oncall · ok · ')
            assert "approval:" not in shown(app, "#status")
            assert app.check_action("decide", (True,)) is False
            assert app.council_run is not None
            await app.council_run.wait()  # the drive has stopped the MCP server it started
            await settle(pilot, mcp_stopped)  # the server exits a moment after the drive
        assert len(model.requests) == 3
    granted = [e for e in app.council_run.events if e["type"] == "approval.granted"]  # type: ignore[union-attr]
    assert [e["payload"]["principal"] for e in granted] == ["oncall"]


async def test_reject_with_a_reason_goes_back_to_the_model(
        server: ScriptedModelServer, effects: Path, db_path: Path) -> None:
    app = restart_asked(server, db_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: asking(app))
        await pilot.press(*"not during the sale")  # the reason field has the keyboard
        await pilot.click("#reject")
        await settle(pilot, finished(app))
        line = shown(app, "#tool-lines")
        assert line.startswith('✗ sre → restart_service({"name": "api"})  rejected by oncall: '
                               'not during the sale · forbidden REJECTED · ')
    assert effects_in(effects) == []  # never called
    tool = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"] == ("error (REJECTED): not called: oncall rejected this call: not "
                               "during the sale")


async def test_a_decision_made_elsewhere_closes_the_panel_a_stale_one_is_refused(
        server: ScriptedModelServer, effects: Path, db_path: Path) -> None:
    app = restart_asked(server, db_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: asking(app))
        run = app.council_run
        assert run is not None
        # Decided in another process (`wop approve`, the web page): the screen follows.
        other = wopdsl.attach(db_path, run.run_id)
        await other.approve(reject=True, reason="decided elsewhere")
        await other.wait()
        await settle(pilot, finished(app))
        panel = app.query_one(ApprovalPanel)
        assert not panel.display and panel.call_id is None
        assert "rejected by oncall: decided elsewhere" in shown(app, "#tool-lines")
        # A click that raced the other decision: refused by Run.approve, said, not raised.
        panel.call_id, panel.display = "call/sre/1/0", True
        panel.decide(True)
        await settle(pilot, lambda: "has ended" in shown(app, "#approval-error"))
        assert shown(app, "#approval-error").startswith("error[validation_error]: run ")
    assert effects_in(effects) == []
    kinds = [e["type"] for e in wopdsl.attach(db_path, run.run_id).events]
    assert kinds.count("approval.rejected") == 1 and "approval.granted" not in kinds


async def test_tool_output_never_acts_on_the_screen(
        server: ScriptedModelServer, effects: Path, db_path: Path) -> None:
    hostile = {"text": "[bold red]BOOM[/bold red] \x1b[2J\x1b]8;;http://x\x07link"}
    server.add(Calls(("shout", hostile)), DONE)
    council = tool_council(tools=TOOLS, humans=("oncall",), profile={"observability": "full"})
    app = CouncilApp(council, store=db_path, deterministic=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, finished(app))
        plain = shown(app, "#tool-lines")
        # Shown as text: the markup is literal, the escape sequences are spelled out.
        assert "[bold red]BOOM[/bold red]" in plain and "\x1b" not in plain
        assert "\\x1b[2J" in plain and "\\x1b]8;;http://x\\x07link" in plain
        assert plain.count("\n") == 1  # the call's line and its result's: nothing more
        result = plain.splitlines()[1]
        assert result.startswith("    ← [bold red]BOOM[/bold red] \\x1b[2J")
        at = plain.index("BOOM")
        spans = content(app, "#tool-lines").spans
        assert spans and not any(s.start <= at < s.end and "red" in str(s.style) for s in spans)
        assert app.query_one(ToolCalls).display


def test_the_fold_follows_a_call_through_approval_and_rejection() -> None:
    fold = RunFold()
    data = {"artifactId": "call/sre/1/0", "title": "sre asks to call restart_service",
            "approversList": ["oncall"], "artifactType": "tool-call"}
    events = [
        ("interrupt.requested", {"kind": "approval", "key": "approval/call/sre/1/0",
                                 "data": data}),
        ("approval.rejected", {"gateId": "approval/call/sre/1/0", "principal": "oncall",
                               "reason": "no"}),
        ("agent.toolReturned", {"toolName": "restart_service", "callId": "call/sre/1/0",
                                "status": "forbidden", "durationMs": 0, "resultBytes": 40,
                                "error": {"code": "REJECTED", "message": "x"}}),
        ("agent.toolCalled", {"toolName": "read_log", "callId": "call/sre/2/0",
                              "inputs": {"service": "api"}, "repeated": True}),
    ]
    for sequence, (kind, payload) in enumerate(events):
        fold.apply({"sequence": sequence, "type": kind, "nodeId": "sre", "payload": payload})
    rejected, again = fold.tools.calls.values()
    assert (rejected.tool, rejected.approver, rejected.decision, rejected.state,
            rejected.error) == ("restart_service", "oncall", "rejected by oncall: no",
                                "forbidden", "REJECTED")
    assert (again.arguments, again.state, again.repeated) == ('{"service": "api"}', "called",
                                                              True)
    looked: list[str] = []
    fold.tools.fill_arguments(lambda call: looked.append(call) or ("restart_service", "{}"))
    fold.tools.fill_arguments(lambda call: looked.append(call) or None)
    assert looked == ["call/sre/1/0"] and rejected.arguments == "{}"  # asked once per call


@pytest.mark.slow
def test_snapshot_the_ops_desk_asks_oncall(snap_compare: Callable[..., bool], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pytest_textual_snapshot")
    monkeypatch.chdir(tmp_path)
    with ScriptedModelServer() as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.url)
        model.add(Calls(("restart_service", {"service": "db",
                                             "reason": "too many connections"})), DONE)
        app = CouncilApp(wopdsl.load(OPS_DESK), store=tmp_path / "runs.db", deterministic=True)

        async def run_before(pilot: Pilot[int]) -> None:
            app.query_one(Composer).cursor_blink = False
            app.query_one("#approval-reason", Input).cursor_blink = False
            await settle(pilot, lambda: asking(app))
            await pilot.press(*"db is fine now")
            await settle(pilot, mcp_stopped)  # the drive stopped at the approval

        assert snap_compare(app, run_before=run_before, terminal_size=(100, 28))
    assert not (tmp_path / ".wop" / "restarts.log").exists()


def test_the_guide_shows_the_approval_screen() -> None:
    # docs/guides/tui.md shows the approval snapshot: keep them the same.
    here = Path(__file__).parent / "__snapshots__" / "test_tools"
    shown = REPO / "docs" / "guides" / "tui-approval.svg"
    assert shown.read_text() == (here / "test_snapshot_the_ops_desk_asks_oncall.svg"
                                 ).read_text(), (
        "copy tests/tui/__snapshots__/test_tools/test_snapshot_the_ops_desk_asks_oncall.svg "
        "to docs/guides/tui-approval.svg")


async def test_attach_to_a_waiting_run_and_approve_it(
        server: ScriptedModelServer, effects: Path, db_path: Path) -> None:
    # `wop run` (here: another handle) left the run waiting for oncall; `wop tui RUN` decides.
    server.add(Calls(("restart_service", {"name": "api"})), DONE)
    council = tool_council(tools=TOOLS, policy=POLICY, humans=("oncall",))
    waiting = await council.arun(store=str(db_path))
    assert waiting.status == "waiting-input"
    app = CouncilApp(wopdsl.attach(db_path, waiting.run_id))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: asking(app))
        assert 'restart_service({"name": "api"})' in shown(app, "#approval-what")
        await pilot.press("ctrl+y")
        await settle(pilot, finished(app))
        assert app.council_run is not None
        await app.council_run.wait()
    assert [e["name"] for e in effects_in(effects)] == ["api"]  # exactly once
    assert len(server.requests) == 2
