"""The scripted model server from the command line, and a real ``wop run`` against it.

``python -m wopdsl.testing.model_server ANSWERS.toml`` runs as a subprocess (as the LLM guide
shows), prints its URL, and a ``wop run`` subprocess runs ``councils/llm-review.toml`` with
``$OPENAI_BASE_URL`` pointing at it; the README's approval tour (``councils/ops-desk.toml``:
tool calls scripted in ``examples/ops-desk.answers.toml``, ``wop run``, ``wop approve``) runs
command by command from the shipped files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = ROOT / "examples" / "llm-review.answers.toml"
WOP = Path(sys.executable).with_name("wop")


@contextmanager
def model_server(answers: Path, *args: str, cwd: Path | None = None,
                 ) -> Iterator[tuple[subprocess.Popen[str], str]]:
    # A shell starts background jobs with SIGINT ignored, and children inherit that: the
    # server gets the default back, as a terminal's has it (Ctrl-C is how it is stopped).
    with subprocess.Popen(
            [sys.executable, "-m", "wopdsl.testing.model_server", str(answers), "--port", "0",
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as server:
        try:
            assert server.stdout is not None
            yield server, server.stdout.readline().strip()
        finally:
            if server.poll() is None:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=30)


def wop_run(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": url}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([str(WOP), "run", *args, "--store", str(tmp_path / "runs.db")],
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_council_of_models_runs_against_answers_from_a_file(tmp_path: Path) -> None:
    with model_server(ANSWERS) as (server, url):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")

        result = wop_run(tmp_path, url, str(ROOT / "councils" / "llm-review.toml"))

        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
        assert server.stderr is not None
        assert f"export OPENAI_BASE_URL={url}" in server.stderr.read()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[desk] proposer team/proposer/1/0 @critic: Move to trunk-based development" in \
        result.stdout
    assert "[desk] critic team/critic/2/0 @proposer: The weakest claim is that feature flags" \
        in result.stdout
    assert "[desk] proposer team/proposer/3/0: Fair: schema changes go behind" in result.stdout
    assert "total: 655 tokens (530 in, 125 out), 3 calls" in result.stdout  # the file's usage
    assert "completed: run llm-review-" in result.stdout


def test_a_call_no_answer_fits_fails_the_turn_naming_member_and_turn(tmp_path: Path) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text('[[answers]]\nmember = "proposer"\nturn = 1\nsummary = "Asked."\n'
                       'posts = [{room = "desk", text = "Critic?", mentions = ["critic"]}]\n',
                       encoding="utf-8")
    with model_server(answers) as (_server, url):
        result = wop_run(tmp_path, url, str(ROOT / "councils" / "llm-review.toml"))

    assert result.returncode == 1, result.stdout + result.stderr
    assert "MODEL_ERROR" in result.stdout + result.stderr
    assert "no entry of the answers file fits member critic, turn 1" in \
        result.stdout + result.stderr


def test_a_bad_answers_file_is_refused_with_where_and_how(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('[[answers]]\nmember = "a"\nturn = "one"\nsumary = "x"\n',
                      encoding="utf-8")
    not_toml = tmp_path / "not.toml"
    not_toml.write_text('[[answers]]\nmember = \n', encoding="utf-8")
    mixed = tmp_path / "mixed.toml"
    mixed.write_text('[[answers]]\nstep = 0\nsummary = "Done."\n[[answers]]\nsummary = "Done."\n'
                     'tool_calls = [{name = "read_log", arguments = {service = "api"}}]\n'
                     '[[answers]]\ntool_calls = [{arguments = {}}]\n', encoding="utf-8")

    for path, expected in [
        (broken, [f"error: {broken}: answers[0].turn: Input should be a valid integer",
                  f"{broken}: answers[0].sumary: Extra inputs are not permitted",
                  "hint: each [[answers]] entry takes"]),
        (not_toml, [f"error: {not_toml}:2:10: not valid TOML: Invalid value"]),
        (tmp_path / "missing.toml", ["cannot read the answers file: No such file"]),
        (mixed, [f"{mixed}: answers[0].step: Input should be greater than or equal to 1",
                 f"{mixed}: answers[1]: an entry asks for tool_calls or answers (summary), "
                 "not both: give the answer after the calls its own entry, with the next step",
                 f"{mixed}: answers[2].tool_calls[0].name: Field required",
                 "takes member, turn, step, text or summary/posts/data or tool_calls"]),
    ]:
        result = subprocess.run([sys.executable, "-m", "wopdsl.testing.model_server",
                                 str(path), "--port", "0"], capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        for line in expected:
            assert line in result.stderr, result.stderr


def test_a_port_in_use_is_refused_with_a_hint() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "wopdsl.testing.model_server",
                                 str(ANSWERS), "--port", str(port)], capture_output=True,
                                text=True, timeout=120, check=False)

    assert result.returncode == 2
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "hint: pick another --port (0 takes a free one)" in result.stderr


def test_the_llm_guides_answers_file_is_valid(tmp_path: Path) -> None:
    from wopdsl.testing.answers import load_answers

    guide = (ROOT / "docs" / "guides" / "llm.md").read_text(encoding="utf-8")
    section = guide.split("## Trying a council without a model", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "answers.toml").write_text(block, encoding="utf-8")

    book = load_answers(tmp_path / "answers.toml")

    assert [(a.member, a.turn) for a in book.answers] == [("proposer", 1), ("critic", None)]
    assert book.answers[0].content() == {"summary": "Proposed a plan and asked for critique.",
                                         "posts": [{"roomId": "desk", "mentions": ["critic"],
                                                    "text": "Ship it in two steps. Critic?"}]}
    tools = section.split("```toml\n", 2)[2].split("```", 1)[0]
    (tmp_path / "tools.toml").write_text(tools, encoding="utf-8")
    steps = load_answers(tmp_path / "tools.toml").answers
    assert [(a.step, [name for name, _ in a.calls()]) for a in steps] == [
        (1, ["read_log"]), (2, ["restart_service"]), (3, [])]


def test_a_tool_call_no_entry_fits_names_the_step(tmp_path: Path) -> None:
    from wopdsl.testing.answers import load_answers

    book = load_answers(ROOT / "examples" / "ops-desk.answers.toml")
    turn = {"role": "user", "content": "This is your turn 1."}
    asked = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "call_0", "content": "12:00:06 503 /orders"}

    first = book.reply({"messages": [turn]}, "sre")
    third = book.reply({"messages": [turn, asked, result, asked, result]}, "sre")
    fourth = book.reply({"messages": [turn, *[asked, result] * 3]}, "sre")

    assert not isinstance(first, str) and first.calls() == [
        ("read_log", {"service": "api", "lines": 3})]
    assert not isinstance(third, str) and third.calls() == [] and third.summary
    assert fourth == "no entry of the answers file fits member sre, turn 1, step 4"


@pytest.mark.slow
def test_the_readmes_approval_tour_runs_from_the_shipped_files(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the tour's MCP server needs the mcp extra")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = readme.split("Try it without a model:", 1)[1].split("```console\n", 1)[1]
    commands = [line[2:] for line in tour.split("```", 1)[0].splitlines()
                if line.startswith("$ ")]
    run_id = commands[3].removeprefix("wop approve ")
    assert commands == [
        "python -m wopdsl.testing.model_server examples/ops-desk.answers.toml --port 8090 &",
        "export OPENAI_BASE_URL=http://127.0.0.1:8090/v1",
        "wop run councils/ops-desk.toml",
        f"wop approve {run_id}"]
    for shipped in ("councils/ops-desk.toml", "councils/ops_tools.py",
                    "examples/mcp_ops_server.py", "examples/ops-desk.answers.toml"):
        (tmp_path / shipped).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / shipped, tmp_path / shipped)
    env = {k: v for k, v in os.environ.items() if k not in ("WOP_STORE", "OPENAI_API_KEY")}

    def wop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(WOP), *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300, check=False)

    # The README's port, 8090, may be taken on a shared machine: the test takes a free one.
    with model_server(Path("examples/ops-desk.answers.toml"), cwd=tmp_path) as (server, url):
        env["OPENAI_BASE_URL"] = url
        waiting = wop("run", "councils/ops-desk.toml")
        started = re.search(r"^run (ops-desk-[0-9a-f]+) \(council ops-desk", waiting.stdout,
                            re.MULTILINE)
        assert started is not None, waiting.stdout + waiting.stderr
        run = started.group(1)
        restarted_before = (tmp_path / ".wop" / "restarts.log").exists()
        approved = wop("approve", run)

        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr
    assert "  [tool] sre → read_log call/sre/1/0\n  [tool] sre ← read_log ok (" in waiting.stdout
    assert ("waiting for approval: oncall decides call/sre/1/1 (sre asks to call "
            'restart_service: restart_service({"service": "db", "reason": "db refuses '
            'connections (max 100), so the api times out"}))') in waiting.stdout
    assert f"decide with: wop approve {run} [--reject --reason TEXT]" in waiting.stdout
    assert not restarted_before  # the restart waited for the approval
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "  [approval] oncall granted call/sre/1/1" in approved.stdout
    assert ("[ops] sre team/sre/1/0: Cause: db hit its connection limit, so api requests "
            "timed out (503). Restarted db with oncall's approval.") in approved.stdout
    assert "sre: 1,170 tokens (1,080 in, 90 out), 3 calls" in approved.stdout  # the file's
    assert f"completed: run {run} (" in approved.stdout
    restarts = (tmp_path / ".wop" / "restarts.log").read_text(encoding="utf-8").splitlines()
    assert len(restarts) == 1 and restarts[0].endswith(
        "restarted db: db refuses connections (max 100), so the api times out")
    events = [json.loads(line) for line in wop("events", run).stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds.count("agent.toolCalled") == 2 and "approval.granted" in kinds
    for check in (("check", run), ("check", "--v2", run)):
        assert wop(*check).returncode == 0, wop(*check).stdout
