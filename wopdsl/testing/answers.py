"""An answers file for the scripted model server: try an ``llm`` council with no model.

``python -m wopdsl.testing.model_server ANSWERS.toml [--port 8090]`` serves the answers in
the file on ``http://127.0.0.1:PORT/v1`` until stopped (Ctrl+C); point ``$OPENAI_BASE_URL``
(or a profile's ``base_url``) at it. The file::

    [[answers]]
    member = "proposer"      # who it answers (left out: any member)
    turn = 1                 # on which of the member's turns (left out: any turn)
    summary = "Proposed a plan."
    posts = [{room = "desk", text = "Ship it in two steps. @critic?", mentions = ["critic"]}]

    [[answers]]
    member = "critic"
    text = '{"summary": "Found the weak claim.", "posts": []}'   # or the reply verbatim
    usage = [120, 30]        # optional: input and output tokens (default [10, 5])

    [[answers]]
    member = "sre"
    step = 1                 # the turn's first model call (left out: any step)
    tool_calls = [{name = "read_log", arguments = {service = "api"}}]

A call is answered by the first entry whose ``member``, ``turn`` and ``step`` fit it (read
from the ``member id:`` and ``This is your turn N.`` lines of the default prompts; the step
is 1 plus the rounds of tool calls the conversation already holds); an entry answers as
often as it fits. ``summary``/``posts``/``data`` make the turn result (JSON), ``text`` is
sent as it is, ``tool_calls`` asks for calls of the member's tools (their results come back
in the next step). A call no entry fits gets HTTP 400 naming the member and turn, so the
turn fails with a clear ``MODEL_ERROR``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

__all__ = ["AnswerBook", "AnswersError", "ScriptedAnswer", "ScriptedToolCall", "command_line",
           "load_answers", "step_of", "turn_of"]

_TURN = re.compile(r"This is your turn (\d+)\.")


class _Post(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    room: StrictStr
    text: StrictStr
    mentions: list[StrictStr] = Field(default_factory=list)


class ScriptedToolCall(BaseModel):
    """One call of a ``tool_calls`` list: the tool's name and its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: StrictStr = Field(min_length=1)
    """The tool's name as the member's model sees it (``read_log``, not ``mcp:ops/read_log``)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments (sent as their JSON text)."""


class ScriptedAnswer(BaseModel):
    """One ``[[answers]]`` entry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    member: StrictStr | None = None
    """The member it answers (``None``: any)."""
    turn: StrictInt | None = Field(default=None, ge=1)
    """The member's turn it answers (``None``: any)."""
    step: StrictInt | None = Field(default=None, ge=1)
    """The model call of the turn it answers: 1 plus the rounds of tool calls the
    conversation already holds (``None``: any)."""
    text: StrictStr | None = None
    """The assistant message, sent verbatim."""
    summary: StrictStr | None = None
    """The turn result's summary (with ``posts`` and ``data``: sent as JSON)."""
    posts: list[_Post] = Field(default_factory=list)
    """The turn result's posts."""
    data: Any = None
    """The turn result's data."""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    """Tool calls the model asks for instead of answering (one round)."""
    usage: tuple[StrictInt, StrictInt] = (10, 5)
    """Input and output tokens reported."""
    delay_ms: StrictInt = Field(default=0, ge=0, le=60_000)
    """Wait before answering (a slow model)."""

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptedAnswer:
        given = [name for name in ("text", "summary", "posts", "data")
                 if getattr(self, name) not in (None, [])]
        if self.tool_calls and given:
            raise ValueError(f"an entry asks for tool_calls or answers ({', '.join(given)}), "
                             "not both: give the answer after the calls its own entry, with "
                             "the next step")
        return self

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The tool calls as ``(name, arguments)`` pairs (empty: the entry answers)."""
        return [(call.name, dict(call.arguments)) for call in self.tool_calls]

    def content(self) -> str | dict[str, Any]:
        """What the model says."""
        if self.text is not None:
            return self.text
        result: dict[str, Any] = {"summary": self.summary or "", "posts": [
            {"roomId": p.room, "text": p.text, "mentions": list(p.mentions)}
            for p in self.posts]}
        if self.data is not None:
            result["data"] = self.data
        return result


class AnswerBook(BaseModel):
    """An answers file: the ``[[answers]]`` entries in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answers: list[ScriptedAnswer] = Field(min_length=1)

    def reply(self, body: Any, member: str | None) -> ScriptedAnswer | str:
        """The first entry that fits a request of ``member``, or why none does."""
        turn, step = turn_of(body), step_of(body)
        for entry in self.answers:
            if entry.member in (None, member) and entry.turn in (None, turn) \
                    and entry.step in (None, step):
                return entry
        return (f"no entry of the answers file fits member {member or '(unknown)'}, "
                f"turn {turn or '(unknown)'}" + (f", step {step}" if step > 1 else ""))


def turn_of(body: Any) -> int | None:
    """The member's turn a request is for (the default turn prompt's ``This is your turn N.``)."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    user = next((str(m.get("content", "")) for m in messages if isinstance(m, dict)
                 and m.get("role") == "user"), "")
    found = _TURN.search(user)
    return int(found.group(1)) if found else None


def step_of(body: Any) -> int:
    """The model call of the turn a request is: 1 plus the assistant messages with tool calls."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return 1 + sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
                   and m.get("tool_calls"))


class AnswersError(Exception):
    """An answers file that cannot be used: what, where and how to fix it."""


def load_answers(path: str | Path) -> AnswerBook:
    """Read and check an answers file.

    Raises:
        AnswersError: unreadable, not TOML (with line and column) or not the documented
            shape (with the field path).
    """
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnswersError(f"{where}: cannot read the answers file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        at = f":{found.group(1)}:{found.group(2)}" if found else ""
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise AnswersError(f"{where}{at}: not valid TOML: {message}") from None
    try:
        return AnswerBook.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
            problems.append(f"{where}: {field.lstrip('.') or '(file)'}: "
                            f"{error['msg'].removeprefix('Value error, ')}")
        raise AnswersError("\n".join(problems) + "\nhint: each [[answers]] entry takes "
                           "member, turn, step, text or summary/posts/data or tool_calls, usage, "
                           "delay_ms") from None


def command_line(argv: list[str] | None = None) -> tuple[AnswerBook, str, int]:
    """Parse ``ANSWERS.toml [--port P]`` and load the file: ``(book, file, port)``.

    Raises:
        SystemExit: 2, after printing the problem, for bad arguments or a bad file.
    """
    parser = argparse.ArgumentParser(
        prog="python -m wopdsl.testing.model_server",
        description="A scripted OpenAI-compatible model server on 127.0.0.1, answering from "
                    "a TOML file (see wopdsl.testing.answers).")
    parser.add_argument("answers", help="the answers file (TOML)")
    parser.add_argument("--port", type=int, default=8090,
                        help="the loopback port (0: a free one; default 8090)")
    args = parser.parse_args(argv)
    try:
        return load_answers(args.answers), args.answers, args.port
    except AnswersError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
