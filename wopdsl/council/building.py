"""Building a council in code: rooms, decisions, model profiles, MCP servers, tools, members."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from wopdsl.agents.python import Handler
from wopdsl.errors import DeclarationError

if TYPE_CHECKING:
    from wopdsl.compile import CouncilGraph
    from wopdsl.declare.toml import Declaration
    from wopdsl.model.spec import CouncilSpec

__all__ = ["CouncilBuilder"]

F = TypeVar("F", bound=Callable[..., Any])


class CouncilBuilder:
    """What a :class:`~wopdsl.Council` is declared with, call by call (or wrapped from a spec)."""

    def __init__(self, id: str, *, task: str, **settings: Any) -> None:
        self._settings: dict[str, Any] = {"id": id, "task": task, **settings}
        self._rooms: list[dict[str, Any]] = []
        self._members: list[dict[str, Any]] = []
        self._models: dict[str, dict[str, Any]] = {}
        self._mcp: dict[str, dict[str, Any]] = {}
        self._decisions: list[dict[str, Any]] = []
        self.handlers: dict[str, Handler] = {}
        """Python handlers bound to members, by member id."""
        self.tools: dict[str, Callable[..., Any]] = {}
        """Python tool functions registered with :meth:`tool`, by name."""
        self.source: str | None = None
        """The council file, when loaded from one."""
        self.base_dir: Path | None = None
        """Where ``handler = "module:function"`` modules are imported from."""
        self._spec: CouncilSpec | None = None
        self._declaration: Declaration | None = None
        """The checked declaration the spec came from (locates compile problems)."""
        self._frozen = False
        self._compiled: tuple[tuple[Any, ...], CouncilGraph] | None = None
        """The last graph compiled, with what it was compiled from."""

    @classmethod
    def from_spec(
        cls, spec: CouncilSpec, *, source: str | os.PathLike[str] | None = None
    ) -> Self:
        """Wrap an existing spec (e.g. one loaded from TOML)."""
        council = cls(spec.council.id, task=spec.council.task)
        council._spec = spec
        council._frozen = True
        if source is not None:
            council.source = os.fspath(source)
            council.base_dir = Path(source).resolve().parent
        return council

    def room(self, id: str, *, members: list[str], title: str | None = None,
             turn_schema: dict[str, Any] | None = None, rounds: int | None = None,
             blind: bool = False, anonymous: bool = False,
             max_wake: int | None = None) -> Self:
        """Declare a room (returns the council, so calls can chain).

        ``rounds``, ``blind``, ``anonymous`` and ``max_wake`` structure its debate
        (DESIGN.md §22, docs/guides/deliberation.md).
        """
        self._mutable()
        entry: dict[str, Any] = {"id": id, "members": list(members)}
        if title is not None:
            entry["title"] = title
        if turn_schema is not None:
            entry["turn_schema"] = turn_schema
        if rounds is not None:
            entry["rounds"] = rounds
        if blind:
            entry["blind"] = True
        if anonymous:
            entry["anonymous"] = True
        if max_wake is not None:
            entry["max_wake"] = max_wake
        self._rooms.append(entry)
        return self

    def decision(self, id: str, *, room: str, question: str,
                 options: list[str] | None = None, scale: tuple[int, int] | None = None,
                 voters: list[str] | None = None, rule: str | None = None,
                 quorum: int | None = None) -> Self:
        """Declare a decision (``[[decisions]]``) the room's voters settle by voting.

        Args:
            id: What votes name.
            room: Where it is debated (its outcome is announced there).
            question: The question put to the voters.
            options: The choices; or ``scale=(lowest, highest)`` for a score.
            scale: A score's range (the outcome is the median).
            voters: Who votes (default: the room's members but the chair).
            rule: ``majority`` (default), ``two_thirds``, ``unanimous`` or ``plurality``.
            quorum: Votes needed before it may close (default: every voter).

        Returns:
            The council, so calls can chain.
        """
        self._mutable()
        entry: dict[str, Any] = {"id": id, "room": room, "question": question}
        for key, value in (("options", options), ("scale", scale), ("voters", voters),
                           ("rule", rule), ("quorum", quorum)):
            if value is not None:
                entry[key] = list(value) if isinstance(value, tuple | list) else value
        self._decisions.append(entry)
        return self

    def model(self, name: str, *, model: str, **options: Any) -> Self:
        """Declare a model profile (``[models.NAME]``) that ``llm`` members name.

        Args:
            name: The profile's name (what a member's ``model=`` refers to).
            model: The model as the server knows it, e.g. ``"gpt-4o-mini"``.
            **options: Other profile keys: ``base_url``, ``api_key_env`` (the NAME of an
                environment variable, never a key), ``temperature``, ``max_output_tokens``,
                ``max_concurrency``, ``price_in_per_mtok``, ``price_out_per_mtok`` …

        Returns:
            The council, so calls can chain.

        Example:
            >>> council = Council("c", task="t").model("local", model="qwen2.5:7b-instruct",
            ...                                        base_url="http://127.0.0.1:11434/v1")
            >>> _ = council.add_member("critic", role="critic", engine="llm", model="local")
            >>> council.spec.models["local"].model
            'qwen2.5:7b-instruct'
        """
        self._mutable()
        self._models[name] = {"model": model,
                              **{k: v for k, v in options.items() if v is not None}}
        return self

    def mcp(self, name: str, **options: Any) -> Self:
        """Declare an MCP server ``[mcp.NAME]`` (``command=`` for stdio or ``url=``, …)."""
        self._mutable()
        self._mcp[name] = {k: v for k, v in options.items() if v is not None}
        return self

    def tool(self, fn: F | None = None, *, name: str | None = None) -> Any:
        """Register a typed function as a tool members name in ``tools`` (docs/guides/tools.md)."""

        def register(function: F) -> F:
            self.tools[name or function.__name__] = function
            self._compiled = None
            return function

        return register(fn) if fn is not None else register

    def member(self, id: str | None = None, *, role: str, brief: str = "",
               initial_turn: bool = True, **options: Any) -> Callable[[F], F]:
        """Declare a python member whose turns ``fn(turn)`` produces (sync or async).

        The member id defaults to the function's name.
        """

        def decorate(fn: F) -> F:
            member_id = id or fn.__name__
            self.add_member(member_id, role=role, brief=brief, initial_turn=initial_turn,
                            engine="python", **options)
            self.handlers[member_id] = fn
            return fn

        return decorate

    def add_member(self, id: str, *, role: str, brief: str = "", initial_turn: bool = True,
                   engine: str = "python", **options: Any) -> Self:
        """Declare a member without a decorator (``engine="human"``, ``"script"`` or ``"llm"``).

        An ``llm`` member names a profile declared with :meth:`model` (``model="local"``) and
        may override ``temperature``, ``max_output_tokens``, ``system_prompt``,
        ``turn_prompt`` and ``repair_attempts``, and take ``tools``, ``tool_policy``,
        ``max_tool_calls`` and ``max_tools`` (docs/guides/tools.md).
        """
        self._mutable()
        entry: dict[str, Any] = {"id": id, "role": role, "engine": engine}
        if brief:
            entry["brief"] = brief
        if not initial_turn:
            entry["initial_turn"] = False
        entry.update({k: v for k, v in options.items() if v is not None})
        self._members.append(entry)
        return self

    def human(self, id: str, *, role: str = "user", brief: str = "",
              initial_turn: bool = False, **options: Any) -> Self:
        """Declare a human member (turns come from a person, via ``Run.reply``)."""
        return self.add_member(id, role=role, brief=brief, initial_turn=initial_turn,
                               engine="human", **options)

    def bind(self, member_id: str) -> Callable[[F], F]:
        """Bind a python handler to a declared member (e.g. one from a TOML file)."""

        def decorate(fn: F) -> F:
            self.handlers[member_id] = fn
            return fn

        return decorate

    def _mutable(self) -> None:
        if self._frozen:
            raise DeclarationError(
                f"council {self._settings['id']} was built from a spec or file; it takes no "
                "new rooms or members",
                hint="edit the file (or the spec); use council.bind('<member>') for handlers",
            )
        self._spec = None
