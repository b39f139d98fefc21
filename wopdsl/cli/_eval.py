"""Private: ``wop eval FILE``: run an evaluation (DESIGN.md §23, docs/guides/eval.md).

Exit codes: 0 every gate holds, 1 a gate fails (or recorded answers did not match), 2 bad
input (the eval file, its cases or councils, a report to compare with), 130 interrupted
(the partial report is printed; running the same command again resumes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from wopdsl.cli._output import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, CommandError
from wopdsl.cli._targets import Context

__all__ = ["cmd_eval"]


def _raw(stream: TextIO) -> TextIO:
    """The terminal stream under the CLI's escaping wrapper.

    Progress draws with ANSI codes, and prints only ids and numbers.
    """
    inner = getattr(stream, "stream", None)
    return inner if inner is not None else stream


def cmd_eval(ctx: Context, args: argparse.Namespace) -> int:
    """``wop eval FILE``: run it, print the report, write --json/--html, apply the gates."""
    from wopdsl.evals import load_eval
    from wopdsl.evals.cassettes import CassetteUnreadable, cassette_missing
    from wopdsl.evals.compare import read_report

    evaluation = load_eval(args.file)
    old = read_report(args.compare) if args.compare else None
    mode = "offline" if args.offline else "record" if args.record else "live"
    if mode != "live" and (missing := cassette_missing()) is not None:
        raise CommandError("CASSETTE_MISMATCH", missing, hint="install it, or run live")
    store = ctx.store()
    try:
        outcome = asyncio.run(_run(evaluation, store, mode, args, ctx))
    except CassetteUnreadable as exc:
        raise CommandError("CASSETTE_MISMATCH", exc.message, hint=exc.hint,
                           exit_code=EXIT_FAILED) from None
    return _finish(outcome, old, args, ctx)


async def _run(evaluation: Any, store: Any, mode: Any, args: argparse.Namespace,
               ctx: Context) -> Any:
    from wopdsl.evals.progress import Progress
    from wopdsl.evals.runner import EvalRunner

    progress = None if args.quiet else Progress(evaluation, _raw(ctx.err))
    from wopdsl.projections.trace import export_configured, otel_installed

    exporter = None
    if export_configured() and otel_installed():  # --otel, or OTEL_EXPORTER_OTLP_ENDPOINT
        from wopdsl.evals.otel import EvaluationExport

        exporter = EvaluationExport(evaluation.id)
    runner = EvalRunner(evaluation, store, mode=mode, limit=args.limit, on_record=progress,
                        on_judged=exporter)
    loop = asyncio.get_running_loop()
    stops = [s for s in (signal.SIGINT, signal.SIGTERM) if _handle(loop, s, runner.stop)]
    try:
        return await runner.arun()
    finally:
        for stop in stops:
            loop.remove_signal_handler(stop)
        if progress is not None:
            progress.clear()
        if exporter is not None:
            exporter.flush()


def _handle(loop: asyncio.AbstractEventLoop, sig: signal.Signals,
            callback: Callable[[], None]) -> bool:
    try:
        loop.add_signal_handler(sig, callback)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread; Windows
        return False
    return True


def _finish(outcome: Any, old: dict[str, Any] | None, args: argparse.Namespace,
            ctx: Context) -> int:
    from wopdsl.evals.compare import compare_reports, render_comparison
    from wopdsl.evals.report import build_report
    from wopdsl.evals.table import render_report

    doc = build_report(outcome)
    if old is not None:
        doc["comparedWith"] = {"file": args.compare, **compare_reports(old, doc)}
    ctx.out.write(render_report(doc))
    if old is not None:
        ctx.out.write("\n" + render_comparison(doc["comparedWith"], args.compare))
    ctx.out.flush()
    if args.json_out:
        _write(Path(args.json_out), json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    if args.html_out:
        from wopdsl.evals.html import render_html

        _write(Path(args.html_out), render_html(doc))
    if not outcome.complete:
        print(f"\ninterrupted: {doc['finished']} of {doc['planned']} runs finished (the report "
              "above is partial); run the same command again to go on — finished runs are "
              "kept, interrupted ones resume", file=ctx.err, flush=True)
        return EXIT_INTERRUPTED
    if doc["problems"]:
        print(CommandError("CASSETTE_MISMATCH", "recorded answers did not match:\n  " +
                           "\n\n  ".join(doc["problems"]),
                           hint=f"re-record with `wop eval {args.file} --record` if the "
                                "change is intended").render(), file=ctx.err, flush=True)
        return EXIT_FAILED
    failed = [g for g in doc["gates"] if not g["passed"]]
    if failed:
        shown = "; ".join(f"{g['check']} on {g['arm']}: "
                          f"{'-' if g['value'] is None else format(g['value'], '.4g')} < "
                          f"{g['threshold']:g}" for g in failed)
        print(CommandError("EVAL_GATE_FAILED", f"{len(failed)} gate(s) failed: {shown}",
                           exit_code=EXIT_FAILED).render(), file=ctx.err, flush=True)
        return EXIT_FAILED
    return EXIT_OK


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError("REPORT_UNWRITABLE", f"cannot write {path}: {exc.strerror or exc}",
                           hint="pass a writable path") from None

