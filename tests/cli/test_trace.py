"""OpenTelemetry export through the real CLI: `wop run --otel`, `wop reply`, `wop fork`,
`wop trace`, received by a real OTLP/HTTP receiver on loopback (protobuf decoded with the
`opentelemetry-proto` messages) while llm members talk to the scripted model server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")
pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.cli.conftest import REPO, Wop, stored_events
from tests.projections.otlp_receiver import OtlpReceiver, Received
from wopdsl._ids import parse_iso_ms
from wopdsl.projections.trace.spans import span_id, trace_id
from wopdsl.testing.model_server import ScriptedModelServer
from wopdsl.testing.review_answers import review_answer

SENTINEL = "sk-SENTINEL-otel-5b2d4f60a8e1c3b5d7f9a2c4"
HEADER_SECRET = "collector-secret-9c1e5b2d"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


def child_env(model_url: str) -> dict[str, str]:
    """A `wop` child's environment: the model server, a key and a collector header, and none
    of this machine's OTEL_* or WOP_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WOP_"))}
    env.update({"PYTHONIOENCODING": "utf-8", "OPENAI_BASE_URL": model_url,
                "OPENAI_API_KEY": SENTINEL,
                "OTEL_EXPORTER_OTLP_HEADERS": f"x-collector-token={HEADER_SECRET}"})
    return env


@pytest.fixture
def otel_env(receiver: OtlpReceiver, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a `wop` child: OTLP endpoint, model server, key, collector header."""
    with ScriptedModelServer() as server:
        server.default = review_answer
        (tmp_path / "llm").mkdir()
        shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path / "llm")
        yield child_env(server.url)


def _wop(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)


def _ids(spans: list[Received]) -> set[tuple[str, str, str]]:
    return {(s.trace_id, s.span_id, s.parent_id) for s in spans}


def test_a_live_run_exports_its_span_tree(tmp_path: Path, receiver: OtlpReceiver,
                                          otel_env: dict[str, str]) -> None:
    env = {**otel_env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    done = _wop(tmp_path, env, "run", "llm/llm-review.toml", "--run-id", "r1")
    assert done.returncode == 0, done.stderr
    spans = list(receiver.spans)
    events = stored_events(tmp_path / ".wop" / "runs.db", "r1")
    trace = f"{trace_id('r1'):032x}"
    assert {s.trace_id for s in spans} == {trace}
    root = next(s for s in spans if not s.parent_id)
    assert root.span_id == f"{span_id('r1', events[0]['eventId']):016x}"
    assert root.name == "invoke_workflow llm-review"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "llm-review"
    assert root.attributes["gen_ai.conversation.id"] == "r1"
    assert root.attributes["wopdsl.run.status"] == "completed"
    assert root.start == parse_iso_ms(events[0]["timestamp"]) * 1_000_000
    assert root.end == parse_iso_ms(events[-1]["timestamp"]) * 1_000_000
    assert root.resource["service.name"] == "wopdsl" and root.scope == "wopdsl"

    turns = sorted((s for s in spans if s.parent_id == root.span_id), key=lambda s: s.start)
    assert [s.name for s in turns] == ["invoke_agent proposer", "invoke_agent critic",
                                       "invoke_agent proposer"]
    starts = [e for e in events if e["type"] == "node.started"
              and e["payload"].get("typeId") == "council.member"]
    assert [s.span_id for s in turns] == [f"{span_id('r1', e['eventId']):016x}" for e in starts]
    assert [s.attributes["gen_ai.agent.name"] for s in turns] == ["proposer", "critic",
                                                                  "proposer"]
    assert all(s.attributes["gen_ai.operation.name"] == "invoke_agent" for s in turns)
    assert [s.attributes["wopdsl.turn.position"] for s in turns] == [1, 2, 3]

    usage = [e for e in events if e["type"] == "provider.usage"]
    for turn, call_event in zip(turns, usage, strict=True):
        [chat] = [s for s in spans if s.parent_id == turn.span_id]
        assert chat.name == "chat gpt-4o-mini"
        assert chat.kind == 3  # SPAN_KIND_CLIENT
        assert chat.span_id == f"{span_id('r1', call_event['eventId']):016x}"
        assert chat.end == parse_iso_ms(call_event["timestamp"]) * 1_000_000
        assert turn.start <= chat.start <= chat.end <= turn.end
        payload = call_event["payload"]
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert chat.attributes["gen_ai.response.model"] == payload["model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] == payload["inputTokens"]
        assert chat.attributes["gen_ai.usage.output_tokens"] == payload["outputTokens"]
        assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop"]
        # observability = "hashed" (the default): no prompt or answer text leaves
        assert not any(k in chat.attributes for k in (
            "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"))
    assert len(spans) == 1 + 3 + 3
    wire = b"".join(body for _, body in receiver.requests)
    assert SENTINEL.encode() not in wire and HEADER_SECRET.encode() not in wire
    assert b"trunk-based" not in wire  # no message or prompt text (hashed observability)
    assert all(headers.get("x-collector-token") == HEADER_SECRET
               for headers, _ in receiver.requests)
    assert SENTINEL not in done.stdout + done.stderr and HEADER_SECRET not in done.stderr

    # Exported again after the fact: the very same ids, nothing new.
    receiver.spans.clear()
    again = _wop(tmp_path, env, "trace", "r1")
    assert again.returncode == 0, again.stderr
    assert f"exported 7 spans of run r1 (trace {trace})" in again.stdout
    assert _ids(receiver.spans) == _ids(spans)
    assert {(s.span_id, s.start, s.end) for s in receiver.spans} == \
        {(s.span_id, s.start, s.end) for s in spans}


def test_a_resumed_run_continues_its_trace(tmp_path: Path, receiver: OtlpReceiver,
                                           otel_env: dict[str, str], wop: Wop,
                                           human_council: Path) -> None:
    env = {**otel_env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    first = _wop(tmp_path, env, "run", str(human_council), "--run-id", "h")
    assert first.returncode == 3, first.stderr
    before = list(receiver.spans)
    assert [s.name for s in before] == ["invoke_agent namer"]  # the root ends with the run
    receiver.spans.clear()
    second = _wop(tmp_path, env, "reply", "h", "--room", "desk", "Aurora @namer")
    assert second.returncode == 0, second.stderr
    after = list(receiver.spans)
    spans = before + after
    assert len({s.span_id for s in spans}) == len(spans)  # nothing exported twice
    assert {s.trace_id for s in spans} == {f"{trace_id('h'):032x}"}
    [root] = [s for s in after if not s.parent_id]
    assert {s.parent_id for s in spans if s.parent_id} == {root.span_id}
    # The root starts with the run, its first turn in the same millisecond or later.
    assert [s.name for s in sorted(spans, key=lambda s: (s.start, bool(s.parent_id)))] == [
        "invoke_workflow ask-me", "invoke_agent namer", "invoke_agent namer"]
    names = [name for name, _, _ in root.events]
    assert "wopdsl.human.post" in names and "wopdsl.interrupt.requested" in names
    post = next(attrs for name, _, attrs in root.events if name == "wopdsl.human.post")
    assert post["wopdsl.member"] == "me" and post["wopdsl.room"] == "desk"
    assert post["wopdsl.mentions"] == ["namer"] and "wopdsl.text" not in post

    receiver.spans.clear()
    assert _wop(tmp_path, env, "trace", "h").returncode == 0
    assert _ids(receiver.spans) == _ids(spans)


def test_a_fork_links_to_its_source(tmp_path: Path, receiver: OtlpReceiver,
                                    otel_env: dict[str, str], release_team: Path) -> None:
    assert _wop(tmp_path, otel_env, "run", str(release_team), "--run-id", "src").returncode == 0
    assert receiver.spans == []  # no endpoint, no --otel: nothing exported
    env = {**otel_env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    done = _wop(tmp_path, env, "fork", "src", "--from", "8", "--run-id", "f")
    assert done.returncode == 0, done.stderr
    spans = list(receiver.spans)
    [root] = [s for s in spans if not s.parent_id]
    assert root.trace_id == f"{trace_id('f'):032x}"
    src_events = stored_events(tmp_path / ".wop" / "runs.db", "src")
    [(link_trace, link_span, attrs)] = root.links
    assert link_trace == f"{trace_id('src'):032x}"
    assert link_span == f"{span_id('src', src_events[0]['eventId']):016x}"
    assert attrs["wopdsl.fork.at_sequence"] == 8
    assert root.attributes["wopdsl.fork.source_run_id"] == "src"
    # Only what the fork did after its cut (#8 starts the reviewer's turn, which runs again
    # in the fork): the reviewer's and the writer's last turn; the rest is the source's.
    assert sorted(s.name for s in spans) == [
        "invoke_agent reviewer", "invoke_agent writer", "invoke_workflow release-team"]
    fork_events = stored_events(tmp_path / ".wop" / "runs.db", "f")
    assert root.start == parse_iso_ms(fork_events[9]["timestamp"]) * 1_000_000


def test_trace_command_errors(tmp_path: Path, otel_env: dict[str, str],
                              release_team: Path) -> None:
    assert _wop(tmp_path, otel_env, "run", str(release_team), "--run-id", "x").returncode == 0
    missing = _wop(tmp_path, otel_env, "trace", "nope")
    assert missing.returncode == 2 and "error[RUN_NOT_FOUND]" in missing.stderr
    tree = _wop(tmp_path, otel_env, "trace", "x", "--tree")
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout.splitlines()[0].startswith("invoke_workflow release-team  +0 ms")
    assert "└─ invoke_agent writer" in tree.stdout
    env = {**otel_env, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    with OtlpReceiver() as closed:
        url = closed.endpoint
    refused = _wop(tmp_path, env, "trace", "x", "--endpoint",
                   url.replace("http://", "http://user:pa55word@") + "/v1/traces")
    assert refused.returncode == 1
    assert "error[TRACE_EXPORT_FAILED]" in refused.stderr
    assert "did not take the 4 spans of run x: it refused the connection" in refused.stderr
    assert "Transient error" not in refused.stderr  # no raw SDK line
    with OtlpReceiver() as rx:  # a full traces URL the collector does not serve
        wrong = _wop(tmp_path, {**otel_env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
                                rx.endpoint + "/v1/wrong"}, "trace", "x")
    assert wrong.returncode == 1 and "of run x: it answered HTTP 404" in wrong.stderr
    assert "pa55word" not in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr


def test_tracing_trouble_never_stops_a_run(tmp_path: Path, receiver: OtlpReceiver,
                                           otel_env: dict[str, str], release_team: Path) -> None:
    # A setting the SDK refuses: the run goes on, live export is off, one warning says why.
    env = {**otel_env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_BSP_MAX_QUEUE_SIZE": "0"}
    done = _wop(tmp_path, env, "run", str(release_team), "--run-id", "r")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("live tracing is off: max_queue_size") == 1
    assert "Traceback" not in done.stderr
    assert receiver.spans == []


@pytest.mark.parametrize("suffix", ["", "/", "/v1/traces"])
def test_trace_endpoint_takes_the_base_url(tmp_path: Path, receiver: OtlpReceiver,
                                           otel_env: dict[str, str], release_team: Path,
                                           suffix: str) -> None:
    # `--endpoint` reads like OTEL_EXPORTER_OTLP_ENDPOINT (a base URL); a full traces URL
    # still works. (Before, a base URL was posted to as it was: the collector said 404.)
    assert _wop(tmp_path, otel_env, "run", str(release_team), "--run-id", "x").returncode == 0
    done = _wop(tmp_path, otel_env, "trace", "x", "--endpoint", receiver.endpoint + suffix)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(f" to {receiver.endpoint}/v1/traces")
    assert len(receiver.spans) == int(done.stdout.split()[1])


# Runs `wop` where no OpenTelemetry module can be imported (as without the otel extra).
_NO_OTEL = """
import runpy, sys

class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
sys.argv = ["wop", *sys.argv[1:]]
try:
    runpy.run_module("wopdsl", run_name="__main__")
finally:
    assert not [m for m in sys.modules if m.startswith("opentelemetry")]
"""


def test_trace_tree_works_without_the_otel_extra(tmp_path: Path, otel_env: dict[str, str],
                                                 release_team: Path) -> None:
    assert _wop(tmp_path, otel_env, "run", str(release_team), "--run-id", "x").returncode == 0
    with_otel = _wop(tmp_path, otel_env, "trace", "x", "--tree")
    assert with_otel.returncode == 0, with_otel.stderr

    def bare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _NO_OTEL, *args], cwd=tmp_path,
                              env=otel_env, capture_output=True, text=True, encoding="utf-8",
                              timeout=120, check=False)

    probe = subprocess.run([sys.executable, "-c", _NO_OTEL.split("sys.argv")[0] +
                            "import opentelemetry"], capture_output=True, text=True,
                           timeout=60, check=False)
    assert "No module named 'opentelemetry'" in probe.stderr  # the shim does block it
    tree = bare("trace", "x", "--tree")
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout == with_otel.stdout  # the very same tree, nothing imported
    assert tree.stdout.startswith("invoke_workflow release-team  +0 ms")
    export = bare("trace", "x")
    assert export.returncode == 2 and "error[OTEL_MISSING]" in export.stderr
    assert "--tree" in export.stderr and "Traceback" not in export.stderr
