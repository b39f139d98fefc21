"""The inert council declaration: ``CouncilSpec`` and its parts (frozen pydantic models).

The models mirror the TOML file format one to one (``[council]``, ``[[rooms]]``,
``[[members]]``), so load -> export -> load is lossless and ``wop schema`` is simply the JSON
Schema of :class:`CouncilSpec`. Field checks live here; cross-references (room members,
mention targets, caps overflow) are checked by ``compile()``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
)

from wopdsl._described import Described
from wopdsl._ids import IDENT_PATTERN, MAX_SAFE_INT
from wopdsl.model.deliberation import DecisionSpec, ScriptVote
from wopdsl.model.llm import ModelProfile, NonNegativeNumber, Temperature
from wopdsl.model.tools import MAX_TOOLS_LIMIT, HeaderMap, McpServerSpec, ToolPolicy, ToolRef

__all__ = [
    "CouncilSettings",
    "CouncilSpec",
    "DecisionSpec",
    "EngineKind",
    "MemberSpec",
    "RoomSpec",
    "ScriptPost",
    "ScriptStep",
]

Ident = Annotated[
    StrictStr,
    Field(pattern=IDENT_PATTERN, min_length=1, max_length=64),
]
"""An address: 1-64 characters of ``[A-Za-z0-9._-]`` (never a path, never a control char)."""

PositiveSafeInt = Annotated[StrictInt, Field(ge=1, le=MAX_SAFE_INT)]
"""A positive safe integer: 1 ... 2**53 - 1."""

MAX_RETRIES = 100
"""Most retries a turn may have (``retries``)."""
MAX_RETRY_BACKOFF_MS = 3_600_000
"""Longest base delay between retries (``retry_backoff_ms``: one hour)."""
Retries = Annotated[StrictInt, Field(ge=0, le=MAX_RETRIES)]
"""How many times a failed turn runs again: 0 ... 100."""
BackoffMs = Annotated[StrictInt, Field(ge=0, le=MAX_RETRY_BACKOFF_MS)]
"""Base delay before a retry in milliseconds: 0 ... 3,600,000."""

EngineKind = Literal["python", "script", "human", "external", "llm", "a2a"]
"""Who produces a member's turns."""


def _plain_json(value: Any, where: str = "") -> Any:
    """Return ``value`` as JSON data a TOML file can hold (lists, str keys), or raise.

    TOML has no null and JSON has no dates or non-finite numbers, so both are refused here:
    that keeps every valid spec exportable (load -> export -> load is lossless).
    """
    if value is None:
        at = f" at {where}" if where else ""
        raise ValueError(f"holds null{at}; TOML has no null, leave the key out instead")
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise ValueError(f"holds {value!r} at {where or 'the top'}; JSON numbers must be finite")
    if isinstance(value, list | tuple):
        return [_plain_json(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"has a non-string key {key!r}; JSON and TOML keys are strings")
            out[key] = _plain_json(item, f"{where}.{key}")
        return out
    kind = type(value).__name__
    raise ValueError(
        f"holds a {kind} at {where or 'the top'}; only JSON data is allowed "
        "(strings, numbers, booleans, arrays, tables; no dates or times)"
    )


def _optional_json(value: Any) -> Any:
    return None if value is None else _plain_json(value)


JsonData = Annotated[Any, AfterValidator(_optional_json)]
"""Optional JSON data without nulls inside (``None`` itself means "no data")."""

JsonObject = Annotated[dict[str, Any], AfterValidator(_plain_json)]
"""A JSON object without nulls inside (TOML has no null)."""


class _Frozen(Described):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
    )


class CouncilSettings(_Frozen):
    """The ``[council]`` table: identity, task and limits."""

    id: Ident
    """The council's id (also the OpenWOP ``workflowId``)."""
    version: PositiveSafeInt = 1
    """The declaration's version, bumped by its authors."""
    task: StrictStr
    """The text given to every member on every turn."""
    global_concurrency: PositiveSafeInt = 1
    """Most member turns dispatched together in one batch."""
    max_turns_per_member: PositiveSafeInt = 8
    """Default cap on each member's turns in one run (a member may override it)."""
    tail_messages: PositiveSafeInt = 20
    """Per-room message tail in a member's input."""
    timeout_ms: PositiveSafeInt | None = None
    """Whole-run timeout (RFC 0005 §I); on expiry every conversation closes and the run fails."""
    turn_timeout_ms: PositiveSafeInt | None = None
    """Default per-turn timeout in milliseconds (none by default)."""
    max_input_bytes: PositiveSafeInt = 1_048_576
    """Default cap on the JSON size of a member's turn input."""
    max_output_bytes: PositiveSafeInt = 262_144
    """Default cap on the JSON size of a member's turn result."""
    retries: Retries = 0
    """Default number of times a failed turn runs again (``node.retried`` before each)."""
    retry_backoff_ms: BackoffMs = 100
    """Default base delay before a retry; retry n waits ``retry_backoff_ms × 2^(n−1)``."""
    max_tokens: PositiveSafeInt | None = None
    """Run budget of model tokens, input plus output (RFC 0084); none: unlimited."""
    max_cost_usd: NonNegativeNumber | None = None
    """Run budget of estimated model cost in USD (needs prices on the profiles)."""
    max_tool_calls: PositiveSafeInt | None = None
    """Run budget of tool calls, all members together (RFC 0084 ``toolCalls``); none:
    each turn is still bounded by its member's ``max_tool_calls``."""
    chair: Ident | None = None
    """The member who takes the last turn, once nothing else is queued and every decision
    is closed; its summary is the run's ``answer`` (DESIGN.md §22)."""


class RoomSpec(_Frozen):
    """A room: a fixed set of members who see each other's posts."""

    id: Ident
    """The room's id (data, never a file name)."""
    members: list[Ident]
    """Distinct member ids: all of them for a run-wide room, a subset for a team, two for a line."""
    title: StrictStr | None = None
    """Human-readable title, shown in UIs and on ``interrupt.requested``."""
    turn_schema: JsonObject | None = None
    """Optional JSON Schema every post's ``content`` (``{text, mentions}``) must satisfy."""
    rounds: PositiveSafeInt | None = None
    """Debate in rounds: each round every member of the room with turns left takes one turn;
    the room is settled after this many rounds (mentions in it never request extra turns)."""
    blind: StrictBool = False
    """Hide a round's posts from the other members until the round ends (needs ``rounds``)."""
    anonymous: StrictBool = False
    """Show the other members' posts under per-run aliases ("Member A" …), never their ids."""
    max_wake: PositiveSafeInt | None = None
    """Most members an ``@all`` post in this room wakes (default: every other member)."""


class ScriptPost(_Frozen):
    """A post in a scripted turn; strings are Jinja2 templates over the turn input."""

    room: Ident
    """The room to post in."""
    text: StrictStr
    """The message text (a Jinja2 template)."""
    mentions: list[Ident] = Field(default_factory=list)
    """Members of that room whose next turn this message requests."""


class ScriptStep(_Frozen):
    """One scripted turn result."""

    summary: StrictStr
    """The turn's summary (a Jinja2 template)."""
    data: JsonData = None
    """Optional JSON data returned with the result (strings are not rendered)."""
    posts: list[ScriptPost] = Field(default_factory=list)
    """Posts this turn makes."""
    votes: list[ScriptVote] = Field(default_factory=list)
    """Votes this turn casts (``[[decisions]]``)."""


class MemberSpec(_Frozen):
    """A council member: an address, a job, instructions and who produces its turns."""

    id: Ident
    """The member's address, used in rooms, mentions and message ids."""
    role: StrictStr
    """What the member does (a description, not a second address)."""
    brief: StrictStr = ""
    """Instructions given on every turn (a sandboxed Jinja2 template over the turn input)."""
    initial_turn: StrictBool = True
    """Whether the member is queued at the start (false: it waits to be mentioned)."""
    engine: EngineKind = "python"
    """Who produces the turns: ``python`` (a handler), ``script``, ``human`` (a person),
    ``external`` (an agent outside the process submits them, as ``role: "agent"`` turns) or
    ``llm`` (a chat model, see ``[models.NAME]``) or ``a2a`` (a remote A2A agent at ``url``)."""
    handler: StrictStr | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    """For ``python``: ``module:function``, imported relative to the council file."""
    script: list[ScriptStep] | None = None
    """For ``script``: the n-th turn returns the n-th entry."""
    max_turns: PositiveSafeInt | None = None
    """Most turns this member may take in one run (default: the council's cap)."""
    turn_timeout_ms: PositiveSafeInt | None = None
    """Per-turn timeout override in milliseconds."""
    max_input_bytes: PositiveSafeInt | None = None
    """Override of the council's turn-input size cap."""
    max_output_bytes: PositiveSafeInt | None = None
    """Override of the council's turn-result size cap."""
    retries: Retries | None = None
    """Override of the council's ``retries``."""
    retry_backoff_ms: BackoffMs | None = None
    """Override of the council's ``retry_backoff_ms``."""
    principal: Ident | None = None
    """For a member whose turns come from outside (``human``): the only principal (an HTTP
    host's bearer-token owner, ``wop serve --tokens``) allowed to speak as this member."""

    model: Ident | None = None
    """For ``llm``: the ``[models.NAME]`` profile this member calls."""
    temperature: Temperature | None = None
    """For ``llm``: overrides the profile's temperature."""
    max_output_tokens: PositiveSafeInt | None = None
    """For ``llm``: overrides the profile's completion-token cap per call."""
    system_prompt: StrictStr | None = None
    """For ``llm``: a Jinja2 template replacing the default system prompt."""
    turn_prompt: StrictStr | None = None
    """For ``llm``: a Jinja2 template replacing the default turn (user) prompt."""
    repair_attempts: Annotated[StrictInt, Field(ge=0, le=15)] | None = None
    """For ``llm``: how often an invalid answer is re-asked (default 1)."""

    # -- tools (DESIGN.md §20) --------------------------------------------------------------
    tools: list[ToolRef] | None = None
    """For ``llm``: the tools the model may call (``module:function``, an ``@council.tool``
    name, ``mcp:SERVER/TOOL`` or ``mcp:SERVER/*``)."""
    tool_policy: dict[Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")],
                      ToolPolicy] | None = None
    """For ``llm``: per tool name, ``timeout_ms``, ``idempotent``, ``approval`` and
    ``max_result_bytes``."""
    max_tool_calls: PositiveSafeInt | None = None
    """For ``llm`` with tools: most tool calls in one turn (default 16)."""
    max_tools: Annotated[StrictInt, Field(ge=1, le=MAX_TOOLS_LIMIT)] | None = None
    """For ``llm`` with tools: most tools offered to the model (default 128); more, e.g. from
    an ``mcp:SERVER/*`` that lists many, is refused before the run starts."""

    # -- remote A2A agents (DESIGN.md §25) ---------------------------------------------------
    url: StrictStr | None = Field(default=None, pattern=r"^https?://[^\s]+$", max_length=4096)
    """For ``a2a``: the agent's base URL (its card is at ``/.well-known/agent-card.json``)."""
    headers: HeaderMap | None = None
    """For ``a2a``: HTTP header name → ``env:NAME``, the environment variable holding its value
    (``Authorization = "env:ANALYST_TOKEN"``); values never enter the log."""


_LATER_MEMBER_KEYS = ("principal",)
"""Optional member keys newer than the first digests (left out of the digest when unset)."""
_BUDGET_KEYS = ("max_tokens", "max_cost_usd", "max_tool_calls")
_ROOM_DEFAULTS: dict[str, Any] = {"rounds": None, "blind": False, "anonymous": False,
                                  "max_wake": None}
"""Room keys of deliberation, left out of the definition (and digest) while at default."""
_LLM_MEMBER_KEYS = ("model", "temperature", "max_output_tokens", "system_prompt",
                    "turn_prompt", "repair_attempts", "tools", "tool_policy", "max_tool_calls",
                    "max_tools", "url", "headers")


class CouncilSpec(_Frozen):
    """A whole council, exactly as the TOML file declares it. Inert: see ``compile()``."""

    council: CouncilSettings
    """The ``[council]`` table."""
    rooms: list[RoomSpec] = Field(default_factory=list)
    """The ``[[rooms]]``, in declaration order."""
    members: list[MemberSpec] = Field(default_factory=list)
    """The ``[[members]]``, in declaration order (the result lists them in this order)."""
    models: dict[Ident, ModelProfile] = Field(default_factory=dict)
    """The ``[models.NAME]`` profiles ``llm`` members call, by name."""
    mcp: dict[Ident, McpServerSpec] = Field(default_factory=dict)
    """The ``[mcp.NAME]`` servers whose tools members name as ``mcp:NAME/TOOL``."""
    decisions: list[DecisionSpec] = Field(default_factory=list)
    """The ``[[decisions]]`` the council's voters settle (DESIGN.md §22)."""

    @property
    def id(self) -> str:
        """The council id."""
        return self.council.id

    @property
    def task(self) -> str:
        """The council task."""
        return self.council.task

    def member(self, member_id: str) -> MemberSpec:
        """Return the member with ``member_id`` (``KeyError`` if absent)."""
        for member in self.members:
            if member.id == member_id:
                return member
        raise KeyError(member_id)

    def to_data(self) -> dict[str, Any]:
        """Return the declaration as plain JSON data (defaults and ``None`` left out)."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)

    def definition(self, *, exclude_none: bool = True) -> dict[str, Any]:
        """The full declaration as JSON data (``run.started.metadata.council``).

        The keys of ``llm`` members and budgets are left out while unused, so a council
        that uses none keeps the definition and digest it had before they existed.
        """
        data = self.model_dump(mode="json", exclude_none=exclude_none)
        for table in ("models", "mcp", "decisions"):
            if not data.get(table):
                data.pop(table, None)
        for key in (*_BUDGET_KEYS, "chair"):
            if data["council"].get(key, 0) is None:
                del data["council"][key]
        for room in data.get("rooms", []):
            for key, default in _ROOM_DEFAULTS.items():
                if key in room and room[key] == default:
                    del room[key]
        for member in data.get("members", []):
            for key in _LLM_MEMBER_KEYS:
                if member.get(key, 0) is None:
                    del member[key]
            for step in member.get("script") or ():
                if not step.get("votes"):
                    step.pop("votes", None)
        for decision in data.get("decisions", []):
            for key in [k for k, v in decision.items() if v is None]:
                del decision[key]
            if "scale" in decision:  # A score is settled by the median: no rule (re-reading
                decision.pop("rule", None)  # the definition would refuse one).
        return data

    def digest(self) -> str:
        """Return ``sha256:<hex>`` of the canonical JSON of the full declaration.

        Keys added after the format's first version (:data:`_LATER_MEMBER_KEYS`, the llm and
        budget keys) are left out while unset, so a council that does not use them keeps its
        digest (and stored runs keep matching their council file).
        """
        data = self.definition(exclude_none=False)
        for member in data["members"]:
            for key in _LATER_MEMBER_KEYS:
                if member.get(key) is None:
                    member.pop(key, None)
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
