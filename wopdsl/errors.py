"""Errors raised by wopdsl, each with a stable code documented in docs/errors.md.

Our exception hierarchy::

    WopError
    ├── DeclarationError (ValueError)      DECLARATION_INVALID
    ├── ValidationError (ValueError)       validation_error
    │   ├── RosterExceeded                  wire: conversation_roster_exceeded
    │   └── SpeakerNotParticipant           wire: conversation_speaker_not_participant
    ├── StoreError
    │   ├── StoreConflict                   STORE_CONFLICT
    │   │   └── RunBusy                     STORE_CONFLICT (another driver executes the run)
    │   ├── StoreUnavailable                STORE_ERROR (unreachable for now: retried)
    │   ├── EventInvalid (ValueError)       EVENT_INVALID
    │   └── RunNotFound (LookupError)       RUN_NOT_FOUND (wire: run_not_found)
    ├── RunStateConflict                    RUN_STATE_CONFLICT (wire: run_state_conflict,
    │                                         run_terminal for a run that has ended)
    └── RunFailed                           the code of the failed run
        (TEAM_NODE_FAILED, TEAM_TURN_LIMIT, TIMEOUT, ...)

Turn-level codes (``RESULT_INVALID``, ``SCRIPT_EXHAUSTED``, ``TIMEOUT``) are recorded on
``node.failed`` events rather than raised to the caller; :class:`TurnError` carries them
from a member engine to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "CODES",
    "DOCS_URL",
    "DeclarationError",
    "EventInvalid",
    "Problem",
    "RosterExceeded",
    "RunBusy",
    "RunFailed",
    "RunNotFound",
    "RunStateConflict",
    "SpeakerNotParticipant",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "TurnAsks",
    "TurnError",
    "TurnSuspended",
    "ValidationError",
    "WopError",
]

DOCS_URL: Final = "docs/errors.md"

CODES: Final[tuple[str, ...]] = (
    "DECLARATION_INVALID",
    "RESULT_INVALID",
    "TEAM_NODE_FAILED",
    "TEAM_TURN_LIMIT",
    "SCRIPT_EXHAUSTED",
    "TEMPLATE_LIMIT",
    "TIMEOUT",
    "validation_error",
    "STORE_CONFLICT",
    "STORE_ERROR",
    "EVENT_INVALID",
    "RUN_NOT_FOUND",
    "RUN_STATE_CONFLICT",
    "MODEL_ERROR",
    "BUDGET_EXHAUSTED",
    "TOOL_ERROR",
    "TOOL_LIMIT",
    "TOOL_IN_DOUBT",
    "A2A_ERROR",
    "A2A_IN_DOUBT",
)
"""Every stable error code, in the order docs/errors.md documents them."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem found in a declaration or an input.

    Attributes:
        message: What is wrong.
        path: The field path, e.g. ``members[1].max_turns``.
        hint: How to fix it.
        source: The file the problem is in, when there is one.
        line: 1-based line in ``source``, when known.
        column: 1-based column in ``source``, when known.
    """

    message: str
    path: str = ""
    hint: str = ""
    source: str | None = None
    line: int | None = None
    column: int | None = None

    @property
    def location(self) -> str:
        """Return ``file:line:col`` (or the parts that are known)."""
        parts = [self.source or "<council>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def render(self) -> str:
        """Render as ``location: path: message (hint: ...)``."""
        text = f"{self.location}: "
        if self.path:
            text += f"{self.path}: "
        text += self.message
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


class WopError(Exception):
    """Root of every error wopdsl raises on purpose."""

    code: str = "WOP_ERROR"
    wire: str = ""
    """The OpenWOP code when it differs from ``code`` (see :attr:`wire_code`)."""

    def __init__(self, message: str, *, hint: str = "",
                 details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details: dict[str, object] = dict(details or {})
        """Machine-readable specifics for HTTP envelopes and ``--json`` documents."""

    @property
    def wire_code(self) -> str:
        """The code OpenWOP names for this error (HTTP envelopes, ``--json`` documents)."""
        return self.wire or self.code

    def __str__(self) -> str:
        text = self.message
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def render(self) -> str:
        """Render the error the way the CLI prints it."""
        return f"error[{self.code}]: {self}\n    see: {DOCS_URL}#{self.code.lower()}"


class DeclarationError(WopError, ValueError):
    """A council declaration (TOML file, decorators, spec) is invalid.

    Collects every problem found, so one run of ``wop validate`` lists them all.
    """

    code = "DECLARATION_INVALID"

    def __init__(self, problems: list[Problem] | Problem | str, *, hint: str = "",
                 subject: str = "council declaration") -> None:
        if isinstance(problems, str):
            problems = [Problem(problems, hint=hint)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        count = len(self.problems)
        head = f"invalid {subject}" + (f" ({count} problems)" if count > 1 else "")
        super().__init__(head + ":\n" + "\n".join("  " + p.render() for p in self.problems))


class ValidationError(WopError, ValueError):
    """Input to a running council was refused; nothing was appended.

    Raised for human posts that break room membership, mention or turn-schema rules, for
    turns after a conversation closed, and for roster violations (RFC 0101).
    """

    code = "validation_error"


class RosterExceeded(ValidationError):
    """A room's roster is larger than the host's ``maxParticipants`` (RFC 0101, RFC 0239 §C).

    ``details``: ``{maxParticipants, roomId, participants}``.
    """

    wire = "conversation_roster_exceeded"


class SpeakerNotParticipant(ValidationError):
    """A turn's ``speakerId`` is not a participant of the room (RFC 0101, RFC 0239 §B).

    ``details``: ``{speakerId}`` (and the room's ``participants`` where known).
    """

    wire = "conversation_speaker_not_participant"


class StoreError(WopError):
    """The event store could not do what was asked."""

    code = "STORE_ERROR"


class StoreUnavailable(StoreError):
    """The store could not be reached for now (a lost connection, a server down or restarting).

    A driver retries it with backoff, within the store's ``reconnect_s``, and the run goes on
    (``run.resumed``) once the store answers again.
    """


class StoreConflict(StoreError):
    """Another writer appended to the run first (optimistic concurrency)."""

    code = "STORE_CONFLICT"


class RunBusy(StoreConflict):
    """Another driver is executing the run (it holds the run's claim); nothing was appended."""


class EventInvalid(StoreError, ValueError):
    """A stored or offered event is malformed or has an unsupported schemaVersion."""

    code = "EVENT_INVALID"


class RunNotFound(StoreError, LookupError):
    """No run with that id exists in the store."""

    code = "RUN_NOT_FOUND"
    wire = "run_not_found"

    @classmethod
    def of(cls, run_id: str, *, where: str = "the store", runs: str = "wop runs") -> RunNotFound:
        """The error for a run id that ``where`` does not hold.

        Args:
            run_id: The run asked for.
            where: The store, as the user named it.
            runs: The command that lists the store's runs (with its ``--store``).
        """
        return cls(f"run {run_id} not found in {where}", hint=f"list the runs with `{runs}`",
                   details={"runId": run_id})


class RunStateConflict(WopError):
    """The run's status does not allow the operation; nothing was appended.

    Pausing a run that is not running, unpausing one that is not paused.

    ``details``: ``{runId, runStatus}``. On the wire the code is ``run_state_conflict``, or
    ``run_terminal`` when the run has ended (OpenWOP v2 ``runs.md`` §Pause and resume).
    """

    code = "RUN_STATE_CONFLICT"

    def __init__(self, run_id: str, status: str, action: str, *, hint: str = "") -> None:
        ended = status in ("completed", "failed", "cancelled")
        default = ("a run that has ended takes no more operations" if ended
                   else "resume it first (`run.unpause()`, POST …:resume)" if status == "paused"
                   else "it waits for a person's turn (or an approval)"
                   if status == "waiting-input" else "read its status (`wop status RUN`)")
        super().__init__(f"run {run_id} is {status}: it cannot be {action}",
                         hint=hint or default, details={"runId": run_id, "runStatus": status})
        self.wire = "run_terminal" if ended else "run_state_conflict"
        self.status = status


class RunFailed(WopError):
    """A run ended in failure; ``code`` is the run's error code."""

    def __init__(self, code: str, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.code = code


@dataclass(slots=True)
class TurnError(Exception):
    """A member turn failed with a stable code (carried into ``node.failed``)."""

    code: str
    message: str
    details: dict[str, object] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class TurnSuspended(TurnError):
    """A turn waits for a decision (a tool call's approval).

    It stays in flight, the run waits for input, and the turn runs again once the decision
    is in the log.
    """

    def __init__(self, message: str = "waiting for an approval") -> None:
        super().__init__("SUSPENDED", message)


class TurnAsks(TurnSuspended):
    """A turn waits for an answer to its remote agent's question (``input-required``).

    The engine writes the wait (see :mod:`wopdsl.state.asks`); the turn runs again once a
    post in ``room`` answers it.

    Args:
        room: The room the answer is posted in.
        question: The agent's question.
        key: The interrupt key of the wait (``a2a/<call id>``).
    """

    def __init__(self, room: str, question: str, key: str) -> None:
        super().__init__(f"waiting for an answer in room {room}: {question}")
        self.room = room
        self.question = question
        self.key = key
