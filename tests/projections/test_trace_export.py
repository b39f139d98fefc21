"""The span writer's own worker (``wopdsl.projections.trace.writer``): writing never waits for
the collector, a hanging collector costs bounded memory and one line, a slow one still gets
every span at close. A real hanging socket server and a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import logging
import time

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (wopdsl[otel]) is not installed")

from tests.projections.otlp_receiver import HangingCollector, OtlpReceiver
from wopdsl.projections.trace.spans import SpanSpec
from wopdsl.projections.trace.writer import SpanWriter

T0_NS = 1_767_225_600_000_000_000


def _specs(count: int) -> list[SpanSpec]:
    return [SpanSpec(f"span {i}", i + 1, None, T0_NS + i, T0_NS + i + 1) for i in range(count)]


def test_a_hanging_collector_costs_bounded_memory_and_one_line(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30")  # the request would hang 30 s
    caplog.set_level(logging.DEBUG)
    with HangingCollector() as collector:
        writer = SpanWriter(collector.endpoint + "/v1/traces")
        began = time.monotonic()
        for spec in _specs(100):
            writer.write(7, [spec])
        wrote = time.monotonic() - began
        # At most the queue (8) and one request (4) are held; the rest was dropped, counted.
        assert writer.outbox.pending <= 8 + 4
        assert writer.outbox.dropped >= 100 - 12
        writer.close(0.5)
        closed = time.monotonic() - began
    assert wrote < 5 and closed < 10  # generous: neither waited for the hanging request
    assert (writer.outbox.exported, writer.outbox.dropped, writer.outbox.pending) == (0, 100, 0)
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in said] == ["wopdsl.trace"], [r.getMessage() for r in said]
    assert said[0].getMessage().startswith(
        f"wopdsl tracing: dropped 100 spans: the OpenTelemetry collector at "
        f"{collector.endpoint}/v1/traces did not answer within 0.5 s;")
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    writer.write(7, _specs(1))  # after close: dropped at once, nothing said again
    assert writer.outbox.dropped == 101
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def test_a_slow_collector_gets_every_span_at_close(monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # Each request takes 0.3 s and carries one span: closing takes longer than its grace,
    # which only counts time without progress.
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    with OtlpReceiver(delay=0.3) as receiver:
        writer = SpanWriter(receiver.endpoint + "/v1/traces")
        writer.write(7, _specs(6))
        writer.close(1.0)
        assert sorted(s.name for s in receiver.spans) == [f"span {i}" for i in range(6)]
    assert (writer.outbox.exported, writer.outbox.dropped) == (6, 0)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
