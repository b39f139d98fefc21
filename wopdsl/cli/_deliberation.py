"""Private: ``wop vote`` (a person votes on a decision) and ``wop metrics`` (how it went)."""

from __future__ import annotations

import argparse
from typing import Any

from wopdsl import Run, attach
from wopdsl.cli._drive import act_then_follow
from wopdsl.cli._output import EXIT_OK, print_json, terminal_safe
from wopdsl.cli._targets import Context
from wopdsl.store import require_run

__all__ = ["cmd_metrics", "cmd_vote"]


def cmd_vote(ctx: Context, args: argparse.Namespace) -> int:
    """``wop vote RUN DECISION CHOICE [--reason TEXT] [--as MEMBER]``, then continue.

    Exit codes as ``wop run``: the run goes on after the vote until it ends or waits.
    """

    async def vote(run: Run) -> str:
        await run.vote(args.decision, _choice(args.choice), reason=args.reason or "",
                       as_=args.as_, text=args.text or "")
        return f"voted {args.choice} on {args.decision}"

    return act_then_follow(ctx, args, vote)


def _choice(text: str) -> str | int | float:
    """A score on the command line is a number; anything else an option's name."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def cmd_metrics(ctx: Context, args: argparse.Namespace) -> int:
    """``wop metrics RUN [--json]``: per member and per decision, how the council decided."""
    store = ctx.store()
    require_run(store, args.run)
    run = attach(store, args.run)
    metrics = run.metrics()
    doc = metrics.to_json()
    if args.json:
        print_json(doc, ctx.out)
        return EXIT_OK
    out = ctx.out
    print(f"run {terminal_safe(args.run)}: how the council decided", file=out)
    rows = [["member", "turns", "posts", "mentions", "answered", "votes", "flips",
             "agreement", "survival"]]
    for member, figures in doc["members"].items():
        rows.append([member, figures["turns"], figures["posts"], figures["mentions_made"],
                     figures["mentions_answered"], figures["votes"], figures["flips"],
                     _share(figures["agreement"]), _share(figures["survival"])])
    print(_table(rows), file=out)
    if doc["decisions"]:
        rows = [["decision", "outcome", "voted", "margin", "dissent", "flips", "unanimous",
                 "first round"]]
        for decision, figures in doc["decisions"].items():
            rows.append([decision, figures["outcome"] if figures["closed"] else "(open)",
                         f"{figures['voted']}/{figures['voters']}",
                         f"{figures['margin']:.2f}", figures["dissent"], figures["flips"],
                         "yes" if figures["unanimous"] else "no",
                         "-" if figures["first_round_outcome"] is None
                         else figures["first_round_outcome"]])
        print("\n" + _table(rows), file=out)
    print("\nagreement: share of decided questions voted with the outcome; survival: share "
          "of first answers\nin blind rooms held to the end; flips: changed votes", file=out)
    return EXIT_OK


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _table(rows: list[list[Any]]) -> str:
    cells = [[terminal_safe(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  " + "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                                      for i, (cell, width) in enumerate(zip(row, widths,
                                                                           strict=True)))
                     .rstrip() for row in cells)
