"""Tools of ``llm`` members: ``[mcp.NAME]`` servers, tool references and per-tool policies.

A member lists its tools (``tools = [...]``) as references:

* ``"module:function"`` — a typed Python function, imported relative to the council file;
* ``"NAME"`` — a function registered in code with ``@council.tool``;
* ``"mcp:SERVER/TOOL"`` or ``"mcp:SERVER/*"`` — one tool, or every tool, of an
  ``[mcp.SERVER]`` server (stdio ``command``, or streamable HTTP ``url``).

Like model profiles, servers hold the *names* of environment variables, never their values:
``env`` lists variables passed on to a stdio server, ``headers`` maps HTTP header names to
the variables holding their values. Values are read when the server starts and never enter a
declaration, an event or a file.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from wopdsl._described import Described
from wopdsl._ids import IDENT_PATTERN, MAX_SAFE_INT

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_TOOLS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_TOOL_ERRORS",
    "DEFAULT_TOOL_TIMEOUT_MS",
    "MAX_TOOLS_LIMIT",
    "EnvRef",
    "HeaderMap",
    "McpServerSpec",
    "ToolPolicy",
    "ToolRef",
    "ToolReference",
    "env_variable",
    "parse_tool_ref",
    "tool_name",
]

DEFAULT_TOOL_TIMEOUT_MS: Final = 30_000
"""A tool call's time limit unless its policy sets ``timeout_ms``."""
DEFAULT_MAX_RESULT_BYTES: Final = 65_536
"""The largest tool result (UTF-8 bytes) given to the model unless ``max_result_bytes`` says."""
DEFAULT_MAX_TOOL_CALLS: Final = 16
"""Most tool calls in one turn of a member unless it sets ``max_tool_calls``."""
DEFAULT_MAX_TOOL_ERRORS: Final = 3
"""Tool errors a turn hands back to the model before it fails with ``TOOL_ERROR``."""
DEFAULT_MAX_TOOLS: Final = 128
"""Most tools a member offers its model unless it sets ``max_tools`` (OpenAI's API takes at
most 128 in one request)."""
MAX_TOOLS_LIMIT: Final = 1024
"""The largest ``max_tools``: every model request carries every offered tool's schema."""

_PYTHON_REF: Final = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", re.ASCII)
_MCP_REF: Final = re.compile(r"^mcp:([A-Za-z0-9._-]{1,64})/(\*|[A-Za-z0-9_.-]{1,128})$")
_NAME_REF: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_ENV_NAME: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_HEADER: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_MODEL_NAME: Final = re.compile(r"[^A-Za-z0-9_-]")


def _tool_ref(value: str) -> str:
    if value.startswith("mcp:"):
        if not _MCP_REF.match(value):
            raise ValueError(f"{value!r} is not an MCP tool reference | hint: write "
                             "'mcp:SERVER/TOOL' or 'mcp:SERVER/*' (SERVER a [mcp.SERVER] name)")
        return value
    if _PYTHON_REF.match(value) or _NAME_REF.match(value):
        return value
    raise ValueError(f"{value!r} is not a tool reference | hint: write 'module:function' (a Python "
                     "function beside the council file), the name of an @council.tool "
                     "function, or 'mcp:SERVER/TOOL'")


ToolRef = Annotated[StrictStr, AfterValidator(_tool_ref)]
"""One entry of a member's ``tools``: ``module:function``, a registered name or ``mcp:…``."""

def _env_name(value: str) -> str:
    if not re.match(_ENV_NAME, value):  # never echo it: it may be a value pasted by mistake
        raise ValueError("must be the NAME of an environment variable (letters, digits and _, "
                         "not starting with a digit), never a value | hint: keep the value in "
                         'a variable and write its name, e.g. Authorization = "SEARCH_MCP_AUTH"')
    return value


EnvName = Annotated[StrictStr, AfterValidator(_env_name)]
"""The NAME of an environment variable (never its value)."""


def env_variable(value: str) -> str:
    """The variable a header value names: ``env:NAME`` (or a bare ``NAME``) → ``NAME``."""
    return value[4:] if value.startswith("env:") else value


def _env_ref(value: str) -> str:
    _env_name(env_variable(value))
    return value


EnvRef = Annotated[StrictStr, AfterValidator(_env_ref)]
"""An environment variable named for a header: ``env:NAME`` (or a bare ``NAME``)."""


def _header_names(value: dict[str, str]) -> dict[str, str]:
    for name in value:
        if not _HEADER.match(name):
            raise ValueError(f"{name!r} is not an HTTP header name | hint: header names are "
                             "letters, digits and -, e.g. Authorization")
    return value


HeaderMap = Annotated[dict[str, EnvRef], AfterValidator(_header_names)]
"""HTTP header name → the variable holding its value (``env:NAME``)."""


class ToolReference(BaseModel):
    """A parsed tool reference (see :func:`parse_tool_ref`)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["python", "registered", "mcp"]
    target: str
    """``module:function``, the registered name, or the MCP tool name (``*`` for all)."""
    server: str | None = None
    """For ``mcp``: the ``[mcp.NAME]`` server."""


def parse_tool_ref(ref: str) -> ToolReference:
    """Split a (valid) tool reference into its kind and target."""
    found = _MCP_REF.match(ref)
    if found:
        return ToolReference(kind="mcp", target=found.group(2), server=found.group(1))
    if ":" in ref:
        return ToolReference(kind="python", target=ref)
    return ToolReference(kind="registered", target=ref)


def tool_name(name: str) -> str:
    """The name a tool has for the model (function names allow ``[A-Za-z0-9_-]{1,64}``)."""
    return _MODEL_NAME.sub("_", name)[:64] or "tool"


class _Frozen(Described):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class McpServerSpec(_Frozen):
    """An ``[mcp.NAME]`` table: an MCP server, started over stdio or reached over HTTP."""

    command: StrictStr | None = Field(default=None, min_length=1, max_length=4096)
    """For a stdio server: the program to start (run in the council file's folder)."""
    args: list[StrictStr] = Field(default_factory=list)
    """For a stdio server: its command-line arguments."""
    env: list[EnvName] = Field(default_factory=list)
    """For a stdio server: NAMES of environment variables passed on to it (values are read
    when it starts; a small safe set such as PATH and HOME is always passed)."""
    url: StrictStr | None = Field(default=None, pattern=r"^https?://\S+$", max_length=4096)
    """For a streamable HTTP server: its endpoint (``http://127.0.0.1:8000/mcp``)."""
    headers: Annotated[dict[str, EnvName], AfterValidator(_header_names)] = Field(
        default_factory=dict)
    """For an HTTP server: header name → the NAME of the environment variable holding its
    value (``Authorization = "FILES_MCP_AUTH"``); values never enter the log."""
    startup_timeout_ms: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] = 30_000
    """How long starting the server and listing its tools may take."""
    restarts: Annotated[StrictInt, Field(ge=0, le=16)] = 1
    """How often a server that died is started again within a run before a call fails."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("an [mcp.NAME] server needs exactly one of command and url | "
                             "hint: command = \"...\" starts a stdio server; url = \"http://"
                             "…/mcp\" reaches a streamable HTTP server")
        if self.url is not None and (self.args or self.env):
            raise ValueError("args and env are for stdio servers (command) | hint: an "
                             "HTTP server (url) takes headers")
        if self.command is not None and self.headers:
            raise ValueError("headers are for HTTP servers (url) | hint: pass a stdio "
                             "server its secrets through env = [\"NAME\"]")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` or ``http``."""
        return "stdio" if self.command is not None else "http"


class ToolPolicy(_Frozen):
    """A ``[members.tool_policy.NAME]`` table: how one tool of the member is called."""

    timeout_ms: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] | None = None
    """The call's time limit (default 30 000); a call over it is an error for the model."""
    idempotent: StrictBool = False
    """Whether calling it twice with the same arguments is harmless: only then is a call that
    was in flight at a crash made again on resume."""
    approval: Annotated[StrictStr, Field(pattern=IDENT_PATTERN)] | None = None
    """A human member who approves each call before it is made (``wop approve``)."""
    max_result_bytes: Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)] | None = None
    """The largest result given to the model (default 65 536 bytes); a bigger one is an
    error for the model, never silently cut."""
