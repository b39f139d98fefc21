"""The ``wop`` command line (also ``python -m wopdsl``).

Commands and exit codes follow DESIGN.md §10 and are documented in ``docs/cli.md``:
0 completed (or ok), 1 run failed, 2 invalid input, 3 waiting for a human's input.
Every error prints ``error[CODE]: message`` with its location and a hint, never a traceback
(unless ``--debug``).

Example:
    >>> from wopdsl.cli import main
    >>> main(["run", "councils/release-team.toml", "--store", "memory:"])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import TextIO

from wopdsl.errors import DeclarationError, WopError

__all__ = ["main"]

_INTERNAL_HINT = "this is a bug in wopdsl or in a member handler; rerun with --debug to " \
                 "see the traceback"


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run the ``wop`` command line.

    Args:
        argv: The arguments after ``wop`` (default: ``sys.argv[1:]``).
        stdout: Where output goes (default: ``sys.stdout``).
        stderr: Where errors go (default: ``sys.stderr``).

    Returns:
        The exit code: 0 completed/ok, 1 failed, 2 invalid input, 3 waiting for input.
    """
    from wopdsl.cli._output import EXIT_FAILED, EXIT_INTERRUPTED, exit_code_for_error
    from wopdsl.cli._parser import build_parser
    from wopdsl.cli._targets import Context
    from wopdsl.cli._terminal import SafeText

    for stream in (stdout or sys.stdout, stderr or sys.stderr):
        # Text a terminal's encoding can't show is escaped, never a crash mid-transcript.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")
    # What members and people wrote never acts on the terminal (escape sequences, bidi).
    out: TextIO = SafeText(stdout or sys.stdout)  # type: ignore[assignment]
    err: TextIO = SafeText(stderr or sys.stderr)  # type: ignore[assignment]
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        # argparse fills an optional positional (reply's TEXT) before the options that follow
        # it, so `wop reply RUN --room R "text"` leaves the text over: take it back.
        if extras and getattr(args, "text", "") is None and len(extras) == 1 and \
                not extras[0].startswith("-"):
            args.text, extras = extras[0], []
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
    except SystemExit as exc:  # argparse: --help/--version exit 0, bad arguments exit 2.
        return exc.code if isinstance(exc.code, int) else 2
    ctx = Context(store_arg=args.store, out=out, err=err, debug=bool(args.debug))
    try:
        if getattr(args, "otel", False):
            _enable_tracing()
        code: int = args.func(ctx, args)
        return code
    except WopError as exc:
        if args.debug:
            traceback.print_exc(file=err)
        if getattr(args, "json", False):
            # --json promises one JSON document on stdout, every error included.
            from wopdsl.cli._output import error_json, invalid_json, print_json

            print_json(invalid_json(exc) if isinstance(exc, DeclarationError)
                       else error_json(exc, run_id=ctx.run_id), out)
        print(exc.render(), file=err, flush=True)
        return exit_code_for_error(exc)
    except KeyboardInterrupt:
        _interrupted(ctx.run_id, ctx.store_flag, out, err, memory=ctx.is_memory,
                     council=ctx.council_ref)
        ctx.close()
        if any(t.name.startswith("asyncio_") and t.is_alive() for t in threading.enumerate()):
            # A sync member handler still runs in a loop worker thread that can't be
            # interrupted, and Python would wait for it at exit. The log is already durable.
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `wop events RUN | head`): stop quietly.
        _silence_stdout()
        return EXIT_FAILED
    except Exception as exc:
        # The CLI never shows a raw traceback unless asked: say what broke and how to see more.
        if args.debug:
            traceback.print_exc(file=err)
        print(f"error[INTERNAL]: {type(exc).__name__}: {exc}\n    hint: {_INTERNAL_HINT}",
              file=err, flush=True)
        return EXIT_FAILED
    finally:
        ctx.close()


def _enable_tracing() -> None:
    """``--otel``: export runs' spans live (refused clearly when the extra is missing)."""
    from wopdsl.cli._output import CommandError
    from wopdsl.projections.trace import OTEL_MISSING, enable, otel_installed

    if not otel_installed():
        raise CommandError("OTEL_MISSING", OTEL_MISSING,
                           hint="install it, or leave --otel out")
    enable()


def _interrupted(run_id: str | None, store_flag: str, out: TextIO, err: TextIO, *,
                 memory: bool = False, council: str | None = None) -> None:
    text = "\ninterrupted"
    if run_id is not None and memory:
        from wopdsl.cli._output import MEMORY_GONE

        text += f": run {run_id} stopped; {MEMORY_GONE}"
    elif run_id is not None:
        from wopdsl.cli._output import resume_hint

        text += (f": run {run_id} stopped where it was; continue it with "
                 f"`{resume_hint(run_id, store_flag, council)}`")
    try:
        out.flush()
        print(text, file=err, flush=True)
    except (OSError, ValueError):  # pragma: no cover - the terminal went away.
        pass


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - no real stdout to redirect.
        pass
