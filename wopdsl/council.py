"""``Council``: declare a council with decorators (or load it), then run it."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from wopdsl._ids import Clock, FixedClock, deterministic_run_id, new_run_id
from wopdsl.agents.python import Handler
from wopdsl.compile import CouncilGraph
from wopdsl.compile import compile as compile_graph
from wopdsl.compile.handlers import qualified_name, spec_with_references
from wopdsl.declare.toml import Declaration, declaration_from_data, load_declaration
from wopdsl.engine import Engine, engine_for
from wopdsl.errors import DeclarationError, Problem, ValidationError
from wopdsl.model.spec import CouncilSettings, CouncilSpec, MemberSpec, RoomSpec
from wopdsl.protocol.bounds import MAX_METADATA_BYTES, field_path, json_problem
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS
from wopdsl.run import Run, run_sync
from wopdsl.store import EventStore, open_store, require_run

__all__ = ["Council", "load"]

F = TypeVar("F", bound=Callable[..., Any])
StoreArg = str | os.PathLike[str] | EventStore | None


class Council:
    """A council: its declaration plus the Python handlers bound to its members.

    Declare one in code::

        council = Council("release-team", task="Prepare a release note.")
        council.room("review", members=["writer", "reviewer"])

        @council.member(role="writer", brief="Draft the release note.")
        def writer(turn: Turn) -> Reply: ...

    or load one from TOML with :func:`load`. Either way, ``await council.arun()`` runs it.
    """

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

    # -- building --------------------------------------------------------------------------

    @classmethod
    def from_spec(
        cls, spec: CouncilSpec, *, source: str | os.PathLike[str] | None = None
    ) -> Council:
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
             max_wake: int | None = None) -> Council:
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
                 quorum: int | None = None) -> Council:
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

    def model(self, name: str, *, model: str, **options: Any) -> Council:
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

    def mcp(self, name: str, **options: Any) -> Council:
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
                   engine: str = "python", **options: Any) -> Council:
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
              initial_turn: bool = False, **options: Any) -> Council:
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

    # -- the declaration -------------------------------------------------------------------

    @property
    def spec(self) -> CouncilSpec:
        """The validated, inert declaration.

        Raises:
            DeclarationError: every problem, with field paths.
        """
        if self._spec is None:
            data: dict[str, Any] = {"council": self._settings, "rooms": self._rooms,
                                    "members": self._members}
            if self._models:
                data["models"] = self._models
            if self._mcp:
                data["mcp"] = self._mcp
            if self._decisions:
                data["decisions"] = self._decisions
            declaration = declaration_from_data(
                data, source=f"Council({self._settings.get('id')!r})")
            self._declaration = declaration
            self._spec = declaration.spec
        return self._spec

    @property
    def id(self) -> str:
        """The council id."""
        return self.spec.council.id

    @property
    def settings(self) -> CouncilSettings:
        """The ``[council]`` table."""
        return self.spec.council

    @property
    def rooms(self) -> list[RoomSpec]:
        """The rooms, in declaration order."""
        return list(self.spec.rooms)

    @property
    def members(self) -> list[MemberSpec]:
        """The members, in declaration order."""
        return list(self.spec.members)

    def compile(self) -> CouncilGraph:
        """Compile the declaration with its bound handlers.

        The graph is immutable, so it is compiled once and reused (each run of the council
        starts from it) until a room, member or handler is added.

        Raises:
            DeclarationError: every problem, located in the council file when there is one.
        """
        spec = self.spec
        key = (self.base_dir, self.source, *self.handlers.items(), *self.tools.items())
        if self._compiled is not None and self._compiled[1].spec is spec \
                and self._compiled[0] == key:
            return self._compiled[1]
        declaration = self._declaration if (
            self._declaration is not None and self._declaration.spec is spec) else None
        try:
            graph = compile_graph(spec, self.handlers, base_dir=self.base_dir,
                                  source=self.source, checked=declaration is not None,
                                  tools=self.tools)
        except DeclarationError as exc:
            if declaration is None:
                raise
            # Template, handler and schema problems carry field paths: place them in the
            # file with the source map kept from the load (the file is not read again).
            raise DeclarationError(declaration.locate(exc.problems)) from None
        self._compiled = (key, graph)
        return graph

    def check_runnable(self) -> CouncilGraph:
        """Compile, and refuse a council that ``wop run`` could not run as it stands.

        Raises:
            DeclarationError: every compile problem, or each python member without a
                handler, located in the council file when there is one.
        """
        graph = self.compile()
        problems = [
            Problem(f"python member '{member}' has no handler, so `wop run` cannot run this "
                    "council", path=f"members[{graph.members[member].index}] ({member})",
                    hint='set handler = "module:function" (imported from the council '
                         "file's folder), or bind one in code with @council.bind and run it "
                         "from Python")
            for member in graph.unbound()
        ]
        if problems:
            declaration = self._declaration
            raise DeclarationError(declaration.locate(problems) if declaration is not None
                                   else problems)
        return graph

    def to_toml(self, *, handlers: bool = True) -> str:
        """Return the declaration in the TOML file format (``wop export``).

        Args:
            handlers: Write bound handlers as ``handler = "module:function"`` references, so
                the file runs with ``wop run`` from a folder where that module imports
                (default). ``False`` writes the declaration alone, as the spec holds it.

        Raises:
            DeclarationError: a python member's handler cannot be named in a file (a
                lambda, a nested function ...), or a python member has no handler.
        """
        from wopdsl.declare.export import to_toml

        return to_toml(spec_with_references(self.spec, self.handlers, self.tools) if handlers
                       else self.spec)

    # -- running ---------------------------------------------------------------------------

    def start(self, store: StoreArg = None, run_id: str | None = None, *,
              deterministic: bool = False, clock: Clock | None = None,
              max_participants: int = DEFAULT_MAX_PARTICIPANTS,
              metadata: dict[str, Any] | None = None, principal: str | None = None,
              tags: list[str] | None = None) -> Run:
        """Start a run in the background of the running loop and return its handle at once.

        ``metadata`` (JSON data, e.g. what an HTTP client sent with its request) is kept in
        ``run.started`` under ``metadata.request``; ``principal`` (who started the run, e.g.
        an HTTP host's caller, which then owns it) under ``metadata.principal``. ``tags``
        (opaque strings such as ``"eval=board-vs-solo"``) go where the HTTP host keeps a
        request's tags (``metadata.request.runOptions.tags``): ``run.tags`` reads them and
        ``wop runs --tag`` filters by them.

        Raises:
            ValidationError: ``metadata`` is not JSON every reader of the log can serve
                (nested past 32 levels, an integer beyond 64 bits, over 256 KiB), or a tag
                is not 1-256 characters.
        """
        run = self._prepare(store, run_id, deterministic, clock, max_participants, metadata,
                            principal, tags)
        run._begin(start=True)
        return run

    async def astart(self, store: StoreArg = None, run_id: str | None = None,
                     **options: Any) -> Run:
        """:meth:`start` (same options), never holding the event loop on a blocking store."""
        st = open_store(store)
        run = await st.call(functools.partial(self._prepare, st, run_id, **options))
        run._begin(start=True)
        return run

    async def arun(self, store: StoreArg = None, run_id: str | None = None, *,
                   deterministic: bool = False, clock: Clock | None = None,
                   max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Run the council until it completes, fails, or waits for human input.

        Args:
            store: A path, ``"memory:"`` or a store object; default ``.wop/runs.db``.
            run_id: The run id (default: a fresh one).
            deterministic: Fixed clock and predictable run ids (for tests and snapshots).
            clock: A custom clock (overrides ``deterministic``'s).
            max_participants: The host's roster limit per room.

        Returns:
            The run handle (``run.status``, ``run.result``, ``run.transcript`` ...).

        Example:
            >>> run = await council.arun(store="memory:")
            >>> run.status
            'completed'
        """
        run = self.start(store, run_id, deterministic=deterministic, clock=clock,
                         max_participants=max_participants)
        await run.wait()
        return run

    def run(self, store: StoreArg = None, run_id: str | None = None, *,
            deterministic: bool = False, clock: Clock | None = None,
            max_participants: int = DEFAULT_MAX_PARTICIPANTS) -> Run:
        """Synchronous twin of :meth:`arun`; refuses inside a running event loop."""
        return run_sync(self.arun(store, run_id, deterministic=deterministic, clock=clock,
                                  max_participants=max_participants),
                        "run()", "await council.arun()")

    def open(self, run_id: str, store: StoreArg = None) -> Run:
        """Return a handle on an existing run of this council (handlers re-bound)."""
        st = require_run(open_store(store), run_id)
        engine = engine_for(self.compile(), st, run_id)
        return Run(st, run_id, engine=engine, council=self)

    def _prepare(self, store: StoreArg, run_id: str | None, deterministic: bool = False,
                 clock: Clock | None = None, max_participants: int = DEFAULT_MAX_PARTICIPANTS,
                 metadata: dict[str, Any] | None = None, principal: str | None = None,
                 tags: list[str] | None = None) -> Run:
        """A new run's handle, not started yet (it reads the store: no event loop needed)."""
        if tags:
            metadata = with_tags(metadata, tags)
        if metadata:
            problem = json_problem(metadata, max_bytes=MAX_METADATA_BYTES)
            if problem is not None:
                raise ValidationError(f"{field_path('metadata', problem[0])}: {problem[1]}",
                                      hint="send plain JSON data: at most 32 levels deep, "
                                           "64-bit integers, 256 KiB")
        graph = self.compile()
        st = open_store(store)
        if clock is None and deterministic:
            clock = FixedClock()
        if run_id is None:
            run_id = deterministic_run_id(graph.id, st.exists) if deterministic \
                else new_run_id(graph.id)
        extra: dict[str, Any] = {"clock": "fixed"} if isinstance(clock, FixedClock) else {}
        if self.handlers:
            extra["handlers"] = {m: qualified_name(fn) for m, fn in sorted(self.handlers.items())}
        if metadata:
            extra["request"] = dict(metadata)
        if principal is not None:
            extra["principal"] = principal
        engine = Engine(graph, st, run_id, clock=clock, max_participants=max_participants,
                        metadata=extra)
        return Run(st, run_id, engine=engine, council=self)

    def __repr__(self) -> str:
        return f"Council({self._settings.get('id')!r})"


MAX_TAGS = 100
"""Most tags a run may carry (the HTTP host's bound, v2 runs.md §Run options)."""


def with_tags(metadata: dict[str, Any] | None, tags: list[str]) -> dict[str, Any]:
    """``metadata`` with ``tags`` added under ``runOptions.tags`` (where the host keeps them).

    Raises:
        ValidationError: more than 100 tags, or one that is not 1-256 characters.
    """
    if len(tags) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags, got {len(tags)}",
                              hint="tag a run with what filters it: eval, arm, case …")
    for index, tag in enumerate(tags):
        if not isinstance(tag, str) or not 1 <= len(tag) <= 256:
            raise ValidationError(f"tags[{index}] must be a string of 1-256 characters",
                                  hint='e.g. tags=["eval=board-vs-solo", "arm=board"]')
    data = dict(metadata or {})
    options = dict(data.get("runOptions") or {})
    options["tags"] = [*options.get("tags", []), *tags]
    data["runOptions"] = options
    return data


def load(path: str | os.PathLike[str]) -> Council:
    """Load a council file (TOML) into a runnable :class:`Council`.

    Raises:
        DeclarationError: with file:line:col, field path and a hint for every problem.

    Example:
        >>> council = load("councils/release-team.toml")
        >>> council.id
        'release-team'
    """
    declaration = load_declaration(path)
    council = Council.from_spec(declaration.spec, source=path)
    council._declaration = declaration
    return council
