"""Check results on the trace: one ``gen_ai.evaluation.result`` event per check and run.

The OpenTelemetry GenAI conventions define the event ``gen_ai.evaluation.result``
(``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label``, ``gen_ai.evaluation.explanation``, ``error.type``) and ask
that it be parented to the operation it evaluates. A run's trace is derived from its log (its
trace id from the run id, its root span ``invoke_workflow`` from its first event), so each
evaluated run gets one more span in its own trace — ``evaluate {eval}``, a child of the run's
root — carrying one such event per check. Its id, too, is derived (from the run and the
eval), so exporting it again duplicates nothing.

Sent with the live-export writer when export is on (``wop eval --otel`` or
``OTEL_EXPORTER_OTLP_ENDPOINT``); a collector that is down costs a warning, never the eval.
"""

from __future__ import annotations

import time
from typing import Final

from wopdsl import EventStore
from wopdsl.evals.checks import CheckResult
from wopdsl.evals.record import RunRecord
from wopdsl.projections.trace.spans import AttrValue, SpanEvent, SpanSpec, span_id, trace_id

__all__ = ["EVENT", "EvaluationExport", "evaluation_span"]

EVENT: Final = "gen_ai.evaluation.result"
"""The event's name in the GenAI semantic conventions."""
_EXPLANATION_CHARS: Final = 1000


def _event(check: str, result: CheckResult, now: int) -> SpanEvent:
    attributes: dict[str, AttrValue] = {"gen_ai.evaluation.name": check}
    if result.error is not None:
        attributes["error.type"] = "evaluation_error"
        attributes["gen_ai.evaluation.explanation"] = result.error[:_EXPLANATION_CHARS]
    elif result.score is not None:
        attributes["gen_ai.evaluation.score.value"] = float(result.score)
    else:
        attributes["gen_ai.evaluation.score.value"] = 1.0 if result.passed else 0.0
        attributes["gen_ai.evaluation.score.label"] = "pass" if result.passed else "fail"
    if result.error is None and result.explanation:
        attributes["gen_ai.evaluation.explanation"] = result.explanation[:_EXPLANATION_CHARS]
    if result.judge_run is not None:
        attributes["wopdsl.eval.judge_run_id"] = result.judge_run
    return SpanEvent(EVENT, now, attributes)


def evaluation_span(eval_id: str, record: RunRecord, root_event_id: str,
                    now_ns: int | None = None) -> SpanSpec:
    """The ``evaluate {eval}`` span of one run, under its root (see the module docs)."""
    now = time.time_ns() if now_ns is None else now_ns
    run = record.run_id
    span = SpanSpec(f"evaluate {eval_id}", span_id(run, f"wopdsl.eval:{eval_id}"),
                    span_id(run, root_event_id), now, now, attributes={
                        "gen_ai.conversation.id": run, "wopdsl.run.id": run,
                        "wopdsl.eval.id": eval_id, "wopdsl.eval.arm": record.arm,
                        "wopdsl.eval.case": record.case, "wopdsl.eval.repeat": record.repeat})
    span.events.extend(_event(check, result, now) for check, result in record.checks.items())
    return span


class EvaluationExport:
    """Sends each checked run's evaluation span (the runner's ``on_judged`` callback)."""

    def __init__(self, eval_id: str) -> None:
        from wopdsl.projections.trace.writer import shared_writer

        self.eval_id = eval_id
        self.writer = shared_writer()

    def __call__(self, record: RunRecord, store: EventStore) -> None:
        """Queue the span of ``record`` (never waits for the collector)."""
        first = store.read(record.run_id)[:1]
        if not first:
            return
        span = evaluation_span(self.eval_id, record, first[0]["eventId"])
        self.writer.write(trace_id(record.run_id), [span])

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Send what is queued (at the end of the eval)."""
        return self.writer.flush(timeout_s)
