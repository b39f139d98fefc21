"""What every tool is: a name, a description and a JSON Schema for the model, and a call.

A :class:`Tool` turns the model's arguments (a JSON object) into a :class:`ToolOutput`: text
for the model, or an error for the model. Whatever goes wrong inside a tool is data the model
reads (:class:`ToolFault`); only a broken setup (:class:`ToolSetupError`) fails a turn.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from wopdsl.errors import WopError
from wopdsl.model.tools import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TOOL_TIMEOUT_MS,
    ToolPolicy,
)

__all__ = ["Policy", "Tool", "ToolFault", "ToolOutput", "ToolSetupError", "Transport",
           "as_text", "valid_text"]

Transport = Literal["native", "mcp"]
"""How a tool is reached (RFC 0064 ``transport``)."""


class ToolSetupError(WopError):
    """A tool cannot be used at all: a server that will not start, a tool it does not have.

    Raised when a member's tools are opened (``wop validate``, ``wop run``'s check, a drive
    starting the member): in a run, the member's next turn fails with it (``TOOL_ERROR``),
    never the run left without an ending.

    Args:
        message: What is wrong, naming the server or tool.
        hint: How to fix it.
        reference: The member's tool reference at fault (a declaration problem).
        server: The MCP server that cannot be started or reached (not a declaration
            problem: the same council runs once the server answers).
    """

    code = "TOOL_ERROR"

    def __init__(self, message: str, hint: str = "", *, reference: str | None = None,
                 server: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reference = reference
        """The member's tool reference at fault, when one is."""
        self.server = server
        """The MCP server that could not be started or reached, when that is the problem."""


class ToolFault(Exception):
    """A call that failed in a way the model is told about.

    Invalid arguments, the tool raised, a timeout, an oversized result: ``code`` names the
    kind, ``message`` is for the model.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's answer, as the model reads it: always valid Unicode (see :func:`valid_text`)."""

    text: str
    """The result (or the error, when ``error``), as text."""
    error: bool = False
    """Whether the tool reported an error (an MCP ``isError`` result)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", valid_text(self.text))


@dataclass(frozen=True, slots=True)
class Policy:
    """One tool's effective policy (a ``[members.tool_policy.NAME]`` with defaults filled in)."""

    timeout_s: float = DEFAULT_TOOL_TIMEOUT_MS / 1000
    idempotent: bool = False
    approval: str | None = None
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES

    @classmethod
    def of(cls, policy: ToolPolicy | None) -> Policy:
        """The effective policy of a declared one (``None``: every default)."""
        if policy is None:
            return cls()
        return cls(timeout_s=(policy.timeout_ms or DEFAULT_TOOL_TIMEOUT_MS) / 1000,
                   idempotent=policy.idempotent, approval=policy.approval,
                   max_result_bytes=policy.max_result_bytes or DEFAULT_MAX_RESULT_BYTES)


class Tool(ABC):
    """A tool a model may call."""

    transport: ClassVar[Transport]
    name: str
    """The name the model calls it by (``[A-Za-z0-9_-]{1,64}``)."""
    description: str
    parameters: dict[str, Any]
    """The JSON Schema of its arguments (an object)."""
    reference: str
    """How the council file names it (``ops:restart``, ``mcp:files/read_log`` …)."""

    def definition(self) -> dict[str, Any]:
        """The tool as the Chat Completions ``tools`` list takes it."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def parse(self, raw: str) -> dict[str, Any]:
        """Parse and check the model's arguments (JSON text).

        Raises:
            ToolFault: ``INVALID_ARGUMENTS``, saying what is wrong.
        """
        try:
            value = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolFault("INVALID_ARGUMENTS", f"the arguments are not valid JSON "
                            f"({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise ToolFault("INVALID_ARGUMENTS", "the arguments must be a JSON object")
        return self.check(value)

    def check(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check parsed arguments against the tool's schema (default: accept them)."""
        return arguments

    @abstractmethod
    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        """Make the call (no timeout here: the caller bounds it).

        Raises:
            ToolFault: the call failed; the model is told why.
            ToolSetupError: the tool cannot be reached at all.
        """


def valid_text(text: str) -> str:
    r"""``text`` as valid Unicode, whatever a tool returned.

    A Python ``str`` may hold surrogates (U+D800–U+DFFF), which UTF-8 cannot carry: no log,
    database or model request could take them. Two halves of one character are joined; a
    lone half is written as its escape, ``\udc80`` (six characters). Valid text passes
    unchanged.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return joined.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def as_text(value: Any) -> str:
    r"""A Python tool's return value as text for the model (JSON unless it is text).

    ``bytes`` are read as UTF-8; a byte that is not UTF-8 is written ``\xff``.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    from pydantic_core import to_jsonable_python

    try:
        return json.dumps(to_jsonable_python(value), ensure_ascii=False)
    except Exception as exc:  # not JSON-able: the tool's author must fix the return type
        raise ToolFault("RESULT_INVALID", f"the tool returned a {type(value).__name__}, which "
                        f"is not JSON data ({type(exc).__name__})") from None
