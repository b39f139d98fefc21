"""Private argument parser of the ``wop`` command (argparse, no extra dependency)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from wopdsl import __version__
from wopdsl._ids import IDENT_RULE, is_ident
from wopdsl.cli._capabilities import add_capabilities
from wopdsl.cli._eval_parser import add_eval
from wopdsl.cli._serve import add_serve
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS


class _Commands:
    """A command module, imported when one of its commands runs.

    Not when the parser is built: ``wop --help`` and the read-only commands start fast.
    """

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Command:
        module = self._module

        def command(*args: Any, **kwargs: Any) -> int:
            func: Command = getattr(importlib.import_module(module), name)
            return func(*args, **kwargs)

        command.__name__ = command.__qualname__ = name
        return command


_commands = _Commands("wopdsl.cli._commands")
_validate = _Commands("wopdsl.cli._validate")
_drive = _Commands("wopdsl.cli._drive")
_inspect = _Commands("wopdsl.cli._inspect")
_approve = _Commands("wopdsl.cli._approve")
_deliberation = _Commands("wopdsl.cli._deliberation")
_eval = _Commands("wopdsl.cli._eval")

_EPILOG = """\
exit codes: 0 completed / ok, 1 run failed (or internal error), 2 invalid input or a store
that cannot be opened or read, 3 waiting for a human's input, 4 run not stopped (replay of an
interrupted run)

store: --store PATH (a SQLite file), --store postgresql://USER:PASSWORD@HOST:PORT/DB
(needs wopdsl[postgres]) or --store memory:; default $WOP_STORE, else .wop/runs.db
docs: docs/cli.md, error codes: docs/errors.md
"""


def _run_id(text: str) -> str:
    if not is_ident(text):
        raise argparse.ArgumentTypeError(f"invalid run id {text!r}: use {IDENT_RULE}")
    return text


def _participants(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2 (got {text!r})")
    return value


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low} (got {text!r})")
        return value

    return parse


def _sequence(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an event sequence >= 0 (got {text!r})")
    return value


def _common(suppress: bool) -> argparse.ArgumentParser:
    """Options taken before or after the command (`wop --store X runs`, `wop runs --store X`)."""
    parent = argparse.ArgumentParser(add_help=False)
    default: Any = argparse.SUPPRESS if suppress else None
    parent.add_argument("--store", metavar="STORE", default=default,
                        help="SQLite file, postgresql://USER:PASSWORD@HOST:PORT/DB or memory: "
                             "(default: $WOP_STORE or .wop/runs.db)")
    parent.add_argument("--debug", action="store_true",
                        default=argparse.SUPPRESS if suppress else False,
                        help="show tracebacks")
    return parent


Command = Callable[..., int]


def build_parser() -> argparse.ArgumentParser:
    """Build the ``wop`` parser; each command sets ``func``."""
    parser = argparse.ArgumentParser(
        prog="wop", parents=[_common(False)],
        description="Run multi-agent councils on a durable OpenWOP event log.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"wop (wopdsl) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _common(True)

    def add(name: str, func: Command, help_: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, parents=[common], help=help_, description=help_)
        cmd.set_defaults(func=func)
        return cmd

    cmd = add("validate", _validate.cmd_validate, "load and compile a council; print a summary")
    cmd.add_argument("file", metavar="FILE", help="council file (.toml) or MODULE:ATTR")
    _max_participants(cmd)
    cmd.add_argument("--no-cache", action="store_true",
                     help="list every MCP server's tools live, even those cached as long as "
                          "the server allows (docs/guides/tools.md)")
    _json_flag(cmd, "print {status: ok, council, rooms, members} (or {status: invalid, "
                    "error}) as JSON")

    cmd = add("run", _drive.cmd_run, "run a council, printing its transcript live")
    otel_flag(cmd)
    cmd.add_argument("file", metavar="FILE", help="council file (.toml) or MODULE:ATTR")
    cmd.add_argument("--run-id", type=_run_id, metavar="ID", help="the new run's id")
    _max_participants(cmd)
    _json_flag(cmd)

    cmd = add("resume", _drive.cmd_resume, "continue an interrupted or waiting run")
    otel_flag(cmd)
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("council", metavar="FILE", nargs="?",
                     help="council file or MODULE:ATTR that re-binds python handlers")
    _json_flag(cmd)

    cmd = add("reply", _drive.cmd_reply, "post as the human member, then continue the run")
    otel_flag(cmd)
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("text", metavar="TEXT", nargs="?", default=None,
                     help="the message; @member asks for a turn")
    cmd.add_argument("--room", required=True, metavar="ROOM")
    cmd.add_argument("--payload", metavar="JSON",
                     help="instead of TEXT: an RFC 0005 §E resume payload "
                          "{operation, turn, outcome?} or bare turn fields ('-' reads stdin)")
    cmd.add_argument("--close", action="store_true",
                     help="close the room's conversation (RFC 0005 §E close)")
    cmd.add_argument("--outcome", metavar="JSON", help="with --close: the conversation's outcome")
    cmd.add_argument("--steer", action="store_true",
                     help="interrupt: the members TEXT mentions (else the room's members) stop "
                          "their running turns and take them again with this post")
    cmd.add_argument("--as", dest="as_", metavar="MEMBER",
                     help="the human member to post as (when there are several)")
    _council_flag(cmd)
    _json_flag(cmd)

    cmd = add("approve", _approve.cmd_approve,
              "decide a tool call that waits for approval, then continue the run")
    otel_flag(cmd)
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("call", metavar="CALL", nargs="?", default=None,
                     help="the call id (default: the one call waiting)")
    cmd.add_argument("--reject", action="store_true",
                     help="reject the call (the model reads the rejection as its result)")
    cmd.add_argument("--reason", metavar="TEXT", help="why (given to the model with --reject)")
    cmd.add_argument("--as", dest="as_", metavar="MEMBER",
                     help="the human member deciding (the tool's approver)")
    _council_flag(cmd)
    _json_flag(cmd)

    cmd = add("vote", _deliberation.cmd_vote,
              "vote as a human member on a decision, then continue the run")
    otel_flag(cmd)
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("decision", metavar="DECISION", help="the decision's id")
    cmd.add_argument("choice", metavar="CHOICE", help="one of its options, or a score")
    cmd.add_argument("--reason", metavar="TEXT", help="why (shown with the tally and dissent)")
    cmd.add_argument("--text", metavar="TEXT",
                     help="also post this message in the decision's room (@member mentions)")
    cmd.add_argument("--as", dest="as_", metavar="MEMBER",
                     help="the human voter (when there are several)")
    _council_flag(cmd)
    _json_flag(cmd)

    cmd = add("metrics", _deliberation.cmd_metrics,
              "how a run decided: per member and per decision (turns, votes, flips, dissent)")
    cmd.add_argument("run", metavar="RUN")
    _json_flag(cmd, "print {runId, members, decisions} as JSON")

    cmd = add("events", _commands.cmd_events, "the run's events as JSON Lines")
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("--follow", action="store_true",
                     help="keep following until the run completes, fails or is cancelled")

    cmd = add("replay", _commands.cmd_replay, "fold the log and print the result "
              "(appends nothing)")
    cmd.add_argument("run", metavar="RUN")
    _json_flag(cmd)

    cmd = add("transcript", _commands.cmd_transcript, "the run's transcript text")
    cmd.add_argument("run", metavar="RUN")

    cmd = add("rooms", _commands.cmd_rooms, "write one file per room; print their paths")
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("--out", required=True, metavar="DIR")

    cmd = add("runs", _commands.cmd_runs, "list the runs in the store")
    cmd.add_argument("--tag", action="append", metavar="TAG",
                     help="only runs with this tag (repeat for several: all must match)")
    for key, what in (("eval", "an eval's runs (wop eval): --tag eval=ID"),
                      ("arm", "an eval arm's runs: --tag arm=ARM"),
                      ("case", "an eval case's runs: --tag case=CASE"),
                      ("repeat", "an eval repeat's runs: --tag repeat=N")):
        cmd.add_argument(f"--{key}", metavar=key.upper(), help=f"only {what}")
    _json_flag(cmd, "print the runs as a JSON list")

    cmd = add("export", _commands.cmd_export, "write a decorator council as a TOML file")
    cmd.add_argument("reference", metavar="MODULE:ATTR")

    add("schema", _commands.cmd_schema, "the JSON Schema of the council file format")

    cmd = add("check", _commands.cmd_check, "validate a stored run against the bundled "
              "OpenWOP schemas and the log rules (exit 1 when it breaks one)")
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("--max", type=_at_least(1), default=20, metavar="N",
                     help="print at most N violations (default 20)")
    cmd.add_argument("--v2", action="store_true",
                     help="check the run as OpenWOP v2 serves it (tenant-bound runId, the v2 "
                          "envelope schema) besides the log rules")
    _json_flag(cmd, "print {runId, events, valid, violations} as JSON")

    cmd = add("diff", _inspect.cmd_diff, "compare two runs: transcripts per room, speaking "
              "order, per-member work, outcome (exit 0 equal, 1 differ)")
    cmd.add_argument("run_a", metavar="RUN_A", type=_run_id)
    cmd.add_argument("run_b", metavar="RUN_B", type=_run_id)
    cmd.add_argument("--store-b", metavar="STORE",
                     help="the store that holds RUN_B (default: the same as RUN_A's)")
    _json_flag(cmd, "print the comparison as JSON (see docs/guides/diff.md)")

    cmd = add("trace", _inspect.cmd_trace, "export a run's OpenTelemetry spans to an OTLP "
              "endpoint (needs the otel extra; --tree does not)")
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("--endpoint", metavar="URL",
                     help="the collector's OTLP/HTTP base URL, as $OTEL_EXPORTER_OTLP_ENDPOINT "
                          "takes it (http://localhost:4318; /v1/traces is added unless the "
                          "URL ends with it). Default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
                          "$OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, else "
                          "http://localhost:4318/v1/traces")
    cmd.add_argument("--tree", action="store_true",
                     help="print the span tree instead of exporting it (works without the "
                          "otel extra)")
    _json_flag(cmd, "print {runId, traceId, spans, endpoint} as JSON")

    cmd = add("tui", _commands.cmd_tui, "the terminal UI (needs the tui extra)")
    otel_flag(cmd)
    cmd.add_argument("target", metavar="FILE|RUN", help="a council file to run, or a run id")
    cmd.add_argument("--max-participants", type=_participants, metavar="N",
                     help="most agent participants per room of a started run")
    cmd.add_argument("--as", dest="as_", metavar="MEMBER",
                     help="the human member you post as (several people may share a run)")

    add_serve(sub, common, _at_least)
    add_eval(sub, common, _at_least, _eval.cmd_eval)
    add_capabilities(sub, common, _at_least)

    cmd = add("fork", _drive.cmd_fork, "a new run from RUN's log up to SEQ, then continued")
    otel_flag(cmd)
    cmd.add_argument("run", metavar="RUN")
    cmd.add_argument("--from", dest="from_", type=_sequence, required=True, metavar="SEQ")
    cmd.add_argument("--mode", choices=("replay", "branch"), default="branch")
    cmd.add_argument("--run-id", type=_run_id, metavar="ID", help="the new run's id")
    _council_flag(cmd)
    cmd.add_argument("--base-url", metavar="URL",
                     help="model server for profiles without base_url (default: the one "
                          "the source run recorded)")
    _json_flag(cmd)
    return parser


def otel_flag(cmd: argparse.ArgumentParser) -> None:
    """``--otel``: export the run's spans live (see docs/guides/observability.md)."""
    cmd.add_argument("--otel", action="store_true",
                     help="export OpenTelemetry spans live to $OTEL_EXPORTER_OTLP_ENDPOINT "
                          "(default http://localhost:4318; needs the otel extra)")


def _max_participants(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--max-participants", type=_participants, metavar="N",
                     default=DEFAULT_MAX_PARTICIPANTS,
                     help="the host's multiPartyConversation.maxParticipants: most agent "
                          f"participants per room (default {DEFAULT_MAX_PARTICIPANTS})")


def _council_flag(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--council", metavar="FILE",
                     help="council file or MODULE:ATTR that re-binds python handlers")


def _json_flag(cmd: argparse.ArgumentParser,
               help_: str = "print only {runId, status, result | error} as JSON") -> None:
    cmd.add_argument("--json", action="store_true", help=help_)
