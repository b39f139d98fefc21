"""Private printing for the CLI: stop summaries, errors, JSON documents, exit codes.

The live transcript (one line per message as a run goes on) is in ``wopdsl.cli._live``.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, Final, TextIO

from wopdsl import (
    CouncilState,
    DeclarationError,
    RunFailed,
    RunNotFound,
    StoreError,
    ValidationError,
    WopError,
)
from wopdsl.cli._tool_lines import approval_lines
from wopdsl.errors import CODES
from wopdsl.projections import escape

if TYPE_CHECKING:
    from wopdsl import EventStore

EXIT_OK: Final = 0
"""Completed (or a command that succeeded)."""
EXIT_FAILED: Final = 1
"""The run failed or was cancelled, or an internal error happened."""
EXIT_INVALID: Final = 2
"""Invalid input: declaration, refused post, unknown run, bad arguments."""
EXIT_WAITING: Final = 3
"""The run waits for a human's input."""
EXIT_RUNNING: Final = 4
"""The run has not stopped: it is executing elsewhere, or was interrupted (resume it)."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C."""

_STATUS_EXIT: Final = {
    "completed": EXIT_OK,
    "failed": EXIT_FAILED,
    "cancelled": EXIT_FAILED,
    "waiting-input": EXIT_WAITING,
}


class CommandError(WopError):
    """An error of the CLI itself, with its own code and exit status."""

    def __init__(self, code: str, message: str, *, hint: str = "",
                 exit_code: int = EXIT_INVALID) -> None:
        super().__init__(message, hint=hint)
        self.code = code
        self.exit_code = exit_code

    def render(self) -> str:
        """Render like any error; link the docs only for the documented codes."""
        if self.code in CODES:
            return super().render()
        return f"error[{self.code}]: {self}"


def exit_code_for_status(status: str) -> int:
    """Map a run status to the CLI exit code (DESIGN.md §10)."""
    return _STATUS_EXIT.get(status, EXIT_RUNNING)


def exit_code_for_error(error: WopError) -> int:
    """Map an error to the CLI exit code: 2 for invalid input, 1 otherwise.

    ``STORE_ERROR`` (a store that cannot be opened or read) is 2 as well; its subclasses
    with their own codes (``STORE_CONFLICT``, ``EVENT_INVALID``) keep 1.
    """
    if isinstance(error, CommandError):
        return error.exit_code
    if isinstance(error, DeclarationError | ValidationError | RunNotFound):
        return EXIT_INVALID
    if error.code == StoreError.code:
        return EXIT_INVALID
    return EXIT_FAILED


def terminal_safe(text: str) -> str:
    r"""Escape control characters (ANSI sequences, ``\r`` ...) but keep line breaks.

    Message text comes from members and people; printed raw it could move the cursor or
    rewrite earlier lines of the terminal.
    """
    if "\n" not in text:
        return escape(text)
    return "\n".join(escape(part) for part in text.split("\n"))


def run_json(run_id: str, state: CouncilState) -> dict[str, Any]:
    """Return ``{runId, status, result | error}`` for ``--json``."""
    status = state.status
    doc: dict[str, Any] = {"runId": run_id, "status": status}
    if status == "failed":
        doc["error"] = state.error or {"code": "RUN_FAILED", "message": "the run failed"}
    elif status == "cancelled":
        doc["error"] = {"code": "CANCELLED", "message": "the run was cancelled"}
    else:
        doc["result"] = state.outputs if status == "completed" else None
    usage = state.usage.to_json()
    if usage is not None:
        doc["usage"] = usage
    return doc


def invalid_json(error: DeclarationError) -> dict[str, Any]:
    """Return ``{status: "invalid", error: {code, message, location, hint, problems}}``.

    ``message``, ``location`` and ``hint`` are the first problem's; ``problems`` lists them
    all (``message``, ``path``, ``location``, ``hint``), as ``wop validate`` prints them.
    """
    problems = [{"message": p.message, "path": p.path, "location": p.location, "hint": p.hint}
                for p in error.problems]
    first = problems[0] if problems else {"message": error.message, "location": "",
                                          "hint": error.hint}
    return {"status": "invalid", "error": {
        "code": error.code, "message": first["message"], "location": first["location"],
        "hint": first["hint"] or error.hint, "problems": problems}}


def error_json(error: WopError, *, run_id: str | None = None) -> dict[str, Any]:
    """Return ``{runId?, status: "error", error: {code, message, hint?, details?}}``.

    ``code`` is the error's OpenWOP wire code (``run_not_found``,
    ``conversation_roster_exceeded`` ...), as the HTTP host answers it; the human text on
    stderr keeps ``error[CODE]`` (DESIGN.md §10, docs/errors.md).
    """
    body: dict[str, Any] = {"code": error.wire_code, "message": error.message}
    if error.hint:
        body["hint"] = error.hint
    if error.details:
        body["details"] = dict(error.details)
    doc: dict[str, Any] = {"runId": run_id} if run_id else {}
    return {**doc, "status": "error", "error": body}


def usage_text(usage: dict[str, Any]) -> str:
    """``1,234 tokens (1,000 in, 234 out), 3 calls, $0.0012`` for one usage summary."""
    text = (f"{usage['totalTokens']:,} tokens ({usage['inputTokens']:,} in, "
            f"{usage['outputTokens']:,} out), {usage['calls']} call"
            f"{'s' if usage['calls'] != 1 else ''}")
    if "costUsd" in usage:
        text += f", ${usage['costUsd']:.4f}"
    return text


def print_json(doc: Any, out: TextIO) -> None:
    """Print ``doc`` as indented JSON."""
    # ASCII-only: valid JSON whatever the text holds, and nothing a terminal acts on.
    print(json.dumps(doc, indent=2), file=out, flush=True)


MEMORY_GONE: Final = ("the memory: store ends with this command, and the run with it; "
                      "to resume, reply to or inspect a run later, run it on a store file, "
                      "e.g. --store .wop/runs.db")
"""What to do next after a run on ``memory:``: no command can reach the run any more."""


def resume_hint(run_id: str, store_flag: str = "", council: str | None = None) -> str:
    """The ``wop resume`` command for ``run_id`` (naming ``council`` to re-bind, if given)."""
    tail = f" {shlex.quote(council)}" if council else ""
    return f"wop{store_flag} resume {shlex.quote(run_id)}{tail}"


def print_stop(run_id: str, state: CouncilState, out: TextIO, err: TextIO, *,
               store_flag: str = "", debug: bool = False, memory: bool = False,
               council: str | None = None, store: EventStore | None = None) -> None:
    """Print the final answers, the status line and what to do next.

    With ``debug``, a failed run also shows each failed handler's traceback. With
    ``memory`` (the store was ``memory:``, gone when the command ends) no hint names a
    command that would need the run. ``council``: the file or ``MODULE:ATTR`` that binds
    the run's python handlers in code, named in the hints (the log alone cannot bind them).
    ``store``: where pending approvals' arguments are read (when the log keeps hashes only).
    """
    if state.members:
        print("\nresults", file=out)
        for member in state.members.values():
            if member.result is not None:
                summary = str(member.result.get("summary", ""))
            elif member.failed:
                summary = "(failed)"
            else:
                summary = "(no turn)"
            text = terminal_safe(f"  {member.id} ({member.role}): {summary.rstrip()}")
            print(text.replace("\n", "\n    "), file=out)
    outputs = state.outputs or {}
    if outputs.get("decisions"):
        from wopdsl.projections import decision_lines

        print("\n".join(terminal_safe(line) for line in
                        decision_lines(outputs["decisions"])), file=out)
    if outputs.get("answer") is not None:
        print("\nanswer\n  " + terminal_safe(str(outputs["answer"])).replace("\n", "\n  "),
              file=out)
    usage = state.usage.to_json()
    if usage is not None:
        print("\nmodel usage", file=out)
        for member, spent in usage["members"].items():
            print(terminal_safe(f"  {member}: {usage_text(spent)}"), file=out)
        print(f"  total: {usage_text(usage['total'])}", file=out)
    for divergence in state.divergences:
        print(f"replay diverged from {divergence.get('sourceRunId')} at "
              f"#{divergence.get('atSequence')}: {divergence.get('divergenceKind')}", file=out)
    status = state.status
    events = state.last_sequence + 1
    print(f"\n{status}: run {run_id} ({events} events)", file=out, flush=True)
    if status == "waiting-input":
        print(waiting_text(run_id, state, store_flag, memory=memory, council=council,
                           store=store), file=out, flush=True)
    elif status == "failed":
        error = state.error or {}
        hint = MEMORY_GONE if memory else f"see the log with `wop{store_flag} events {run_id}`"
        failure = RunFailed(str(error.get("code", "RUN_FAILED")),
                            str(error.get("message", "the run failed")), hint=hint)
        print(failure.render(), file=err, flush=True)
        if debug:
            print_failures(state, err)
    elif status not in ("completed", "cancelled"):
        print("the run has not stopped; " + (
            f"note: {MEMORY_GONE}" if memory else
            f"continue it with `{resume_hint(run_id, store_flag, council)}`"), file=out,
            flush=True)


def print_failures(state: CouncilState, err: TextIO) -> None:
    """Print the recorded exception and traceback of every member whose last turn failed."""
    for member in state.members.values():
        error = member.error if member.failed else None
        if not error:
            continue
        details = error.get("details")
        exception = details.get("exception") if isinstance(details, dict) else None
        head = f"\n{member.id} failed: {error.get('code')}: {error.get('message')}"
        print(terminal_safe(head), file=err)
        if isinstance(exception, dict) and exception.get("traceback"):
            print(terminal_safe(str(exception["traceback"]).rstrip()), file=err)
    err.flush()


def waiting_text(run_id: str, state: CouncilState, store_flag: str = "", *,
                 memory: bool = False, council: str | None = None,
                 store: EventStore | None = None) -> str:
    """Say who is waiting for input in which rooms, and how to reply.

    With ``memory`` (a ``memory:`` store, gone with the command) say so instead of how;
    ``council`` (see :func:`print_stop`) is passed again with ``--council``.
    """
    lines = []
    first_room = ""
    for member_id in state.waiting_for:
        rooms = [r for r in state.members[member_id].rooms if not state.rooms[r].closed]
        first_room = first_room or (rooms[0] if rooms else "")
        where = f"in room{'s' if len(rooms) != 1 else ''} {', '.join(rooms)}" if rooms else \
            "(no open room)"
        lines.append(f"waiting for input: {member_id} {where}")
    for ask in state.asks.open.values():
        first_room = first_room or ask.room
        lines.append(terminal_safe(f"waiting for an answer in room {ask.room}: {ask.member}'s "
                                   f"agent asks: {ask.question}"))
    approvals = approval_lines(run_id, state, store_flag, store)
    lines.extend(approvals[:-1] if memory else approvals)
    if memory:
        lines.append(f"note: {MEMORY_GONE}")
        return "\n".join(lines)
    names = state.waiting_for
    council_flag = f" --council {shlex.quote(council)}" if council else ""
    if not names and state.asks.open:
        who = [m for m in state.rooms[first_room].members if state.members[m].awaited]
        as_flag = f" --as {who[0]}" if len(who) > 1 else ""
        lines.append(f"answer with: wop{store_flag} reply {shlex.quote(run_id)} --room "
                     f"{shlex.quote(first_room)}{as_flag}{council_flag} \"your answer\"")
    if not names:
        return "\n".join(lines)
    as_flag = f" --as {names[0]}" if len(names) > 1 else ""
    room = shlex.quote(first_room or "ROOM")
    lines.append(f"reply with: wop{store_flag} reply {shlex.quote(run_id)} --room {room}"
                 f"{as_flag}{council_flag} \"your message (@member asks for a turn)\"")
    for decision in state.decisions.values():
        if decision.closed or names[0] not in decision.voters:
            continue
        choices = "|".join(decision.definition.get("options") or ("SCORE",))
        lines.append(f"vote with:  wop{store_flag} vote {shlex.quote(run_id)} "
                     f"{shlex.quote(decision.id)} {shlex.quote(choices)}{as_flag}"
                     f"{council_flag} --reason \"why\"")
    return "\n".join(lines)
