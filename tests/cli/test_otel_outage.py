"""`--otel` with a collector that hangs or is not there: the run is not slowed, the process
exits promptly, and one wopdsl line (no raw OpenTelemetry SDK output) says what was dropped,
where, and the fix (issues 32 and 35). Real `wop run` subprocesses, llm members on the
scripted model server, a real socket server that accepts and never answers."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")
pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from tests.cli.conftest import REPO, stored_events
from tests.cli.test_trace import HEADER_SECRET, SENTINEL, child_env
from tests.projections.otlp_receiver import HangingCollector, closed_endpoint
from wopdsl._ids import parse_iso_ms
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer
from wopdsl.testing.review_answers import review_answer


@dataclasses.dataclass
class Timed:
    """One `wop run`: the process, the run's own duration (run.started → its last event, from
    the log), its exit (that last event → the process gone) and its total, in seconds."""

    done: subprocess.CompletedProcess[str]
    run: float
    exit: float
    total: float


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A `wop` child's environment (:func:`child_env`), each model answer taking 0.25 s."""

    def slow(request: CapturedRequest) -> Answer:
        answer = review_answer(request)
        assert isinstance(answer, Answer)
        return dataclasses.replace(answer, delay_s=0.25)

    with ScriptedModelServer() as server:
        server.default = slow
        shutil.copy(REPO / "councils" / "llm-review.toml", tmp_path)
        yield child_env(server.url)


def _run(tmp_path: Path, env: dict[str, str], run_id: str, *flags: str) -> Timed:
    began = time.time()
    done = subprocess.run([sys.executable, "-m", "wopdsl", "run", "llm-review.toml",
                           "--run-id", run_id, *flags], cwd=tmp_path, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)
    ended = time.time()
    assert done.returncode == 0, done.stderr
    events = stored_events(tmp_path / ".wop" / "runs.db", run_id)
    started, last = (parse_iso_ms(events[i]["timestamp"]) / 1000 for i in (0, -1))
    return Timed(done, last - started, ended - last, ended - began)


def _pairs(tmp_path: Path, env: dict[str, str], traced: dict[str, str], tag: str,
           count: int = 2) -> tuple[list[Timed], list[Timed]]:
    """Runs without telemetry and with, interleaved (a busy machine slows both)."""
    plain, otel = [], []
    for index in range(count):
        plain.append(_run(tmp_path, env, f"plain-{tag}{index}"))
        otel.append(_run(tmp_path, traced, f"otel-{tag}{index}", "--otel"))
    return plain, otel


def _said_once(timed: list[Timed]) -> str:
    """The one line each traced run printed (the same each time); no raw SDK output."""
    lines = {t.done.stderr.strip() for t in timed}
    assert len(lines) == 1, lines
    [line] = lines
    assert "\n" not in line, line
    for raw in ("Traceback", "Transient error", "Failed to export", "opentelemetry",
                "HTTPConnectionPool", SENTINEL, HEADER_SECRET):
        assert raw not in line, line
    return line


def test_a_hanging_collector_never_stalls_a_run(tmp_path: Path, env: dict[str, str]) -> None:
    # Before: the run's end waited for the exporter's flush (10 s, the OTLP timeout) and the
    # exit for the SDK's shutdown; the run took ~10x as long.
    with HangingCollector() as collector:
        traced = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
        plain, otel = _pairs(tmp_path, env, traced, "h")
        assert collector.accepted >= 1  # the exporter did try to send
    # Generous bounds, each run compared with the same run without telemetry measured here
    # (the best of two, so one stall of a busy machine does not decide): within 1.2x, plus
    # a second for a busy machine's noise; shutdown within 3 s more.
    best_plain, best_otel = (min(t.run for t in ts) for ts in (plain, otel))
    assert best_otel <= 1.2 * best_plain + 1.0, (plain, otel)
    exit_plain, exit_otel = (min(t.exit for t in ts) for ts in (plain, otel))
    assert exit_otel <= exit_plain + 3.0, (plain, otel)
    line = _said_once(otel)
    assert line.startswith("wopdsl tracing: dropped 7 spans: the OpenTelemetry collector at "
                           f"{collector.endpoint}/v1/traces did not answer within 2 s;"), line
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in line and "wop trace RUN" in line
    assert all(t.done.stderr == "" for t in plain)


def test_no_collector_costs_a_run_little_and_one_line(tmp_path: Path,
                                                      env: dict[str, str]) -> None:
    # Before: ~10 s of exporter retries at the end of each run, and their raw SDK lines.
    endpoint = closed_endpoint().replace("http://", "http://otel:pa55word@")
    plain, otel = _pairs(tmp_path, env, {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, "n",
                         count=3)
    # The best of three each (a busy machine's stalls do not decide): the run no slower
    # (within 1.2x, plus a second of noise), its exit at most a second longer (the waiting
    # was there). Loading OpenTelemetry, before the run starts, is what --otel costs with
    # any collector.
    best_plain, best_otel = (min(t.run for t in ts) for ts in (plain, otel))
    assert best_otel <= 1.2 * best_plain + 1.0, (plain, otel)
    exit_plain, exit_otel = (min(t.exit for t in ts) for ts in (plain, otel))
    assert exit_otel <= exit_plain + 1.0, (plain, otel)
    line = _said_once(otel)
    shown = endpoint.replace("pa55word", "***")
    assert line.startswith(f"wopdsl tracing: dropped 7 spans: the OpenTelemetry collector at "
                           f"{shown}/v1/traces refused the connection"), line
    assert "pa55word" not in line and "OTEL_EXPORTER_OTLP_ENDPOINT" in line
