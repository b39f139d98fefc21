"""Private commands that read logs and councils (events, replay, runs, export, check ...)."""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any

from wopdsl import CouncilState, RunNotFound
from wopdsl.cli._live import LivePrinter
from wopdsl.cli._output import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    CommandError,
    exit_code_for_status,
    print_json,
    print_stop,
    resume_hint,
    run_json,
    terminal_safe,
)
from wopdsl.cli._targets import Context, import_council
from wopdsl.projections import render_transcript, write_room_files
from wopdsl.protocol import RunEventDoc
from wopdsl.state import TERMINAL_EVENTS, status_of_event, tags_of

TUI_MISSING = "wop tui needs the TUI extra: pip install 'wopdsl[tui]'"
"""What ``wop tui`` says when Textual or the TUI package is missing."""


def _json_line(event: RunEventDoc) -> str:
    # ASCII-only: valid JSON whatever the text holds, and nothing a terminal acts on.
    return json.dumps(event, separators=(",", ":"))


def cmd_events(ctx: Context, args: argparse.Namespace) -> int:
    """``wop events RUN [--follow]``: the events as JSON Lines, in sequence order."""
    store = ctx.require_run(args.run, read_only=True)
    events = store.read(args.run)
    for event in events:
        print(_json_line(event), file=ctx.out)
    ctx.out.flush()
    # No fold needed to print (so no models load): a run's end is its terminal event.
    if not args.follow or any(event["type"] in TERMINAL_EVENTS for event in events):
        return EXIT_OK

    async def follow(after: int) -> None:
        async for event in store.subscribe(args.run, after):
            print(_json_line(event), file=ctx.out, flush=True)
            if event["type"] in TERMINAL_EVENTS and \
                    event["sequence"] >= store.last_sequence(args.run):
                return

    import asyncio  # Only --follow needs a loop.

    asyncio.run(follow(events[-1]["sequence"] if events else -1))
    return EXIT_OK


def cmd_replay(ctx: Context, args: argparse.Namespace) -> int:
    """``wop replay RUN``: fold the log (no member runs, nothing appended), print the result."""
    store = ctx.require_run(args.run, read_only=True)
    events = store.read(args.run)
    state = CouncilState.fold(events)
    if args.json:
        print_json(run_json(args.run, state), ctx.out)
    else:
        printer = LivePrinter(ctx.out, buffered=True)
        for event in events:
            printer.feed(event)
        printer.flush()
        print_stop(args.run, state, ctx.out, ctx.err, store_flag=ctx.store_flag,
                   debug=ctx.debug)
    return exit_code_for_status(state.status)


def cmd_transcript(ctx: Context, args: argparse.Namespace) -> int:
    """``wop transcript RUN``: the stable transcript text."""
    store = ctx.require_run(args.run, read_only=True)
    # Texts escaped as `wop run` prints them: a typed "\x1b" shows as "\\x1b", never like
    # an escaped ESC.
    ctx.out.write(render_transcript(store.read(args.run), text=terminal_safe))
    ctx.out.flush()
    return EXIT_OK


def cmd_rooms(ctx: Context, args: argparse.Namespace) -> int:
    """``wop rooms RUN --out DIR``: write room files, print ``{revision, rooms}``."""
    store = ctx.require_run(args.run, read_only=True)
    try:
        listing = write_room_files(store.read(args.run), args.out)
    except OSError as exc:
        raise CommandError("ROOMS_UNWRITABLE", f"cannot write room files to {args.out}: "
                           f"{exc.strerror or exc}", hint="pass --out a writable folder",
                           exit_code=EXIT_INVALID) from None
    print_json(listing, ctx.out)
    return EXIT_OK


def cmd_runs(ctx: Context, args: argparse.Namespace) -> int:
    """``wop runs``: every run in the store with its council, status and event count.

    ``--tag TAG`` (repeatable; ``--eval``, ``--arm``, ``--case`` and ``--repeat`` are
    shorthands for ``--tag eval=ID`` …) keeps the runs that carry every tag given.
    """
    try:
        store = ctx.store(create=False, read_only=True)
    except RunNotFound:
        # No store file yet simply means no runs; listing must not create one.
        infos = []
    else:
        infos = store.runs()
    wanted = wanted_tags(args)
    rows: list[dict[str, Any]] = []
    for info in infos:
        events = store.read(info.run_id)
        metadata = events[0]["payload"].get("metadata") if events else None
        tags = tags_of(metadata) if isinstance(metadata, dict) else []
        if not wanted <= set(tags):
            continue
        status = status_of_event(info.last_type)
        if status is None:
            status = CouncilState.fold(events).status
        row = {"runId": info.run_id, "council": info.workflow_id, "status": status,
               "events": info.last_sequence + 1, "startedAt": info.started_at}
        driven = store.driven(info.run_id) if status == "running" else None
        if driven is not None:  # Whether a process drives it (claims); None: can't tell.
            row["driven"] = driven
        usage = run_usage(events)
        if usage is not None:
            row["usage"] = usage
        if tags:
            row["tags"] = tags
        rows.append(row)
    if args.json:
        print_json(rows, ctx.out)
        return EXIT_OK
    if not rows:
        which = f" tagged {', '.join(sorted(wanted))}" if wanted else ""
        print(f"no runs{which} in {ctx.store_shown}", file=ctx.out, flush=True)
        return EXIT_OK
    stopped = [r["runId"] for r in rows if r.get("driven") is False]
    tagged = any("tags" in r for r in rows)
    table: list[tuple[str, ...]] = [("RUN", "COUNCIL", "STATUS", "EVENTS", "TOKENS", "COST",
                                     "STARTED", *(("TAGS",) if tagged else ()))] + [
        (r["runId"], r["council"], "interrupted" if r.get("driven") is False else r["status"],
         str(r["events"]), *usage_cells(r.get("usage")), r["startedAt"],
         *((" ".join(r.get("tags", [])),) if tagged else ())) for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(6)]
    for line in table:
        cells = [line[i].ljust(widths[i]) if i < 3 else line[i].rjust(widths[i])
                 for i in range(6)]
        print("  ".join([*cells, *line[6:]]), file=ctx.out)
    for run_id in stopped:
        print(f"interrupted: no process drives run {run_id} (it stopped mid-run); continue it "
              f"with `{resume_hint(run_id, ctx.store_flag)}`", file=ctx.out)
    ctx.out.flush()
    return EXIT_OK


def wanted_tags(args: argparse.Namespace) -> set[str]:
    """The tags ``wop runs`` filters by: ``--tag`` and the eval shorthands."""
    wanted = set(args.tag or ())
    for key in ("eval", "arm", "case", "repeat"):
        value = getattr(args, key, None)
        if value is not None:
            wanted.add(f"{key}={value}")
    return wanted


def run_usage(events: list[RunEventDoc]) -> dict[str, Any] | None:
    """The run's model usage total (``provider.usage`` events summed), if any."""
    total: dict[str, Any] | None = None
    for event in events:
        if event["type"] != "provider.usage":
            continue
        payload = event["payload"]
        total = total or {"calls": 0, "inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
        total["calls"] += 1
        total["inputTokens"] += payload.get("inputTokens", 0)
        total["outputTokens"] += payload.get("outputTokens", 0)
        total["totalTokens"] = total["inputTokens"] + total["outputTokens"]
        if "costEstimateUsd" in payload:
            total["costUsd"] = round(total.get("costUsd", 0.0) + payload["costEstimateUsd"], 6)
    return total


def usage_cells(usage: dict[str, Any] | None) -> tuple[str, str]:
    """The TOKENS and COST cells of ``wop runs`` (``-`` when none)."""
    if usage is None:
        return "-", "-"
    cost = f"${usage['costUsd']:.4f}" if "costUsd" in usage else "-"
    return f"{usage['totalTokens']:,}", cost


def cmd_export(ctx: Context, args: argparse.Namespace) -> int:
    """``wop export MODULE:ATTR``: a decorator council written as a TOML council file."""
    council = import_council(args.reference)
    ctx.out.write(council.to_toml())
    ctx.out.flush()
    return EXIT_OK


def cmd_schema(ctx: Context, args: argparse.Namespace) -> int:
    """``wop schema``: the JSON Schema of the council file format."""
    from wopdsl.declare import council_json_schema

    print_json(council_json_schema(), ctx.out)
    return EXIT_OK


def cmd_check(ctx: Context, args: argparse.Namespace) -> int:
    """``wop check RUN``: validate a stored run against the bundled OpenWOP schemas and rules."""
    store = ctx.require_run(args.run, read_only=True)
    events = store.read(args.run)
    try:
        from wopdsl.protocol.check import check_events
        from wopdsl.protocol.check_v2 import check_events_v2
    except ModuleNotFoundError as exc:  # pragma: no cover - jsonschema is a dependency.
        raise CommandError("CHECK_UNAVAILABLE", f"wop check needs {exc.name}",
                           hint="pip install 'wopdsl[conformance]'") from None
    violations = check_events_v2(events) if args.v2 else check_events(events)
    version = "v2" if args.v2 else "v1"
    if args.json:
        print_json({"runId": args.run, "events": len(events), "valid": not violations,
                    "violations": [{"sequence": v.sequence, "type": v.type, "check": v.check,
                                    "message": v.message} for v in violations]}, ctx.out)
    elif not violations:
        print(f"ok: run {args.run}: {len(events)} events valid (OpenWOP {version} schemas, "
              "RFC 0005/0101 conversation rules)", file=ctx.out, flush=True)
    else:
        shown = violations[: args.max]
        print(f"error[EVENT_INVALID]: run {args.run} breaks {len(violations)} rule(s); "
              f"the first {len(shown)}:", file=ctx.out)
        for violation in shown:
            print(f"  {violation}", file=ctx.out)
        ctx.out.flush()
    return EXIT_FAILED if violations else EXIT_OK


def cmd_tui(ctx: Context, args: argparse.Namespace) -> int:
    """``wop tui FILE | RUN``: the Textual UI (needs the ``tui`` extra)."""
    try:
        importlib.import_module("textual")
        tui: Any = importlib.import_module("wopdsl_tui")
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("textual", "wopdsl_tui"):
            raise
        raise CommandError("TUI_MISSING", TUI_MISSING,
                           hint="the terminal UI ships as an optional extra") from None
    options: dict[str, Any] = {"store": ctx.store_arg}
    if args.max_participants is not None:
        options["max_participants"] = args.max_participants
    if getattr(args, "as_", None):
        options["as_"] = args.as_
    # The TUI package's entry point: run_app(target, store=None, *, max_participants=None,
    # as_=None).
    result = tui.run_app(args.target, **options)
    return int(result or 0)
