"""Private: ``wop approve RUN [CALL]``: decide a tool call that waits for approval, go on."""

from __future__ import annotations

import argparse

from wopdsl import Run, attach
from wopdsl.cli._drive import _live, _rebind
from wopdsl.cli._output import LivePrinter
from wopdsl.cli._targets import Context
from wopdsl.cli._tool_lines import call_arguments

__all__ = ["cmd_approve"]


def cmd_approve(ctx: Context, args: argparse.Namespace) -> int:
    """``wop approve RUN [CALL] [--as MEMBER] [--reject] [--reason TEXT]``, then continue.

    Exit codes as ``wop run``: the run goes on after the decision until it ends or waits.
    """
    council = _rebind(ctx, args.run, args.council)
    store = ctx.store()
    printer = LivePrinter.resuming(ctx.out, store, args.run, quiet=args.json)
    ctx.run_id = args.run

    async def begin() -> tuple[Run, str | None]:
        run = attach(store, args.run, council=council)
        call = await run.approve(args.call, as_=args.as_, reject=args.reject,
                                 reason=args.reason or "")
        try:
            what = call_arguments(store, args.run, call)
        except Exception:  # a store without private records
            what = ""
        verb = "rejected" if args.reject else "approved"
        return run, f"{verb} {call} {what}".rstrip()

    return _live(ctx, printer, args.json, begin, Run.wait)
