"""Private: the arguments of ``wop eval`` (the command itself loads only when it runs)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_eval"]


def add_eval(sub: Any, common: argparse.ArgumentParser,
             at_least: Callable[[int], Callable[[str], int]], command: Callable[..., int]) -> None:
    """Add ``wop eval`` to the ``wop`` parser (``command`` runs it: imported when it runs)."""
    help_ = ("run an evaluation: councils side by side over cases, with checks, judges and "
             "gates (exit 0 gates hold, 1 a gate fails, 2 invalid input)")
    cmd = sub.add_parser("eval", parents=[common], help=help_, description=help_)
    cmd.set_defaults(func=command)
    cmd.add_argument("file", metavar="EVAL.toml", help="the eval file (docs/guides/eval.md)")
    mode = cmd.add_mutually_exclusive_group()
    mode.add_argument("--offline", action="store_true",
                      help="answer every model call (judges' too) from the recorded answers: "
                           "no model, no network")
    mode.add_argument("--record", action="store_true",
                      help="call the models and record their answers for --offline")
    cmd.add_argument("--json", dest="json_out", metavar="FILE",
                     help="write the full report (every figure, every run id) as JSON")
    cmd.add_argument("--html", dest="html_out", metavar="FILE",
                     help="write the report as one self-contained HTML page with plots")
    cmd.add_argument("--compare", metavar="OLD.json",
                     help="show what changed since an earlier --json report")
    cmd.add_argument("--limit", type=at_least(1), metavar="N",
                     help="run only the first N cases")
    cmd.add_argument("--quiet", action="store_true", help="no progress while it runs")
    cmd.add_argument("--otel", action="store_true",
                     help="export the runs' spans, and each check result as a "
                          "gen_ai.evaluation.result event, to $OTEL_EXPORTER_OTLP_ENDPOINT "
                          "(default http://localhost:4318; needs the otel extra)")
