"""Private: ``wop approve RUN [CALL]``: decide a tool call that waits for approval, go on."""

from __future__ import annotations

import argparse

from wopdsl import Run
from wopdsl.cli._drive import act_then_follow
from wopdsl.cli._targets import Context
from wopdsl.cli._tool_lines import call_arguments

__all__ = ["cmd_approve"]


def cmd_approve(ctx: Context, args: argparse.Namespace) -> int:
    """``wop approve RUN [CALL] [--as MEMBER] [--reject] [--reason TEXT]``, then continue.

    Exit codes as ``wop run``: the run goes on after the decision until it ends or waits.
    """

    async def decide(run: Run) -> str:
        call = await run.approve(args.call, as_=args.as_, reject=args.reject,
                                 reason=args.reason or "")
        try:
            what = call_arguments(run.store, args.run, call)
        except Exception:  # a store without private records
            what = ""
        verb = "rejected" if args.reject else "approved"
        return f"{verb} {call} {what}".rstrip()

    return act_then_follow(ctx, args, decide)
