"""Private commands that look into stored runs from outside: ``wop diff`` and ``wop trace``."""

from __future__ import annotations

import argparse

from wopdsl.cli._output import EXIT_FAILED, EXIT_OK, CommandError, print_json
from wopdsl.cli._targets import Context
from wopdsl.store import EventStore, describe_target, open_store, require_run


def cmd_diff(ctx: Context, args: argparse.Namespace) -> int:
    """``wop diff RUN_A RUN_B [--store-b STORE]``: exit 0 when equal, 1 when they differ."""
    from wopdsl.projections.diff import diff_runs

    store_a = ctx.require_run(args.run_a, read_only=True)
    store_b: EventStore = store_a
    if args.store_b is not None:
        store_b = open_store(args.store_b, create=False, read_only=True)
    try:
        if store_b is not store_a:
            require_run(store_b, args.run_b, where=describe_target(args.store_b),
                        runs=f"wop --store {describe_target(args.store_b)} runs")
        else:
            ctx.require_run(args.run_b, read_only=True)
        diff = diff_runs(store_a.read(args.run_a), store_b.read(args.run_b))
    finally:
        if store_b is not store_a:
            store_b.close()
    if args.json:
        print_json(diff.to_json(), ctx.out)
    else:
        ctx.out.write(diff.text())
        ctx.out.flush()
    return EXIT_OK if diff.equal else EXIT_FAILED


def cmd_trace(ctx: Context, args: argparse.Namespace) -> int:
    """``wop trace RUN``: export the run's spans to an OTLP endpoint (or print them)."""
    from wopdsl.projections.trace import OTEL_MISSING, otel_installed
    from wopdsl.projections.trace.urls import shown_url, traces_url

    store = ctx.require_run(args.run, read_only=True)
    from wopdsl.projections.trace.derive import TraceProjection

    projection = TraceProjection()
    spans = [span for event in store.read(args.run) for span in projection.apply(event)]
    spans.extend(projection.finish())
    trace_hex = f"{projection.trace_id:032x}"
    if args.tree:  # only prints: no OpenTelemetry needed
        from wopdsl.projections.trace.tree import render_tree

        ctx.out.write(render_tree(spans))
        ctx.out.flush()
        return EXIT_OK
    if not otel_installed():
        raise CommandError("OTEL_MISSING", OTEL_MISSING,
                           hint="the OpenTelemetry SDK and OTLP exporter ship as an extra "
                                "(`wop trace RUN --tree` prints the spans without it)")
    from wopdsl.projections.trace.writer import SpanWriter

    writer = SpanWriter(traces_url(args.endpoint) if args.endpoint else None, report=False)
    try:
        writer.write(projection.trace_id, spans)
        flushed, problem = writer.flush(), writer.outbox.problem
    finally:
        writer.close(0.0)
    endpoint = shown_url(writer.endpoint)
    if not flushed:
        why = f": it {problem}" if problem else ""
        raise CommandError(
            "TRACE_EXPORT_FAILED", f"the OTLP endpoint {endpoint} did not take the "
            f"{len(spans)} spans of run {args.run}{why}",
            hint="check that a collector listens there (OTEL_EXPORTER_OTLP_ENDPOINT or "
                 "--endpoint, both a base URL such as http://localhost:4318) and its "
                 "headers (OTEL_EXPORTER_OTLP_HEADERS)",
            exit_code=EXIT_FAILED)
    if args.json:
        print_json({"runId": args.run, "traceId": trace_hex, "spans": len(spans),
                    "endpoint": endpoint}, ctx.out)
    else:
        print(f"exported {len(spans)} spans of run {args.run} (trace {trace_hex}) to "
              f"{endpoint}", file=ctx.out, flush=True)
    return EXIT_OK
