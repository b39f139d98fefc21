"""Approvals over HTTP: ``POST /v1/runs/{runId}/interrupts/{member}`` decides a tool call.

A real ``wop serve`` subprocess runs ``councils/ops-desk.toml`` (MCP server over stdio, Python
tool with ``approval = "oncall"``) against the scripted model server on loopback.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
pytest.importorskip("mcp", reason="the mcp extra (wopdsl[mcp]) is not installed")

from tests.openwop_schemas import load_schemas
from tests.server.conftest import ALICE, BOB
from tests.tools.conftest import EFFECTS_ENV, KEY_ENV, effects_in
from tests.tools.test_crash import write_council
from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow
COUNCIL = Path(__file__).resolve().parents[2] / "councils" / "ops-desk.toml"


def test_a_tool_call_is_approved_and_rejected_over_http(serve: Any, tmp_path: Path) -> None:
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"service": "db", "reason": "stuck"})),
                  Answer({"summary": "asked"}),
                  ToolCalls(("restart_service", {"service": "api", "reason": "slow"})),
                  Answer({"summary": "done"}))
        served = serve(COUNCIL, env={"OPENAI_BASE_URL": model.url})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        assert status == 201, created
        run_id = created["runId"]
        snap = served.wait_status(run_id, "waiting-approval")
        assert snap["currentNodeId"] == "sre"  # The member node whose call waits.
        # Only the member node holding the approval takes a decision, with a valid value.
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/oncall",
                                         {"resumeValue": {"action": "accept"}})
        assert status == 404 and body["error"] == "interrupt_not_found", body
        assert "sre" in body["details"]["interrupts"]
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre",
                                         {"resumeValue": {"action": "maybe"}})
        assert status == 400 and body["error"] == "validation_error", body
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre",
                                         {"resumeValue": {"action": "accept"}})
        assert status == 200, body
        assert body["callId"] == "call/sre/1/0"
        snap = served.wait_status(run_id, "completed", "waiting-input")
        assert snap["status"] in ("completed", "waiting-input")
        assert (tmp_path / ".wop" / "restarts.log").read_text().count("restarted db") == 1
        # A second run: rejected over HTTP, the model reads the rejection.
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        second = created["runId"]
        served.wait_status(second, "waiting-approval")
        status, body, _ = served.request("POST", f"/v1/runs/{second}/interrupts/sre", {
            "resumeValue": {"action": "reject", "comment": "not now"}})
        assert status == 200, body
        served.wait_status(second, "completed")
        tool = [m for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
        assert tool[0]["content"] == ("error (REJECTED): not called: oncall rejected this "
                                      "call: not now")
        assert "restarted api" not in (tmp_path / ".wop" / "restarts.log").read_text()
        status, page, _ = served.request("GET", f"/v1/runs/{second}/events")
    kinds = [e["type"] for e in page["events"]]
    assert "approval.rejected" in kinds and "tool.session.opened" not in kinds
    # Without tokens the one local user decides as the approver, as `wop approve` does.
    assert _decisions(page["events"]) == [("approval.rejected", "oncall", "oncall")]
    load_schemas().check_events(page["events"])


CAROL = "carol-token-5555555555555555"
OPS = "ops-token-77777777777777777777"
V2 = {"OpenWOP-Version": "2.0"}
ACCEPT = {"resumeValue": {"action": "accept"}}


def _guarded(tmp_path: Path, *, approver: str | None) -> tuple[Path, Path]:
    """The ops council (oncall approves restart_service; its principal ``approver``), with a
    member ``guest`` that names bob (a guest of the run: he may read it), and the tokens of
    alice, bob, carol and the admin ops."""
    folder = tmp_path / "guarded"
    folder.mkdir()
    council = write_council(folder, approval="oncall")
    text = council.read_text().replace('members = ["sre", "oncall"]',
                                       'members = ["sre", "oncall", "guest"]')
    if approver is not None:
        text = text.replace('engine = "human"\n', f'engine = "human"\nprincipal = "{approver}"\n')
    council.write_text(text + '\n[[members]]\nid = "guest"\nrole = "reads along"\n'
                       'engine = "human"\ninitial_turn = false\nprincipal = "bob"\n')
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{BOB}"\ncarol = "{CAROL}"\n'
                      f'ops = "{OPS}"\n\n[admins]\nprincipals = ["ops"]\n')
    return council, tokens


def _decisions(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(type, decidedBy, principal)`` of each decision: interrupt.resolved, approval.*."""
    resolved = [e["payload"]["resumeValue"]["decidedBy"] for e in events
                if e["type"] == "interrupt.resolved" and e["payload"].get("kind") == "approval"]
    decided = [(e["type"], e["payload"]["principal"]) for e in events
               if e["type"] in ("approval.granted", "approval.rejected")]
    return [(kind, by, principal) for by, (kind, principal) in zip(resolved, decided,
                                                                    strict=True)]


def test_an_approval_whose_approver_names_no_principal_is_the_starters_or_an_admins(
        serve: Any, tmp_path: Path) -> None:
    council, tokens = _guarded(tmp_path, approver=None)
    effects = tmp_path / "guarded" / "effects.jsonl"
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "done"}),
                  ToolCalls(("restart_service", {"name": "db"})), Answer({"summary": "done"}))
        served = serve(council, args=("--tokens", str(tokens)), token=ALICE, env={
            "OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test", EFFECTS_ENV: str(effects)})
        run_id = served.request("POST", "/v1/runs", {"workflowId": "ops"})[1]["runId"]
        assert served.wait_status(run_id, "waiting-approval")["currentNodeId"] == "sre"
        last = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
        v1_path, v2_path = f"/v1/runs/{run_id}/interrupts/sre", f"/runs/{run_id}/interrupts/sre"
        # bob may read the run (guest names him) but not decide oncall's approvals; carol may
        # not even read it. Over v1 and v2 alike, and nothing is appended.
        assert served.request("GET", f"/v1/runs/{run_id}", token=BOB)[0] == 200
        for token, path, headers in [(BOB, v1_path, None), (BOB, v2_path, V2),
                                     (CAROL, v1_path, None), (CAROL, v2_path, V2)]:
            status, body, _ = served.request("POST", path, ACCEPT, token=token, headers=headers)
            assert (status, body["error"]) == (403, "forbidden"), (path, body)
        status, body, _ = served.request("POST", v1_path, ACCEPT, token=BOB)
        assert "bob may not decide the approvals of oncall" in body["message"], body
        assert body["details"]["member"] == "oncall"
        assert served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"] == last
        assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-approval"
        assert effects_in(effects) == []
        # alice started it: she decides, and the log says she did.
        status, body, _ = served.request("POST", v1_path, ACCEPT)
        assert status == 200 and body["callId"] == "call/sre/1/0", body
        served.wait_status(run_id, "completed")
        # An admin decides too (here over v2, rejecting).
        second = served.request("POST", "/v1/runs", {"workflowId": "ops"})[1]["runId"]
        served.wait_status(second, "waiting-approval")
        status, body, _ = served.request("POST", f"/runs/{second}/interrupts/sre", {
            "resumeValue": {"action": "reject", "comment": "not now"}}, token=OPS, headers=V2)
        assert status == 200 and body["runId"] == f"ops/{second}", body
        served.wait_status(second, "completed")
        first_log = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
        second_log = served.request("GET", f"/v1/runs/{second}/events")[1]["events"]
        v2_log = served.request("GET", f"/runs/{second}/events", headers=V2)[1]["events"]
    assert [e["name"] for e in effects_in(effects)] == ["api"]
    assert _decisions(first_log) == [("approval.granted", "alice", "alice")]
    assert _decisions(second_log) == [("approval.rejected", "ops", "ops")]
    rejected = [e["payload"] for e in v2_log if e["type"] == "approval.rejected"]
    assert rejected == [{"nodeId": "sre", "interruptId": "alice/approval~2Fcall~2Fsre~2F1~2F0",
                         "kind": "approval", "x-wopdsl-principal": "ops",
                         "x-wopdsl-reason": "not now"}]
    load_schemas().check_events(first_log)
    load_schemas().check_events(second_log)
    assert served.stop() == 0
    for run in (run_id, second):
        for flags in ((), ("--v2",)):
            checked = subprocess.run(
                [sys.executable, "-m", "wopdsl", "check", *flags, "--store", str(served.store),
                 run], capture_output=True, text=True, timeout=60, check=False)
            assert checked.returncode == 0, checked.stdout + checked.stderr
    logs = served.logs()
    assert "Traceback" not in logs and all(t not in logs for t in (ALICE, BOB, CAROL, OPS))


def test_with_tokens_only_the_approvers_principal_decides(serve: Any, tmp_path: Path) -> None:
    council, tokens = _guarded(tmp_path, approver="bob")
    effects = tmp_path / "guarded" / "effects.jsonl"
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("restart_service", {"name": "api"})), Answer({"summary": "done"}))
        served = serve(council, args=("--tokens", str(tokens)), token=ALICE, env={
            "OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test", EFFECTS_ENV: str(effects)})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops"})
        assert status == 201, created
        run_id = created["runId"]
        served.wait_status(run_id, "waiting-approval")
        # alice started the run and ops is an admin, but oncall's principal is bob: neither
        # may decide.
        for token in (ALICE, OPS):
            status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre",
                                             ACCEPT, token=token)
            assert (status, body["error"]) == (403, "forbidden"), body
            assert "member oncall decides its approvals only for its principal" in \
                body["message"]
        assert effects_in(effects) == []
        status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/sre", ACCEPT,
                                         token=BOB)
        assert status == 200 and body["callId"] == "call/sre/1/0", body
        served.wait_status(run_id, "completed")
    assert [e["name"] for e in effects_in(effects)] == ["api"]
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events")
    granted = [e["payload"] for e in page["events"] if e["type"] == "approval.granted"]
    assert granted == [{"gateId": "approval/call/sre/1/0", "principal": "bob"}]
    assert ALICE not in served.logs() and BOB not in served.logs()


def _children(pid: int, marker: str) -> list[int]:
    """Processes whose parent is ``pid`` and whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid and marker in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False


def test_stdio_servers_stop_with_the_host(serve: Any) -> None:
    with ScriptedModelServer() as model:
        model.add(ToolCalls(("read_log", {"service": "api"})), Answer({"summary": "asked"}))
        served = serve(COUNCIL, env={"OPENAI_BASE_URL": model.url})
        status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "ops-desk"})
        assert status == 201, created
        served.wait_status(created["runId"], "completed", "waiting-input")
        children = _children(served.proc.pid, "mcp_ops_server.py")
        assert children, "the host runs the council's MCP server over stdio"
        assert served.stop() == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)
